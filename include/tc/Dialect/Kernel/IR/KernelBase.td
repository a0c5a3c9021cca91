//===- KernelBase.td - kernel dialect definition -----------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELBASE_TD
#define TC_DIALECT_KERNEL_IR_KERNELBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Kernel_Dialect : Dialect {
  let name = "kernel";
  let cppNamespace = "::mlir::tc::kernel";
  let summary = "Loop-level kernels and the host schedule that runs them";
  let description = [{
    The `kernel` dialect is tc's counterpart of Inductor's loop-level IR.
    After fusion, a graph is a set of `kernel.kernel`s, each a loop nest over
    an iteration domain whose body loads scalars from buffers (memrefs) at
    index expressions, computes with `arith`/`math`, and stores; reductions
    inside a kernel are `kernel.reduce`, inner sequential loops
    `kernel.loop`. A `kernel.schedule` is the host side: it carves buffers
    out of one planned arena, and orders kernel launches and library calls
    such as `kernel.gemm`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

def Kernel_CombinerKind : I32EnumAttr<"CombinerKind", "reduction combiner", [
      I32EnumAttrCase<"Add", 0, "add">,
      I32EnumAttrCase<"Mul", 1, "mul">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">
    ]> {
  let cppNamespace = "::mlir::tc::kernel";
}

def Kernel_ConvKind : I32EnumAttr<"ConvKind",
    "which operand of a convolution a library call computes", [
      I32EnumAttrCase<"Forward", 0, "forward">,
      I32EnumAttrCase<"BackwardInput", 1, "backward_input">,
      I32EnumAttrCase<"BackwardWeight", 2, "backward_weight">
    ]> {
  let cppNamespace = "::mlir::tc::kernel";
}

#endif // TC_DIALECT_KERNEL_IR_KERNELBASE_TD
