// tc-translate reruns the step after tc-opt's CPU pipeline that tc's JIT
// takes: LLVM IR of the kernels, the host program (kernel.schedule) left
// out as the runtime leaves it out. A failed translation (here f64 erf,
// which the CPU lowering has no LLVM form for yet) names the op.
// RUN: tc-opt %s --tc-cpu-pipeline | tc-translate --mlir-to-llvmir | FileCheck %s
// RUN: sed 's/f32/f64/g' %s | tc-opt --tc-cpu-pipeline | not tc-translate --mlir-to-llvmir 2>&1 | FileCheck %s --check-prefix=ERF

// CHECK: define void @main_fused_
// CHECK-NOT: kernel.schedule
// ERF: error: {{.*}}math.erf
fx.graph @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::gelu"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}
