//===- FXOps.td - fx dialect operations --------------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_FXOPS_TD
#define TC_DIALECT_FX_IR_FXOPS_TD

include "tc/Dialect/FX/IR/FXBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// fx.graph
//===----------------------------------------------------------------------===//

def FX_GraphOp : FX_Op<"graph", [
    AutomaticAllocationScope, FunctionOpInterface, IsolatedFromAbove,
    OpAsmOpInterface
  ]> {
  let summary = "A torch.fx graph";
  let description = [{
    A function-like op holding one FX graph. Its block arguments are the
    graph's placeholders, in order; the placeholder's FX name is kept in the
    `fx.name` argument attribute and used as the SSA name when printing. The
    body is a single block ending in `fx.output`.

    ```mlir
    fx.graph @foo(%x: tensor<3x3xf32> {fx.name = "x"},
                  %y: tensor<3x3xf32> {fx.name = "y"}) -> tensor<3x3xf32> {
      %sin = fx.call_function "aten::sin"(%x) : (tensor<3x3xf32>) -> tensor<3x3xf32>
      fx.output %sin : tensor<3x3xf32>
    }
    ```
  }];

  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);

  let extraClassDeclaration = [{
    //===------------------------------------------------------------------===//
    // FunctionOpInterface
    //===------------------------------------------------------------------===//

    /// Returns the argument types of this graph.
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }

    /// Returns the result types of this graph.
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }

    ::mlir::Region *getCallableRegion() { return &getBody(); }

    //===------------------------------------------------------------------===//
    // OpAsmOpInterface
    //===------------------------------------------------------------------===//

    /// Names block arguments after their FX placeholder.
    void getAsmBlockArgumentNames(::mlir::Region &region,
                                  ::mlir::OpAsmSetValueNameFn setNameFn);
  }];

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fx.call_function
//===----------------------------------------------------------------------===//

def FX_CallFunctionOp : FX_Op<"call_function", [
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>
  ]> {
  let summary = "Applies an ATen operator overload";
  let description = [{
    The FX `call_function` node. `target` names an ATen overload as PyTorch's
    schema registry does (`aten::add.Tensor`; the default overload has no
    suffix: `aten::sin`). The tensor operands bind the schema's tensor
    arguments (`Tensor`, `Tensor?`, `Tensor[]`) in order; every other
    argument (ints, floats, bools, scalars, lists, dtypes, strings) is an
    entry of the `args` dictionary keyed by the schema's argument name.
    Arguments with defaults may be left out.

    When a `Tensor?` argument is None or a `Tensor[]` argument is present,
    `tensor_arg_sizes` gives the number of operands bound to each tensor
    argument; without it every tensor argument takes exactly one operand.
    A `Tensor?[]` argument with None entries (`x[:, i]` is `aten::index`
    with indices `[None, i]`) also has an `args` entry of its name marking
    the present entries, `indices = array<i1: false, true>`.

    The verifier checks the call against the table of ATen schemas that
    `utils/gen_aten_schemas.py` generates from PyTorch's registry.

    ```mlir
    %add = fx.call_function "aten::add.Tensor"(%a, %b) {args = {alpha = 1 : i64}}
        : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
    ```
  }];

  let arguments = (ins StrAttr:$target,
                       Variadic<FX_Tensor>:$tensors,
                       OptionalAttr<DictionaryAttr>:$args,
                       OptionalAttr<DenseI32ArrayAttr>:$tensor_arg_sizes,
                       OptionalAttr<StrAttr>:$name);
  let results = (outs Variadic<FX_Tensor>:$results);

  let assemblyFormat = [{
    $target `(` $tensors `)` attr-dict `:` functional-type($tensors, $results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fx.get_attr
//===----------------------------------------------------------------------===//

def FX_AttrKind : I32EnumAttr<"AttrKind", "What an fx.get_attr reads", [
    I32EnumAttrCase<"Parameter", 0, "parameter">,
    I32EnumAttrCase<"Buffer", 1, "buffer">,
    I32EnumAttrCase<"Constant", 2, "constant">
  ]> {
  let cppNamespace = "::mlir::tc::fx";
}

def FX_GetAttrOp : FX_Op<"get_attr", [
    Pure, DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>
  ]> {
  let summary = "Reads a parameter, buffer or constant of the module";
  let description = [{
    The FX `get_attr` node: reads the module attribute at the dotted path
    `target` (e.g. `layers.0.weight`). `kind` says whether it is a parameter,
    a buffer or a lifted constant. The importer binds the value to the live
    torch tensor without copying it; the IR only carries its type.

    ```mlir
    %w = fx.get_attr parameter "lin.weight" : tensor<3x3xf32>
    ```
  }];

  let arguments = (ins FX_AttrKind:$kind, StrAttr:$target);
  let results = (outs FX_Tensor:$result);

  let assemblyFormat = "$kind $target attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fx.output
//===----------------------------------------------------------------------===//

def FX_OutputOp : FX_Op<"output", [
    Pure, HasParent<"GraphOp">, ReturnLike, Terminator
  ]> {
  let summary = "Returns the graph's results";
  let description = [{
    The FX `output` node. Its operands must match the result types of the
    enclosing `fx.graph`.

    ```mlir
    fx.output %a, %b : tensor<3xf32>, tensor<f32>
    ```
  }];

  let arguments = (ins Variadic<FX_Tensor>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let hasVerifier = 1;
}

#endif // TC_DIALECT_FX_IR_FXOPS_TD
