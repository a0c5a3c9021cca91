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
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::tc::prim::PrimDialect"];
}

#endif // TC_CONVERSION_PASSES_TD
