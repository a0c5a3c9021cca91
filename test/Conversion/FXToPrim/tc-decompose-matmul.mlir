// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// bmm contracts the last dim of lhs with the middle dim of rhs per batch.
// CHECK-LABEL: func.func @bmm
// CHECK: prim.dot %{{.*}}, %{{.*}}, batch [0] x [0], contract [2] x [1] : tensor<2x3x4xf32>, tensor<2x4x5xf32>
fx.graph @bmm(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = fx.call_function "aten::bmm"(%a, %b) : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  fx.output %0 : tensor<2x3x5xf32>
}

// -----

// addmm with alpha and beta scales the product and the bias.
// CHECK-LABEL: func.func @addmm_scaled
// CHECK: %[[P:.*]] = prim.dot
// CHECK: %[[ALPHA:.*]] = prim.constant dense<2.000000e+00> : tensor<3x5xf32>
// CHECK: %[[SP:.*]] = prim.mul %[[P]], %[[ALPHA]]
// CHECK: %[[BETA:.*]] = prim.constant dense<5.000000e-01> : tensor<3x5xf32>
// CHECK: %[[SB:.*]] = prim.mul %{{.*}}, %[[BETA]]
// CHECK: prim.add %[[SP]], %[[SB]]
fx.graph @addmm_scaled(%bias: tensor<5xf32>, %a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = fx.call_function "aten::addmm"(%bias, %a, %b) {args = {alpha = 2 : i64, beta = 5.000000e-01 : f64}} : (tensor<5xf32>, tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  fx.output %0 : tensor<3x5xf32>
}

// -----

// beta = 0 drops the bias altogether.
// CHECK-LABEL: func.func @addmm_no_bias
// CHECK: %[[P:.*]] = prim.dot
// CHECK-NEXT: return %[[P]]
fx.graph @addmm_no_bias(%bias: tensor<5xf32>, %a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = fx.call_function "aten::addmm"(%bias, %a, %b) {args = {beta = 0 : i64}} : (tensor<5xf32>, tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  fx.output %0 : tensor<3x5xf32>
}

// -----

// Integers have no GEMM call: the products over [M, K, N], summed over K.
// CHECK-LABEL: func.func @mm_i64
// CHECK: %[[L:.*]] = prim.broadcast_in_dim %{{.*}}, shape [2, 3, 4], dims [0, 1] : tensor<2x3xi64>
// CHECK: %[[R:.*]] = prim.broadcast_in_dim %{{.*}}, shape [2, 3, 4], dims [1, 2] : tensor<3x4xi64>
// CHECK: %[[P:.*]] = prim.mul %[[L]], %[[R]] : tensor<2x3x4xi64>
// CHECK: prim.reduce sum %[[P]], dims [1] : tensor<2x3x4xi64>
// CHECK-NOT: prim.dot
fx.graph @mm_i64(%a: tensor<2x3xi64>, %b: tensor<3x4xi64>) -> tensor<2x4xi64> {
  %0 = fx.call_function "aten::mm"(%a, %b) : (tensor<2x3xi64>, tensor<3x4xi64>) -> tensor<2x4xi64>
  fx.output %0 : tensor<2x4xi64>
}
