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

#endif // TC_DIALECT_PRIM_TRANSFORMS_PASSES_TD
