// tc-translate reruns the step after tc-opt's CPU pipeline that tc's JIT
// takes: LLVM IR of the kernels, the host program (kernel.schedule) left
// out as the runtime leaves it out. f64 erf calls libm's; a failed
// translation (planted: the pipeline's llvm-translation test option leaves
// f64 erf as math.erf, which LLVM has no form for) names the op.
// RUN: tc-opt %s --tc-cpu-pipeline | tc-translate --mlir-to-llvmir | FileCheck %s
// RUN: sed 's/f32/f64/g' %s | tc-opt --tc-cpu-pipeline | tc-translate --mlir-to-llvmir | FileCheck %s --check-prefix=F64
// RUN: sed 's/f32/f64/g' %s | tc-opt --tc-cpu-pipeline=miscompile-pass-for-testing=llvm-translation | not tc-translate --mlir-to-llvmir 2>&1 | FileCheck %s --check-prefix=ERF

// CHECK: define void @main_fused_
// CHECK-NOT: kernel.schedule
// F64: declare double @erf(double)
// ERF: error: {{.*}}math.erf
fx.graph @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::gelu"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}
