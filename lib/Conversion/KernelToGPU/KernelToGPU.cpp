//===- KernelToGPU.cpp - lower kernels to gpu.func kernels ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "tc/Dialect/Kernel/Utils/KernelLoops.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Kernel/Utils/Checks.h"
#include "tc/Dialect/Prim/IR/PrimDialect.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTKERNELTOGPUPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;

namespace {

constexpr StringLiteral kKernelModuleName = "tc_kernels";
constexpr int64_t kRowsPerThreadBlock = 256;
/// How many strided iterations a thread keeps in flight: its loads of
/// several iterations are issued before their first use.
constexpr uint64_t kUnroll = 4;
/// Pointwise kernels with fewer groups of `vector-width` points than this
/// keep one thread per point: they need every thread they can get.
/// Kernels of per-thread reductions grouped by columns too: with 20480
/// groups (GRN's norm over 196 pixels of 163840 channels, ConvNeXt-V2's
/// batch 128) the H200 read 0.7 TB/s, a thread per channel more.
constexpr int64_t kMinVectorThreads = 1 << 15;
/// Rows of reductions of up to this many groups of `vector-width` per thread
/// are unrolled in full: a thread's share of the row stays in registers from
/// one pass over it to the next (a softmax reads its input once). Pointwise
/// rows are not: their unrolled bodies would only raise register pressure.
constexpr int64_t kMaxUnrolledGroups = 4;

/// The pass options that shape schedules.
struct ScheduleOptions {
  int64_t maxBlockSize;
  int64_t maxReductionBlockSize;
  /// Consecutive elements a thread handles together in a contiguous row:
  /// with 4, four 32-bit loads the backend merges into one 16-byte load.
  int64_t vectorWidth;
  /// Whether bodies holding trigonometry may be copied (unrolled or
  /// vectorized): their slow path (Payne-Hanek argument reduction, a
  /// local-memory table) multiplies code size and register pressure.
  bool replicateTrig;
  /// The unroll factor of reductions a thread runs alone.
  int64_t threadUnroll;
  /// Whether such reductions along columns run in groups of neighbouring
  /// columns (`hasColumnGroups`).
  bool columnGroups;
  /// Whether rows read once run a warp per row (kMinStreamRows).
  bool streamRows;
  /// The unroll factor of such a warp's loop over its groups.
  int64_t streamUnroll;
};

/// Whether every access in the reductions of `body` is to elements of at
/// most 16 bits (and there is one).
static bool hasHalfLoopAccesses(Block &body) {
  unsigned widest = 0;
  body.walk([&](Operation *op) {
    if (!op->getParentOfType<kernel::ReduceOp>())
      return;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      widest = std::max(widest, load.getType().getIntOrFloatBitWidth());
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      widest = std::max(
          widest, store.getValueToStore().getType().getIntOrFloatBitWidth());
  });
  return widest > 0 && widest <= 16;
}

/// Whether `body` may be replicated for unrolling or vectorization.
static bool isCheapToReplicate(Block &body, const ScheduleOptions &options) {
  if (options.replicateTrig)
    return true;
  bool cheap = true;
  body.walk([&](Operation *op) {
    if (isa<math::SinOp, math::CosOp, math::TanOp>(op))
      cheap = false;
  });
  return cheap;
}

/// Bytes the whole GPU should have in flight to stream from memory at its
/// bandwidth: bandwidth times latency, ~3.4 MB on the H200 (4.8 TB/s, ~0.7
/// us), rounded up.
constexpr int64_t kBytesInFlight = 4 << 20;
/// The most a thread's reduction is unrolled (code size, registers).
constexpr int64_t kMaxThreadUnroll = 16;

/// The unroll factor of `forOp`, a reduction each of `threads` threads
/// runs alone: `thread-unroll`, doubled while the loads of that many
/// iterations over all threads stay below kBytesInFlight. GRN's norm over
/// 196 pixels of 163840 bf16 channels at ConvNeXt-V2's batch 128 has 1.3
/// MB in flight with 4 (750 GB/s); 16 puts 5 MB there.
static int64_t threadUnrollFactor(scf::ForOp forOp, int64_t threads,
                                  const ScheduleOptions &options) {
  int64_t bytes = 0;
  forOp.getBody()->walk([&](memref::LoadOp load) {
    bytes += llvm::divideCeil(load.getType().getIntOrFloatBitWidth(), 8);
  });
  int64_t factor = options.threadUnroll;
  while (factor < kMaxThreadUnroll && bytes > 0 &&
         threads * factor * bytes < kBytesInFlight)
    factor *= 2;
  return factor;
}

/// The widest element, in bits, that `body` loads or stores (0: none).
static unsigned widestAccessBits(Block &body) {
  unsigned widest = 0;
  body.walk([&](Operation *op) {
    Type type;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      type = load.getType();
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      type = store.getValueToStore().getType();
    if (type)
      widest = std::max(widest, type.getIntOrFloatBitWidth());
  });
  return widest;
}

/// The narrowest element, in bits, that the reductions of `body` load (0:
/// none).
static unsigned narrowestReducedLoadBits(Block &body) {
  unsigned narrowest = 0;
  body.walk([&](memref::LoadOp load) {
    if (!load->getParentOfType<kernel::ReduceOp>())
      return;
    unsigned bits = load.getType().getIntOrFloatBitWidth();
    narrowest = narrowest ? std::min(narrowest, bits) : bits;
  });
  return narrowest;
}

/// Whether every access in `body` is to elements of at most 32 bits.
static bool hasNarrowAccesses(Block &body) {
  return widestAccessBits(body) <= 32;
}

/// Whether every access in `body` is to elements of at most 16 bits (and
/// there is one): bf16 and f16 kernels, whose groups of `vector-width`
/// elements are half as many bytes as f32 ones.
static bool hasHalfAccesses(Block &body) {
  unsigned widest = widestAccessBits(body);
  return widest > 0 && widest <= 16;
}

/// Whether every store of `body` (the body of a loop along a row) writes
/// the element of the loop's index in a row of a multiple of `width`
/// elements: then each thread's group of `width` stores, at a multiple of
/// `width` from the row's start, merges into one access. A row of another
/// length (a 50257-entry vocabulary) starts anywhere in a vector, and its
/// groups' stores stay single: a warp's store then writes a sixteenth of
/// each 32-byte sector it touches, where the block-strided loop writes
/// whole sectors (a softmax over [16384, 50257] bf16 took 3.0 ms in groups
/// and a tail on the H200, 2.1 ms strided). Loads that do not merge cost
/// less (the L1 cache serves the rest of the sector to the next ones): a
/// pad of those rows to 50264 took 0.85 ms in groups, 1.7 strided.
static bool hasRowAlignedStores(Block &body, int64_t width) {
  Value iv = body.getArgument(0);
  WalkResult result = body.walk([&](memref::StoreOp store) {
    MemRefType type = store.getMemRefType();
    ValueRange indices = store.getIndices();
    if (indices.empty() || indices.back() != iv ||
        !type.getLayout().isIdentity() || !type.hasStaticShape() ||
        (type.getRank() > 1 && type.getShape().back() % width))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Pointwise rows shorter than this run as one thread per point: a block per
/// row would have fewer than 128 threads, a few elements each.
constexpr int64_t kMinPointwiseRow = 512;

/// Whether `op` only stores constants to 0-d buffers where a condition
/// holds (an index check's flag): running it more often changes nothing.
static bool isFlagStore(Operation &op) {
  auto ifOp = dyn_cast<scf::IfOp>(op);
  if (!ifOp || !ifOp.getElseRegion().empty() || ifOp.getNumResults() != 0)
    return false;
  for (Operation &inner : ifOp.thenBlock()->without_terminator()) {
    if (matchPattern(&inner, m_Constant()))
      continue;
    auto store = dyn_cast<memref::StoreOp>(inner);
    if (!store || !store.getIndices().empty() ||
        !matchPattern(store.getValue(), m_Constant()))
      return false;
  }
  return true;
}

/// Fewer rows than this, walked across the buffers (which runs a thread
/// per row, see chooseSchedule), leave the GPU idle: each thread loops over
/// its row alone. visformer's channels-first f32 gradient written
/// channels-last bf16, [128, 768, 7, 7]: 6272 threads looping 768 strided
/// loads, 1.9 ms for 29 MB on the H200; EfficientNet's [128, 1152, 1, 1]:
/// 128 threads, 0.46 ms.
constexpr int64_t kMinThreadRows = 8192;

/// A pointwise kernel over short rows, over fewer than `minRows` rows, or
/// over fewer than kMinThreadRows rows its loop walks across the buffers
/// (one top-level `kernel.loop` and no reduction), becomes a kernel over
/// points: the loop's dimension joins the
/// domain, and what the row computed once (a channel's scale and shift)
/// each point computes. Rows are short in convolutional networks (56 or 7
/// elements): a block per row would leave most threads of each block idle,
/// while one thread per point (or per group of `vector-width` points) fills
/// blocks and coalesces across rows. A transposing kernel over few rows
/// trades its coalesced reads for a thread per element (its writes along
/// the loop coalesce instead).
static void flattenPointwiseRows(kernel::KernelOp kernel, int64_t minRows) {
  Block &body = kernel.getBody().front();
  kernel::LoopOp loop;
  for (Operation &op : body) {
    if (auto nested = dyn_cast<kernel::LoopOp>(op)) {
      if (loop)
        return;
      loop = nested;
      continue;
    }
    // A top-level op that writes would run once per point instead of once
    // per row (harmless for an index check's flag: a constant stored where
    // a condition holds, tc-fuse-index-checks).
    if (!isa<memref::LoadOp, kernel::ReturnOp>(op) &&
        !isMemoryEffectFree(&op) && !isFlagStore(op))
      return;
  }
  APInt size;
  int64_t rows = 1;
  for (int64_t extent : kernel.getDomain())
    rows = ShapedType::isDynamic(extent) ? minRows : rows * extent;
  if (!loop || !matchPattern(loop.getSize(), m_ConstantInt(&size)))
    return;
  if (size.getSExtValue() >= kMinPointwiseRow && rows >= minRows) {
    kernel::AccessWeights walked =
        kernel::innermostAccessWeights(loop.getBody().getArgument(0));
    // chooseSchedule's test for a block per row.
    bool coalesced =
        walked.contiguous > 0 && walked.contiguous >= walked.strided;
    if (coalesced || rows >= kMinThreadRows)
      return;
  }
  bool nested = false;
  loop.getBody().walk([&](Operation *op) {
    nested |= isa<kernel::LoopOp, kernel::ReduceOp>(op);
  });
  if (nested)
    return;
  SmallVector<int64_t> domain(kernel.getDomain());
  domain.push_back(size.getSExtValue());
  kernel.setDomain(domain);
  OpBuilder b(loop);
  Value point = kernel::IndexOp::create(b, loop.getLoc(), b.getIndexType(),
                                        domain.size() - 1);
  Block &row = loop.getBody().front();
  row.getArgument(0).replaceAllUsesWith(point);
  for (Operation &op : llvm::make_early_inc_range(row.without_terminator()))
    op.moveBefore(loop);
  loop.erase();
}

// Schedules (whether to vectorize, how wide a block) are chosen for the
// graph's symbolic size at its hint.
using prim::kSymbolHint;

/// The launch configuration chosen for one kernel.
struct GPUSchedule {
  bool rowPerBlock = false;
  int64_t block = kRowsPerThreadBlock;
  /// Row per block: the threads that share a row, and the rows a block
  /// handles (a warp each when rows are short; see kPackedRows).
  int64_t rowThreads = kRowsPerThreadBlock;
  int64_t rowsPerBlock = 1;
  /// Blocks; with the symbolic size, blocks per unit of it (a block per
  /// row), or threads per unit of it (a thread per point or group).
  int64_t grid = 1;
  bool symbolic = false;
  /// Row per thread: consecutive innermost points each thread handles.
  int64_t pointsPerThread = 1;
  /// Consecutive elements a thread handles together: `vector-width`, twice
  /// that where every access is 16-bit (16-byte stores of bf16 or f16, as
  /// f32 gets: on the H100, GPT-2's tanh GELU over 4096x3072 bf16 took 23
  /// us with groups of 4 and takes 18 us, Inductor's 19; a SiLU-gated
  /// product 26 -> 23 us; benchmarks/bench_half_rows.py).
  int64_t vectorWidth = 1;
  /// Threads that have work: their ids are below this many (times the
  /// symbolic size when the domain has it).
  int64_t threads = 1;
  /// Row per block, a warp per row: each thread streams several groups of
  /// the row, their loads `stream-unroll` groups ahead (see kMinStreamRows).
  bool streamRows = false;
};

/// Kernels of at least this many rows that read each row once (row
/// reductions and no loop along the row: a matrix-vector product's dot
/// products, tc-skinny-products') and whose rows are whole groups of at
/// least 8 per lane (2048 bf16 elements) run a warp per row, packed
/// kPackedRows to a block, each lane's groups unrolled `stream-unroll`
/// deep: its loads of that many 16-byte groups in flight at once, its partial
/// combined by shuffles. A block per row of one 16-byte group per thread
/// (the matrix-vector products of a decode step, 2048 to 32000 rows of
/// 2048 or 5632 bf16) waited on each load and on the block's barriers:
/// 2.0-3.4 TB/s on the H200, 2.3-4.3 so (8 deep: no faster).
constexpr int64_t kMinStreamRows = 2048;
constexpr int64_t kMinStreamGroups = 8;

/// Rows that one warp covers are packed this many to a block, a warp each:
/// a block of one warp per row (BERT's 128-wide attention rows in f32,
/// CNNs' pooling windows) leaves the SM at half its threads (32 resident
/// blocks at most) and reduces through shared memory and barriers, where a
/// warp's shuffles suffice.
constexpr int64_t kPackedRows = 4;
constexpr int64_t kWarpSize = 32;
/// Rows shorter than a warp's sweep share a warp: a power of two of at
/// least this many threads each, their reductions shuffles within those
/// lanes. A warp per row of 49 (Swin's 7x7 windows' softmax, bf16) left
/// 25 of its 32 threads idle: 0.2 ms a layer at batch 128 on the H200,
/// Inductor's 0.09.
constexpr int64_t kMinRowThreads = 8;

/// Block reductions are shuffles of 32-bit values, two for a 64-bit one
/// (upstream's `populateGpuShufflePatterns`, applied after the lowering):
/// an int64 sum along a row (a position count, the cumsum of an attention
/// mask) is a row per block too, where a thread walking the row alone took
/// 30 ns an element.
static bool hasBlockReduction(Type type) {
  return type.isF32() || type.isF64() || type.isInteger(32) ||
         type.isInteger(64);
}

/// Whether `v` is computed from `index` (through the kernel body's ops).
static bool dependsOn(Value v, Value index) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (value == index)
      return true;
    Operation *def = value.getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (auto other = dyn_cast<kernel::IndexOp>(def)) {
      if (index.getDefiningOp<kernel::IndexOp>() &&
          other.getDim() ==
              index.getDefiningOp<kernel::IndexOp>().getDim())
        return true;
      continue;
    }
    llvm::append_range(work, def->getOperands());
  }
  return false;
}

/// Whether a thread of a kernel with reductions may handle `width`
/// neighbouring points of the innermost domain dimension side by side
/// (column groups): every access in a reduction that depends on that
/// dimension's index takes it as its innermost index, unchanged (so the
/// copies' loads sit next to each other in memory, and the backend merges
/// them), none through another index; the body is reductions (their
/// bodies free of stores), loads, stores and pure scalar ops at the top
/// level, so that the copies' reductions can run as one loop
/// (`groupSiblingLoops`). A
/// column sum of a channels-last tensor read one 16-bit element per thread
/// and row: 0.8 TB/s on the H200 for ConvNeXt-V2's GRN weight gradient.
static bool hasColumnGroups(kernel::KernelOp kernel) {
  ArrayRef<int64_t> domain = kernel.getDomain();
  if (domain.empty())
    return false;
  Block &body = kernel.getBody().front();
  Value index;
  for (Operation &op : body)
    if (auto idx = dyn_cast<kernel::IndexOp>(op))
      if (idx.getDim() == domain.size() - 1)
        index = idx.getResult();
  if (!index)
    return false;
  bool ok = true, reads = false;
  for (Operation &op : body.without_terminator()) {
    if (auto reduce = dyn_cast<kernel::ReduceOp>(op)) {
      reduce.getBody().walk([&](Operation *inner) {
        if (isa<memref::StoreOp>(inner) ||
            (inner->getNumRegions() > 0 && !isa<kernel::ReduceOp>(inner)))
          ok = false;
      });
      continue;
    }
    if (isa<kernel::IndexOp, memref::LoadOp, memref::StoreOp>(op))
      continue;
    if (op.getNumRegions() > 0 || !isPure(&op))
      return false;
  }
  if (!ok)
    return false;
  // The accesses in the reductions' loops (those at the top level run once
  // per point: a partial stored in its column's row).
  kernel.getBody().walk([&](Operation *op) {
    if (!op->getParentOfType<kernel::ReduceOp>())
      return;
    OperandRange indices = op->getOperands();
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      indices = load.getIndices();
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      indices = store.getIndices();
    } else {
      return;
    }
    if (indices.empty())
      return;
    for (Value i : indices.drop_back())
      if (dependsOn(i, index))
        ok = false;
    Value last = indices.back();
    if (last == index) {
      reads |= isa<memref::LoadOp>(op);
      return;
    }
    auto idx = last.getDefiningOp<kernel::IndexOp>();
    if (idx && idx.getDim() == domain.size() - 1) {
      reads |= isa<memref::LoadOp>(op);
      return;
    }
    if (dependsOn(last, index))
      ok = false;
  });
  return ok && reads;
}

static GPUSchedule chooseSchedule(kernel::KernelOp kernel,
                                  const ScheduleOptions &options) {
  GPUSchedule schedule;
  schedule.symbolic = hasSymbolicDomain(kernel);
  // Rows per unit of the symbolic size, and as many as the schedule
  // assumes it has.
  int64_t rowsPerSymbol = getPointsPerSymbol(kernel);
  int64_t rows =
      schedule.symbolic ? rowsPerSymbol * kSymbolHint : rowsPerSymbol;
  int64_t longest = 0;
  bool reducible = true, pointwise = true;
  // The bytes the loops and reductions walk along their buffers' innermost
  // dimension and across it, over the whole kernel: a row per block pays
  // off when the rows are contiguous. A layer norm over the channels of an
  // NCHW tensor written channels-last (ConvNeXt's) reads its input three
  // times across the rows and writes it once along them: as a row per
  // block each warp's loads touched 32 sectors (9 ms where 0.05 would do
  // on the H200); a thread per point reads neighbouring points' elements
  // side by side instead.
  kernel::AccessWeights weights;
  int64_t maxBlockSize = options.maxBlockSize;
  Block &body = kernel.getBody().front();
  for (Operation &op : body) {
    if (isa<kernel::LoopOp, kernel::ReduceOp>(op))
      pointwise = false;
    Value size, iv;
    if (auto loop = dyn_cast<kernel::LoopOp>(op)) {
      size = loop.getSize();
      iv = loop.getBody().getArgument(0);
    } else if (auto reduce = dyn_cast<kernel::ReduceOp>(op)) {
      size = reduce.getSize();
      iv = reduce.getBody().getArgument(0);
      reducible &= hasBlockReduction(reduce.getResult().getType());
      maxBlockSize = std::min(maxBlockSize, options.maxReductionBlockSize);
    } else {
      continue;
    }
    APInt value;
    int64_t trips = matchPattern(size, m_ConstantInt(&value))
                        ? value.getSExtValue()
                        : maxBlockSize;
    longest = std::max(longest, trips);
    kernel::AccessWeights walked = kernel::innermostAccessWeights(iv);
    weights.contiguous += walked.contiguous;
    weights.strided += walked.strided;
  }
  bool coalesced =
      weights.contiguous > 0 && weights.contiguous >= weights.strided;
  schedule.vectorWidth = options.vectorWidth;
  if (options.vectorWidth >= 2 && hasHalfAccesses(body))
    schedule.vectorWidth = 2 * options.vectorWidth;
  schedule.rowPerBlock = coalesced && reducible && longest > 1;
  bool readsRowsOnce = llvm::none_of(
      body, [](Operation &op) { return isa<kernel::LoopOp>(op); });
  int64_t warpChunk = kWarpSize * schedule.vectorWidth;
  if (options.streamRows && schedule.rowPerBlock && readsRowsOnce &&
      !schedule.symbolic &&
      schedule.vectorWidth >= 2 && rows >= kMinStreamRows &&
      longest % warpChunk == 0 && longest / warpChunk >= kMinStreamGroups &&
      rowsPerSymbol % kPackedRows == 0 &&
      kPackedRows * kWarpSize <= maxBlockSize) {
    schedule.streamRows = true;
    // A row of 8-bit elements (int8 weights dequantized in the product's
    // kernel) streams in 16-byte groups of its own, not in the 8-byte
    // halves its wider operand's groups give it: half the bytes in flight
    // a load. Where the doubled groups still divide the row.
    if (narrowestReducedLoadBits(body) == 8 &&
        longest % (2 * warpChunk) == 0)
      schedule.vectorWidth *= 2;
    schedule.rowThreads = kWarpSize;
    schedule.rowsPerBlock = kPackedRows;
    schedule.block = kPackedRows * kWarpSize;
    schedule.grid = rowsPerSymbol / kPackedRows;
    return schedule;
  }
  if (schedule.rowPerBlock) {
    // A few elements per thread (a group of the vector width): enough
    // work to hide latency, enough threads to cover the row in one sweep
    // at the common sizes.
    int64_t threads = llvm::divideCeil(
        longest, std::max<int64_t>(4, schedule.vectorWidth));
    int64_t lanes = std::max<int64_t>(kMinRowThreads,
                                      llvm::PowerOf2Ceil(threads));
    threads = llvm::alignTo(std::max<int64_t>(threads, kWarpSize), kWarpSize);
    schedule.block = schedule.rowThreads = std::min(threads, maxBlockSize);
    schedule.grid = rowsPerSymbol;
    // Whole blocks of rows, so no block has a warp without a row (nor a
    // warp a lane group without one: the shuffles need every lane), and
    // enough blocks to fill the GPU several times over.
    if (schedule.rowThreads != kWarpSize ||
        kPackedRows * kWarpSize > maxBlockSize)
      return schedule;
    for (int64_t rowThreads : {lanes, kWarpSize}) {
      if (rowThreads > kWarpSize)
        continue;
      int64_t packed = kPackedRows * kWarpSize / rowThreads;
      if (rowsPerSymbol % packed == 0 && rows >= 1024 * packed) {
        schedule.rowThreads = rowThreads;
        schedule.rowsPerBlock = packed;
        schedule.block = kPackedRows * kWarpSize;
        schedule.grid = rowsPerSymbol / packed;
        break;
      }
    }
    return schedule;
  }
  ArrayRef<int64_t> domain = kernel.getDomain();
  int64_t width = schedule.vectorWidth;
  // Pointwise kernels, and kernels of reductions a thread runs alone
  // whose innermost points read neighbouring elements (column groups: as
  // wide as their loops' loads make 16 bytes, whatever the partials they
  // store).
  bool grouped = !pointwise && options.columnGroups && hasColumnGroups(kernel);
  if (grouped && options.vectorWidth >= 2 && hasHalfLoopAccesses(body))
    width = 2 * options.vectorWidth;
  if ((pointwise || grouped) &&
      width > 1 && !domain.empty() &&
      !ShapedType::isDynamic(domain.back()) && domain.back() % width == 0 &&
      rows / width >= kMinVectorThreads &&
      hasNarrowAccesses(body) && isCheapToReplicate(body, options)) {
    schedule.pointsPerThread = width;
    rows /= width;
    rowsPerSymbol /= width;
  }
  schedule.block = std::min(kRowsPerThreadBlock,
                            std::max<int64_t>(32, llvm::alignTo(rows, 32)));
  schedule.threads = rowsPerSymbol;
  schedule.grid = schedule.symbolic
                      ? rowsPerSymbol
                      : llvm::divideCeil(rows, schedule.block);
  return schedule;
}


/// Moves the pure ops and loads of `block` after `head` that `op` needs
/// (transitively) before `head`; false (nothing moved) when one is neither,
/// or when a load would move above a store to its buffer.
static bool hoistDependencies(Operation *op, Operation *head) {
  Block *block = head->getBlock();
  SmallVector<Value> work(op->getOperands());
  SetVector<Value> above;
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, above);
  llvm::append_range(work, above);
  llvm::SmallPtrSet<Operation *, 16> needed;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != block || def->isBeforeInBlock(head) ||
        def == head || !needed.insert(def).second)
      continue;
    if (def->getNumRegions() > 0)
      return false;
    if (!isPure(def) && !isa<memref::LoadOp>(def))
      return false;
    llvm::append_range(work, def->getOperands());
  }
  // A load keeps its place relative to the stores to its buffer, and `op`
  // reads no buffer stored to between `head` and it.
  auto storedBefore = [&](Operation *until, Value memref) {
    for (Operation *it = head; it != until; it = it->getNextNode())
      if (auto store = dyn_cast<memref::StoreOp>(it))
        if (store.getMemRef() == memref)
          return true;
    return false;
  };
  for (Operation *def : needed)
    if (auto load = dyn_cast<memref::LoadOp>(def))
      if (storedBefore(def, load.getMemRef()))
        return false;
  bool reads = false;
  op->walk([&](memref::LoadOp load) {
    reads |= storedBefore(op, load.getMemRef());
  });
  if (reads)
    return false;
  SmallVector<Operation *> ordered(needed.begin(), needed.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  for (Operation *def : ordered)
    def->moveBefore(head);
  return true;
}

/// Merges the reduction loops of `block` (scf.for with iteration values)
/// that share their bounds into the first of them, one loop whose body
/// is theirs side by side (each keeps its own values and order); returns
/// the loops left. The loops only read memory (a thread's reductions),
/// so running their iterations interleaved changes nothing.
static SmallVector<scf::ForOp> groupSiblingLoops(Block &block) {
  SmallVector<scf::ForOp> loops;
  for (Operation &op : block)
    if (auto forOp = dyn_cast<scf::ForOp>(op))
      if (forOp.getNumRegionIterArgs() > 0)
        loops.push_back(forOp);
  auto sameBounds = [](scf::ForOp a, scf::ForOp b) {
    auto same = [](Value x, Value y) {
      std::optional<int64_t> cx = getConstantIntValue(x);
      std::optional<int64_t> cy = getConstantIntValue(y);
      return x == y || (cx && cy && *cx == *cy);
    };
    return same(a.getLowerBound(), b.getLowerBound()) &&
           same(a.getUpperBound(), b.getUpperBound()) &&
           same(a.getStep(), b.getStep());
  };
  SmallVector<SmallVector<scf::ForOp>> groups;
  for (scf::ForOp loop : loops) {
    bool placed = false;
    for (SmallVector<scf::ForOp> &group : groups) {
      if (!sameBounds(group.front(), loop) ||
          !hoistDependencies(loop, group.front()))
        continue;
      group.push_back(loop);
      placed = true;
      break;
    }
    if (!placed)
      groups.push_back({loop});
  }
  SmallVector<scf::ForOp> result;
  for (SmallVector<scf::ForOp> &group : groups) {
    scf::ForOp head = group.front();
    if (group.size() == 1) {
      result.push_back(head);
      continue;
    }
    SmallVector<Value> inits;
    for (scf::ForOp loop : group)
      llvm::append_range(inits, loop.getInitArgs());
    OpBuilder b(head);
    auto merged =
        scf::ForOp::create(b, head.getLoc(), head.getLowerBound(),
                           head.getUpperBound(), head.getStep(), inits);
    OpBuilder inner = OpBuilder::atBlockBegin(merged.getBody());
    SmallVector<Value> yields;
    unsigned offset = 0;
    for (scf::ForOp loop : group) {
      IRMapping map;
      map.map(loop.getInductionVar(), merged.getInductionVar());
      for (auto [from, to] :
           llvm::zip(loop.getRegionIterArgs(),
                     merged.getRegionIterArgs().slice(
                         offset, loop.getNumRegionIterArgs())))
        map.map(from, to);
      for (Operation &op : loop.getBody()->without_terminator())
        inner.clone(op, map);
      for (Value v : loop.getBody()->getTerminator()->getOperands())
        yields.push_back(map.lookupOrDefault(v));
      offset += loop.getNumRegionIterArgs();
    }
    scf::YieldOp::create(inner, head.getLoc(), yields);
    offset = 0;
    for (scf::ForOp loop : group) {
      loop.replaceAllUsesWith(merged.getResults().slice(
          offset, loop.getNumResults()));
      offset += loop.getNumResults();
      loop.erase();
    }
    result.push_back(merged);
  }
  return result;
}

class GPUKernelLowering : public KernelLoopLowering {
public:
  GPUKernelLowering(kernel::KernelOp kernel, GPUSchedule schedule,
                    const ScheduleOptions &options)
      : KernelLoopLowering(kernel, /*reassociate=*/false), schedule(schedule),
        options(options) {}
  FailureOr<gpu::GPUFuncOp> run(gpu::GPUModuleOp module);

private:
  /// Unrolls `reductions`, loops each thread runs alone, by
  /// `threadUnrollFactor` (those of at least twice as many trips).
  LogicalResult unrollThreadReductions(ArrayRef<scf::ForOp> reductions) {
    int64_t threads =
        schedule.threads * (schedule.symbolic ? kSymbolHint : int64_t(1));
    for (scf::ForOp forOp : reductions) {
      std::optional<APInt> trips = forOp.getStaticTripCount();
      int64_t factor = threadUnrollFactor(forOp, threads, options);
      if (trips && trips->getSExtValue() >= 2 * factor &&
          failed(loopUnrollByFactor(forOp, factor)))
        return failure();
    }
    return success();
  }

  /// Row-per-block body: threads stride over the top-level loops.
  LogicalResult lowerRowPerBlock(Block &block, OpBuilder &b);
  /// A top-level loop or reduction over a contiguous row the block divides
  /// into groups of `vector-width`: thread `tid` handles elements
  /// `(g * block + tid) * width + u` for `u` < `width`, the copies side
  /// by side. With `kind`, folds the yielded values from `init` and returns
  /// the thread's partial.
  FailureOr<Value> lowerVectorized(Block &body, int64_t groups, OpBuilder &b,
                                   Location loc,
                                   std::optional<kernel::CombinerKind> kind,
                                   Value init);
  /// Clones `copies.size()` copies of `body` (but its terminator) at `b`,
  /// op by op: the copies' loads sit side by side, where the backend merges
  /// them into vector loads even when the body branches (libdevice's sin
  /// and cos). `copies[u]` holds what copy `u` sees beyond `mapping`
  /// (its induction variable), `points[u]` its domain point. Falls back to
  /// one copy after the other for bodies with nested loops.
  LogicalResult lowerCopies(Block &body, OpBuilder &b,
                            MutableArrayRef<IRMapping> copies,
                            ArrayRef<SmallVector<Value>> points);

  /// Combines every thread's `partial` into one value all threads get:
  /// butterfly shuffles within each warp, then each warp's result through
  /// shared memory. Blocks are whole warps (the options check it), so the
  /// shuffles need no partial-warp cases; that keeps the code small, which
  /// is what PTX compile time (ptxas or the driver's JIT) grows with.
  Value lowerBlockReduce(OpBuilder &b, Location loc, kernel::CombinerKind kind,
                         Value partial);

  GPUSchedule schedule;
  const ScheduleOptions &options;
  gpu::GPUFuncOp func;
  Value tid, blockSize;
};

Value GPUKernelLowering::lowerBlockReduce(OpBuilder &b, Location loc,
                                          kernel::CombinerKind kind,
                                          Value partial) {
  Value value = partial;
  // Rows that share a warp stay within their lanes (an aligned group of
  // `rowThreads`): XOR offsets below it.
  int64_t lanes = std::min(schedule.rowThreads, kWarpSize);
  for (int32_t offset = lanes / 2; offset >= 1; offset /= 2) {
    auto shuffle = gpu::ShuffleOp::create(b, loc, value, offset, kWarpSize,
                                          gpu::ShuffleMode::XOR);
    value = buildCombine(b, loc, kind, value, shuffle.getShuffleResult(),
                         /*reassociate=*/false);
  }
  int64_t warps = schedule.rowThreads / kWarpSize;
  if (warps <= 1)
    return value;
  // One slot per warp; each reduction has its own, so no barrier is needed
  // before the next one writes.
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  Value slots = func.addWorkgroupAttribution(
      MemRefType::get({warps}, value.getType(), MemRefLayoutAttrInterface{},
                      workgroup),
      loc);
  // The backend merges the reads of neighbouring slots into vector loads
  // (ld.shared.v4.b32 for four f32 slots) that need the array aligned to
  // their width; left to its element's alignment, a second array can start
  // at a 4- or 8-byte boundary: a misaligned address, which kills the CUDA
  // context.
  func.setWorkgroupAttributionAttr(
      func.getNumWorkgroupAttributions() - 1,
      LLVM::LLVMDialect::getAlignAttrName(),
      b.getI64IntegerAttr(kernel::kGPUBufferAlignment));
  Value warpSize = arith::ConstantIndexOp::create(b, loc, kWarpSize);
  Value lane = arith::RemUIOp::create(b, loc, tid, warpSize);
  Value warp = arith::DivUIOp::create(b, loc, tid, warpSize);
  Value isFirstLane = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, lane,
      arith::ConstantIndexOp::create(b, loc, 0));
  auto ifOp = scf::IfOp::create(b, loc, isFirstLane, /*withElse=*/false);
  OpBuilder inner = ifOp.getThenBodyBuilder();
  memref::StoreOp::create(inner, loc, value, slots, warp);
  gpu::BarrierOp::create(b, loc);
  // Every thread folds the warps' results (broadcast reads of a few words).
  Value total;
  for (int64_t w = 0; w < warps; ++w) {
    Value slot = memref::LoadOp::create(
        b, loc, slots, ValueRange{arith::ConstantIndexOp::create(b, loc, w)});
    total = w == 0 ? slot
                   : buildCombine(b, loc, kind, total, slot,
                                  /*reassociate=*/false);
  }
  return total;
}

/// The bounds of a block-strided loop over `size` elements. When the block
/// divides `size`, the loop runs a constant `size / block` times with index
/// `i * block + tid`, which LLVM unrolls into independent loads (memory-level
/// parallelism); otherwise it runs from `tid` to `size` by `block`.
struct StridedBounds {
  Value lb, ub, step;
  bool scaled;
};

LogicalResult
GPUKernelLowering::lowerCopies(Block &body, OpBuilder &b,
                               MutableArrayRef<IRMapping> copies,
                               ArrayRef<SmallVector<Value>> points) {
  bool flat = llvm::all_of(body.without_terminator(), [](Operation &op) {
    return op.getNumRegions() == 0;
  });
  if (!flat) {
    for (auto [copy, at] : llvm::zip(copies, points)) {
      for (auto [from, to] : copy.getValueMap())
        mapping.map(from, to);
      point.assign(at.begin(), at.end());
      if (failed(lowerBlock(body, b)))
        return failure();
      for (Operation &op : body)
        for (Value result : op.getResults())
          copy.map(result, mapping.lookup(result));
    }
    return success();
  }
  for (Operation &op : body.without_terminator()) {
    for (auto [copy, at] : llvm::zip(copies, points)) {
      if (auto index = dyn_cast<kernel::IndexOp>(op)) {
        copy.map(index.getResult(), at[index.getDim()]);
        continue;
      }
      Operation *clone = b.clone(op, copy);
      // Operands defined before the body come from the shared mapping.
      for (OpOperand &operand : clone->getOpOperands())
        if (Value mapped = mapping.lookupOrNull(operand.get()))
          operand.set(mapped);
    }
  }
  return success();
}

FailureOr<Value> GPUKernelLowering::lowerVectorized(
    Block &body, int64_t groups, OpBuilder &b, Location loc,
    std::optional<kernel::CombinerKind> kind, Value init) {
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, groups);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> inits;
  if (kind)
    inits.push_back(init);
  auto forOp = scf::ForOp::create(b, loc, lb, ub, step, inits);
  OpBuilder inner = OpBuilder::atBlockBegin(forOp.getBody());
  if (!kind)
    inner.setInsertionPoint(forOp.getBody()->getTerminator());
  int64_t width = schedule.vectorWidth;
  Value vector = arith::ConstantIndexOp::create(inner, loc, width);
  Value first = arith::AddIOp::create(
      inner, loc,
      arith::MulIOp::create(inner, loc, forOp.getInductionVar(), blockSize),
      tid);
  first = arith::MulIOp::create(inner, loc, first, vector);
  Value acc = kind ? forOp.getRegionIterArgs()[0] : Value();
  SmallVector<IRMapping> copies(width);
  for (int64_t u = 0; u < width; ++u) {
    Value offset = arith::ConstantIndexOp::create(inner, loc, u);
    copies[u].map(body.getArgument(0),
                  arith::AddIOp::create(inner, loc, first, offset));
  }
  SmallVector<SmallVector<Value>> points(width, point);
  if (failed(lowerCopies(body, inner, copies, points)))
    return failure();
  if (kind) {
    auto yield = cast<kernel::YieldOp>(body.getTerminator());
    Value yielded = yield.getValues()[0];
    for (IRMapping &copy : copies) {
      Value value = copy.lookupOrNull(yielded);
      acc = buildCombine(inner, loc, *kind, acc,
                         value ? value : mapping.lookup(yielded),
                         /*reassociate=*/false);
    }
  }
  if (kind) {
    scf::YieldOp::create(inner, loc, acc);
    return forOp.getResult(0);
  }
  return Value();
}

LogicalResult GPUKernelLowering::lowerRowPerBlock(Block &block, OpBuilder &b) {
  Value zero = arith::ConstantIndexOp::create(b, kernel.getLoc(), 0);
  Value one = arith::ConstantIndexOp::create(b, kernel.getLoc(), 1);
  auto bounds = [&](Value size) {
    APInt value;
    if (matchPattern(size, m_ConstantInt(&value)) &&
        value.getSExtValue() % schedule.rowThreads == 0) {
      Value trips = arith::ConstantIndexOp::create(
          b, kernel.getLoc(), value.getSExtValue() / schedule.rowThreads);
      return StridedBounds{zero, trips, one, true};
    }
    return StridedBounds{tid, size, blockSize, false};
  };
  // Groups of `vector-width` elements per thread over the row's first
  // `groups * chunk` elements, or 0 when the row is shorter than a chunk
  // (a block's threads times the width) or its body does not replicate.
  // The rest of a longer row, fewer than a chunk of elements, is a tail
  // (`tailStart`) the threads stride over one element at a time: rows
  // longer than the largest block's chunk rarely divide by it (a 32000-
  // entry vocabulary's softmax and its gradient, 8192 elements a chunk),
  // and took the strided loop whole. A row with a tail takes groups only
  // where its stores merge (hasRowAlignedStores); one that divides into
  // chunks is a row of an aligned buffer.
  int64_t chunk = schedule.rowThreads * schedule.vectorWidth;
  auto vectorGroups = [&](Value size, Block &body) -> int64_t {
    APInt value;
    if (schedule.vectorWidth < 2 ||
        !matchPattern(size, m_ConstantInt(&value)) ||
        !isCheapToReplicate(body, options) ||
        !hasNarrowAccesses(body))
      return 0;
    if (value.getSExtValue() % chunk &&
        !hasRowAlignedStores(body, schedule.vectorWidth))
      return 0;
    return value.getSExtValue() / chunk;
  };
  // Where the tail after `groups` groups starts for this thread, or null
  // when the groups cover the row `size`.
  auto tailStart = [&](OpBuilder &ib, Location loc, Value size,
                       int64_t groups) -> Value {
    APInt value;
    if (!matchPattern(size, m_ConstantInt(&value)) ||
        value.getSExtValue() == groups * chunk)
      return Value();
    Value covered = arith::ConstantIndexOp::create(ib, loc, groups * chunk);
    return arith::AddIOp::create(ib, loc, covered, tid);
  };
  auto strided = [&](OpBuilder &ib, Location loc, Value iv) -> Value {
    Value base = arith::MulIOp::create(ib, loc, iv, blockSize);
    return arith::AddIOp::create(ib, loc, base, tid);
  };
  Value isLeader = arith::CmpIOp::create(b, kernel.getLoc(),
                                         arith::CmpIPredicate::eq, tid, zero);
  bool multiPass = llvm::any_of(
      block, [](Operation &op) { return isa<kernel::ReduceOp>(op); });
  auto unrollInFull = [&](int64_t groups) {
    return multiPass && groups <= kMaxUnrolledGroups;
  };
  for (Operation &op : block.without_terminator()) {
    Location loc = op.getLoc();
    if (auto index = dyn_cast<kernel::IndexOp>(op)) {
      mapping.map(index.getResult(), point[index.getDim()]);
      continue;
    }
    bool writes = false;
    op.walk([&](memref::StoreOp) { writes = true; });
    if (auto loop = dyn_cast<kernel::LoopOp>(op)) {
      Block &body = loop.getBody().front();
      Value size = mapping.lookup(loop.getSize());
      if (int64_t groups = vectorGroups(size, body)) {
        if (failed(lowerVectorized(body, groups, b, loc, std::nullopt, {})))
          return failure();
        if (unrollInFull(groups) &&
            failed(loopUnrollFull(
                cast<scf::ForOp>(*std::prev(b.getInsertionPoint())))))
          return failure();
        if (Value tail = tailStart(b, loc, size, groups))
          if (failed(lowerLoop(loop, b, tail, size, blockSize)))
            return failure();
        if (writes && &op != block.getTerminator()->getPrevNode())
          gpu::BarrierOp::create(b, loc);
        continue;
      }
      StridedBounds range = bounds(size);
      if (failed(lowerLoop(loop, b, range.lb, range.ub, range.step,
                           range.scaled ? IndexMap(strided) : nullptr)))
        return failure();
      // The loop just built; its trip count is constant.
      if (range.scaled && isCheapToReplicate(body, options) &&
          failed(loopUnrollByFactor(
              cast<scf::ForOp>(*std::prev(b.getInsertionPoint())), kUnroll)))
        return failure();
    } else if (auto reduce = dyn_cast<kernel::ReduceOp>(op)) {
      // Each thread folds its strided share from the identity; the block
      // combines the partials, and the init joins once at the end.
      Type type = reduce.getResult().getType();
      Value identity =
          buildCombinerIdentity(b, loc, reduce.getKind(), type);
      Block &body = reduce.getBody().front();
      Value size = mapping.lookup(reduce.getSize());
      StridedBounds range = bounds(size);
      int64_t groups = vectorGroups(size, body);
      FailureOr<Value> partial =
          groups ? lowerVectorized(body, groups, b, loc, reduce.getKind(),
                                   identity)
                 : lowerReduce(reduce, b, range.lb, range.ub, range.step,
                               identity,
                               range.scaled ? IndexMap(strided) : nullptr);
      if (failed(partial))
        return failure();
      auto forOp = partial->getDefiningOp<scf::ForOp>();
      if (Value tail = groups ? tailStart(b, loc, size, groups) : Value()) {
        partial = lowerReduce(reduce, b, tail, size, blockSize, *partial);
        if (failed(partial))
          return failure();
      }
      Value total = lowerBlockReduce(b, loc, reduce.getKind(), *partial);
      mapping.map(reduce.getResult(),
                  buildCombine(b, loc, reduce.getKind(),
                               mapping.lookup(reduce.getInit()), total,
                               /*reassociate=*/false));
      // Unrolled once its result has a user, which unrolling updates.
      if (groups && unrollInFull(groups) && failed(loopUnrollFull(forOp)))
        return failure();
      if (groups > kMaxUnrolledGroups && schedule.streamRows &&
          options.streamUnroll > 1 &&
          failed(loopUnrollByFactor(forOp, options.streamUnroll)))
        return failure();
      if (!groups && range.scaled && isCheapToReplicate(body, options) &&
          failed(loopUnrollByFactor(forOp, kUnroll)))
        return failure();
    } else if (isa<memref::StoreOp>(op)) {
      // A row's scalar result: every thread has it, one writes it.
      auto ifOp = scf::IfOp::create(b, loc, isLeader, /*withElse=*/false);
      OpBuilder inner = ifOp.getThenBodyBuilder();
      inner.clone(op, mapping);
      continue;
    } else {
      if (op.getDialect() == kernel->getDialect())
        return op.emitOpError() << "has no GPU lowering";
      b.clone(op, mapping);
      continue;
    }
    // A later loop may read what other threads of this one wrote.
    if (writes && &op != block.getTerminator()->getPrevNode())
      gpu::BarrierOp::create(b, loc);
  }
  return success();
}

FailureOr<gpu::GPUFuncOp> GPUKernelLowering::run(gpu::GPUModuleOp module) {
  Location loc = kernel.getLoc();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  // Bare pointers of static buffers, then the symbolic size when the
  // domain has it.
  FailureOr<SmallVector<Type>> argTypes = getLoweredArgumentTypes(kernel);
  if (failed(argTypes))
    return failure();
  if (schedule.symbolic)
    argTypes->push_back(b.getIndexType());
  func = gpu::GPUFuncOp::create(b, loc, kernel.getSymName(),
                                b.getFunctionType(*argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(schedule.block), 1, 1}));
  // A static grid bounds every thread's index, which lets
  // arith-int-range-narrowing compute index arithmetic in 32 bits (64-bit
  // division and remainder are long instruction sequences on GPUs: batch
  // norm's flattened N, H, W rows divided them per element).
  if (!schedule.symbolic && schedule.grid <= INT32_MAX)
    func.setKnownGridSizeAttr(b.getDenseI32ArrayAttr(
        {static_cast<int32_t>(schedule.grid), 1, 1}));
  // A launch's buffers never overlap (distinct tensors, and arena slots
  // live at the same launch are disjoint): loads may move past stores and
  // read-only buffers go through the non-coherent cache.
  // Buffers are aligned (the runtime checks it before a launch), so
  // neighbouring accesses become vector accesses.
  for (unsigned i = 0, e = kernel.getNumArguments(); i < e; ++i) {
    func.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
    func.setArgAttr(i, "llvm.align",
                    b.getI64IntegerAttr(kernel::kGPUBufferAlignment));
  }
  Block &entry = func.getBody().front();
  for (auto [from, to] :
       llvm::zip(kernel.getBody().getArguments(), entry.getArguments()))
    mapping.map(from, to);

  b.setInsertionPointToStart(&entry);
  auto ret = gpu::ReturnOp::create(b, loc);
  b.setInsertionPoint(ret);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value blockId = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  if (schedule.rowPerBlock) {
    // `tid` and `blockSize` are the thread's place among its row's threads
    // and their number.
    blockSize = arith::ConstantIndexOp::create(b, loc, schedule.rowThreads);
    Value row = blockId;
    if (schedule.rowsPerBlock > 1) {
      Value warp = arith::DivUIOp::create(b, loc, tid, blockSize);
      Value rows =
          arith::ConstantIndexOp::create(b, loc, schedule.rowsPerBlock);
      row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, blockId, rows), warp);
      tid = arith::RemUIOp::create(b, loc, tid, blockSize);
    }
    delinearize(b, loc, row);
    if (failed(lowerRowPerBlock(kernel.getBody().front(), b)))
      return failure();
    return func;
  }
  // One thread per point (or group of points); the last block's extra
  // threads do nothing.
  blockSize = arith::ConstantIndexOp::create(b, loc, schedule.block);
  int64_t width = schedule.pointsPerThread;
  Value base = arith::MulIOp::create(b, loc, blockId, blockSize);
  Value linear = arith::AddIOp::create(b, loc, base, tid);
  Value threads = arith::ConstantIndexOp::create(b, loc, schedule.threads);
  if (schedule.symbolic)
    threads =
        arith::MulIOp::create(b, loc, threads, entry.getArguments().back());
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        linear, threads);
  auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  OpBuilder inner = ifOp.getThenBodyBuilder();
  delinearize(inner, loc, linear, width);
  if (width == 1) {
    if (failed(lowerBlock(kernel.getBody().front(), inner)))
      return failure();
    // A thread's own reductions (a column of a channels-last tensor over
    // its pixels: GRN's norms, batch norm's statistics of few rows) walk
    // their elements one load at a time; unrolled, the loads of several
    // iterations are issued before the first is combined. The
    // combination keeps its order (no reassociation).
    if (options.threadUnroll > 1 &&
        isCheapToReplicate(kernel.getBody().front(), options)) {
      SmallVector<scf::ForOp> reductions;
      for (Operation &op : *ifOp.thenBlock())
        if (auto forOp = dyn_cast<scf::ForOp>(op))
          if (forOp.getNumRegionIterArgs() > 0)
            reductions.push_back(forOp);
      if (failed(unrollThreadReductions(reductions)))
        return failure();
    }
    return func;
  }
  SmallVector<IRMapping> copies(width);
  SmallVector<SmallVector<Value>> points(width, point);
  for (int64_t u = 1; u < width; ++u)
    points[u].back() = arith::AddIOp::create(
        inner, loc, point.back(), arith::ConstantIndexOp::create(inner, loc, u));
  if (failed(lowerCopies(kernel.getBody().front(), inner, copies, points)))
    return failure();
  // Column groups: the copies' reductions (each a loop of its own) run as
  // one loop, whose neighbouring loads the backend merges.
  if (failed(unrollThreadReductions(groupSiblingLoops(*ifOp.thenBlock()))))
    return failure();
  return func;
}

/// The module's check record (tc/Runtime/CheckRecord.h), made on first
/// use.
static memref::GlobalOp checkRecord(gpu::GPUModuleOp module) {
  if (auto record = module.lookupSymbol<memref::GlobalOp>(
          ::tc::checks::kGPURecordName))
    return record;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = MemRefType::get({::tc::checks::kRecordWords}, b.getI64Type());
  return memref::GlobalOp::create(
      b, module.getLoc(), ::tc::checks::kGPURecordName,
      /*sym_visibility=*/b.getStringAttr("public"), type,
      DenseElementsAttr::get(RankedTensorType::get(type.getShape(),
                                                   b.getI64Type()),
                             int64_t(0)),
      /*constant=*/false, /*alignment=*/nullptr);
}

/// Debugging checks (the pass's `checks`): at entry, that each buffer argument
/// has the alignment the kernel assumes; before each access of a static buffer
/// argument, that its row-major position is inside the buffer; that no float it
/// stores is a NaN. A violation prints the kernel, the argument and the
/// offending address or index, records the first one in the module's check
/// record (which the runtime reads after the run and raises: the graph then
/// runs in eager) and goes on without the access: a misaligned kernel returns
/// at entry, an out-of-bounds store is skipped and a load or atomic reads
/// element 0 instead. No trap, so no sticky CUDA error: the process carries on.
/// The arguments' alignment is checked rather than assumed (no `llvm.align`,
/// which would fold the check away), and LLVM drops the bounds checks it proves
/// (a clamped gather's).
static void addChecks(gpu::GPUFuncOp func, memref::GlobalOp record) {
  Location loc = func.getLoc();
  StringRef name = func.getName();
  uint64_t id = ::tc::checks::kernelId(name);
  // Prints, and records the first violation of the run.
  auto fail = [&](OpBuilder &b, Value cond, const std::string &format,
                  ::tc::checks::Kind kind, int64_t argument, Value value) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder then = ifOp.getThenBodyBuilder();
    gpu::PrintfOp::create(then, loc, then.getStringAttr(format), value);
    Value words = memref::GetGlobalOp::create(then, loc, record.getType(),
                                              record.getSymName());
    kernel::recordViolation(then, loc, words, id, kind, argument, value);
  };

  // Bounds and NaNs, at each access of a buffer argument.
  Block &entry = func.getBody().front();
  // The entry block's arguments are the kernel's, then its workgroup
  // arrays (gpu.func's attributions): only the former have argument
  // attributes and come from the caller.
  unsigned numInputs = func.getFunctionType().getNumInputs();
  SmallVector<Operation *> accesses;
  func.walk([&](Operation *op) {
    if (kernel::accessedBuffer(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    Value memref = kernel::accessedBuffer(op);
    auto arg = dyn_cast<BlockArgument>(memref);
    if (!arg || arg.getOwner() != &entry || arg.getArgNumber() >= numInputs)
      continue;
    std::string prefix = ("tc check: kernel " + name + ": argument #" +
                          Twine(arg.getArgNumber()) + ": element %lld ")
                             .str();
    int64_t size = cast<MemRefType>(memref.getType()).getNumElements();
    kernel::checkAccess(op, [&](OpBuilder &b, Value cond,
                                ::tc::checks::Kind kind, Value element) {
      fail(b, cond,
           kind == ::tc::checks::Kind::NaN
               ? prefix + "was written a NaN\n"
               : prefix + "out of [0, " + std::to_string(size) + ")\n",
           kind, arg.getArgNumber(), element);
    });
  }

  // Alignment, at entry: a misaligned kernel returns at once.
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Value misaligned;
  for (BlockArgument arg : func.getArguments().take_front(numInputs)) {
    if (!isa<MemRefType>(arg.getType()))
      continue;
    func.removeArgAttr(arg.getArgNumber(),
                       LLVM::LLVMDialect::getAlignAttrName());
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arg);
    Value rem = arith::RemUIOp::create(
        b, loc, address,
        arith::ConstantIndexOp::create(b, loc, kernel::kGPUBufferAlignment));
    Value bad = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, rem,
        arith::ConstantIndexOp::create(b, loc, 0));
    Value wide = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
    fail(b, bad,
         ("tc check: kernel " + name + ": argument #" +
          Twine(arg.getArgNumber()) + " at address %llu is not " +
          Twine(kernel::kGPUBufferAlignment) + "-byte aligned\n")
             .str(),
         ::tc::checks::Kind::Alignment, arg.getArgNumber(), wide);
    misaligned = misaligned ? arith::OrIOp::create(b, loc, misaligned, bad)
                                  .getResult()
                            : bad;
  }
  if (!misaligned)
    return;
  Block *rest = entry.splitBlock(b.getInsertionPoint());
  Block *exit = b.createBlock(rest);
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToEnd(&entry);
  cf::CondBranchOp::create(b, loc, misaligned, exit, ValueRange{}, rest,
                           ValueRange{});
}

struct ConvertKernelToGPUPass
    : public mlir::tc::impl::ConvertKernelToGPUPassBase<
          ConvertKernelToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<kernel::KernelOp> kernels(module.getOps<kernel::KernelOp>());
    if (kernels.empty())
      return;
    for (auto [name, size] :
         {std::pair<StringRef, int64_t>{"max-block-size", maxBlockSize},
          {"max-reduction-block-size", maxReductionBlockSize}}) {
      if (size < 32 || size > 1024 || size % 32) {
        module.emitError() << name
                           << " must be a multiple of 32 in [32, 1024], not "
                           << size;
        return signalPassFailure();
      }
    }
    if (vectorWidth != 1 && vectorWidth != 2 && vectorWidth != 4) {
      module.emitError() << "vector-width must be 1, 2 or 4, not "
                         << static_cast<int64_t>(vectorWidth);
      return signalPassFailure();
    }
    if (threadUnroll < 1) {
      module.emitError() << "thread-unroll must be at least 1, not "
                         << static_cast<int64_t>(threadUnroll);
      return signalPassFailure();
    }
    if (streamUnroll < 1) {
      module.emitError() << "stream-unroll must be at least 1, not "
                         << static_cast<int64_t>(streamUnroll);
      return signalPassFailure();
    }
    ScheduleOptions options{maxBlockSize, maxReductionBlockSize, vectorWidth,
                            replicateTrig, threadUnroll, columnGroups,
                            streamRows,   streamUnroll};
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName);
    SymbolTable::setSymbolVisibility(gpuModule,
                                     SymbolTable::Visibility::Private);

    llvm::DenseMap<StringAttr, GPUSchedule> schedules;
    for (kernel::KernelOp k : kernels) {
      flattenPointwiseRows(k, minRowBlocks);
      GPUSchedule schedule = chooseSchedule(k, options);
      FailureOr<gpu::GPUFuncOp> func =
          GPUKernelLowering(k, schedule, options).run(gpuModule);
      if (failed(func))
        return signalPassFailure();
      if (oobForTesting)
        kernel::plantOutOfBoundsLoad(func->getBody(),
                                     func->getBody().front());
      if (checks)
        addChecks(*func, checkRecord(gpuModule));
      schedules[k.getSymNameAttr()] = schedule;
    }
    // 64-bit shuffles as two 32-bit ones (what NVVM and ROCDL take), in
    // one walk: nothing else is folded or reordered.
    RewritePatternSet shuffles(&getContext());
    populateGpuShufflePatterns(shuffles);
    walkAndApplyPatterns(gpuModule, std::move(shuffles));
    // Launches name the gpu.func now and say how to launch it.
    auto moduleRef = FlatSymbolRefAttr::get(gpuModule.getSymNameAttr());
    module.walk([&](kernel::LaunchOp launch) {
      StringAttr name = launch.getKernelAttr().getRootReference();
      auto it = schedules.find(name);
      if (it == schedules.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          moduleRef.getAttr(), {FlatSymbolRefAttr::get(name)}));
      const GPUSchedule &schedule = it->second;
      IntegerAttr grid = b.getI64IntegerAttr(schedule.grid);
      if (!schedule.symbolic)
        launch.setGridAttr(grid);
      else if (schedule.rowPerBlock)
        launch.setGridPerSymbolAttr(grid);
      else
        launch.setThreadsPerSymbolAttr(grid);
      launch.setBlockAttr(b.getI64IntegerAttr(schedule.block));
    });
    for (kernel::KernelOp k : kernels)
      k.erase();
  }
};

} // namespace
