//===- PrimBase.td - prim dialect definition ---------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_IR_PRIMBASE_TD
#define TC_DIALECT_PRIM_IR_PRIMBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Prim_Dialect : Dialect {
  let name = "prim";
  let cppNamespace = "::mlir::tc::prim";
  let summary = "The closed set of primitive tensor operations";
  let description = [{
    The `prim` dialect is tc's PrimTorch: a small, closed set of tensor
    operations with value semantics that every ATen operator decomposes
    into. Broadcasting, type promotion and defaults are explicit here:
    elementwise ops take operands of one type and shape, and shape changes
    are spelled out with `prim.broadcast_in_dim`, `prim.reshape` and friends.
    Fusion (prim to kernel) and autodiff work on this dialect.
  }];
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// A unit attribute on an op that no gradient flows through: the
    /// function's value does not depend on its results (softmax's
    /// stabilizing max, whose shift cancels out). tc-autodiff treats its
    /// results as constants.
    static constexpr ::llvm::StringLiteral getStopGradientAttrName() {
      return ::llvm::StringLiteral("prim.stop_gradient");
    }
  }];
}

class Prim_Op<string mnemonic, list<Trait> traits = []>
    : Op<Prim_Dialect, mnemonic, traits>;

def Prim_ElementType : AnyTypeOf<[F32, F16, BF16, F64, I64, I32, I16, I8, UI8,
                                  I1], "PyTorch dtype">;
def Prim_Tensor : RankedTensorOf<[Prim_ElementType]>;
def Prim_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
def Prim_IntOrBoolTensor : RankedTensorOf<[I64, I32, I16, I8, UI8, I1]>;
def Prim_BoolTensor : RankedTensorOf<[I1]>;
def Prim_I64Scalar : 0DTensorOf<[I64]> {
  let builderCall =
      "::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))";
}

def Prim_ComparisonPredicate : I32EnumAttr<"ComparisonPredicate",
    "elementwise comparison", [
      I32EnumAttrCase<"EQ", 0, "eq">,
      I32EnumAttrCase<"NE", 1, "ne">,
      I32EnumAttrCase<"LT", 2, "lt">,
      I32EnumAttrCase<"LE", 3, "le">,
      I32EnumAttrCase<"GT", 4, "gt">,
      I32EnumAttrCase<"GE", 5, "ge">
    ]> {
  let cppNamespace = "::mlir::tc::prim";
}

def Prim_ReductionKind : I32EnumAttr<"ReductionKind", "reduction combiner", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Prod", 1, "prod">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">
    ]> {
  let cppNamespace = "::mlir::tc::prim";
}

def Prim_ArgReductionKind : I32EnumAttr<"ArgReductionKind",
    "index-returning reduction", [
      I32EnumAttrCase<"ArgMax", 0, "argmax">,
      I32EnumAttrCase<"ArgMin", 1, "argmin">
    ]> {
  let cppNamespace = "::mlir::tc::prim";
}

def Prim_Distribution : I32EnumAttr<"Distribution", "random distribution", [
      I32EnumAttrCase<"Uniform", 0, "uniform">,
      I32EnumAttrCase<"Normal", 1, "normal">
    ]> {
  let cppNamespace = "::mlir::tc::prim";
}

#endif // TC_DIALECT_PRIM_IR_PRIMBASE_TD
