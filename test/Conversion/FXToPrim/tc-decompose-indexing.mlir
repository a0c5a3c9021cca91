// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// x[:, i, j]: adjacent index tensors merge their dimensions in place and
// gather the linear position (negative indices wrapped).
// CHECK-LABEL: func.func @index_adjacent
// CHECK-SAME: (%[[X:.*]]: tensor<4x5x6xf32>, %[[I:.*]]: tensor<3xi64>, %[[J:.*]]: tensor<3xi64>)
// CHECK-DAG: %[[JNEG:.*]] = prim.compare lt, %[[J]]
// CHECK-DAG: %[[JW:.*]] = prim.where %[[JNEG]]
// CHECK-DAG: %[[INEG:.*]] = prim.compare lt, %[[I]]
// CHECK-DAG: %[[IW:.*]] = prim.where %[[INEG]]
// CHECK: %[[ROW:.*]] = prim.mul %[[IW]], %{{.*}} : tensor<3xi64>
// CHECK: %[[LIN:.*]] = prim.add %[[JW]], %[[ROW]]
// CHECK: %[[FLAT:.*]] = prim.reshape %[[X]], shape [4, 30]
// CHECK: %[[G:.*]] = prim.gather %[[FLAT]][%[[LIN]]], dim 1 : tensor<4x30xf32>, tensor<3xi64>
// CHECK: return %[[G]] : tensor<4x3xf32>
fx.graph @index_adjacent(%x: tensor<4x5x6xf32>, %i: tensor<3xi64>, %j: tensor<3xi64>) -> tensor<4x3xf32> {
  %0 = fx.call_function "aten::index.Tensor"(%x, %i, %j) {args = {indices = array<i1: false, true, true>}, tensor_arg_sizes = array<i32: 1, 2>} : (tensor<4x5x6xf32>, tensor<3xi64>, tensor<3xi64>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}

// -----

// x[i, :, j]: separated index tensors put the indexed block first.
// CHECK-LABEL: func.func @index_separated
// CHECK: %[[P:.*]] = prim.permute %{{.*}}, [0, 2, 1] : tensor<4x5x6xf32>
// CHECK: %[[FLAT:.*]] = prim.reshape %[[P]], shape [24, 5]
// CHECK: prim.gather %[[FLAT]][%{{.*}}], dim 0 : tensor<24x5xf32>, tensor<2x3xi64>
fx.graph @index_separated(%x: tensor<4x5x6xf32>, %i: tensor<2x1xi64>, %j: tensor<3xi64>) -> tensor<2x3x5xf32> {
  %0 = fx.call_function "aten::index.Tensor"(%x, %i, %j) {args = {indices = array<i1: true, false, true>}, tensor_arg_sizes = array<i32: 1, 2>} : (tensor<4x5x6xf32>, tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3x5xf32>
  fx.output %0 : tensor<2x3x5xf32>
}

// -----

// x.index_put((i,), v, accumulate=True) of floats: the updates (negative
// indices wrapped) scatter-added into zeros, added to the rows: O(updates),
// at any size.
// CHECK-LABEL: func.func @index_put_accumulate
// CHECK: %[[AT:.*]] = prim.where %{{.*}}, %{{.*}}, %arg1 : tensor<3xi1>, tensor<3xi64>
// CHECK: %[[ROWS:.*]] = prim.broadcast_in_dim %arg2, shape [3, 6], dims [1]
// CHECK: %[[SUM:.*]] = prim.scatter_add %[[ROWS]][%[[AT]]] : tensor<3x6xf32>, tensor<3xi64> -> tensor<4x6xf32>
// CHECK: prim.add %arg0, %[[SUM]] : tensor<4x6xf32>
fx.graph @index_put_accumulate(%x: tensor<4x6xf32>, %i: tensor<3xi64>, %v: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = fx.call_function "aten::index_put"(%x, %i, %v) {args = {accumulate = true}, tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<4x6xf32>, tensor<3xi64>, tensor<6xf32>) -> tensor<4x6xf32>
  fx.output %0 : tensor<4x6xf32>
}

// -----

// Without accumulation, one index tensor: the selected slices replaced
// (prim.scatter, O(updates)); the values broadcast to x[i]'s shape.
// CHECK-LABEL: func.func @index_put_one_index
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>, %[[I:.*]]: tensor<3xi64>, %[[V:.*]]: tensor<6xf32>)
// CHECK: %[[AT:.*]] = prim.where %{{.*}}, %{{.*}}, %[[I]] : tensor<3xi1>, tensor<3xi64>
// CHECK: %[[ROWS:.*]] = prim.broadcast_in_dim %[[V]], shape [3, 6], dims [1]
// CHECK: prim.scatter %[[X]][%[[AT]]] = %[[ROWS]], dim 0 : tensor<4x6xf32>, tensor<3xi64>, tensor<3x6xf32>
fx.graph @index_put_one_index(%x: tensor<4x6xf32>, %i: tensor<3xi64>, %v: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = fx.call_function "aten::index_put"(%x, %i, %v) {tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<4x6xf32>, tensor<3xi64>, tensor<6xf32>) -> tensor<4x6xf32>
  fx.output %0 : tensor<4x6xf32>
}

// -----

// A KV cache's `k[:, :, pos] = v`: a scatter along dimension 2, in place.
// CHECK-LABEL: func.func @index_put_cache
// CHECK: prim.scatter %arg0[%{{.*}}] = %arg2, dim 2 : tensor<1x2x16x8xbf16>, tensor<1xi64>, tensor<1x2x1x8xbf16>
fx.graph @index_put_cache(%k: tensor<1x2x16x8xbf16>, %pos: tensor<1xi64>, %v: tensor<1x2x1x8xbf16>) -> tensor<1x2x16x8xbf16> {
  %0 = fx.call_function "aten::index_put"(%k, %pos, %v) {args = {indices = array<i1: false, false, true>}, tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<1x2x16x8xbf16>, tensor<1xi64>, tensor<1x2x1x8xbf16>) -> tensor<1x2x16x8xbf16>
  fx.output %0 : tensor<1x2x16x8xbf16>
}

// -----

// Without accumulation, two index tensors: the last update of a position
// wins (a dense scatter: every update against every position).
// CHECK-LABEL: func.func @index_put_last
// CHECK: prim.reduce max %{{.*}}, dims [0] : tensor<3x24x1xi64>
fx.graph @index_put_last(%x: tensor<4x6xf32>, %i: tensor<3xi64>, %j: tensor<3xi64>, %v: tensor<f32>) -> tensor<4x6xf32> {
  %0 = fx.call_function "aten::index_put"(%x, %i, %j, %v) {tensor_arg_sizes = array<i32: 1, 2, 1>} : (tensor<4x6xf32>, tensor<3xi64>, tensor<3xi64>, tensor<f32>) -> tensor<4x6xf32>
  fx.output %0 : tensor<4x6xf32>
}

// -----

// scatter_reduce along dim 1 with an index smaller than self: the covered
// region is scattered and padded back into self.
// CHECK-LABEL: func.func @scatter_reduce_region
// CHECK: %[[PART:.*]] = prim.slice %{{.*}}, start [0, 0], limit [2, 5], strides [1, 1] : tensor<3x5xf32>
// CHECK: prim.reduce max
// CHECK: %[[PAD:.*]] = prim.pad %{{.*}}, low [0, 0], high [1, 0], interior [0, 0], value 0.000000e+00 : tensor<2x5xf32>
// CHECK: %[[IN:.*]] = prim.pad %{{.*}}, low [0, 0], high [1, 0], interior [0, 0], value 0.000000e+00 : tensor<2x5xi1>
// CHECK: prim.where %[[IN]], %[[PAD]], %{{.*}} : tensor<3x5xi1>, tensor<3x5xf32>
fx.graph @scatter_reduce_region(%x: tensor<3x5xf32>, %i: tensor<2x4xi64>, %s: tensor<2x4xf32>) -> tensor<3x5xf32> {
  %0 = fx.call_function "aten::scatter_reduce.two"(%x, %i, %s) {args = {dim = 1 : i64, reduce = "amax", include_self = false}} : (tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<3x5xf32>
  fx.output %0 : tensor<3x5xf32>
}

// -----

// diagonal: a strided slice of the two dimensions merged.
// CHECK-LABEL: func.func @diagonal
// CHECK: %[[P:.*]] = prim.permute %{{.*}}, [1, 0, 2] : tensor<4x5x6xf32>
// CHECK: %[[M:.*]] = prim.reshape %[[P]], shape [5, 24]
// CHECK: prim.slice %[[M]], start [0, 1], limit [5, 23], strides [1, 7] : tensor<5x24xf32>
fx.graph @diagonal(%x: tensor<4x5x6xf32>) -> tensor<5x4xf32> {
  %0 = fx.call_function "aten::diagonal"(%x) {args = {offset = 1 : i64, dim1 = 0 : i64, dim2 = 2 : i64}} : (tensor<4x5x6xf32>) -> tensor<5x4xf32>
  fx.output %0 : tensor<5x4xf32>
}

// -----

// diagonal_scatter pads src between the diagonal's positions.
// CHECK-LABEL: func.func @diagonal_scatter
// CHECK: prim.pad %{{.*}}, low [0], high [0], interior [3], value 0.000000e+00 : tensor<3xf32>
fx.graph @diagonal_scatter(%x: tensor<3x3xf32>, %s: tensor<3xf32>) -> tensor<3x3xf32> {
  %0 = fx.call_function "aten::diagonal_scatter"(%x, %s) : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  fx.output %0 : tensor<3x3xf32>
}

// -----

// as_strided: a gather at offset + sum(i_d * stride_d).
// CHECK-LABEL: func.func @as_strided
// CHECK: %[[FLAT:.*]] = prim.reshape %{{.*}}, shape [12] : tensor<3x4xf32>
// CHECK: %[[G:.*]] = prim.gather %[[FLAT]][%{{.*}}], dim 0 : tensor<12xf32>, tensor<4xi64>
// CHECK: prim.reshape %[[G]], shape [2, 2]
fx.graph @as_strided(%x: tensor<3x4xf32>) -> tensor<2x2xf32> {
  %0 = fx.call_function "aten::as_strided"(%x) {args = {size = [2, 2], stride = [4, 1], storage_offset = 1 : i64}} : (tensor<3x4xf32>) -> tensor<2x2xf32>
  fx.output %0 : tensor<2x2xf32>
}

// -----

fx.graph @as_strided_out_of_range(%x: tensor<3x4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{cannot decompose 'aten::as_strided': the view reaches beyond self's 12 elements}}
  %0 = fx.call_function "aten::as_strided"(%x) {args = {size = [2, 2], stride = [8, 1], storage_offset = 4 : i64}} : (tensor<3x4xf32>) -> tensor<2x2xf32>
  fx.output %0 : tensor<2x2xf32>
}

// -----

// unfold: windows gathered at w * step + s, the window dimension last
// (where the gather leaves it when the dimension is the last one).
// CHECK-LABEL: func.func @unfold
// CHECK: %[[G:.*]] = prim.gather %{{.*}}[%{{.*}}], dim 1 : tensor<2x7xf32>, tensor<3x3xi64>
// CHECK-NOT: prim.permute
// CHECK: return
fx.graph @unfold(%x: tensor<2x7xf32>) -> tensor<2x3x3xf32> {
  %0 = fx.call_function "aten::unfold"(%x) {args = {dimension = 1 : i64, size = 3 : i64, step = 2 : i64}} : (tensor<2x7xf32>) -> tensor<2x3x3xf32>
  fx.output %0 : tensor<2x3x3xf32>
}

// -----

// Uninitialized memory is zeros in tc.
// CHECK-LABEL: func.func @empty
// CHECK: prim.constant dense<0.000000e+00> : tensor<2x3xf32>
fx.graph @empty() -> tensor<2x3xf32> {
  %0 = fx.call_function "aten::empty.memory_format"() {args = {size = [2, 3]}} : () -> tensor<2x3xf32>
  fx.output %0 : tensor<2x3xf32>
}

// -----

fx.graph @boolean_mask(%x: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf32> {
  // expected-error @+1 {{boolean mask indices are not supported}}
  %0 = fx.call_function "aten::index.Tensor"(%x, %m) {tensor_arg_sizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}
