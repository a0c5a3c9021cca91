// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// mean.dim with keepdim: a sum over the (normalized) dims, reshaped back
// to keep them, divided by the count.
// CHECK-LABEL: func.func @mean_keepdim
// CHECK: %[[S:.*]] = prim.reduce sum %{{.*}}, dims [1, 2] : tensor<2x3x4xf32>
// CHECK: %[[K:.*]] = prim.reshape %[[S]], shape [2, 1, 1] : tensor<2xf32>
// CHECK: %[[N:.*]] = prim.constant dense<1.200000e+01> : tensor<2x1x1xf32>
// CHECK: prim.div %[[K]], %[[N]]
fx.graph @mean_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %0 = fx.call_function "aten::mean.dim"(%x) {args = {dim = array<i64: -1, 1>, keepdim = true}} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  fx.output %0 : tensor<2x1x1xf32>
}

// -----

// amax / amin, and sum over everything.
// CHECK-LABEL: func.func @extremes
// CHECK: prim.reduce max %{{.*}}, dims [0] : tensor<5x6xf32>
// CHECK: prim.reduce min %{{.*}}, dims [1] : tensor<5x6xf32>
// CHECK: prim.reduce sum %{{.*}}, dims [0, 1] : tensor<5x6xf32>
fx.graph @extremes(%x: tensor<5x6xf32>) -> (tensor<6xf32>, tensor<5xf32>, tensor<f32>) {
  %0 = fx.call_function "aten::amax"(%x) {args = {dim = array<i64: 0>}} : (tensor<5x6xf32>) -> tensor<6xf32>
  %1 = fx.call_function "aten::amin"(%x) {args = {dim = array<i64: -1>}} : (tensor<5x6xf32>) -> tensor<5xf32>
  %2 = fx.call_function "aten::sum"(%x) : (tensor<5x6xf32>) -> tensor<f32>
  fx.output %0, %1, %2 : tensor<6xf32>, tensor<5xf32>, tensor<f32>
}

// -----

// max.dim returns the values and the (first) indices of the maximum.
// CHECK-LABEL: func.func @max_dim
// CHECK: %[[V:.*]] = prim.reduce max %{{.*}}, dims [1] : tensor<5x6xf32>
// CHECK: %[[I:.*]] = prim.reduce min %{{.*}}, dims [1] : tensor<5x6xi64>
// CHECK: return %[[V]], %[[I]] : tensor<5xf32>, tensor<5xi64>
fx.graph @max_dim(%x: tensor<5x6xf32>) -> (tensor<5xf32>, tensor<5xi64>) {
  %0:2 = fx.call_function "aten::max.dim"(%x) {args = {dim = 1 : i64}} : (tensor<5x6xf32>) -> (tensor<5xf32>, tensor<5xi64>)
  fx.output %0#0, %0#1 : tensor<5xf32>, tensor<5xi64>
}

// -----

// log_softmax: the shifted input minus the log of the sum of exps.
// CHECK-LABEL: func.func @log_softmax
// CHECK: prim.reduce max
// CHECK: %[[SHIFTED:.*]] = prim.sub
// CHECK: prim.exp %[[SHIFTED]]
// CHECK: %[[SUM:.*]] = prim.reduce sum
// CHECK: %[[LOG:.*]] = prim.log
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %[[LOG]]
// CHECK: prim.sub %[[SHIFTED]], %[[B]]
fx.graph @log_softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = fx.call_function "aten::_log_softmax"(%x) {args = {dim = 1 : i64, half_to_float = false}} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  fx.output %0 : tensor<4x10xf32>
}

// -----

// A 0-d tensor reduced along dim 0 (PyTorch allows it) is itself.
// CHECK-LABEL: func.func @scalar_sum
// CHECK-NOT: prim.reduce sum %{{.*}}, dims [0]
// CHECK: return
fx.graph @scalar_sum(%x: tensor<f32>) -> tensor<f32> {
  %s = fx.call_function "aten::sum.dim_IntList"(%x) {args = {dim = array<i64: 0>, keepdim = false}} : (tensor<f32>) -> tensor<f32>
  fx.output %s : tensor<f32>
}

// -----

// var: the sum of squared deviations from the mean over count - correction;
// prod: a product reduction.
// CHECK-LABEL: func.func @var_prod
// CHECK: %[[S:.*]] = prim.reduce sum %arg0, dims [1]
// CHECK: %[[MEAN:.*]] = prim.div
// CHECK: %[[C:.*]] = prim.sub %arg0
// CHECK: %[[SQ:.*]] = prim.mul %[[C]], %[[C]]
// CHECK: %[[SS:.*]] = prim.reduce sum %[[SQ]], dims [1]
// CHECK: %[[N:.*]] = prim.constant dense<7.000000e+00> : tensor<4xf32>
// CHECK: %[[V:.*]] = prim.div %[[SS]], %[[N]]
// CHECK: %[[P:.*]] = prim.reduce prod %arg0, dims [1]
// CHECK: return %[[V]], %[[P]]
fx.graph @var_prod(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %v = fx.call_function "aten::var.correction"(%x) {args = {dim = array<i64: 1>, correction = 1 : i64, keepdim = false}} : (tensor<4x8xf32>) -> tensor<4xf32>
  %p = fx.call_function "aten::prod.dim_int"(%x) {args = {dim = 1 : i64, keepdim = false}} : (tensor<4x8xf32>) -> tensor<4xf32>
  fx.output %v, %p : tensor<4xf32>, tensor<4xf32>
}

// -----

// argmax: the maximum, then the smallest index holding it; a NaN counts as
// the maximum (x != x), as in PyTorch.
// CHECK-LABEL: func.func @argmax
// CHECK: %[[M:.*]] = prim.reduce max %arg0, dims [1]
// CHECK: %[[EQ:.*]] = prim.compare eq, %arg0
// CHECK: %[[NAN:.*]] = prim.compare ne, %arg0, %arg0
// CHECK: %[[HIT:.*]] = prim.where %[[NAN]], %[[NAN]], %[[EQ]]
// CHECK: %[[I:.*]] = prim.iota shape [4, 8], dim 1 : i64
// CHECK: %[[C:.*]] = prim.where %[[HIT]], %[[I]], %{{.*}} : tensor<4x8xi1>, tensor<4x8xi64>
// CHECK: prim.reduce min %[[C]], dims [1] : tensor<4x8xi64>
fx.graph @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %0 = fx.call_function "aten::argmax"(%x) {args = {dim = 1 : i64, keepdim = false}} : (tensor<4x8xf32>) -> tensor<4xi64>
  fx.output %0 : tensor<4xi64>
}
