//===- FXBase.td - fx dialect definition -------------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The fx dialect mirrors a torch.fx graph: one op per FX node kind.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_FXBASE_TD
#define TC_DIALECT_FX_IR_FXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def FX_Dialect : Dialect {
  let name = "fx";
  let cppNamespace = "::mlir::tc::fx";
  let summary = "A graph dialect mirroring torch.fx";
  let description = [{
    The `fx` dialect is the entry point of tc: a PyTorch program captured by
    Dynamo or `torch.export` is imported one FX node to one op. A graph is an
    `fx.graph` whose block arguments are the FX placeholders,
    `fx.call_function` applies an ATen overload (checked against PyTorch's own
    schema registry), `fx.get_attr` reads a parameter, buffer or constant, and
    `fx.output` returns the graph's results.

    Tensors are builtin ranked tensors (static or dynamic dimensions) whose
    element type is one of the dtypes PyTorch models use.
  }];
  let useDefaultAttributePrinterParser = 0;
  let useDefaultTypePrinterParser = 0;
}

class FX_Op<string mnemonic, list<Trait> traits = []>
    : Op<FX_Dialect, mnemonic, traits>;

// The element types PyTorch models use: torch.float32, float16, bfloat16,
// float64, int64, int32, int16, int8, uint8, bool, complex64 and
// complex128.
def FX_ElementType : AnyTypeOf<[F32, F16, BF16, F64, I64, I32, I16, I8, UI8,
                                I1, Complex<F32>, Complex<F64>],
                               "PyTorch dtype">;

def FX_Tensor : RankedTensorOf<[FX_ElementType]>;

#endif // TC_DIALECT_FX_IR_FXBASE_TD
