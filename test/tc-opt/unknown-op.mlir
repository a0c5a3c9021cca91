// RUN: not tc-opt %s 2>&1 | FileCheck %s

// CHECK: unknown-op.mlir:[[@LINE+3]]:8: error: custom op 'fx.call_method' is unknown
// CHECK-NOT: Stack dump
fx.graph @g(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = fx.call_method "sin"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}
