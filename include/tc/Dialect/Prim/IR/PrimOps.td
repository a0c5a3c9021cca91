//===- PrimOps.td - prim dialect operations ----------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_IR_PRIMOPS_TD
#define TC_DIALECT_PRIM_IR_PRIMOPS_TD

include "tc/Dialect/Prim/IR/PrimBase.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Elementwise unary operations
//===----------------------------------------------------------------------===//

class Prim_UnaryOp<string mnemonic, Type type, list<Trait> traits = []>
    : Prim_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                             SameOperandsAndResultType])> {
  let summary = "Elementwise " # mnemonic;
  let description = [{
    Applies `}] # mnemonic # [{` to every element; operand and result have
    the same type.

    ```mlir
    %r = prim.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins type:$operand);
  let results = (outs type:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Prim_NegOp : Prim_UnaryOp<"neg", Prim_Tensor> { let hasFolder = 1; }
def Prim_AbsOp : Prim_UnaryOp<"abs", Prim_Tensor>;
def Prim_SignOp : Prim_UnaryOp<"sign", Prim_Tensor>;
def Prim_ExpOp : Prim_UnaryOp<"exp", Prim_FloatTensor>;
def Prim_Expm1Op : Prim_UnaryOp<"expm1", Prim_FloatTensor>;
def Prim_LogOp : Prim_UnaryOp<"log", Prim_FloatTensor>;
def Prim_Log1pOp : Prim_UnaryOp<"log1p", Prim_FloatTensor>;
def Prim_SinOp : Prim_UnaryOp<"sin", Prim_FloatTensor>;
def Prim_CosOp : Prim_UnaryOp<"cos", Prim_FloatTensor>;
def Prim_TanOp : Prim_UnaryOp<"tan", Prim_FloatTensor>;
def Prim_AsinOp : Prim_UnaryOp<"asin", Prim_FloatTensor>;
def Prim_AcosOp : Prim_UnaryOp<"acos", Prim_FloatTensor>;
def Prim_AtanOp : Prim_UnaryOp<"atan", Prim_FloatTensor>;
def Prim_SinhOp : Prim_UnaryOp<"sinh", Prim_FloatTensor>;
def Prim_CoshOp : Prim_UnaryOp<"cosh", Prim_FloatTensor>;
def Prim_TanhOp : Prim_UnaryOp<"tanh", Prim_FloatTensor>;
def Prim_SqrtOp : Prim_UnaryOp<"sqrt", Prim_FloatTensor>;
def Prim_RsqrtOp : Prim_UnaryOp<"rsqrt", Prim_FloatTensor>;
def Prim_ErfOp : Prim_UnaryOp<"erf", Prim_FloatTensor>;
def Prim_FloorOp : Prim_UnaryOp<"floor", Prim_FloatTensor>;
def Prim_CeilOp : Prim_UnaryOp<"ceil", Prim_FloatTensor>;
def Prim_RoundOp : Prim_UnaryOp<"round", Prim_FloatTensor>;
def Prim_BitwiseNotOp : Prim_UnaryOp<"bitwise_not", Prim_IntOrBoolTensor>;

//===----------------------------------------------------------------------===//
// Elementwise binary operations
//===----------------------------------------------------------------------===//

class Prim_BinaryOp<string mnemonic, Type type, list<Trait> traits = []>
    : Prim_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                             SameOperandsAndResultType])> {
  let summary = "Elementwise " # mnemonic;
  let description = [{
    Applies `}] # mnemonic # [{` to every pair of elements. Operands have one
    type and shape: broadcasting and type promotion happen before, in the
    decomposition.

    ```mlir
    %r = prim.}] # mnemonic # [{ %a, %b : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins type:$lhs, type:$rhs);
  let results = (outs type:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Prim_AddOp : Prim_BinaryOp<"add", Prim_Tensor, [Commutative]> {
  let hasFolder = 1;
}
def Prim_SubOp : Prim_BinaryOp<"sub", Prim_Tensor> { let hasFolder = 1; }
def Prim_MulOp : Prim_BinaryOp<"mul", Prim_Tensor, [Commutative]> {
  let hasFolder = 1;
}
def Prim_DivOp : Prim_BinaryOp<"div", Prim_Tensor> {
  let summary = "Elementwise division (true division for floats, truncating "
                "for integers, as PrimTorch's div)";
  let hasFolder = 1;
}
def Prim_RemOp : Prim_BinaryOp<"rem", Prim_Tensor>;
def Prim_PowOp : Prim_BinaryOp<"pow", Prim_Tensor>;
def Prim_MaximumOp : Prim_BinaryOp<"maximum", Prim_Tensor, [Commutative]>;
def Prim_MinimumOp : Prim_BinaryOp<"minimum", Prim_Tensor, [Commutative]>;
def Prim_Atan2Op : Prim_BinaryOp<"atan2", Prim_FloatTensor>;
def Prim_BitwiseAndOp : Prim_BinaryOp<"bitwise_and", Prim_IntOrBoolTensor,
                                      [Commutative]>;
def Prim_BitwiseOrOp : Prim_BinaryOp<"bitwise_or", Prim_IntOrBoolTensor,
                                     [Commutative]>;
def Prim_BitwiseXorOp : Prim_BinaryOp<"bitwise_xor", Prim_IntOrBoolTensor,
                                      [Commutative]>;

def Prim_CompareOp : Prim_Op<"compare", [
    Pure, Elementwise, AllTypesMatch<["lhs", "rhs"]>,
    InferTypeOpAdaptor
  ]> {
  let summary = "Elementwise comparison";
  let description = [{
    Compares two tensors of one type elementwise; the result is a bool
    (`i1`) tensor of the same shape.

    ```mlir
    %m = prim.compare lt, %a, %b : tensor<4xf32>
    ```
  }];
  let arguments = (ins Prim_ComparisonPredicate:$predicate, Prim_Tensor:$lhs,
                       Prim_Tensor:$rhs);
  let results = (outs Prim_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
}

//===----------------------------------------------------------------------===//
// Elementwise ternary operations
//===----------------------------------------------------------------------===//

def Prim_WhereOp : Prim_Op<"where", [
    Pure, Elementwise, AllTypesMatch<["on_true", "on_false", "result"]>,
    AllShapesMatch<["condition", "on_true"]>
  ]> {
  let summary = "Elementwise select";
  let description = [{
    `result[i] = condition[i] ? on_true[i] : on_false[i]`.

    ```mlir
    %r = prim.where %m, %a, %b : tensor<4xi1>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Prim_BoolTensor:$condition, Prim_Tensor:$on_true,
                       Prim_Tensor:$on_false);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,`
    type($result)
  }];
  let hasFolder = 1;
}

def Prim_ClampOp : Prim_Op<"clamp", [
    Pure, Elementwise, SameOperandsAndResultType
  ]> {
  let summary = "Elementwise clamp between two bounds";
  let description = [{
    `result[i] = min(max(operand[i], low[i]), high[i])`, NaN propagating.

    ```mlir
    %r = prim.clamp %x, %lo, %hi : tensor<4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand, Prim_Tensor:$low,
                       Prim_Tensor:$high);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$operand `,` $low `,` $high attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Type conversion
//===----------------------------------------------------------------------===//

def Prim_ConvertOp : Prim_Op<"convert", [
    Pure, Elementwise, InferTypeOpAdaptor
  ]> {
  let summary = "Elementwise dtype conversion";
  let description = [{
    Converts every element to `dtype` with PyTorch's rules (float to int
    truncates toward zero; anything to bool compares with zero).

    ```mlir
    %h = prim.convert %x to f16 : tensor<4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand,
                       TypeAttrOf<Prim_ElementType>:$dtype);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$operand `to` $dtype attr-dict `:` type($operand)";
  let hasFolder = 1;
}

def Prim_BitcastOp : Prim_Op<"bitcast", [
    Pure, Elementwise, InferTypeOpAdaptor
  ]> {
  let summary = "Reinterprets each element's bits as another type";
  let description = [{
    The bits of every element, unchanged, as `dtype`, which has the same
    width (f32 and i32, bf16 and i16, ...; not i1). The float
    representation ops decompose through it: `signbit` reads the sign bit
    (also of NaN and -0.0), `nextafter` steps the bits by one.

    ```mlir
    %bits = prim.bitcast %x to i32 : tensor<4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand,
                       TypeAttrOf<Prim_ElementType>:$dtype);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$operand `to` $dtype attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape operations
//===----------------------------------------------------------------------===//

class Prim_ShapeOp<string mnemonic, list<Trait> traits = []>
    : Prim_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor])>;

def Prim_BroadcastInDimOp : Prim_ShapeOp<"broadcast_in_dim"> {
  let summary = "Broadcasts a tensor to a shape";
  let description = [{
    Dimension `i` of the operand becomes dimension `broadcast_dimensions[i]`
    of the result (strictly increasing); an operand dimension is either equal
    to the result's or 1.

    ```mlir
    %r = prim.broadcast_in_dim %b, shape [4, 8], dims [1] : tensor<8xf32>
    ```

    A `?` in `shape` is the graph's symbolic size (docs/DynamicShapes.md):
    a dimension mapped from an operand's `?`, or a broadcast of a unit or
    absent dimension to it.
  }];
  let arguments = (ins Prim_Tensor:$operand, DenseI64ArrayAttr:$shape,
                       DenseI64ArrayAttr:$broadcast_dimensions);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `shape` custom<Shape>($shape) `,` `dims` $broadcast_dimensions
    attr-dict `:` type($operand)
  }];
  let hasFolder = 1;
}

def Prim_ReshapeOp : Prim_ShapeOp<"reshape"> {
  let summary = "Reshapes a tensor, keeping the row-major element order";
  let description = [{
    ```mlir
    %r = prim.reshape %x, shape [2, 6] : tensor<3x4xf32>
    ```

    With the graph's symbolic size (`?`), operand and result have as many
    `?` and the same product of static sizes.
  }];
  let arguments = (ins Prim_Tensor:$operand, DenseI64ArrayAttr:$shape);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `shape` custom<Shape>($shape) attr-dict `:` type($operand)
  }];
  let hasFolder = 1;
}

def Prim_PermuteOp : Prim_ShapeOp<"permute"> {
  let summary = "Permutes a tensor's dimensions";
  let description = [{
    Result dimension `i` is operand dimension `permutation[i]`.

    ```mlir
    %t = prim.permute %x, [1, 0] : tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$operand `,` $permutation attr-dict `:` type($operand)";
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// Whether the permutation swaps the last two dimensions and keeps the
    /// others: a matrix transpose, which a GEMM reads with its transpose
    /// flag instead of a copy.
    bool swapsLastTwo();
  }];
}

def Prim_SliceOp : Prim_ShapeOp<"slice"> {
  let summary = "Extracts a strided slice";
  let description = [{
    Per dimension: elements `start, start + stride, ...` below `limit`.
    The graph's symbolic size is taken whole: `[0, ?)` by 1.

    ```mlir
    %s = prim.slice %x, start [0, 1], limit [3, 4], strides [1, 2]
        : tensor<3x4xf32>
    %r = prim.slice %y, start [0, 1], limit [?, 4], strides [1, 1]
        : tensor<?x4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$strides);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `start` $start `,` `limit` custom<Shape>($limit) `,`
    `strides` $strides
    attr-dict `:` type($operand)
  }];
  let hasFolder = 1;
}

def Prim_PadOp : Prim_ShapeOp<"pad"> {
  let summary = "Pads a tensor with a constant";
  let description = [{
    Adds `low`/`high` elements before/after each dimension (negative values
    crop) and `interior` elements between neighbours, all set to `value`.

    ```mlir
    %p = prim.pad %x, low [0, 1], high [0, 1], interior [0, 0], value 0.0
        : tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, DenseI64ArrayAttr:$interior,
                       F64Attr:$value);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `low` $low `,` `high` $high `,` `interior` $interior `,`
    `value` $value attr-dict `:` type($operand)
  }];
  let hasFolder = 1;
}

def Prim_ConcatenateOp : Prim_ShapeOp<"concatenate"> {
  let summary = "Concatenates tensors along a dimension";
  let description = [{
    ```mlir
    %c = prim.concatenate %a, %b dim 0 : tensor<2x4xf32>, tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Prim_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$inputs `dim` $dim attr-dict `:` type($inputs)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

def Prim_ScatterAddOp : Prim_Op<"scatter_add", [Pure]> {
  let summary = "Sums rows into the positions integer indices select";
  let description = [{
    The transpose of a `gather` along dimension 0: a tensor of zeros of the
    result's shape to which each row of `updates` is added at the row
    `indices` holds for it, repeated indices accumulating:

    `result[indices[p], q...] += updates[p, q...]`

    `indices` is 1-d (P positions), `updates` is (P, rest...) and the result
    is (N, rest...) with the element type of `updates`. An embedding's
    gradient is a scatter-add of the output's gradient into the table's
    rows: O(P x rest) work, where a one-hot product pays for all N rows per
    position. Kernels add with atomics (the order of the additions, and so
    the rounding, may vary from run to run, as in eager's CUDA kernels);
    an index outside `[0, N)` adds nothing.

    ```mlir
    // 6 rows of 8 into a (10, 8) table's gradient
    %g = prim.scatter_add %rows[%indices] : tensor<6x8xf32>, tensor<6xi64> -> tensor<10x8xf32>
    ```
  }];
  let arguments = (ins Prim_FloatTensor:$updates,
                       RankedTensorOf<[I64, I32]>:$indices);
  let results = (outs Prim_FloatTensor:$result);
  let assemblyFormat = [{
    $updates `[` $indices `]` attr-dict `:` type($updates) `,` type($indices)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Prim_ScatterOp : Prim_Op<"scatter",
    [Pure, AllTypesMatch<["operand", "result"]>]> {
  let summary = "Replaces the slices of a tensor that integer indices select";
  let description = [{
    The tensor `operand` with its slices along dimension `dim` at the
    positions `indices` holds replaced by the slices of `updates` (the
    inverse of a `gather` of 1-d indices, and PyTorch's `x[..., i] = v`,
    `index_copy`):

    `result[p..., indices[i], q...] = updates[p..., i, q...]`

    and `result = operand` elsewhere. `indices` is 1-d (I positions) and
    `updates` is `operand`'s shape with dimension `dim` replaced by I. Kernels
    copy `operand` (nothing, where the result is written in its buffer: a
    cache updated in place) and then store the updates, O(updates) work; a
    position given twice takes one of its updates, which one unspecified (as
    in eager's CUDA kernels); an index outside `[0, size)` stores nothing
    (`tc-decompose` wraps PyTorch's negative indices first, and the backend
    checks the range, raising eager's error).

    ```mlir
    // one position of a [1, 8, 1024, 64] cache along dimension 2
    %c = prim.scatter %cache[%pos] = %kv, dim 2
        : tensor<1x8x1024x64xbf16>, tensor<1xi64>, tensor<1x8x1x64xbf16>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand,
                       RankedTensorOf<[I64, I32]>:$indices,
                       Prim_Tensor:$updates, I64Attr:$dim);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `=` $updates `,` `dim` $dim attr-dict `:`
    type($operand) `,` type($indices) `,` type($updates)
  }];
  let hasVerifier = 1;
}

def Prim_GatherOp : Prim_ShapeOp<"gather"> {
  let summary = "Takes the slices of a tensor that integer indices select";
  let description = [{
    Reads `operand` at the positions `indices` hold along dimension `dim`
    (NumPy's and JAX's `take`): the result's shape is `operand`'s with
    dimension `dim` replaced by the shape of `indices`, and

    `result[p..., i..., q...] = operand[p..., indices[i...], q...]`

    for `p` ranging over the dimensions before `dim` and `q` over those
    after it. An embedding lookup is a gather of the table's rows (`dim 0`).
    An index outside `[0, size)` has no defined result (kernels clamp it
    into range, so the read stays in bounds); PyTorch checks the indices
    before they get here.

    ```mlir
    // (10, 8) table, (3, 5) indices -> (3, 5, 8) rows
    %r = prim.gather %table[%indices], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand,
                       RankedTensorOf<[I64, I32]>:$indices, I64Attr:$dim);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `,` `dim` $dim attr-dict `:` type($operand) `,`
    type($indices)
  }];
}

//===----------------------------------------------------------------------===//
// Tensor creation
//===----------------------------------------------------------------------===//

def Prim_ConstantOp : Prim_Op<"constant", [
    ConstantLike, Pure, AllTypesMatch<["value", "result"]>
  ]> {
  let summary = "A constant tensor (full, zeros, ones, literals)";
  let description = [{
    ```mlir
    %c = prim.constant dense<1.0> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Prim_IotaOp : Prim_ShapeOp<"iota"> {
  let summary = "Counts 0, 1, 2, ... along one dimension";
  let description = [{
    ```mlir
    %i = prim.iota shape [4, 8], dim 1 : i64
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$shape, I64Attr:$dim,
                       TypeAttrOf<Prim_ElementType>:$dtype);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "`shape` $shape `,` `dim` $dim attr-dict `:` $dtype";
}

def Prim_RandomOp : Prim_ShapeOp<"random"> {
  let summary = "Counter-based random numbers (Philox)";
  let description = [{
    Draws a tensor of `shape` from `distribution` (uniform on [0, 1) or
    standard normal). The value at linear index `i` depends only on `seed`
    and `offset + i`, so the same numbers can be regenerated, e.g. by a
    recomputing backward pass.

    ```mlir
    %r = prim.random uniform %seed, %offset, shape [4, 8] : f32
    ```
  }];
  let arguments = (ins Prim_Distribution:$distribution, Prim_I64Scalar:$seed,
                       Prim_I64Scalar:$offset, DenseI64ArrayAttr:$shape,
                       TypeAttrOf<AnyTypeOf<[F32, F16, BF16, F64]>>:$dtype);
  let results = (outs Prim_FloatTensor:$result);
  let assemblyFormat = [{
    $distribution $seed `,` $offset `,` `shape` $shape attr-dict `:` $dtype
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Prim_ReduceOp : Prim_ShapeOp<"reduce"> {
  let summary = "Reduces dimensions with sum, prod, max or min";
  let description = [{
    Removes the listed dimensions (distinct, sorted); `keepdim` is a
    reshape afterwards, as in PrimTorch.

    ```mlir
    %s = prim.reduce sum %x, dims [1] : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Prim_ReductionKind:$kind, Prim_Tensor:$operand,
                       DenseI64ArrayAttr:$dims);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$kind $operand `,` `dims` $dims attr-dict `:` type($operand)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Prim_ArgReduceOp : Prim_ShapeOp<"arg_reduce"> {
  let summary = "Index of the maximum or minimum along one dimension";
  let description = [{
    Returns the (first) index of the extreme value along `dim` as i64,
    removing that dimension.

    ```mlir
    %i = prim.arg_reduce argmax %x, dim 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Prim_ArgReductionKind:$kind, Prim_Tensor:$operand,
                       I64Attr:$dim);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$kind $operand `,` `dim` $dim attr-dict `:` type($operand)";
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Prim_DotOp : Prim_ShapeOp<"dot", [AllElementTypesMatch<["lhs", "rhs"]>]> {
  let summary = "General matrix product with batch dimensions";
  let description = [{
    Contracts `lhs_contracting` with `rhs_contracting` dimensions, pairing
    the batch dimensions. The result's dimensions are the batch dimensions,
    then lhs's free dimensions, then rhs's free dimensions.

    ```mlir
    // (B, M, K) x (B, K, N) -> (B, M, N)
    %r = prim.dot %a, %b, batch [0] x [0], contract [2] x [1]
        : tensor<2x3x4xf32>, tensor<2x4x5xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$lhs, Prim_Tensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batch,
                       DenseI64ArrayAttr:$rhs_batch,
                       DenseI64ArrayAttr:$lhs_contracting,
                       DenseI64ArrayAttr:$rhs_contracting);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` `batch` $lhs_batch `x` $rhs_batch `,` `contract`
    $lhs_contracting `x` $rhs_contracting attr-dict `:` type($lhs) `,`
    type($rhs)
  }];
  let extraClassDeclaration = [{
    /// The products a GEMM library call computes: `plain` (m x k by
    /// k x n), `batched` (b x m x k by b x k x n) and `flattened` (an n-d
    /// lhs whose leading dimensions are the rows, by a k x n rhs).
    enum class GemmForm { None, Plain, Batched, Flattened };
    GemmForm getGemmForm();
    /// The product's one user when that adds a vector broadcast along the
    /// result's last dimension (a linear layer's bias: what a GEMM's
    /// epilogue adds), else null; `bias` is set to the vector.
    AddOp getBiasAdd(::mlir::Value &bias);
  }];
}

def Prim_ConvolutionOp : Prim_ShapeOp<"convolution", [
    AllElementTypesMatch<["input", "weight"]>
  ]> {
  let summary = "N-d convolution in PyTorch's layout (NC..., OI...)";
  let description = [{
    `input` is (N, C, spatial...), `weight` is (O, C / groups, kernel...),
    the result (N, O, out...) with
    `out = (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1`.

    ```mlir
    %y = prim.convolution %x, %w, stride [1, 1], padding [1, 1],
        dilation [1, 1], groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
    ```

    With `channels_last`, every tensor holds its channels innermost: input
    (N, spatial..., C), weight (O, kernel..., C / groups), result
    (N, out..., O); the convolution is the same
    (tc-channels-last-convolutions makes these).
  }];
  let arguments = (ins Prim_Tensor:$input, Prim_Tensor:$weight,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups,
                       UnitAttr:$channels_last);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` `stride` $stride `,` `padding` $padding `,`
    `dilation` $dilation `,` `groups` $groups
    (`channels_last` $channels_last^)? attr-dict `:` type($input) `,`
    type($weight)
  }];
}

def Prim_AttentionOp : Prim_Op<"attention", [Pure]> {
  let summary = "Scaled dot-product attention, one library call";
  let description = [{
    `softmax(scale * query @ key^T (+ bias)) @ value` over the keys, with
    `causal` masking each query's keys after its own position (PyTorch's
    `is_causal`, aligned to the top left). `query` is (B, H, Sq, D), `key`
    (B, Hk, Skv, D), `value` (B, Hk, Skv, Dv), the result (B, H, Sq, Dv);
    with Hk < H (grouped-query attention) query heads `h` read key and
    value head `h / (H / Hk)`. The optional additive `bias` is
    (B or 1, H or 1, Sq, W) where W is Skv rounded up to a multiple of 8
    (`getBiasWidth`): its rows are 16-byte aligned, as cuDNN reads them;
    the columns past Skv are not read. Half-precision operands only: targets with a
    fused attention library (cuDNN on CUDA) run it as one call, as PyTorch's
    `_scaled_dot_product_cudnn_attention` does; tc makes it only for them.

    ```mlir
    %o = prim.attention %q, %k, %v scale 1.250000e-01 causal
        : tensor<2x12x128x64xbf16>, tensor<2x12x128x64xbf16>,
          tensor<2x12x128x64xbf16> -> tensor<2x12x128x64xbf16>
    ```
  }];
  let arguments = (ins Prim_FloatTensor:$query, Prim_FloatTensor:$key,
                       Prim_FloatTensor:$value,
                       Optional<Prim_FloatTensor>:$bias, F64Attr:$scale,
                       UnitAttr:$causal);
  let results = (outs Prim_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`bias` $bias^)? `scale` $scale
    (`causal` $causal^)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The width of a bias over `keys` keys: `keys` rounded up to a
    /// multiple of 8.
    static int64_t getBiasWidth(int64_t keys) { return (keys + 7) / 8 * 8; }
  }];
  let hasVerifier = 1;
}

// The two gradients of a convolution. Their result types are explicit: the
// input's or the weight's spatial size is not determined by the others when
// a stride drops trailing positions.
// `channels_last` as for prim.convolution: all three tensors channels
// innermost.
class Prim_ConvolutionGradOp<string mnemonic>
    : Prim_Op<mnemonic, [Pure]> {
  let arguments = (ins Prim_Tensor:$grad, Prim_Tensor:$other,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups,
                       UnitAttr:$channels_last);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = [{
    $grad `,` $other `,` `stride` $stride `,` `padding` $padding `,`
    `dilation` $dilation `,` `groups` $groups
    (`channels_last` $channels_last^)? attr-dict `:` type($grad) `,`
    type($other) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Prim_ConvolutionBackwardInputOp
    : Prim_ConvolutionGradOp<"convolution_backward_input"> {
  let summary = "The input gradient of a convolution";
  let description = [{
    Given the cotangent `grad` of `prim.convolution %x, %weight` (same
    window attributes), the cotangent of `%x`, whose type is the result
    type (a transposed convolution of `grad` by `weight`). tc-autodiff makes
    it; GPU targets run it as a library call, tc-expand-convolutions writes
    it as matrix products for the others.

    ```mlir
    %dx = prim.convolution_backward_input %dy, %w, stride [2, 2],
        padding [1, 1], dilation [1, 1], groups 1
        : tensor<1x6x4x4xf32>, tensor<6x3x3x3xf32> -> tensor<1x3x8x8xf32>
    ```
  }];
}

def Prim_ConvolutionBackwardWeightOp
    : Prim_ConvolutionGradOp<"convolution_backward_weight"> {
  let summary = "The weight gradient of a convolution";
  let description = [{
    Given the cotangent `grad` of `prim.convolution %input, %w` (same
    window attributes), the cotangent of `%w`, whose type is the result
    type.

    ```mlir
    %dw = prim.convolution_backward_weight %dy, %x, stride [2, 2],
        padding [1, 1], dilation [1, 1], groups 1
        : tensor<1x6x4x4xf32>, tensor<1x3x8x8xf32> -> tensor<6x3x3x3xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Windows (max pooling)
//===----------------------------------------------------------------------===//

// The window ops see the trailing `window.size()` dimensions of the pooled
// tensor as spatial: output point `o` reads, for each window position `k`
// (a row-major index into `window`), the input point
// `o * strides - padding + k_d * dilation` in each spatial dimension, and
// leading dimensions one to one. Positions outside the input are padding:
// they are never selected and receive no gradient. Result types are
// explicit: PyTorch's ceil mode adds a last, partial window.
class Prim_WindowOp<string mnemonic, list<Trait> traits = []>
    : Prim_Op<mnemonic, !listconcat(traits, [Pure])> {
  code windowAttributes = [{
    `window` $window `,` `strides` $strides `,` `padding` $padding `,`
    `dilation` $dilation
  }];
  let hasVerifier = 1;
}

def Prim_WindowArgmaxOp : Prim_WindowOp<"window_argmax"> {
  let summary = "Position of each window's maximum";
  let description = [{
    The window position (row-major, `[0, prod(window))`) of each window's
    first maximum, scanning in row-major order, as PyTorch's max pooling
    picks it: a later element wins only if it is greater, or NaN. The
    result is an integer tensor of the output's shape, narrow enough to
    save cheaply for a backward pass (`i8` for windows of up to 127
    positions).

    ```mlir
    %k = prim.window_argmax %x, window [3, 3], strides [2, 2],
        padding [1, 1], dilation [1, 1]
        : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xi8>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand, DenseI64ArrayAttr:$window,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation);
  let results = (outs RankedTensorOf<[I8, I16, I32, I64]>:$result);
  let assemblyFormat = "$operand `,` " # windowAttributes #
                       " attr-dict `:` type($operand) `->` type($result)";
}

def Prim_WindowGatherOp : Prim_WindowOp<"window_gather"> {
  let summary = "Reads each window at a given position";
  let description = [{
    `result[o] = operand[window point of o at position positions[o]]`:
    with the positions of `prim.window_argmax`, max pooling. A position
    that names padding has no defined result.

    ```mlir
    %y = prim.window_gather %x[%k], window [3, 3], strides [2, 2],
        padding [1, 1], dilation [1, 1]
        : tensor<1x4x8x8xf32>, tensor<1x4x4x4xi8> -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$operand,
                       RankedTensorOf<[I8, I16, I32, I64]>:$positions,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$operand `[` $positions `]` `,` " # windowAttributes #
                       " attr-dict `:` type($operand) `,` type($positions) "
                       "`->` type($result)";
}

def Prim_WindowScatterOp : Prim_WindowOp<"window_scatter"> {
  let summary = "Sums each window's value into the position it names";
  let description = [{
    The transpose of `prim.window_gather` (its gradient, max pooling's
    backward): each input point of the result is the sum of `source` over
    the windows whose `positions` name that point, zero where none does.
    Kernels compute it point by point as a gather over the windows that
    contain the point (no atomics), summing windows in row-major order, in
    f32 for narrower floats.

    ```mlir
    %dx = prim.window_scatter %dy[%k], window [3, 3], strides [2, 2],
        padding [1, 1], dilation [1, 1]
        : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi8> -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Prim_Tensor:$source,
                       RankedTensorOf<[I8, I16, I32, I64]>:$positions,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation);
  let results = (outs Prim_Tensor:$result);
  let assemblyFormat = "$source `[` $positions `]` `,` " # windowAttributes #
                       " attr-dict `:` type($source) `,` type($positions) "
                       "`->` type($result)";
}

#endif // TC_DIALECT_PRIM_IR_PRIMOPS_TD
