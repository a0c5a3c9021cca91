// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// sort: each element's place is the number of elements sorting before it
// (NaN last, ties by position); a scatter of each element's position to
// its place (offset by its row) inverts the places, and a gather reads the
// values in that order: O(n) per row after the places.
// CHECK-LABEL: func.func @sort
// CHECK-DAG: %[[XI:.*]] = prim.broadcast_in_dim %[[X:.*]], shape [2, 5, 5], dims [0, 1] : tensor<2x5xf32>
// CHECK-DAG: %[[XJ:.*]] = prim.broadcast_in_dim %[[X]], shape [2, 5, 5], dims [0, 2] : tensor<2x5xf32>
// CHECK: prim.compare lt, %[[XJ]], %[[XI]]
// CHECK: %[[PLACE:.*]] = prim.reduce sum %{{.*}}, dims [2] : tensor<2x5x5xi64>
// CHECK: %[[AT:.*]] = prim.add %[[PLACE]], %{{.*}} : tensor<2x5xi64>
// CHECK: %[[FLAT:.*]] = prim.reshape %[[AT]], shape [10]
// CHECK: %[[ORDER:.*]] = prim.scatter_add %{{.*}}[%[[FLAT]]] : tensor<10x1xf32>, tensor<10xi64> -> tensor<10x1xf32>
// CHECK: prim.convert %[[ORDER]] to i64
// CHECK: %[[VALUES:.*]] = prim.gather %{{.*}}[%{{.*}}], dim 0 : tensor<10xf32>, tensor<10xi64>
// CHECK-NOT: prim.reduce max
// CHECK: return
fx.graph @sort(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>) {
  %0:2 = fx.call_function "aten::sort"(%x) {args = {dim = -1 : i64}} : (tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  fx.output %0#0, %0#1 : tensor<2x5xf32>, tensor<2x5xi64>
}

// -----

// topk along dim 0: the dimension moves last and back; the rows are
// ordered whole and the first k places kept.
// CHECK-LABEL: func.func @topk
// CHECK: prim.permute %{{.*}}, [1, 0] : tensor<6x3xf32>
// CHECK: prim.compare gt
// CHECK: prim.scatter_add %{{.*}} : tensor<18x1xf32>, tensor<18xi64> -> tensor<18x1xf32>
// CHECK: prim.slice %{{.*}}, start [0, 0], limit [3, 2], strides [1, 1] : tensor<3x6xi64>
// CHECK: prim.permute %{{.*}}, [1, 0] : tensor<3x2xf32>
fx.graph @topk(%x: tensor<6x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  %0:2 = fx.call_function "aten::topk"(%x) {args = {k = 2 : i64, dim = 0 : i64}} : (tensor<6x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  fx.output %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi64>
}

// -----

// cumsum: the prefix is a mask j <= i, summed.
// CHECK-LABEL: func.func @cumsum
// CHECK: %[[XJ:.*]] = prim.broadcast_in_dim %{{.*}}, shape [4, 4], dims [1] : tensor<4xi64>
// CHECK: %[[J:.*]] = prim.iota shape [4, 4], dim 1 : i64
// CHECK: %[[I:.*]] = prim.iota shape [4, 4], dim 0 : i64
// CHECK: %[[PREFIX:.*]] = prim.compare le, %[[J]], %[[I]]
// CHECK: %[[SEL:.*]] = prim.where %[[PREFIX]], %[[XJ]], %{{.*}}
// CHECK: prim.reduce sum %[[SEL]], dims [1] : tensor<4x4xi64>
fx.graph @cumsum(%x: tensor<4xi1>) -> tensor<4xi64> {
  %0 = fx.call_function "aten::cumsum"(%x) {args = {dim = 0 : i64}} : (tensor<4xi1>) -> tensor<4xi64>
  fx.output %0 : tensor<4xi64>
}

// -----

// A longer cumsum is blocked: 100 is 13 chunks of 8 (the tail padded with
// zeros); each element is its chunk's dense prefix plus the sum of the
// chunks' totals before it.
// CHECK-LABEL: func.func @blocked_cumsum
// CHECK: %[[PAD:.*]] = prim.pad %{{.*}}, low [0, 0], high [0, 4], interior [0, 0], value 0.000000e+00 : tensor<2x100xi64>
// CHECK: %[[X:.*]] = prim.reshape %[[PAD]], shape [2, 13, 8]
// CHECK: %[[XJ:.*]] = prim.broadcast_in_dim %[[X]], shape [2, 13, 8, 8], dims [0, 1, 3]
// CHECK: %[[IN:.*]] = prim.compare le
// CHECK: %[[WITHIN:.*]] = prim.reduce sum %{{.*}}, dims [3] : tensor<2x13x8x8xi64>
// CHECK: %[[TOTALS:.*]] = prim.reduce sum %[[X]], dims [2] : tensor<2x13x8xi64>
// CHECK: prim.broadcast_in_dim %[[TOTALS]], shape [2, 13, 13], dims [0, 2]
// CHECK: prim.compare lt
// CHECK: %[[BEFORE:.*]] = prim.reduce sum %{{.*}}, dims [2] : tensor<2x13x13xi64>
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %[[BEFORE]], shape [2, 13, 8], dims [0, 1]
// CHECK: %[[SUM:.*]] = prim.add %[[WITHIN]], %[[B]]
// CHECK: %[[FLAT:.*]] = prim.reshape %[[SUM]], shape [2, 104]
// CHECK: prim.pad %[[FLAT]], low [0, 0], high [0, -4], interior [0, 0], value 0.000000e+00 : tensor<2x104xi64>
fx.graph @blocked_cumsum(%x: tensor<2x100xi32>) -> tensor<2x100xi64> {
  %0 = fx.call_function "aten::cumsum"(%x) {args = {dim = 1 : i64}} : (tensor<2x100xi32>) -> tensor<2x100xi64>
  fx.output %0 : tensor<2x100xi64>
}

// -----

// A bf16 cumprod is blocked in f32 and rounded once.
// CHECK-LABEL: func.func @blocked_cumprod
// CHECK: prim.convert %{{.*}} to f32 : tensor<3x80xbf16>
// CHECK: prim.reduce prod
// CHECK: prim.mul
// CHECK: prim.convert %{{.*}} to bf16 : tensor<3x80xf32>
fx.graph @blocked_cumprod(%x: tensor<3x80xbf16>) -> tensor<3x80xbf16> {
  %0 = fx.call_function "aten::cumprod"(%x) {args = {dim = 1 : i64}} : (tensor<3x80xbf16>) -> tensor<3x80xbf16>
  fx.output %0 : tensor<3x80xbf16>
}

// -----

// cummax: the running maximum and the last position in the prefix holding
// it.
// CHECK-LABEL: func.func @cummax
// CHECK: %[[MAX:.*]] = prim.reduce max %{{.*}}, dims [1] : tensor<4x4xf32>
// CHECK: %[[LAST:.*]] = prim.reduce max %{{.*}}, dims [1] : tensor<4x4xi64>
// CHECK: return %[[MAX]], %[[LAST]]
fx.graph @cummax(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  %0:2 = fx.call_function "aten::cummax"(%x) {args = {dim = 0 : i64}} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>)
  fx.output %0#0, %0#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// searchsorted: the number of boundaries before each value.
// CHECK-LABEL: func.func @searchsorted
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %{{.*}}, shape [3, 5], dims [1] : tensor<5xf32>
// CHECK: %[[V:.*]] = prim.broadcast_in_dim %{{.*}}, shape [3, 5], dims [0] : tensor<3xf32>
// CHECK: prim.compare lt, %[[B]], %[[V]]
// CHECK: prim.reduce sum %{{.*}}, dims [1] : tensor<3x5xi64>
fx.graph @searchsorted(%s: tensor<5xf32>, %v: tensor<3xf32>) -> tensor<3xi64> {
  %0 = fx.call_function "aten::searchsorted.Tensor"(%s, %v) : (tensor<5xf32>, tensor<3xf32>) -> tensor<3xi64>
  fx.output %0 : tensor<3xi64>
}

// -----

fx.graph @topk_too_many(%x: tensor<3xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  // expected-error @+1 {{cannot decompose 'aten::topk': k = 4 is out of range for 3 elements}}
  %0:2 = fx.call_function "aten::topk"(%x) {args = {k = 4 : i64}} : (tensor<3xf32>) -> (tensor<4xf32>, tensor<4xi64>)
  fx.output %0#0, %0#1 : tensor<4xf32>, tensor<4xi64>
}
