// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// isnan is x != x; logical_and takes each operand as truthy (x != 0) and
// ands the bools.
// CHECK-LABEL: func.func @isnan_and
// CHECK: %[[N:.*]] = prim.compare ne, %arg0, %arg0
// CHECK: %[[T:.*]] = prim.compare ne, %arg1
// CHECK: prim.bitwise_and %[[N]], %[[T]]
fx.graph @isnan_and(%x: tensor<4xf32>, %y: tensor<4xi64>) -> tensor<4xi1> {
  %0 = fx.call_function "aten::isnan"(%x) : (tensor<4xf32>) -> tensor<4xi1>
  %1 = fx.call_function "aten::logical_and"(%0, %y) : (tensor<4xi1>, tensor<4xi64>) -> tensor<4xi1>
  fx.output %1 : tensor<4xi1>
}

// -----

// any reduces the truthy bits (as i32) with max, then asks for a positive
// maximum: over no elements the maximum is INT_MIN, and any() is false.
// CHECK-LABEL: func.func @any
// CHECK: %[[T:.*]] = prim.compare ne, %arg0
// CHECK: %[[I:.*]] = prim.convert %[[T]] to i32 : tensor<3x4xi1>
// CHECK: %[[R:.*]] = prim.reduce max %[[I]], dims [1]
// CHECK: prim.compare gt, %[[R]]
fx.graph @any(%x: tensor<3x4xf32>) -> tensor<3xi1> {
  %0 = fx.call_function "aten::any.dim"(%x) {args = {dim = 1 : i64}} : (tensor<3x4xf32>) -> tensor<3xi1>
  fx.output %0 : tensor<3xi1>
}

// -----

// Integer fmod divides by a safe divisor (1 where it is 0 or -1): eager
// raises on 0, and INT_MIN % -1 traps; x % -1 is 0.
// CHECK-LABEL: func.func @fmod_int
// CHECK-DAG: %[[Z:.*]] = prim.compare eq, %arg1, %{{.*}} : tensor<4xi64>
// CHECK-DAG: %[[M:.*]] = prim.compare eq, %arg1, %{{.*}} : tensor<4xi64>
// CHECK: %[[B:.*]] = prim.where %[[Z]], %{{.*}}, %[[M]]
// CHECK: %[[D:.*]] = prim.where %[[B]], %{{.*}}, %arg1
// CHECK: %[[R:.*]] = prim.rem %arg0, %[[D]]
// CHECK: prim.where %{{.*}}, %{{.*}}, %[[R]]
fx.graph @fmod_int(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
  %0 = fx.call_function "aten::fmod.Tensor"(%x, %y) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  fx.output %0 : tensor<4xi64>
}

// -----

// Python's modulus of floats: fmod, plus the divisor where the remainder's
// sign differs from it.
// CHECK-LABEL: func.func @remainder
// CHECK: %[[R:.*]] = prim.rem %arg0, %[[D:[0-9]+]] : tensor<4xf32>
// CHECK: %[[S:.*]] = prim.add %[[R]], %[[D]]
// CHECK: prim.where %{{.*}}, %[[S]], %[[R]]
fx.graph @remainder(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::remainder.Scalar"(%x) {args = {other = -1.5 : f64}} : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// Floor division of floats rounds the exact (a - fmod(a, b)) / b.
// CHECK-LABEL: func.func @floor_divide
// CHECK: %[[M:.*]] = prim.rem %arg0, %arg1
// CHECK: %[[S:.*]] = prim.sub %arg0, %[[M]]
// CHECK: prim.div %[[S]], %arg1
// CHECK: prim.floor
fx.graph @floor_divide(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::div.Tensor_mode"(%x, %y) {args = {rounding_mode = "floor"}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// index_select is a gather; flip gathers at size - 1 - i; repeat
// broadcasts to (r0, s0, r1, s1) and merges.
// CHECK-LABEL: func.func @indexing
// CHECK: prim.gather %arg0[%arg1], dim 1
// CHECK: %[[I:.*]] = prim.iota
// CHECK: %[[R:.*]] = prim.sub %{{.*}}, %[[I]] : tensor<3xi64>
// CHECK: prim.gather %arg0[%[[R]]], dim 0
// CHECK: prim.broadcast_in_dim %{{.*}}, shape [2, 3, 1, 4], dims [1, 3] : tensor<3x4xf32>
// CHECK: prim.reshape %{{.*}}, shape [6, 4] : tensor<2x3x1x4xf32>
fx.graph @indexing(%x: tensor<3x4xf32>, %i: tensor<5xi64>) -> (tensor<3x5xf32>, tensor<3x4xf32>, tensor<6x4xf32>) {
  %0 = fx.call_function "aten::index_select"(%x, %i) {args = {dim = 1 : i64}} : (tensor<3x4xf32>, tensor<5xi64>) -> tensor<3x5xf32>
  %1 = fx.call_function "aten::flip"(%x) {args = {dims = [0]}} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = fx.call_function "aten::repeat"(%x) {args = {repeats = [2, 1]}} : (tensor<3x4xf32>) -> tensor<6x4xf32>
  fx.output %0, %1, %2 : tensor<3x5xf32>, tensor<3x4xf32>, tensor<6x4xf32>
}

// -----

// clamp_min and clamp_max (kept as nodes where no decomposition rewrites
// them to clamp): one bound, a number or a tensor, as a maximum or minimum.
// CHECK-LABEL: func.func @clamp_one_side
// CHECK: %[[C:.*]] = prim.constant dense<5.000000e-01>
// CHECK: %[[LO:.*]] = prim.maximum %arg0, %[[C]]
// CHECK: prim.minimum %[[LO]], %arg1
fx.graph @clamp_one_side(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::clamp_min"(%x) {args = {min = 5.000000e-01 : f64}} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = fx.call_function "aten::clamp_max.Tensor"(%0, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fx.output %1 : tensor<4xf32>
}
