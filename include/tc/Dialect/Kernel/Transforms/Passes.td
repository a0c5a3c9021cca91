//===- Passes.td - kernel dialect passes -------------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_TRANSFORMS_PASSES_TD
#define TC_DIALECT_KERNEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlanMemoryPass : Pass<"tc-plan-memory", "::mlir::tc::kernel::ScheduleOp"> {
  let summary = "Place a schedule's intermediate buffers in one arena";
  let description = [{
    Replaces the `memref.alloc`s of a `kernel.schedule` by `kernel.buffer`s
    at byte offsets of a single `kernel.arena`. Two buffers share bytes only
    when their live ranges (from the allocation to the last op of the
    schedule that uses them) do not overlap, or when a pointwise launch
    writes one over the other in place: the other dies there, has the same
    size, and the kernel reads each of its elements before it writes the
    same element of its output and touches neither otherwise (a bias and
    ReLU after a convolution). Buffers are placed largest first, each at
    the lowest aligned offset that does not collide with a placed buffer
    it is live together with (an in-place output first tries its input's).

    The schedule records `tc.arena_bytes` (the arena's size, the peak) and
    `tc.intermediate_bytes` (what separate allocations would take).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer in the arena">
  ];
}

def FuseIndexChecksPass : Pass<"tc-fuse-index-checks", "::mlir::ModuleOp"> {
  let summary = "Check indices in the kernel that reads them";
  let description = [{
    tc raises eager's IndexError for an out-of-range index from a flag its
    graph computes beside the gather or indexing (`tc.backend`'s
    `_add_out_of_range_flag`): a maximum over every index of a function of
    it, compared with a bound. Fused alone, that check is a second pass
    over the indices (on an H100, 4-7 us beside a 5-14 us gather). This
    pass finds each such check kernel (one point, a max reduction, possibly
    nested, of a function of one load of an index buffer, `cmpi sgt` with
    a constant bound, stored to a 0-d i1 flag) and a kernel of the same
    schedule, launched once, that loads every element of the same buffer
    (its load's indices are distinct iteration variables spanning the
    buffer's shape). That kernel computes the function after its load and
    sets the flag where it exceeds the bound (`scf.if`: no stores, no
    contention, while the indices are valid); the check kernel becomes a
    one-point kernel that clears the flag, launched just before it. Where
    the function is tc's own form for the range [low, size) (|2 clamp(i,
    low - 1, size) - (low + size - 1)| against size - 1 - low), the kernel
    compares `i - low` with `size - low` unsigned instead (the function's
    eight ops doubled a CPU gather's loop). The flag must be read by no
    launch of the schedule (it is the graph's result).

    ```mlir
    kernel.launch @gather(%x, %i, %out)
    kernel.launch @check(%i, %flag)   // max(f(i[...])) > bound
    // becomes
    kernel.launch @check(%flag)        // flag[] = false
    kernel.launch @gather(%x, %i, %out, %flag)
                                       // ... if f(i[p]) > bound: flag[] = true
    ```

    With `early-flags` (CUDA, whose runtime reads a flag back as soon as
    the last step taking it has run, and the call returns then), a check
    stays in its own kernel where a library call (GEMM, convolution,
    attention) lies between it and the kernel that would take it over: a
    classifier's gather of each row's last token at the graph's end would
    make the call wait for the whole graph for a few microseconds saved.
  }];
  let options = [
    Option<"earlyFlags", "early-flags", "bool", /*default=*/"false",
           "Keep a check whose host kernel runs after a library call">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def SplitReductionsPass : Pass<"tc-split-reductions", "::mlir::ModuleOp"> {
  let summary = "Give reductions over few outputs more parallelism (GPUs)";
  let description = [{
    A kernel with few domain points and a long reduction keeps most of a
    GPU idle: a full sum is one point, a column sum's columns are its only
    parallelism. For each kernel with fewer than `min-parallelism` points:

    1. nested reductions of one kind, the inner one starting from the
       combiner's identity, become one reduction over the flattened range
       (a full sum of a contiguous tensor reads it as one long row); what
       the outer body computes before the inner reduction (scalar work,
       loads of buffers the kernel does not write: a per-image gate of a
       channel sum over N, H, W) is done again at each element;
    2. a single top-level `kernel.loop` whose body reduces becomes a
       domain dimension (a column sum gets one point per column);
    3. a kernel that is then top-level reductions of one length, none
       reading another's result (plus scalar work and stores after them:
       tc-fuse's sibling sums, a layer norm's weight and bias gradients),
       is split in two, as Inductor's split reductions: a new
       `<name>_partial` kernel over `[S] ++ domain` reduces each of S
       chunks of the range from the identity into a temporary buffer per
       reduction, and the kernel itself reduces the S partials (from the
       original init) and does the rest. The temporaries are
       `memref.alloc`s of the schedule, for `tc-plan-memory` to place.
       Independent reductions that cannot be split together (of other
       lengths, say) but would be split become a kernel each first, each
       with the stores of its own results, and are split one by one.

    A column reduction (its range strides over memory: batch norm's sums
    over N, H, W of a channels-last tensor) is a thread per column and
    chunk, each reading its chunk one element at a time: `column-factor`
    times more chunks keep more loads in flight, and its partials are laid
    out `domain ++ [S]`, so that the final kernel reduces each point's S
    partials as one contiguous row.

    Sums then add in a different order than one sequential pass (as on
    every GPU library); the results differ by rounding only.
  }];
  let options = [
    Option<"minParallelism", "min-parallelism", "int64_t", "32768",
           "Kernels with fewer domain points than this are rewritten; a "
           "reduction along the contiguous dimension (a thread block per "
           "point) is split until it has 1/32 of this many">,
    Option<"maxSplits", "max-splits", "int64_t", "256",
           "Most chunks a reduction is split into">,
    Option<"minLength", "min-length", "int64_t", "1024",
           "Reductions shorter than this are left alone (an extra launch "
           "for little work)">,
    Option<"columnFactor", "column-factor", "int64_t", "1",
           "A column reduction's target parallelism and most chunks, as "
           "multiples of min-parallelism and max-splits">,
    Option<"miscompileForTesting", "miscompile-for-testing", "bool",
           "false",
           "Tests only: the final kernel of a split reduction leaves out "
           "the last chunk's partial (a planted wrong rewrite for "
           "tc.debug.bisect's tests)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def InPlaceLaunchesPass : Pass<"tc-in-place-launches", "::mlir::ModuleOp"> {
  let summary = "One buffer for a pointwise launch's input and output";
  let description = [{
    Where a launch of a schedule reads an intermediate buffer for the last
    time and writes another of the same type for the first time, and its
    kernel reads each element of the first just before it writes the same
    element of the second (tc-plan-memory's in-place condition: a batch
    norm and ReLU after a convolution), the launch writes its result over
    its input: the kernel takes one buffer for both and the schedule's
    later uses of the output read the input's buffer.

    Unlike an output that tc-plan-memory places over its input in the
    arena, the kernel then knows the two are one: the CPU's kernels need
    no run-time overlap test (LLVM's vectorizer falls back to scalar code
    when two arguments overlap), and a library call's result that the
    runtime takes in place of the input's buffer (a CPU convolution's) is
    the output's memory too, as an in-place epilogue after an extern
    convolution is in Inductor's code.

    ```mlir
    %c = memref.alloc() : memref<64xf32>
    kernel.conv ... -> %c
    %d = memref.alloc() : memref<64xf32>
    kernel.launch @relu(%c, %d) : memref<64xf32>, memref<64xf32>
    // becomes: @relu takes one buffer, loads and stores it, and
    kernel.launch @relu(%c) : memref<64xf32>
    ```

    A kernel with other launches is cloned (tc-dedup-kernels merges the
    copies again).
  }];
}

def DedupKernelsPass : Pass<"tc-dedup-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one copy of kernels that are the same code";
  let description = [{
    Fusion names each kernel after the ops it fused, once per place in the
    graph, so a network that repeats a block (ResNet's residual blocks, a
    transformer's layers) gets the same kernel many times over: same
    domain, same argument types, same body. Each copy would be compiled by
    LLVM (or ptxas) again, for most of a cold compile's time. This pass
    keeps the first kernel of each class of identical ones and points every
    reference to the others (`kernel.launch`, a GEMM's epilogue) at it.

    ```mlir
    kernel.kernel @relu_0(%a: memref<64xf32>, %b: memref<64xf32>) ...
    kernel.kernel @relu_1(%a: memref<64xf32>, %b: memref<64xf32>) ...
    kernel.launch @relu_1(%x, %y)
    // becomes: only @relu_0, and
    kernel.launch @relu_0(%x, %y)
    ```
  }];
}

def AddKernelChecksPass : Pass<"tc-add-kernel-checks", "::mlir::ModuleOp"> {
  let summary = "Check every buffer access of every kernel (debugging)";
  let description = [{
    TC_CPU_CHECKS=1 (the CPU pipeline's `checks`). Every kernel launched by
    the schedule takes one more buffer, last: a record of 5 i64 the
    schedule allocates (tc/Runtime/CheckRecord.h: a flag, the kernel's id,
    the kind, the argument, the element), which the runtime clears before a
    run and reads after it. Before each load or store of a statically
    shaped buffer argument, the kernel checks that the element's row-major
    position lies inside the buffer; an out-of-bounds access is recorded
    (the first of the run) and does not happen (a load reads element 0, a
    store is skipped). After each store of a float, a NaN is recorded the
    same way. The runtime then raises, naming the kernel, the argument and
    the element, and the graph runs in eager.

    ```mlir
    kernel.launch @k(%x, %out)
    // becomes
    %record = memref.alloc() : memref<5xi64>
    kernel.launch @k(%x, %out, %record)
    ```
  }];
  let options = [
    Option<"plantOutOfBoundsForTesting", "plant-out-of-bounds-for-testing",
           "bool", "false",
           "Tests only: each kernel's first load of a buffer argument reads "
           "one row past its end, before the checks are added">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // TC_DIALECT_KERNEL_TRANSFORMS_PASSES_TD
