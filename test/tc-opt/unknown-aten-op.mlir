// RUN: not tc-opt %s 2>&1 | FileCheck %s

fx.graph @g(%x: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: unknown-aten-op.mlir:[[@LINE+1]]:8: error: 'fx.call_function' op unknown ATen operator 'aten::frobnicate'
  %0 = fx.call_function "aten::frobnicate"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}
