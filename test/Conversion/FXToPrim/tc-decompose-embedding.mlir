// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// An embedding lookup gathers the table's rows; padding_idx changes only
// the gradient, so a graph nothing differentiates ignores it.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[W:.*]]: tensor<10x8xf32>, %[[I:.*]]: tensor<3x5xi64>)
// CHECK: %[[R:.*]] = prim.gather %[[W]][%[[I]]], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
// CHECK: %[[P:.*]] = prim.gather %[[W]][%[[I]]], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
// CHECK: return %[[R]], %[[P]] : tensor<3x5x8xf32>, tensor<3x5x8xf32>
fx.graph @embedding(%w: tensor<10x8xf32>, %i: tensor<3x5xi64>) -> (tensor<3x5x8xf32>, tensor<3x5x8xf32>) {
  %0 = fx.call_function "aten::embedding"(%w, %i) : (tensor<10x8xf32>, tensor<3x5xi64>) -> tensor<3x5x8xf32>
  %1 = fx.call_function "aten::embedding"(%w, %i) {args = {padding_idx = 1 : i64}} : (tensor<10x8xf32>, tensor<3x5xi64>) -> tensor<3x5x8xf32>
  fx.output %0, %1 : tensor<3x5x8xf32>, tensor<3x5x8xf32>
}

// -----

// In a differentiated graph, the rows at the padding index come from a
// gather that stops gradients: the padding row gets none.
// CHECK-LABEL: func.func @padding_grad
// CHECK-SAME: (%[[W:.*]]: tensor<10x8xf32> {tc.requires_grad}, %[[I:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = prim.gather %[[W]][%[[I]]], dim 0 : tensor<10x8xf32>, tensor<3xi64>
// CHECK: %[[S:.*]] = prim.gather %[[W]][%[[I]]], dim 0 {prim.stop_gradient} : tensor<10x8xf32>, tensor<3xi64>
// CHECK: %[[P:.*]] = prim.compare eq, %[[I]], %{{.*}} : tensor<3xi64>
// CHECK: %[[M:.*]] = prim.broadcast_in_dim %[[P]], shape [3, 8], dims [0] : tensor<3xi1>
// CHECK: %[[O:.*]] = prim.where %[[M]], %[[S]], %[[R]]
// CHECK: return %[[O]]
fx.graph @padding_grad(%w: tensor<10x8xf32> {tc.requires_grad}, %i: tensor<3xi64>) -> tensor<3x8xf32> {
  %0 = fx.call_function "aten::embedding"(%w, %i) {args = {padding_idx = 0 : i64}} : (tensor<10x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  fx.output %0 : tensor<3x8xf32>
}

// -----

fx.graph @sparse(%w: tensor<10x8xf32>, %i: tensor<3xi64>) -> tensor<3x8xf32> {
  // expected-error @+1 {{cannot decompose 'aten::embedding': sparse and scale_grad_by_freq gradients are not supported}}
  %0 = fx.call_function "aten::embedding"(%w, %i) {args = {sparse = true}} : (tensor<10x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  fx.output %0 : tensor<3x8xf32>
}
