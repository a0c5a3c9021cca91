//===- Passes.td - tc conversion passes --------------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_CONVERSION_PASSES_TD
#define TC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// FXToPrim
//===----------------------------------------------------------------------===//

def ConvertFXToPrimPass : Pass<"tc-decompose", "ModuleOp"> {
  let summary = "Decompose ATen ops of fx graphs into prim ops";
  let description = [{
    Rewrites every `fx.graph` into a `func.func` of `prim` ops: each
    `fx.call_function` is replaced by its decomposition, with PyTorch's
    broadcasting and type promotion made explicit (`prim.broadcast_in_dim`,
    `prim.convert`). The result types the importer recorded (PyTorch's own
    shape and dtype propagation) are the target of every decomposition.

    An ATen op without a decomposition is an error at the op's location;
    the Python backend keeps such ops in eager PyTorch and never sends them.

    Random ops (`aten::native_dropout`, `aten::rand`) draw from the graph's
    seed, the `tensor<i64>` argument marked `tc.rng_seed` (the importer
    adds it; the runtime passes a fresh seed per call). Each op gets its
    own range of the counter-based generator's counters (`prim.random`'s
    offset: the elements drawn before it, in program order), so every
    element of a call draws a different number.
  }];
  let options = [
    Option<"miscompileForTesting", "miscompile-for-testing", "std::string",
           "\"\"",
           "Tests only: add 1 to every float result of this ATen op (a "
           "wrong rewrite planted on purpose, which tc.debug's minifier "
           "tests must find)">,
    Option<"crashForTesting", "crash-for-testing", "std::string", "\"\"",
           "Tests only: a fatal error (a compiler crash) on meeting this "
           "ATen op, which the runtimes must contain">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::tc::prim::PrimDialect"];
}

//===----------------------------------------------------------------------===//
// PrimToKernel
//===----------------------------------------------------------------------===//

def ConvertPrimToKernelPass : Pass<"tc-fuse", "ModuleOp"> {
  let summary = "Fuse prim ops into kernels and a host schedule";
  let description = [{
    Turns each `func.func` of `prim` ops into `kernel.kernel`s and one
    `kernel.schedule` (destination passing: the graph's outputs become
    trailing buffer arguments).

    Fusion follows Inductor's scheme: a value is *realized* (given a
    buffer) only where it must be: graph inputs and outputs, operands and
    results of matrix products (library calls), and reductions that more
    than one kernel would otherwise recompute. Everything else is computed
    inline, at the index where a consumer needs it: a chain of pointwise
    ops becomes one kernel; broadcasts, permutes, reshapes and slices are
    index arithmetic; a reduction becomes a `kernel.reduce` inside its
    consumer's kernel (a manual softmax is one kernel over the rows). A
    matrix product followed by the add of a row-broadcast bias becomes
    `kernel.gemm` with that bias as its epilogue.

    Each kernel iterates over all dimensions of its output but the last,
    with an inner `kernel.loop` over the last (contiguous) one. Intermediate
    buffers are `memref.alloc`s for `tc-plan-memory` to place in an arena.
    A realized value with one element per row of another's kernel, read by
    that kernel alone (and by its other such values) at each row's own
    position, is computed and stored by that kernel once per row, before
    the row's loop (a training forward's layer norm returns its row sums
    for the backward: one kernel, not three). A pointwise realized value
    of another pointwise one's type, a few values later in program order,
    that reads a large tensor the first reads and only what is written
    before the first's kernel, is computed and stored by that kernel too
    (a sibling: a GELU's gradient and the GELU recomputed for a weight's
    gradient read the activation once); so is a later reduction of a
    reduction's type over the same dimensions of operands of one shape (a
    layer norm's weight and bias gradients: tc-split-reductions splits the
    two together). A realized value of cheap
    elementwise arithmetic (no division, root or transcendental function),
    read first by a kernel of as many points that reads it only at its own
    points (or at their images through reshapes, or across its own row in
    a reduction over it), with every other reader later, is computed and
    stored by that kernel (a point value: a residual sum and the layer norm
    of it, one kernel where the sum had its own and the norm read it back;
    with `cache-rows` the norm's first reduction stores the sum's row and
    the rest reads it back). Their buffers come before the output's in the
    kernel's arguments.

    With `cache-rows` (the CPU's choice), a value reduced over the last
    dimension and needed again by the output's inner loop (softmax's
    `exp(x - max)`) is stored into the output row by the reduction and read
    back, instead of being computed twice: the row is in the CPU's cache.
    On GPUs the row stays in registers and is recomputed instead.

    With `weights-channels-first`, a channels-last convolution (or input
    gradient) whose weight is a graph input permuted to channels-last, and
    read by nothing else, reads the input itself (`kernel.conv ...
    weight_channels_first`): the CPU's library call takes any strides, and
    the permute would copy every weight at each call. With
    `unit-weights-channels-first` (the CPU's choice) only weights of a 1x1
    window are read so, whose two layouts are the same memory; a larger
    window's weight is copied to channels-last by tc's kernel, which on
    the CPU costs less than the library's own conversion inside each call.

    With `realize-broadcast-sources` (the CPU's choice), a small computed
    value broadcast to at least 16 times its size (batch norm's
    per-channel scale) is realized rather than computed again at every
    point: channels-last, the broadcast dimension is the inner loop, out of
    which the compiler cannot hoist it. Without it (GPUs, whose threads
    recompute such values while they wait on memory), only one that
    divides by a computed value is (ConvNeXt-V2's GRN scale).

    With `split-concatenations` (the CPU's choice), a kernel that stores a
    concatenation along the last dimension runs one inner loop per part,
    each reading its part alone, rather than one loop that reads every
    part at each point and selects one.

    With `alias-input-reshapes` (the CPU's choice), a realized reshape of
    a graph input (a weight read in another shape by a product) is a
    `kernel.alias` of the input's buffer, not a copy kernel, and a reshape
    of a graph input that merges dimensions is realized (kernels index the
    alias rather than divide each index back into the input's
    dimensions).

    With `loop-past-unit-dims` (the CPU's choice), a kernel over a value
    whose last dimensions have size 1 (a 1x1 convolution's weight
    [O, C, 1, 1], a squeeze-excite's [B, C, 1, 1]) runs its inner loop over
    the last dimension larger than 1, the unit ones indexed at 0: an inner
    loop of one point does not vectorize.
  }];
  let options = [
    Option<"cacheRows", "cache-rows", "bool", "true",
           "Keep a reduced row in the output buffer for the inner loop">,
    Option<"weightsChannelsFirst", "weights-channels-first", "bool",
           "false",
           "Library convolutions read graph-input weights channels-first">,
    Option<"unitWeightsChannelsFirst", "unit-weights-channels-first",
           "bool", "false",
           "Library convolutions read graph-input weights of a 1x1 window "
           "as they are (their two layouts are one)">,
    Option<"realizeBroadcastSources", "realize-broadcast-sources", "bool",
           "false",
           "Realize small computed values broadcast to 16x their size">,
    Option<"splitConcatenations", "split-concatenations", "bool", "false",
           "A kernel storing a concatenation along the last dimension runs "
           "one inner loop per part">,
    Option<"loopPastUnitDims", "loop-past-unit-dims", "bool", "false",
           "A kernel's inner loop runs over the last dimension larger "
           "than 1">,
    Option<"aliasInputReshapes", "alias-input-reshapes", "bool", "false",
           "A realized reshape of a graph input is a kernel.alias of its "
           "buffer, not a copy">,
    Option<"fuseNothing", "fuse-nothing", "bool", "false",
           "Realize every value: one kernel per op (the reference path of "
           "tc.debug.bisect, whose result does not depend on fusion)">,
    Option<"miscompileForTesting", "miscompile-for-testing", "bool",
           "false",
           "Tests only: every float a kernel stores gets 1 added (a "
           "planted wrong rewrite for tc.debug.bisect's tests)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tc::kernel::KernelDialect"];
}

//===----------------------------------------------------------------------===//
// KernelToCPU
//===----------------------------------------------------------------------===//

def ConvertKernelToCPUPass : Pass<"tc-lower-kernel-to-cpu", "ModuleOp"> {
  let summary = "Lower kernels to loop nests the CPU runtime calls";
  let description = [{
    Turns every `kernel.kernel` into a `func.func` that computes a range of
    its domain's points: it takes the kernel's buffers and then `begin` and
    `end`, linear indices into the (row-major) domain. The CPU runtime
    splits a launch's points among its threads and calls the function once
    per chunk. `kernel.loop` and `kernel.reduce` become `scf.for` loops
    (reductions carry their accumulator; float combiners are marked
    `reassoc` so LLVM can vectorize them), and transcendental math is
    replaced by polynomial approximations that vectorize.

    The function records its domain as `tc.domain` and its output's point
    count as `tc.points`; `kernel.schedule` stays, as the host program.
  }];
  let options = [
    Option<"miscompileForTesting", "miscompile-for-testing", "bool", "false",
           "Tests only: every float a kernel stores gets 1 added (a "
           "planted wrong rewrite for tc.debug.bisect's tests)">,
    Option<"untranslatableForTesting", "untranslatable-for-testing", "bool",
           "false",
           "Tests only: f64 erf stays math.erf, which LLVM cannot "
           "translate (a planted translation failure for the reproducer's "
           "tests)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// KernelToGPU
//===----------------------------------------------------------------------===//

def ConvertKernelToGPUPass : Pass<"tc-lower-kernel-to-gpu", "ModuleOp"> {
  let summary = "Lower kernels to gpu.func kernels with a launch schedule";
  let description = [{
    Moves every `kernel.kernel` into one `gpu.module @tc_kernels` as a
    `gpu.func` kernel, so all of a graph's kernels are compiled (and
    loaded) as one binary. Each kernel gets one of two schedules:

    - *row per block*, when a top-level `kernel.loop` or `kernel.reduce`
      walks the innermost (contiguous) dimension of a buffer: one thread
      block per domain point, its threads striding over the loops
      (coalesced accesses). A top-level reduction is a per-thread partial
      followed by `gpu.all_reduce` (warp shuffles, then shared memory); the
      row's scalar work is replicated and its scalar stores are done by
      thread 0. Consecutive top-level loops are separated by a barrier.
    - *row per thread* otherwise (pure per-point work, or reductions over
      an outer dimension such as column sums): one thread per domain point,
      neighbouring threads on neighbouring points, the point's loops
      sequential. Large pointwise kernels whose innermost dimension splits
      into groups of `vector-width` give each thread one such group (the
      copies of the body side by side, so 32-bit accesses merge into
      16-byte ones). Kernels whose accesses are all 16-bit (bf16, f16)
      take groups of twice `vector-width`, for 16-byte accesses too; so do
      their rows in the row-per-block schedule, where a row longer than
      the block's groups take in one sweep but not a multiple of that
      (a vocabulary's softmax) ends in a tail of single elements, if its
      stores go to rows whose starts are aligned for merged accesses.

    A pointwise kernel (one top-level loop, no reduction) is first made a
    kernel over points, its loop a domain dimension, when its rows are
    shorter than 512, fewer than `min-row-blocks`, or fewer than 8192 and
    walked across the buffers (which would run a thread per row, each
    looping alone: a channels-first tensor written channels-last).

    Reductions whose type the block reduction does not support (anything
    but f32 and i32) use the row-per-thread schedule. The `kernel.launch`
    ops of the schedule are rewritten to name the `gpu.func` and carry the
    `grid` and `block` sizes.
  }];
  let options = [
    Option<"maxBlockSize", "max-block-size", "int64_t", "1024",
           "Largest thread block the row-per-block schedule uses">,
    Option<"maxReductionBlockSize", "max-reduction-block-size", "int64_t",
           "512",
           "Largest thread block of a row-per-block kernel that reduces (its "
           "threads meet at every block reduction; smaller blocks let more "
           "rows share a multiprocessor, larger ones give each thread fewer "
           "elements of a row to unroll: on the H100 a 4096-wide softmax or "
           "layer norm runs as fast with 512 as with 256 threads and its PTX "
           "compiles ~0.03 s faster)">,
    Option<"vectorWidth", "vector-width", "int64_t", "4",
           "Consecutive elements a thread handles together (1, 2 or 4; "
           "twice that in kernels of 16-bit accesses only)">,
    Option<"minRowBlocks", "min-row-blocks", "int64_t", "128",
           "Pointwise kernels with fewer rows than this run one thread per "
           "point whatever the rows' length (a block per row would leave "
           "multiprocessors idle: a top-p gather over [32, 50257] ran on 32 "
           "of an H100's 132)">,
    Option<"threadUnroll", "thread-unroll", "int64_t", "4",
           "Reductions a thread runs alone (a thread per output: column "
           "reductions, such as a channels-last tensor's over its pixels) "
           "are unrolled by at least this factor, so that as many "
           "iterations' loads are in flight (1: none); by up to 16 where "
           "the kernel's threads would keep too few bytes in flight to "
           "reach the memory's bandwidth">,
    Option<"columnGroups", "column-groups", "bool", "true",
           "Reductions a thread runs alone over the rows of a column (a "
           "split column sum's chunks) handle `vector-width` neighbouring "
           "columns per thread, as pointwise kernels do, their loops "
           "merged into one so that the loads of a row are one vector "
           "load (the innermost index of every access that reads the "
           "column is the column)">,
    Option<"streamRows", "stream-rows", "bool", "true",
           "Kernels that read each of many long rows once (row reductions "
           "and nothing written along the row: a matrix-vector product's "
           "dot products) run a warp per row, four rows to a block, each "
           "lane's 16-byte groups unrolled; false: a block per row, as "
           "other row kernels">,
    Option<"streamUnroll", "stream-unroll", "int64_t", "4",
           "How many 16-byte groups of its row a lane of such a warp "
           "loads before combining them (the loop over its groups "
           "unrolled this deep)">,
    Option<"replicateTrig", "replicate-trig", "bool", "true",
           "Let vectorization and unrolling copy bodies that hold sin, cos "
           "or tan">,
    Option<"checks", "checks", "bool", "false",
           "Debugging: every kernel checks that its buffers are aligned and "
           "every access of a buffer argument is in bounds; a violation is "
           "printed (the kernel, the argument and the index), recorded for "
           "the runtime, which raises after the run, and skipped, with no "
           "trap (TC_CUDA_CHECKS=1)">,
    Option<"oobForTesting", "oob-for-testing", "bool", "false",
           "Tests only: each kernel's first load of a buffer argument reads "
           "one row past its end (a planted out-of-bounds access for the "
           "checks' tests)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // TC_CONVERSION_PASSES_TD
