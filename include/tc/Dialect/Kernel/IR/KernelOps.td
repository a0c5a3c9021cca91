//===- KernelOps.td - kernel dialect operations ------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELOPS_TD
#define TC_DIALECT_KERNEL_IR_KERNELOPS_TD

include "tc/Dialect/Kernel/IR/KernelBase.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Device side: kernels
//===----------------------------------------------------------------------===//

def Kernel_KernelOp : Kernel_Op<"kernel", [
    FunctionOpInterface, IsolatedFromAbove, AutomaticAllocationScope
  ]> {
  let summary = "A fused kernel over a parallel iteration domain";
  let description = [{
    The body runs once for every point of the parallel iteration `domain`
    (`kernel.index` reads the point's coordinates). Arguments are the
    buffers the kernel reads and writes. Reductions over further axes are
    `kernel.reduce` ops inside the body, so one kernel can hold several
    reductions and the pointwise work around them (a fused softmax is one
    kernel over the rows).

    ```mlir
    kernel.kernel @add(%a: memref<4x8xf32>, %b: memref<4x8xf32>,
                       %c: memref<4x8xf32>) attributes {domain = array<i64: 4, 8>} {
      %i = kernel.index 0
      %j = kernel.index 1
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %y = memref.load %b[%i, %j] : memref<4x8xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %c[%i, %j] : memref<4x8xf32>
      kernel.return
    }
    ```

    A `?` (ShapedType::kDynamic) as the first extent of the domain is the
    graph's symbolic size: the host runs the kernel for each of its values.

  }];

  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       DenseI64ArrayAttr:$domain,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);

  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
  }];

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Kernel_IndexOp : Kernel_Op<"index", [Pure]> {
  let summary = "The coordinate of the current point along a domain axis";
  let description = [{
    ```mlir
    %i = kernel.index 0
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
  let hasVerifier = 1;
}

def Kernel_ReduceOp : Kernel_Op<"reduce", [
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">,
    AllTypesMatch<["init", "result"]>
  ]> {
  let summary = "Reduces a scalar over a reduction axis";
  let description = [{
    Runs the body for `j` in `[0, size)`; the block argument is `j`, the
    yielded scalar is combined into the accumulator (starting at `init`)
    with `kind`. `max` and `min` propagate NaN, as PyTorch does.

    ```mlir
    %m = kernel.reduce max %n init %ninf : f32 {
    ^bb0(%j: index):
      %v = memref.load %x[%i, %j] : memref<4x8xf32>
      kernel.yield %v : f32
    }
    ```
  }];
  let arguments = (ins Kernel_CombinerKind:$kind, Index:$size,
                       AnyTypeOf<[AnyFloat, AnySignlessInteger]>:$init);
  let results = (outs AnyTypeOf<[AnyFloat, AnySignlessInteger]>:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind $size `init` $init attr-dict `:` type($result) $body
  }];
  let hasVerifier = 1;
}

def Kernel_LoopOp : Kernel_Op<"loop", [
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">
  ]> {
  let summary = "An inner loop of a kernel (e.g. a row's pointwise pass)";
  let description = [{
    Runs the body for `j` in `[0, size)`, each iteration independent of the
    others, so the code generator may vectorise it.

    ```mlir
    kernel.loop %n {
    ^bb0(%j: index):
      ...
    }
    ```
  }];
  let arguments = (ins Index:$size);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$size attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Kernel_YieldOp : Kernel_Op<"yield", [
    Pure, Terminator, ReturnLike, ParentOneOf<["ReduceOp", "LoopOp"]>
  ]> {
  let summary = "Yields a value to the enclosing reduce, or ends a loop body";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
  let hasVerifier = 1;
}

def Kernel_ReturnOp : Kernel_Op<"return", [
    Pure, Terminator, ReturnLike, ParentOneOf<["KernelOp", "ScheduleOp"]>
  ]> {
  let summary = "Ends a kernel or a schedule";
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Host side: schedule, arena, launches, library calls
//===----------------------------------------------------------------------===//

def Kernel_ScheduleOp : Kernel_Op<"schedule", [
    FunctionOpInterface, IsolatedFromAbove
  ]> {
  let summary = "The host program of a compiled graph";
  let description = [{
    Takes the graph's inputs and (preallocated) outputs as buffers and runs
    the graph: allocates the arena, carves intermediate buffers out of it,
    launches kernels and calls libraries, in order.

    ```mlir
    kernel.schedule @forward(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
      %arena = kernel.arena : memref<128xi8>
      %t = kernel.buffer %arena[0] : memref<128xi8> to memref<4x8xf32>
      kernel.launch @sin(%x, %t) : memref<4x8xf32>, memref<4x8xf32>
      kernel.launch @cos(%t, %out) : memref<4x8xf32>, memref<4x8xf32>
      kernel.return
    }
    ```
  }];

  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);

  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
  }];

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Kernel_ArenaOp : Kernel_Op<"arena", [
    HasParent<"ScheduleOp">,
    MemoryEffects<[MemAlloc<DefaultResource>]>
  ]> {
  let summary = "Allocates the arena that holds a schedule's intermediates";
  let description = [{
    One allocation for all intermediate buffers of a graph, sized by memory
    planning; the runtime takes it from the framework's allocator.

    ```mlir
    %arena = kernel.arena : memref<4096xi8>
    ```

    A schedule with the graph's symbolic size has an arena of `?` bytes:
    the schedule's `tc.arena_bytes` plus `tc.arena_bytes_per_symbol` times
    the size (docs/DynamicShapes.md).
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "64">:$alignment);
  let results = (outs MemRefOf<[I8]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kernel_BufferOp : Kernel_Op<"buffer", [Pure]> {
  let summary = "A typed buffer at a byte offset of the arena";
  let description = [{
    ```mlir
    %t = kernel.buffer %arena[256] : memref<4096xi8> to memref<4x8xf32>
    ```

    With the graph's symbolic size `s`, a buffer may have a `?` leading
    dimension (it is `s`) and an offset that grows with `s`:

    ```mlir
    %t = kernel.buffer %arena[64 + 128 * s] : memref<?xi8> to memref<?x32xf32>
    ```
  }];
  let arguments = (ins MemRefOf<[I8]>:$arena, I64Attr:$offset,
                       DefaultValuedAttr<I64Attr, "0">:$offset_per_symbol);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    $arena `[` custom<SymbolicOffset>($offset, $offset_per_symbol) `]`
    attr-dict `:` type($arena) `to` type($result)
  }];
  let hasVerifier = 1;
}

def Kernel_AliasOp : Kernel_Op<"alias", [Pure, HasParent<"ScheduleOp">]> {
  let summary = "A schedule argument's buffer read in another static shape";
  let description = [{
    The same dense row-major elements as `source`, a schedule argument (a
    graph input, which the schedule never writes, or an output, which its
    producer writes once, before the alias is read, or through the alias),
    in the result's shape: a reshape read in place instead of copied
    (XLNet's [1024, 16, 64] projection weights as the [1, 1024, 1024]
    operands of their products, its returned hidden states as the next
    layer's rows), or a value the graph returns reshaped written straight
    into the output (a GEMM's [B * S, H] rows returned as [B, S, H]).

    ```mlir
    %w2 = kernel.alias %w : memref<1024x16x64xf32> to memref<1x1024x1024xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$source);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    $source attr-dict `:` type($source) `to` type($result)
  }];
  let hasVerifier = 1;
}

def Kernel_SymbolOp : Kernel_Op<"symbol", [Pure, HasParent<"ScheduleOp">]> {
  let summary = "The value of the graph's symbolic size";
  let description = [{
    Every `?` dimension of a schedule's buffers and of its kernels' domains
    is the graph's one symbolic size (a batch size), which the host passes
    when it runs the schedule (docs/DynamicShapes.md). Allocations of
    symbolic buffers take it before memory planning places them.

    ```mlir
    %s = kernel.symbol : index
    %t = memref.alloc(%s) : memref<?x32xf32>
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Kernel_LaunchOp : Kernel_Op<"launch", [
    HasParent<"ScheduleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>
  ]> {
  let summary = "Runs a kernel over its domain";
  let description = [{
    With `row_epilogue`, the launch directly follows a rank-2
    `kernel.gemm` whose output it reads, and row `i` of the kernel's
    (one-dimensional) domain reads only row `i` of that output: a runtime
    may run the kernel on each block of rows as soon as the GEMM has
    produced it (the pointwise epilogue of a library GEMM, while the rows
    are in cache). Running the two one after the other is equally correct.

    ```mlir
    kernel.launch @add(%a, %b, %c) : memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>
    kernel.gemm %x, %w, %t : memref<8x4xf32>, memref<4x3xf32>, memref<8x3xf32>
    kernel.launch @relu(%t, %out) {row_epilogue} : memref<8x3xf32>, memref<8x3xf32>
    ```

    Once a GPU lowering (`tc-lower-kernel-to-gpu`) has run, the symbol
    names a `gpu.func` in the `gpu.module` of kernels, and `grid` and
    `block` give the (one-dimensional) launch configuration:

    ```mlir
    kernel.launch @tc_kernels::@add(%a, %b, %c) {block = 32 : i64, grid = 4 : i64} : memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>
    ```

    A kernel whose domain has the graph's symbolic size `s`
    (docs/DynamicShapes.md) takes `s` after its buffers once lowered (the
    host passes it), and its grid is an expression of `s` instead of
    `grid`: `grid_per_symbol = g` runs `g * s` blocks (a block per row),
    `threads_per_symbol = t` runs `ceildiv(t * s, block)` blocks (a thread
    per point or group of points; the kernel checks its bound).

    ```mlir
    kernel.launch @tc_kernels::@add(%a, %b) {block = 256 : i64, threads_per_symbol = 8 : i64} : memref<?x8xf32>, memref<?x8xf32>
    ```
  }];
  let arguments = (ins SymbolRefAttr:$kernel,
                       Variadic<AnyMemRef>:$buffers,
                       UnitAttr:$row_epilogue,
                       OptionalAttr<I64Attr>:$grid,
                       OptionalAttr<I64Attr>:$block,
                       OptionalAttr<I64Attr>:$grid_per_symbol,
                       OptionalAttr<I64Attr>:$threads_per_symbol);
  let assemblyFormat = [{
    $kernel `(` $buffers `)` attr-dict `:` type($buffers)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::StringRef":$kernel, "::mlir::ValueRange":$buffers), [{
      build($_builder, $_state,
            ::mlir::FlatSymbolRefAttr::get($_builder.getContext(), kernel),
            buffers, /*row_epilogue=*/nullptr, /*grid=*/nullptr,
            /*block=*/nullptr, /*grid_per_symbol=*/nullptr,
            /*threads_per_symbol=*/nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def Kernel_GemmOp : Kernel_Op<"gemm", [HasParent<"ScheduleOp">]> {
  let summary = "A library matrix product `out = a @ b (+ bias)`";
  let description = [{
    Calls the target's GEMM (BLAS on the CPU, cuBLAS on CUDA). Operands are
    rank-2 buffers, or rank-3 with a leading batch dimension; `transpose_a`
    and `transpose_b` read the operand transposed. An optional `bias`
    (rank 1, one value per output column) is the fused epilogue.

    ```mlir
    kernel.gemm %x, %w, %out {transpose_b}
        : memref<32x100xf32>, memref<200x100xf32>, memref<32x200xf32>
    ```

    An n-d by 2-d product (`a` and `out` of one rank above 2, `b` of rank
    2, `a` not transposed) is one GEMM whose rows are `a`'s leading
    dimensions, which may include the graph's symbolic size: a `Linear`
    on a `[?, 4, 32]` input.

    ```mlir
    kernel.gemm %x, %w, %out {transpose_b}
        : memref<?x4x32xf32>, memref<16x32xf32>, memref<?x4x16xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$a, AnyMemRef:$b, AnyMemRef:$out,
                       Optional<AnyMemRef>:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let assemblyFormat = [{
    $a `,` $b `,` $out (`bias` $bias^)? attr-dict `:` type($a) `,` type($b) `,`
    type($out) (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    /// The product's sizes as a library call takes them: batch (1 for
    /// rank 2), m, n, k. A size that is the graph's symbolic size is 1,
    /// with its bit (batch 0, m 1, n 2, k 3) set in `perSymbol`.
    struct LibrarySizes {
      int64_t batch, m, n, k;
      unsigned perSymbol;
    };
    LibrarySizes getLibrarySizes();
    /// Whether `a` and `out` have one rank above 2 and `b` rank 2: an
    /// n-d by 2-d product whose rows are `a`'s leading dimensions.
    bool isFlattened();

  private:
    ::mlir::LogicalResult verifyBias(int64_t n);

  public:
  }];
  let hasVerifier = 1;
}

def Kernel_ConvOp : Kernel_Op<"conv", [HasParent<"ScheduleOp">]> {
  let summary = "A library convolution, or one of its gradients";
  let description = [{
    Calls the target's convolution library (cuDNN on CUDA) on the buffers
    of a convolution `output = conv(input, weight)` in PyTorch's layout
    (input N, C, spatial...; weight O, C / groups, kernel...; output N, O,
    out...), contiguous; with `channels_last`, each buffer holds its
    channels innermost (N, spatial..., C; O, kernel..., C / groups;
    N, out..., O), cuDNN's fast layout for half precision; with
    `weight_channels_first` as well, the weight keeps PyTorch's layout
    while input and output are channels-last (a CPU library call takes
    any strides: no copy of the weights at each call). `kind` says
    which buffer the call writes; it reads
    the other two:

    * `forward`: `output` from `input` and `weight`;
    * `backward_input`: `input` (its gradient) from `output` (the output's
      gradient) and `weight`;
    * `backward_weight`: `weight` (its gradient) from `input` and `output`
      (the output's gradient).

    ```mlir
    kernel.conv backward_weight %x, %dw, %dy stride [1, 1] padding [1, 1]
        dilation [1, 1] groups 1
        : memref<16x64x56x56xf32>, memref<64x64x3x3xf32>, memref<16x64x56x56xf32>
    ```
  }];
  let arguments = (ins Kernel_ConvKind:$kind, AnyMemRef:$input,
                       AnyMemRef:$weight, AnyMemRef:$output,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups,
                       UnitAttr:$channels_last,
                       UnitAttr:$weight_channels_first);
  let assemblyFormat = [{
    $kind $input `,` $weight `,` $output `stride` $stride `padding` $padding
    `dilation` $dilation `groups` $groups
    (`channels_last` $channels_last^)?
    (`weight_channels_first` $weight_channels_first^)? attr-dict `:`
    type($input) `,` type($weight) `,` type($output)
  }];
  let hasVerifier = 1;
}

def Kernel_AttentionOp : Kernel_Op<"attention", [HasParent<"ScheduleOp">]> {
  let summary = "A library fused attention `out = softmax(scale * q k^T "
                "(+ bias)) v`";
  let description = [{
    Calls the target's fused attention (cuDNN's flash attention on CUDA)
    on dense row-major buffers: `query` (B, H, Sq, D), `key` (B, Hk, Skv,
    D), `value` (B, Hk, Skv, Dv), `out` (B, H, Sq, Dv), an optional `bias`
    (B or 1, H or 1, Sq, W >= Skv: columns past Skv are not read);
    `causal` masks each query's later keys
    (top-left aligned). The semantics are `prim.attention`'s.

    ```mlir
    kernel.attention %q, %k, %v, %o scale 1.250000e-01 causal
        : memref<2x12x128x64xbf16>, memref<2x12x128x64xbf16>,
          memref<2x12x128x64xbf16>, memref<2x12x128x64xbf16>
    ```

    With `query_view` (`key_view`, `value_view`, `out_view`), the operand
    is a strided view of its buffer instead: `[offset, 4 sizes, 4
    strides]` in elements over the buffer's dense row-major storage. The
    call reads a packed projection's heads where the projection wrote them
    (ViT's `[B, S, 3, H, D]` QKV, BERT's `[B, S, H, D]` per head) and
    writes its heads back in rows (`[B, S, H * D]`, what the output
    projection reads): no copy per operand. A view's innermost stride is
    1, its other strides and its offset are whole 16-byte rows
    (`isLibraryView`), and it lies inside its buffer.

    ```mlir
    kernel.attention %qkv, %qkv, %qkv, %o scale 1.250000e-01
        query_view [0, 2, 12, 128, 64, 294912, 64, 2304, 1]
        key_view [768, 2, 12, 128, 64, 294912, 64, 2304, 1]
        value_view [1536, 2, 12, 128, 64, 294912, 64, 2304, 1]
        : memref<2x128x2304xbf16>, memref<2x128x2304xbf16>,
          memref<2x128x2304xbf16>, memref<2x12x128x64xbf16>
    ```
  }];
  let arguments = (ins AnyMemRef:$query, AnyMemRef:$key, AnyMemRef:$value,
                       AnyMemRef:$out, Optional<AnyMemRef>:$bias,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<DenseI64ArrayAttr>:$query_view,
                       OptionalAttr<DenseI64ArrayAttr>:$key_view,
                       OptionalAttr<DenseI64ArrayAttr>:$value_view,
                       OptionalAttr<DenseI64ArrayAttr>:$out_view);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out (`bias` $bias^)? `scale` $scale
    (`causal` $causal^)? (`query_view` $query_view^)?
    (`key_view` $key_view^)? (`value_view` $value_view^)?
    (`out_view` $out_view^)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) `,` type($out)
    (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    /// A 4-d operand as the call reads it: an offset, sizes and strides in
    /// elements of its buffer.
    struct View {
      int64_t offset = 0;
      ::llvm::SmallVector<int64_t, 4> sizes, strides;
    };
    /// Operand `index` (0 query, 1 key, 2 value, 3 out) as read: its view,
    /// or its buffer, dense.
    View getOperandView(unsigned index);
    /// Whether a view of `sizes` and `strides` at `offset` of elements of
    /// `elementBytes` is one the library call reads in place: innermost
    /// stride 1; every other stride (of a dimension larger than 1) and the
    /// offset whole 16-byte rows.
    static bool isLibraryView(::llvm::ArrayRef<int64_t> sizes,
                              ::llvm::ArrayRef<int64_t> strides,
                              int64_t offset, int64_t elementBytes);
  }];
  let hasVerifier = 1;
}

#endif // TC_DIALECT_KERNEL_IR_KERNELOPS_TD
