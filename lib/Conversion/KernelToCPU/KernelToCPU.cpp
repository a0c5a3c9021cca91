//===- KernelToCPU.cpp - lower kernels to CPU loop nests --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "ExactRoundings.h"

#include "tc/Dialect/Kernel/Utils/Checks.h"
#include "tc/Dialect/Kernel/Utils/KernelLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTKERNELTOCPUPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;

namespace {

class KernelLowering : public KernelLoopLowering {
public:
  // Reassociation lets LLVM vectorize float reductions (partial sums per
  // lane); PyTorch's own CPU reductions reassociate too.
  KernelLowering(kernel::KernelOp kernel)
      : KernelLoopLowering(kernel, /*reassociate=*/true) {
    nanTrackedMinMax = true;
  }
  LogicalResult run();

private:
  /// The kernel's one top-level reduction when it reads columns (the
  /// innermost domain coordinate is the last index of a load in its body):
  /// a column sum, a bias gradient. Null otherwise, or when the rest of the
  /// body does not allow running the points as a block (see run).
  kernel::ReduceOp columnReduction();
  /// The loop nest of a column reduction over points [begin, end): blocks of
  /// kColumnBlock consecutive points advance together, row by row, with
  /// their accumulators in a small buffer (rows outer, points inner: each
  /// row's block is contiguous). One point at a time, each of its rows was a
  /// separate cache line and page, 37x eager's time on a 4096 x 4096 sum.
  LogicalResult lowerColumnReduction(kernel::ReduceOp reduce, OpBuilder &b,
                                     Value begin, Value end);
  static constexpr int64_t kColumnBlock = 64;
};

/// a * b for nonnegative sizes, at most INT64_MAX.
static int64_t saturatingProduct(int64_t a, int64_t b) {
  uint64_t product = llvm::SaturatingMultiply<uint64_t>(a, b);
  return static_cast<int64_t>(
      std::min<uint64_t>(product, std::numeric_limits<int64_t>::max()));
}

/// The number of leading domain dimensions up to the column's: trailing
/// unit dimensions (a keepdim reduction's [N, C, 1, 1]: global average
/// pooling) move no point, so the column is the last dimension of more
/// than one point.
static size_t columnDimensions(ArrayRef<int64_t> domain) {
  size_t dims = domain.size();
  while (dims > 1 && domain[dims - 1] == 1)
    --dims;
  return dims;
}

kernel::ReduceOp KernelLowering::columnReduction() {
  ArrayRef<int64_t> domain = kernel.getDomain();
  if (domain.empty() || hasSymbolicDomain(kernel))
    return {};
  size_t columnDim = columnDimensions(domain);
  if (domain[columnDim - 1] < 16)
    return {};
  Block &body = kernel.getBody().front();
  kernel::ReduceOp reduce;
  Value column;
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<kernel::IndexOp>(op)) {
      if (index.getDim() + 1 == columnDim)
        column = index.getResult();
      continue;
    }
    // After the reduction, a loop over a unit dimension (the stores of a
    // [N, C, 1, 1] result) is one more point's worth of scalar work.
    if (auto loop = dyn_cast<kernel::LoopOp>(op)) {
      auto size = loop.getSize().getDefiningOp<arith::ConstantIndexOp>();
      if (!reduce || !size || size.value() != 1)
        return {};
      continue;
    }
    if (auto r = dyn_cast<kernel::ReduceOp>(op)) {
      if (reduce)
        return {};
      reduce = r;
      continue;
    }
    // What comes before the reduction is recomputed per pass over the
    // block: it must only compute and read.
    if (!reduce && !isPure(&op) && !isa<memref::LoadOp>(op))
      return {};
  }
  if (!reduce || !column ||
      !reduce.getSize().getDefiningOp<arith::ConstantOp>() ||
      !reduce.getInit().getDefiningOp<arith::ConstantOp>())
    return {};
  // A load that walks down a column: the column is its last index, or is
  // added to it (a row-major buffer read at r * width + column), and the
  // reduction's row is in another index or in that sum.
  Value row = reduce.getBody().getArgument(0);
  auto usesRow = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return v == row || (def && llvm::is_contained(def->getOperands(), row));
  };
  bool readsColumns = false;
  reduce.getBody().walk([&](memref::LoadOp load) {
    if (load.getIndices().empty())
      return;
    Value last = load.getIndices().back();
    if (last == column) {
      readsColumns |= llvm::any_of(load.getIndices().drop_back(), usesRow);
      return;
    }
    if (auto add = last.getDefiningOp<arith::AddIOp>()) {
      if (add.getLhs() == column)
        readsColumns |= usesRow(add.getRhs());
      else if (add.getRhs() == column)
        readsColumns |= usesRow(add.getLhs());
    }
  });
  return readsColumns ? reduce : kernel::ReduceOp();
}

LogicalResult KernelLowering::lowerColumnReduction(kernel::ReduceOp reduce,
                                                   OpBuilder &b, Value begin,
                                                   Value end) {
  Location loc = reduce.getLoc();
  Block &body = kernel.getBody().front();
  auto before = llvm::make_range(body.begin(), reduce->getIterator());
  auto after = llvm::make_range(std::next(reduce->getIterator()),
                                body.getTerminator()->getIterator());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value block = arith::ConstantIndexOp::create(b, loc, kColumnBlock);
  Value size = b.clone(*reduce.getSize().getDefiningOp())->getResult(0);
  Value init = b.clone(*reduce.getInit().getDefiningOp())->getResult(0);
  Type type = reduce.getResult().getType();
  Value acc = memref::AllocaOp::create(
      b, loc, MemRefType::get({kColumnBlock}, type));

  auto blocks = scf::ForOp::create(b, loc, begin, end, block);
  b.setInsertionPoint(blocks.getBody()->getTerminator());
  Value first = blocks.getInductionVar();
  Value count = arith::MinUIOp::create(
      b, loc, block, arith::SubIOp::create(b, loc, end, first));
  // The column is the last domain dimension of more than one point (see
  // columnReduction). When the block stays in one row of it (its points
  // differ in the column alone), each point's coordinates are the first
  // point's with the column advanced by j: LLVM sees consecutive loads and
  // vectorizes them. Recomputed from the linear index they are not
  // (global average pooling's [8, 2048, 1] domain ran at 4x eager's time).
  ArrayRef<int64_t> domain = kernel.getDomain();
  size_t columnDim = columnDimensions(domain);
  delinearize(b, loc, first);
  SmallVector<Value> base = point;
  Value oneRow = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ule,
      arith::AddIOp::create(b, loc, base[columnDim - 1], count),
      arith::ConstantIndexOp::create(b, loc, domain[columnDim - 1]));
  auto choice = scf::IfOp::create(b, loc, oneRow, /*withElseRegion=*/true);

  // The block's loops, each point's coordinates from the first point's
  // (`advance`) or from its linear index.
  auto emitBlock = [&](OpBuilder bb, bool advance) -> LogicalResult {
    // Each point of the block: its coordinates, then what precedes the
    // reduction.
    auto atPoint = [&](OpBuilder &inner, Value j) -> LogicalResult {
      if (advance) {
        point = base;
        point[columnDim - 1] =
            arith::AddIOp::create(inner, loc, base[columnDim - 1], j);
      } else {
        delinearize(inner, loc, arith::AddIOp::create(inner, loc, first, j));
      }
      return lowerOps(before, inner);
    };

    auto fill = scf::ForOp::create(bb, loc, zero, count, one);
    OpBuilder inner = OpBuilder::atBlockBegin(fill.getBody());
    memref::StoreOp::create(inner, loc, init, acc, fill.getInductionVar());

    auto rows = scf::ForOp::create(bb, loc, zero, size, one);
    inner.setInsertionPoint(rows.getBody()->getTerminator());
    auto points = scf::ForOp::create(inner, loc, zero, count, one);
    inner.setInsertionPoint(points.getBody()->getTerminator());
    Value j = points.getInductionVar();
    if (failed(atPoint(inner, j)))
      return failure();
    mapping.map(reduce.getBody().getArgument(0), rows.getInductionVar());
    Block &reduceBody = reduce.getBody().front();
    if (failed(lowerBlock(reduceBody, inner)))
      return failure();
    auto yield = cast<kernel::YieldOp>(reduceBody.getTerminator());
    Value sum = buildCombine(inner, loc, reduce.getKind(),
                             memref::LoadOp::create(inner, loc, acc, j),
                             mapping.lookup(yield.getValues()[0]),
                             reassociate);
    memref::StoreOp::create(inner, loc, sum, acc, j);

    auto finish = scf::ForOp::create(bb, loc, zero, count, one);
    inner.setInsertionPoint(finish.getBody()->getTerminator());
    j = finish.getInductionVar();
    if (failed(atPoint(inner, j)))
      return failure();
    mapping.map(reduce.getResult(),
                memref::LoadOp::create(inner, loc, acc, j));
    return lowerOps(after, inner);
  };
  if (failed(emitBlock(choice.getThenBodyBuilder(), /*advance=*/true)) ||
      failed(emitBlock(choice.getElseBodyBuilder(), /*advance=*/false)))
    return failure();
  return success();
}

/// The order in which a kernel's rows run (see delinearize): the domain's
/// own, except where a load in the kernel's inner loop walks a buffer
/// across rows of at least kFarElements elements (a transposing read, as
/// channels-last to channels-first) and its last index is domain
/// coordinate d: d then varies fastest, so consecutive rows read
/// neighbouring elements of the lines (and pages) the last row read. In
/// the domain's order each row read a line of its own in each of as many
/// pages as the loop's iterations: ResNet-50's 4 x 14 x 14 x 1024 to
/// 4 x 1024 x 14 x 14 copy ran at 7.5 GB/s on two cores. Only where every
/// store's last index is the inner loop's (or the last coordinate):
/// each row still writes a contiguous run.
static SmallVector<int64_t> rowOrder(kernel::KernelOp kernel) {
  constexpr int64_t kFarElements = 64;
  ArrayRef<int64_t> domain = kernel.getDomain();
  auto order = llvm::to_vector(llvm::seq<int64_t>(0, domain.size()));
  if (domain.size() < 3)
    return order;
  Block &body = kernel.getBody().front();
  // The coordinate each kernel.index value gives; the inner loops' indices.
  llvm::DenseMap<Value, int64_t> coordinate;
  for (auto index : body.getOps<kernel::IndexOp>())
    coordinate[index.getResult()] = index.getDim();
  auto fast = [&](Value v) {
    auto it = coordinate.find(v);
    if (it != coordinate.end())
      return it->second + 1 == int64_t(domain.size());
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && isa<kernel::LoopOp>(arg.getOwner()->getParentOp());
  };
  std::optional<int64_t> chosen;
  bool conflict = false;
  kernel.getBody().walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      conflict |= !store.getIndices().empty() &&
                  !fast(store.getIndices().back());
      return;
    }
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || load.getIndices().size() < 2)
      return;
    auto it = coordinate.find(load.getIndices().back());
    if (it == coordinate.end() || it->second == 0 ||
        it->second + 1 == int64_t(domain.size()))
      return;
    ArrayRef<int64_t> shape = load.getMemRefType().getShape();
    int64_t stride = 1;
    for (size_t p = shape.size() - 1; p-- > 0;) {
      if (ShapedType::isDynamic(shape[p + 1]))
        return;
      stride *= shape[p + 1];
      if (isa<BlockArgument>(load.getIndices()[p]) &&
          fast(load.getIndices()[p]) && stride >= kFarElements) {
        conflict |= chosen && *chosen != it->second;
        chosen = it->second;
        return;
      }
    }
  });
  if (!chosen || conflict)
    return order;
  order.erase(order.begin() + *chosen);
  order.push_back(*chosen);
  return order;
}

LogicalResult KernelLowering::run() {
  OpBuilder b(kernel);
  Location loc = kernel.getLoc();
  FailureOr<SmallVector<Type>> lowered = getLoweredArgumentTypes(kernel);
  if (failed(lowered))
    return failure();
  SmallVector<Type> argTypes = std::move(*lowered);
  argTypes.push_back(b.getIndexType());
  argTypes.push_back(b.getIndexType());
  auto func = func::FuncOp::create(b, loc, kernel.getSymName(),
                                   b.getFunctionType(argTypes, {}));
  ArrayRef<int64_t> domain = kernel.getDomain();
  func->setAttr(kernel::kDomainAttrName, b.getDenseI64ArrayAttr(domain));
  // A launch's buffers do not overlap but where a pointwise kernel writes
  // over the input it reads at the same point (tc-plan-memory), as on
  // GPUs (KernelToGPU.cpp): loads may move past stores. Without it, LLVM
  // unrolled a row of 16 channels into scalar code it could not vectorize
  // (the stores might have changed what later loads read).
  for (unsigned i = 0, e = kernel.getNumArguments(); i < e; ++i)
    func.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  // The work, for the runtime's choice of threads: the elements written
  // (per unit of the symbolic size when the domain has it) times the
  // iterations of the longest nest of reductions behind each (a column
  // sum's 4096 outputs of 4096 rows each ran on one thread).
  // (The largest buffer the kernel stores to: an index check's 0-d flag
  // may come after the output, tc-fuse-index-checks.)
  auto staticElements = [](MemRefType type) {
    int64_t n = 1;
    for (int64_t size : type.getShape())
      if (!ShapedType::isDynamic(size))
        n *= size;
    return n;
  };
  int64_t points =
      staticElements(cast<MemRefType>(kernel.getArgumentTypes().back()));
  kernel.getBody().walk([&](memref::StoreOp store) {
    if (isa<BlockArgument>(store.getMemRef()))
      points = std::max(points, staticElements(store.getMemRefType()));
  });
  int64_t iterations = 1;
  kernel.getBody().walk([&](Operation *op) {
    int64_t nest = 1;
    for (Operation *at = op; at && at != kernel; at = at->getParentOp()) {
      auto reduce = dyn_cast<kernel::ReduceOp>(at);
      APInt value;
      if (reduce && matchPattern(reduce.getSize(), m_ConstantInt(&value)))
        nest = saturatingProduct(nest, value.getSExtValue());
    }
    iterations = std::max(iterations, nest);
  });
  func->setAttr(kernel::kPointsAttrName, b.getI64IntegerAttr(
                                 saturatingProduct(points, iterations)));
  Block *entry = func.addEntryBlock();
  for (auto [from, to] :
       llvm::zip(kernel.getBody().getArguments(), entry->getArguments()))
    mapping.map(from, to);
  Value begin = entry->getArgument(argTypes.size() - 2);
  Value end = entry->getArgument(argTypes.size() - 1);

  b.setInsertionPointToStart(entry);
  if (kernel::ReduceOp reduce = columnReduction()) {
    func::ReturnOp::create(b, loc);
    b.setInsertionPointToStart(entry);
    if (failed(lowerColumnReduction(reduce, b, begin, end))) {
      func.erase();
      return failure();
    }
    kernel.erase();
    return success();
  }
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  if (domain.size() < 2) {
    auto rows = scf::ForOp::create(b, loc, begin, end, one);
    func::ReturnOp::create(b, loc);
    b.setInsertionPoint(rows.getBody()->getTerminator());
    delinearize(b, loc, rows.getInductionVar(), /*innerGroup=*/1);
    if (failed(lowerBlock(kernel.getBody().front(), b))) {
      func.erase();
      return failure();
    }
    kernel.erase();
    return success();
  }
  // The first row's coordinates (its linear index delinearized), then each
  // next row's by counting up with carries: a division and a remainder per
  // coordinate and row cost as much as a row of 16 channels' arithmetic
  // (a channels-last activation of 16 channels ran at a third of
  // Inductor's speed).
  SmallVector<int64_t> order = rowOrder(kernel);
  delinearize(b, loc, begin, /*innerGroup=*/1, order);
  SmallVector<Value> first(point.begin(), point.end());
  auto rows = scf::ForOp::create(b, loc, begin, end, one, first);
  func::ReturnOp::create(b, loc);
  OpBuilder inner = OpBuilder::atBlockBegin(rows.getBody());
  ValueRange carried = rows.getRegionIterArgs();
  point.assign(carried.begin(), carried.end());
  if (failed(lowerBlock(kernel.getBody().front(), inner))) {
    func.erase();
    return failure();
  }
  Value zero = arith::ConstantIndexOp::create(inner, loc, 0);
  Value carry = arith::ConstantIntOp::create(inner, loc, 1, 1);
  SmallVector<Value> next(carried.begin(), carried.end());
  for (size_t i = domain.size(); i-- > 1;) {
    int64_t d = order[i];
    Value up = arith::AddIOp::create(inner, loc, carried[d], one);
    Value wraps = arith::CmpIOp::create(
        inner, loc, arith::CmpIPredicate::eq, up,
        arith::ConstantIndexOp::create(inner, loc, domain[d]));
    Value counted = arith::SelectOp::create(inner, loc, wraps, zero, up);
    next[d] = arith::SelectOp::create(inner, loc, carry, counted, carried[d]);
    carry = arith::AndIOp::create(inner, loc, carry, wraps);
  }
  next[0] = arith::SelectOp::create(
      inner, loc, carry, arith::AddIOp::create(inner, loc, carried[0], one),
      carried[0]);
  scf::YieldOp::create(inner, loc, next);
  kernel.erase();
  return success();
}

/// An f64 math op as a call of libm's function of its name (`erf`,
/// `erfc`), declared in the module where it is first needed. (MLIR's
/// MathToLibm patterns convert every math op they know, floor and sqrt
/// included, which LLVM otherwise compiles to vector instructions.)
template <typename MathOp>
struct LowerToLibm : public OpRewritePattern<MathOp> {
  using OpRewritePattern<MathOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!type.isF64())
      return failure();
    StringRef name = op->getName().stripDialect();
    auto module = op->template getParentOfType<ModuleOp>();
    auto callee = module.template lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(rewriter, op.getLoc(), name,
                                    rewriter.getFunctionType(type, type));
      callee.setPrivate();
    }
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, op->getOperands());
    return success();
  }
};

/// An f32 sin or cos, written out: x = k * pi + r with k = round(x / pi)
/// (for cos, x = k * pi + pi/2 + r with k = round(x / pi - 1/2)), pi in
/// three f32 parts subtracted by fused multiply-adds (Cody and Waite's
/// reduction: the first leaves x - k * p1 exact before its one rounding,
/// the others add the next 48 bits of pi), so r is within about an ulp for
/// |x| up to 2^24 half turns; then sin(r) = r + r^3 P(r^2) by a degree-11
/// odd polynomial fitted to sine's relative error on [-pi/2, pi/2] (2e-11,
/// under 2 ulp in f32), negated for odd k (for cos, even k). One
/// polynomial and a sign where the quarter-turn form chose between the
/// sine's and the cosine's coefficients lane by lane (SLEEF's form, which
/// eager's vectorized sin and cos use): compute-bound sin + cos of 2^22
/// floats had run 1-2% behind Inductor's. MLIR's own approximation reduces
/// the argument in one f32 step, off by 2e-4 at |x| = 4096 and 7e-3 at
/// 1e5 (rotary embeddings and positional encodings reach such arguments).
/// sin(+-0) is +-0. Eager's (libm, SLEEF) are accurate to
/// an ulp too. (tan has no polynomial approximation: it stays libm's
/// `tanf`, which reduces its argument itself.)
template <typename TrigOp>
struct LowerF32Trig : public OpRewritePattern<TrigOp> {
  using OpRewritePattern<TrigOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(TrigOp op,
                                PatternRewriter &rewriter) const override {
    constexpr bool isSin = std::is_same_v<TrigOp, math::SinOp>;
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    Type intType = i32;
    if (auto vector = dyn_cast<VectorType>(type))
      intType = vector.clone(i32);
    auto splat = [&](Type t, TypedAttr attr) -> Value {
      if (auto vector = dyn_cast<VectorType>(t))
        attr = SplatElementsAttr::get(vector, attr);
      return arith::ConstantOp::create(rewriter, loc, t, attr);
    };
    auto f = [&](float value) {
      return splat(type, rewriter.getF32FloatAttr(value));
    };
    auto i = [&](int32_t value) {
      return splat(intType, rewriter.getI32IntegerAttr(value));
    };
    auto fma = [&](Value a, Value b, Value c) -> Value {
      return math::FmaOp::create(rewriter, loc, a, b, c);
    };
    constexpr double kPi = 3.14159265358979323846264338327950288;
    Value x = op.getOperand();
    // k = round(x / pi); for cos, k + 1/2 = round(x / pi - 1/2) + 1/2, the
    // nearest odd multiple of pi/2.
    Value quotient =
        arith::MulFOp::create(rewriter, loc, x, f(float(1.0 / kPi)));
    if (!isSin)
      quotient = arith::SubFOp::create(rewriter, loc, quotient, f(0.5f));
    Value k = math::RoundEvenOp::create(rewriter, loc, quotient);
    Value turns = isSin ? k : arith::AddFOp::create(rewriter, loc, k,
                                                    f(0.5f));
    Value minusTurns = arith::NegFOp::create(rewriter, loc, turns);
    float p1 = float(kPi);
    float p2 = float(kPi - double(p1));
    float p3 = float(kPi - double(p1) - double(p2));
    Value r = x;
    for (float part : {p1, p2, p3})
      r = fma(minusTurns, f(part), r);
    // sin(r) = r + r^3 (c1 + r^2 (c2 + ...)).
    Value r2 = arith::MulFOp::create(rewriter, loc, r, r);
    Value poly = f(-2.38889548e-8f);
    for (float c : {2.75253888e-6f, -1.98408685e-4f, 8.33333097e-3f,
                    -0.166666672f})
      poly = fma(r2, poly, f(c));
    Value r3 = arith::MulFOp::create(rewriter, loc, r, r2);
    Value value = fma(r3, poly, r);
    // sin(x) = (-1)^k sin(r); cos(x) = sin(x + pi/2) = (-1)^(k+1) sin(r):
    // the parity flips the sign bit.
    Value parity = arith::FPToSIOp::create(rewriter, loc, intType, k);
    if (!isSin)
      parity = arith::AddIOp::create(rewriter, loc, parity, i(1));
    Value sign = arith::ShLIOp::create(
        rewriter, loc, arith::AndIOp::create(rewriter, loc, parity, i(1)),
        i(31));
    Value bits = arith::BitcastOp::create(rewriter, loc, intType, value);
    Value result = arith::BitcastOp::create(
        rewriter, loc, type, arith::XOrIOp::create(rewriter, loc, bits, sign));
    if (isSin) {
      // sin(-0) is -0 (the reduction's sum of +0 and -0 is +0).
      Value isZero = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OEQ, x, f(0.0f));
      result = arith::SelectOp::create(rewriter, loc, isZero, x, result);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConvertKernelToCPUPass
    : public mlir::tc::impl::ConvertKernelToCPUPassBase<ConvertKernelToCPUPass> {
  using ConvertKernelToCPUPassBase::ConvertKernelToCPUPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<kernel::KernelOp> kernels(module.getOps<kernel::KernelOp>());
    for (kernel::KernelOp k : kernels)
      if (failed(KernelLowering(k).run()))
        return signalPassFailure();
    // Tests only: every float a lowered kernel stores gets 1 added.
    if (miscompileForTesting)
      for (auto func : module.getOps<func::FuncOp>())
        if (func->hasAttr("tc.domain"))
          kernel::plantWrongStores(func.getBody());

    // Math on half-precision values runs in f32, rounded back after each
    // op (LLVM would otherwise promote through compiler-rt calls).
    {
      TypeConverter converter;
      Type f32 = Float32Type::get(&getContext());
      SetVector<Type> supported;
      supported.insert(f32);
      supported.insert(Float64Type::get(&getContext()));
      math::populateExtendToSupportedTypesTypeConverter(converter, supported,
                                                        f32);
      ConversionTarget target(getContext());
      math::populateExtendToSupportedTypesConversionTarget(target, converter);
      RewritePatternSet extension(&getContext());
      math::populateExtendToSupportedTypesPatterns(extension, converter);
      if (failed(applyPartialConversion(module, target,
                                        std::move(extension))))
        return signalPassFailure();
    }

    // f32 sines and cosines written out, their arguments reduced
    // accurately.
    {
      RewritePatternSet reduction(&getContext());
      reduction.add<LowerF32Trig<math::SinOp>, LowerF32Trig<math::CosOp>>(
          &getContext());
      if (failed(applyPatternsGreedily(module, std::move(reduction))))
        return signalPassFailure();
    }

    // Polynomial approximations of exp, tanh, erf, sin, ... are plain
    // arithmetic, which LLVM vectorizes; libm calls would not be.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
    // What has neither a polynomial (f32's) nor an LLVM intrinsic calls
    // libm: f64 erf and erfc (a float64 GELU's graph failed LLVM's
    // translation and ran in eager).
    if (!untranslatableForTesting) {
      RewritePatternSet libm(&getContext());
      libm.add<LowerToLibm<math::ErfOp>, LowerToLibm<math::ErfcOp>>(
          &getContext());
      if (failed(applyPatternsGreedily(module, std::move(libm))))
        return signalPassFailure();
    }

    // bf16 arithmetic in f32, each result rounded back (as eager does it),
    // and the conversions as integer arithmetic: LLVM would call
    // compiler-rt's __truncsfbf2, which the JIT's process may not have
    // (libgcc has it only from GCC 13).
    TypeConverter converter;
    Type bf16 = BFloat16Type::get(&getContext());
    arith::populateEmulateUnsupportedFloatsConversions(
        converter, {bf16}, Float32Type::get(&getContext()));
    RewritePatternSet emulation(&getContext());
    arith::populateEmulateUnsupportedFloatsPatterns(emulation, converter);
    ConversionTarget target(getContext());
    arith::populateEmulateUnsupportedFloatsLegality(target, converter);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(emulation))))
      return signalPassFailure();
    // The emulation marks its conversions `contract`, which lets folding
    // drop the rounding between two ops; eager rounds after each one.
    module.walk([](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op))
        op->removeAttr("fastmath");
    });
    // Roundings of values bf16 holds exactly (a chain of maxima: max
    // pooling, ReLU) are the identity, and a chain of maxima of rounded
    // values rounds once: the chain runs in f32.
    {
      RewritePatternSet exact(&getContext());
      populateExactRoundingPatterns(exact);
      if (failed(applyPatternsGreedily(module, std::move(exact)))) {
        module.emitError() << "tc-lower-kernel-to-cpu: the bf16 rounding "
                              "rewrites did not converge";
        return signalPassFailure();
      }
    }
    RewritePatternSet expansion(&getContext());
    arith::populateExpandBFloat16Patterns(expansion);
    if (failed(applyPatternsGreedily(module, std::move(expansion))))
      return signalPassFailure();
    // A select of bf16 values (a concatenation's or a where's) as one of
    // their bits: x86 without AVX512-BF16 legalizes a bf16 select by
    // widening to f32 and back, a call of the same __truncsfbf2.
    module.walk([](arith::SelectOp select) {
      Type type = select.getType();
      Type bits;
      if (isa<BFloat16Type>(type))
        bits = IntegerType::get(type.getContext(), 16);
      else if (auto vector = dyn_cast<VectorType>(type);
               vector && isa<BFloat16Type>(vector.getElementType()))
        bits = vector.clone(IntegerType::get(type.getContext(), 16));
      if (!bits)
        return;
      OpBuilder b(select);
      Location loc = select.getLoc();
      Value onTrue =
          arith::BitcastOp::create(b, loc, bits, select.getTrueValue());
      Value onFalse =
          arith::BitcastOp::create(b, loc, bits, select.getFalseValue());
      Value chosen = arith::SelectOp::create(b, loc, select.getCondition(),
                                             onTrue, onFalse);
      select.replaceAllUsesWith(
          arith::BitcastOp::create(b, loc, type, chosen).getResult());
      select.erase();
    });
  }
};

} // namespace
