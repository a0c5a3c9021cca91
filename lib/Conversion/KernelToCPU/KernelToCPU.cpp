//===- KernelToCPU.cpp - lower kernels to CPU loop nests --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "tc/Conversion/KernelLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
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
      : KernelLoopLowering(kernel, /*reassociate=*/true) {}
  LogicalResult run();
};

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
  func->setAttr("tc.domain", b.getDenseI64ArrayAttr(domain));
  // Points per unit of the symbolic size when the domain has it.
  auto outType = cast<MemRefType>(kernel.getArgumentTypes().back());
  int64_t points = 1;
  for (int64_t size : outType.getShape())
    if (!ShapedType::isDynamic(size))
      points *= size;
  func->setAttr("tc.points", b.getI64IntegerAttr(points));
  Block *entry = func.addEntryBlock();
  for (auto [from, to] :
       llvm::zip(kernel.getBody().getArguments(), entry->getArguments()))
    mapping.map(from, to);
  Value begin = entry->getArgument(argTypes.size() - 2);
  Value end = entry->getArgument(argTypes.size() - 1);

  b.setInsertionPointToStart(entry);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto rows = scf::ForOp::create(b, loc, begin, end, one);
  func::ReturnOp::create(b, loc);
  b.setInsertionPoint(rows.getBody()->getTerminator());
  // Delinearize the row's linear index into the domain's coordinates.
  delinearize(b, loc, rows.getInductionVar());
  if (failed(lowerBlock(kernel.getBody().front(), b))) {
    func.erase();
    return failure();
  }
  kernel.erase();
  return success();
}

/// Marks a trigonometric op whose argument is reduced already.
constexpr llvm::StringLiteral kReducedAttr = "tc.reduced_argument";

/// An f32 sin or cos of x as the same function of x - k * period,
/// k = round(x / period), computed in f64. MLIR's polynomial approximations
/// reduce the argument in one f32 step, which is off by 2e-4 at |x| = 4096
/// and 7e-3 at 1e5 (rotary embeddings and positional encodings reach such
/// arguments); in f64 the reduced argument is exact to f32's precision for
/// any |x| below 2^24 x period. Eager's (libm, SLEEF) are accurate too.
/// (tan has no polynomial approximation: it stays libm's `tanf`, which
/// reduces its argument itself.)
template <typename TrigOp>
struct ReduceTrigArgument : public OpRewritePattern<TrigOp> {
  ReduceTrigArgument(MLIRContext *context, double period)
      : OpRewritePattern<TrigOp>(context), period(period) {}

  LogicalResult matchAndRewrite(TrigOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32() || op->hasAttr(kReducedAttr))
      return failure();
    Location loc = op.getLoc();
    Type f64 = rewriter.getF64Type();
    Type wide = f64;
    if (auto vector = dyn_cast<VectorType>(type))
      wide = vector.clone(f64);
    auto constant = [&](double value) -> Value {
      TypedAttr attr = rewriter.getF64FloatAttr(value);
      if (auto vector = dyn_cast<VectorType>(wide))
        attr = SplatElementsAttr::get(vector, attr);
      return arith::ConstantOp::create(rewriter, loc, wide, attr);
    };
    Value x = arith::ExtFOp::create(rewriter, loc, wide, op.getOperand());
    Value turns = math::RoundEvenOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc, x, constant(1.0 / period)));
    Value reduced = arith::SubFOp::create(
        rewriter, loc, x,
        arith::MulFOp::create(rewriter, loc, turns, constant(period)));
    Value narrow = arith::TruncFOp::create(rewriter, loc, type, reduced);
    auto replacement = TrigOp::create(rewriter, loc, narrow);
    replacement->setAttr(kReducedAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, replacement);
    return success();
  }

  double period;
};

struct ConvertKernelToCPUPass
    : public tc::impl::ConvertKernelToCPUPassBase<ConvertKernelToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<kernel::KernelOp> kernels(module.getOps<kernel::KernelOp>());
    for (kernel::KernelOp k : kernels)
      if (failed(KernelLowering(k).run()))
        return signalPassFailure();

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

    // Sines' and cosines' arguments reduced accurately first.
    {
      constexpr double kTwoPi = 6.283185307179586476925286766559;
      RewritePatternSet reduction(&getContext());
      reduction.add<ReduceTrigArgument<math::SinOp>,
                    ReduceTrigArgument<math::CosOp>>(&getContext(), kTwoPi);
      if (failed(applyPatternsGreedily(module, std::move(reduction))))
        return signalPassFailure();
    }

    // Polynomial approximations of exp, tanh, erf, sin, ... are plain
    // arithmetic, which LLVM vectorizes; libm calls would not be.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();

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
