//===- Passes.td - prim dialect passes ---------------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_TRANSFORMS_PASSES_TD
#define TC_DIALECT_PRIM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"tc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff of prim functions: the joint graph";
  let description = [{
    For every `func.func` of prim ops with arguments marked
    `tc.requires_grad`, appends the backward computation and makes the
    function the joint forward + backward graph, as AOTAutograd's joint
    graph is:

    ```
    f(args) -> (results)
      becomes
    f(args, cotangents) -> (results, gradients)
    ```

    with one cotangent argument per floating-point result (the gradient of
    the loss with respect to that result, of its type) and one gradient
    result per marked argument (of the argument's type; zeros when no
    result depends on it). Other arguments, integer and boolean values and
    comparisons are not differentiated.

    Each primitive has a gradient rule (its vector-Jacobian product in prim
    ops): elementwise math by the chain rule, `broadcast_in_dim` by a sum
    over the broadcast dimensions, `reduce sum` by a broadcast, `reduce
    max/min` by an equal share among the extremes (as PyTorch's `amax`),
    `dot` by two `dot`s and `permute`s, shape ops by their inverses. The
    contributions of several uses of a value are added. An op without a
    rule on the path from a marked argument to a result is an error at its
    location. Functions without marked arguments are left alone.
  }];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def ExpandConvolutionsPass
    : Pass<"tc-expand-convolutions", "::mlir::func::FuncOp"> {
  let summary = "Convolutions as one matrix product of the input's windows";
  let description = [{
    For targets without a library convolution (the CPU, ROCm), rewrites
    each `prim.convolution` of one group as im2col: the input is padded
    once, the strided window of each kernel offset is laid out as
    (N * out..., C) rows, the windows are concatenated side by side and
    multiplied by the weights laid out as (kernel... * C, O).

    ```mlir
    %y = prim.convolution %x, %w, stride [1, 1], padding [1, 1],
        dilation [1, 1], groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
    ```

    becomes a `prim.pad`, nine `prim.slice`/`prim.permute`/`prim.reshape`
    windows, a `prim.concatenate` of them and one `prim.dot`. It runs
    before `tc-autodiff`, which then differentiates those ops; tc-fuse
    reads the concatenated windows with one load per element. Grouped
    convolutions and the gradient ops that `tc-autodiff` makes from
    `prim.convolution` (on targets that keep it) are errors here.

    With `unit-maps-only` (the CPU's fusion stage, whose convolutions are
    otherwise library calls), only a convolution that is one product of
    its input as it is (a 1x1 kernel over 1x1 maps, unpadded, one group:
    a squeeze-and-excitation gate's layers) becomes a `prim.dot`, and the
    rest stay. A library call costs 60-90 us for such a product on two
    CPU cores (EfficientNet-B0 has 32 of them) where tc's loop takes a
    few.
  }];
  let options = [
    Option<"unitMapsOnly", "unit-maps-only", "bool", /*default=*/"false",
           "Expand only convolutions of 1x1 maps by 1x1 kernels">
  ];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def PartitionPass : Pass<"tc-partition", "::mlir::ModuleOp"> {
  let summary = "Split a joint graph into forward and backward by a min-cut";
  let description = [{
    Splits each joint function `@f` that `tc-autodiff` made (it carries
    `tc.joint`) into

    ```
    @f_forward(primals) -> (outputs, saved)
    @f_backward(saved, cotangents) -> (gradients)
    ```

    The backward needs some forward values. It may get each one saved by
    the forward or recompute it from saved values, as AOTAutograd's
    rematerializing partitioner does: the saved set is a minimum cut
    between what the forward must compute (primal inputs and what is not
    cheap to recompute: matrix products, reductions) and what the backward
    reads, each value weighted by what saving it costs: twice its bytes
    (held until the backward), plus its bytes once more where the forward
    would not write it otherwise (values that live in a kernel's registers;
    the arguments, outputs, products and values read past a product are
    written anyway). Elementwise and shape ops are recomputed
    when that saves bytes: a ReLU mask (1 byte per element) is saved rather
    than the float it was computed from, a chain of pointwise ops is
    recomputed from its input, a dropout's mask from the seed argument
    (`prim.random` is counter-based), a layer norm's centered rows from its
    input and row sums. `tc.saved_bytes` on the forward records the
    bytes saved. In the backward, every op is placed right before its first
    use, so a recomputed value lives only while it is needed (not from the
    backward's start).
  }];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def ReassociateReductionsPass
    : Pass<"tc-reassociate-reductions", "::mlir::func::FuncOp"> {
  let summary = "Reduce trailing dimensions first: strided reductions as rows";
  let description = [{
    A reduction over dimensions that are not one trailing block reads its
    operand with a stride: batch norm's per-channel sum over `[0, 2, 3]` of
    an NCHW tensor is one long strided sum per channel, a few dozen threads'
    work on a GPU. Reductions are associative, so such a reduction becomes
    two: first over the trailing block of its dimensions, read as one row
    (a reshape, when the block's sizes are static; a thread block per row
    on GPUs, a vector loop on CPUs), then over the rest of a tensor that is
    smaller by the rows' length. A reduction over a trailing block of
    several dimensions is read as rows the same way.

    ```mlir
    %s = prim.reduce sum %x, dims [0, 2, 3] : tensor<16x64x56x56xf32>
      becomes
    %x2 = prim.reshape %x, shape [16, 64, 3136] : tensor<16x64x56x56xf32>
    %r = prim.reduce sum %x2, dims [2] : tensor<16x64x3136xf32>
    %s = prim.reduce sum %r, dims [0] : tensor<16x64xf32>
    ```

    Sums add in a different order (by rounding only, as every GPU library
    does); max and min are exact. Reductions over a trailing block only, or
    without a trailing dimension, stay as they are.
  }];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def OrderContractionsPass
    : Pass<"tc-order-contractions", "::mlir::func::FuncOp"> {
  let summary = "Products computed in the layouts their operands and readers "
                "use";
  let description = [{
    `einsum` contracts several dimensions as one: PyTorch's decomposition
    permutes each operand to put them together, in the order of their
    labels, and merges them with a reshape. XLNet's output projection,
    `einsum("ibnd,hnd->ibh", attn, o)`, contracts `d` then `n` where the
    weight `o` [h, n, d] stores `n` then `d`: a copy of the 4 MB weight
    transposed at every call, and a transposing copy of the attention.
    The sum runs over the same pairs in any order that both operands
    share, so both permutes take the order of the weight's (a graph
    input's, else the right operand's) memory: the weight's permute is
    then a reshape, read in place.

    ```mlir
    %wp = prim.permute %w, [2, 1, 0] : tensor<1024x16x64xf32>
    %w2 = prim.reshape %wp, shape [1024, 1024] : tensor<64x16x1024xf32>
      becomes
    %wp = prim.permute %w, [1, 2, 0] : tensor<1024x16x64xf32>
    %w2 = prim.reshape %wp, shape [1024, 1024] : tensor<16x64x1024xf32>
    ```

    (with the other operand's permute reordered the same way). Only a
    product with one contracted dimension whose operands are each a
    reshape of a permute read by nothing else, merging dimensions of the
    same sizes, and only where fewer merged dimensions are then out of
    memory order on both sides together.

    A plain or batched product read only transposed in its last two
    dimensions is computed transposed, with its operands swapped: a
    linear layer's weight gradient, `(x^T g)^T` for a weight stored
    [out, in], becomes `g^T x`, which the GEMM writes in the weight's
    layout (reading `g` with its transpose flag) where the transposed
    product was copied, with scattered writes, into it.

    ```mlir
    %xt = prim.permute %x, [1, 0] : tensor<4096x768xbf16>
    %p = prim.dot %xt, %g, ... : tensor<768x4096xbf16>, tensor<4096x3072xbf16>
    %w = prim.permute %p, [1, 0] : tensor<768x3072xbf16>
      becomes
    %gt = prim.permute %g, [1, 0] : tensor<4096x3072xbf16>
    %w = prim.dot %gt, %x, ... : tensor<3072x4096xbf16>, tensor<4096x768xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def AlignHalfProductsPass
    : Pass<"tc-align-half-products", "::mlir::func::FuncOp"> {
  let summary = "Pads large f16/bf16 matrix products to 16-byte rows";
  let description = [{
    cuBLAS runs a half-precision GEMM on Hopper's fast kernels only when
    each operand's and the result's leading dimension is a multiple of 8
    elements (16 bytes); otherwise it falls back to kernels several times
    slower (GPT-2's LM head, 4096 x 50257 x 768 in bf16: 3.3 ms against
    0.45 ms on the H100). A large product (at least 2^27 multiply-adds)
    whose GEMM would have such a leading dimension is computed on operands
    padded with zeros to a multiple of 8 in that dimension, and the result
    sliced back:

    ```mlir
    %p = prim.dot %x, %wt, batch [] x [], contract [1] x [0]
        : tensor<4096x768xbf16>, tensor<768x50257xbf16>
      becomes
    %w8 = prim.pad %w, low [0, 0], high [7, 0], interior [0, 0], value 0.0
        : tensor<50257x768xbf16>
    %wt8 = prim.permute %w8, [1, 0] : tensor<50264x768xbf16>
    %p8 = prim.dot %x, %wt8, ... : tensor<4096x768xbf16>, tensor<768x50264xbf16>
    %p = prim.slice %p8, start [0, 0], limit [4096, 50257], strides [1, 1]
        : tensor<4096x50264xbf16>
    ```

    A transposed operand (a `prim.permute` of its last two dimensions, which
    the GEMM reads with its transpose flag) is padded before the permute, so
    the GEMM still reads it transposed. The pads become copy kernels (fused
    with their operands' producers where those are inlined), the slice is
    read in place by the consumers, or copied when the product is returned.
    Only the dimensions that are a leading dimension pad: `n` always (the
    result's rows), `k` where an operand holds it innermost, `m` where the
    left operand is transposed.
  }];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def ChannelsLastConvolutionsPass
    : Pass<"tc-channels-last-convolutions", "::mlir::func::FuncOp"> {
  let summary = "2-d half-precision convolutions, and the ops between "
                "them, channels-last";
  let description = [{
    cuDNN's fast f16/bf16 convolution kernels read and write channels-last
    tensors (N, H, W, C); on PyTorch's channels-first layout (N, C, H, W)
    it transposes the input, weight and output around them (ResNet-50 in
    bf16 spent a fifth of its time in those transposes). This pass runs
    each 2-d f16/bf16 `prim.convolution` and gradient on channels-last
    tensors, between permutes:

    ```mlir
    %y = prim.convolution %x, %w, ...
        : tensor<64x64x56x56xbf16>, tensor<64x64x3x3xbf16>
      becomes
    %xl = prim.permute %x, [0, 2, 3, 1] : tensor<64x64x56x56xbf16>
    %wl = prim.permute %w, [0, 2, 3, 1] : tensor<64x64x3x3xbf16>
    %yl = prim.convolution %xl, %wl, ... channels_last
        : tensor<64x56x56x64xbf16>, tensor<64x3x3x64xbf16>
    %y = prim.permute %yl, [0, 3, 1, 2] : tensor<64x56x64x64xbf16>
    ```

    then moves each permute back to channels-first down through what
    follows, for as long as the ops can run channels-last unchanged:
    elementwise ops whose other operands are such permutes, splats, or
    broadcasts (batch norm's per-channel scale, broadcast to the last
    dimension instead), reductions (over the permuted dimensions), and
    max pooling's window ops (over all four dimensions, with windows of 1
    on the batch and channels). Where a permute meets the next
    convolution's permute to channels-last the two fold away; what is left
    at the edges (the network's input, a flatten, a returned tensor) is one
    transposing copy. Functions without such convolutions are left alone.
  }];
  let options = [
    Option<"allFloats", "all-floats", "bool", /*default=*/"false",
           "Also f32 and f64 convolutions (the CPU's reference "
           "convolutions test the path with them)">,
    Option<"smallMapsFirst", "small-maps-first", "bool", /*default=*/"false",
           "Keep f32/f64 convolutions with output maps of at most 7x7 and "
           "at most 512 output pixels channels-first (the CPU's choice: "
           "oneDNN's channels-first kernels are faster there); not in "
           "functions with convolution gradients">
  ];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def WidenHalfProductsPass
    : Pass<"tc-widen-half-products", "::mlir::func::FuncOp"> {
  let summary = "Matrix products and convolutions of f16 and bf16 in f32";
  let description = [{
    tc's GEMM runtimes (OpenBLAS, cuBLAS, rocBLAS calls) take f32 and f64.
    A product of half-precision operands (what bf16 autocast makes of a
    linear layer or a convolution) becomes one of f32 operands, whose result
    is rounded to the half type once: a half-precision GEMM with f32
    accumulation, which is what eager's does, computes the same up to the
    order of the additions. The widening converts fuse into the kernels
    that produce the operands. Library convolutions and their gradients
    (the CPU's calls of PyTorch's kernels) widen the same way, and a half
    bias added to a widened product or convolution adds in f32 and rounds
    once, as eager's epilogues do.

    ```mlir
    %p = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<8x16xbf16>, tensor<16x4xbf16>
      becomes
    %a32 = prim.convert %a to f32 : tensor<8x16xbf16>
    %b32 = prim.convert %b to f32 : tensor<16x4xbf16>
    %p32 = prim.dot %a32, %b32, ... : tensor<8x16xf32>, tensor<16x4xf32>
    %p = prim.convert %p32 to bf16 : tensor<8x4xf32>
    ```

    With `convolutions=false` the convolutions and their gradients keep
    their half type: a target whose convolution library computes f16 and
    bf16 itself (the CPU's calls of PyTorch's oneDNN kernels, 2-3x faster in
    bf16 than in f32 on CPUs with bf16 instructions) runs them so. A
    convolution whose result takes a bias still widens, so that the bias
    adds before the one rounding, as in eager's kernel.
  }];
  let options = [
    Option<"convolutions", "convolutions", "bool", /*default=*/"true",
           "Also widen f16/bf16 convolutions and their gradients">
  ];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

def SkinnyProductsPass
    : Pass<"tc-skinny-products", "::mlir::func::FuncOp"> {
  let summary = "Products of a few rows by a weight as tc's reductions";
  let description = [{
    A matrix product of at most `max-rows` rows (a decode step's token per
    sequence) by a weight stored `[N, K]` (a linear layer's, read
    transposed) reads the weight once and does two flops per element read:
    its time is the weight's bytes over memory bandwidth. A GEMM library
    launch for it streams a small matrix below that rate (cuBLAS's kernels
    for one row of 2048 by 2048 bf16 read ~2.2 TB/s of the H200's 4.8) and
    leaves the products' epilogues (a SiLU gate, a residual) to kernels of
    their own. As a multiply and a sum along the weight's rows, each
    output a row reduction over `K` contiguous elements, the product is a
    kernel of tc's: one block (or warp) per output element streams its
    weight row, and what reads the result fuses into it. On the CPU, a
    bf16 weight is read as it is stored, where the BLAS call took a
    widened f32 copy of it each step.

    ```mlir
    %p = prim.dot %x, %wt, batch [] x [], contract [1] x [0]
        : tensor<1x2048xbf16>, tensor<2048x512xbf16>   // %wt = permute %w
      becomes
    %xb = prim.broadcast_in_dim (convert %x to f32), shape [1, 512, 2048], dims [0, 2]
    %wb = prim.broadcast_in_dim (convert %w to f32), shape [1, 512, 2048], dims [1, 2]
    %s = prim.reduce sum (prim.mul %xb, %wb), dims [2]
    %p = prim.convert %s to bf16 : tensor<1x512xf32>
    ```

    The sums accumulate in f32 and round once, as a GEMM's do. Products
    whose rhs is contracted along its outer dimension in memory (a `[K,
    N]` weight, each output a strided column) and products of more rows
    (whose weight a GEMM reads once for all of them) stay GEMMs.
  }];
  let options = [
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"1",
           "The most rows (the lhs's leading dimensions' product) a product "
           "computed as a reduction has; 0 turns the rewrite off">,
    Option<"minDepth", "min-depth", "int64_t", /*default=*/"256",
           "The fewest contracted elements (K) such a product has">
  ];
  let dependentDialects = ["::mlir::tc::prim::PrimDialect"];
}

#endif // TC_DIALECT_PRIM_TRANSFORMS_PASSES_TD
