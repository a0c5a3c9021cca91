// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// masked_scatter: the k-th true position (a prefix count of the mask)
// takes source[k], clamped into the source.
// CHECK-LABEL: func.func @masked_scatter
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[M:.*]]: tensor<3xi1>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[MASK:.*]] = prim.reshape %{{.*}}, shape [6] : tensor<2x3xi1>
// CHECK: %[[LE:.*]] = prim.compare le, %{{.*}}, %{{.*}} : tensor<6x6xi64>
// CHECK: %[[COUNT:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<6x6xi64>
// CHECK: %[[K:.*]] = prim.sub %[[COUNT]]
// CHECK: %[[AT:.*]] = prim.clamp %[[K]], %{{.*}}, %{{.*}} : tensor<6xi64>
// CHECK: %[[TAKEN:.*]] = prim.gather %[[S]][%[[AT]]], dim 0 : tensor<4xf32>, tensor<6xi64>
// CHECK: prim.where %[[MASK]], %[[TAKEN]], %{{.*}} : tensor<6xi1>, tensor<6xf32>
fx.graph @masked_scatter(%x: tensor<2x3xf32>, %m: tensor<3xi1>, %s: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = fx.call_function "aten::masked_scatter"(%x, %m, %s) : (tensor<2x3xf32>, tensor<3xi1>, tensor<4xf32>) -> tensor<2x3xf32>
  fx.output %0 : tensor<2x3xf32>
}

// -----

// x[mask] += v with v broadcast over the selected rows: every masked row
// adds v.
// CHECK-LABEL: func.func @index_put_mask
// CHECK-SAME: (%[[X:.*]]: tensor<5x4xf32>, %[[M:.*]]: tensor<5xi1>, %[[V:.*]]: tensor<4xf32>)
// CHECK: %[[VB:.*]] = prim.broadcast_in_dim %[[V]], shape [1, 4], dims [1]
// CHECK: %[[G:.*]] = prim.gather %[[VB]][%{{.*}}], dim 0 : tensor<1x4xf32>, tensor<5xi64>
// CHECK: %[[MW:.*]] = prim.broadcast_in_dim %[[M]], shape [5, 4], dims [0]
// CHECK: %[[SUM:.*]] = prim.add %[[X]], %[[G]]
// CHECK: prim.where %[[MW]], %[[SUM]], %[[X]]
fx.graph @index_put_mask(%x: tensor<5x4xf32>, %m: tensor<5xi1>, %v: tensor<4xf32>) -> tensor<5x4xf32> {
  %0 = fx.call_function "aten::index_put"(%x, %m, %v) {args = {accumulate = true}, tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<5x4xf32>, tensor<5xi1>, tensor<4xf32>) -> tensor<5x4xf32>
  fx.output %0 : tensor<5x4xf32>
}

// -----

// A mask must have the shape of the dimensions it indexes.
fx.graph @index_put_bad_mask(%x: tensor<5x4xf32>, %m: tensor<4xi1>, %v: tensor<4xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{the mask's shape does not match the dimensions it indexes}}
  %0 = fx.call_function "aten::index_put"(%x, %m, %v) {tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<5x4xf32>, tensor<4xi1>, tensor<4xf32>) -> tensor<5x4xf32>
  fx.output %0 : tensor<5x4xf32>
}

// -----

// nonzero_static: row k holds the coordinates of the position whose
// prefix count is k + 1, or fill_value.
// CHECK-LABEL: func.func @nonzero_static
// CHECK: %[[COUNT:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<6x6xi64>
// CHECK: %[[POS:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<4x6xi64>
// CHECK: %[[FOUND:.*]] = prim.reduce max %{{.*}}, dims [1] : tensor<4x6xi64>
// CHECK: %[[COL1:.*]] = prim.rem %[[POS]], %{{.*}} : tensor<4xi64>
// CHECK: %[[ROW:.*]] = prim.div %[[POS]], %{{.*}} : tensor<4xi64>
// CHECK: prim.concatenate %{{.*}}, %{{.*}} dim 1 : tensor<4x1xi64>, tensor<4x1xi64>
// CHECK: %[[FILL:.*]] = prim.constant dense<-1> : tensor<4x2xi64>
// CHECK: prim.where %{{.*}}, %{{.*}}, %[[FILL]]
fx.graph @nonzero_static(%x: tensor<2x3xf32>) -> tensor<4x2xi64> {
  %0 = fx.call_function "aten::nonzero_static"(%x) {args = {size = 4 : i64, fill_value = -1 : i64}} : (tensor<2x3xf32>) -> tensor<4x2xi64>
  fx.output %0 : tensor<4x2xi64>
}

// -----

// segment_reduce by lengths: the starts are exclusive prefix sums, a
// segment is a [segments, positions] mask; the mean adds `initial` and an
// empty segment is `initial`.
// CHECK-LABEL: func.func @segment_mean
// CHECK: %[[BEFORE:.*]] = prim.compare lt, %{{.*}}, %{{.*}} : tensor<3x3xi64>
// CHECK: %[[START:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<3x3xi64>
// CHECK: %[[END:.*]] = prim.add %[[START]], %{{.*}} : tensor<3xi64>
// CHECK: %[[IN:.*]] = prim.bitwise_and %{{.*}}, %{{.*}} : tensor<3x5x2xi1>
// CHECK: %[[SUM:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<3x5x2xf32>
// CHECK: %[[WITH:.*]] = prim.add %[[SUM]], %{{.*}} : tensor<3x2xf32>
// CHECK: %[[MEAN:.*]] = prim.div %[[WITH]], %{{.*}} : tensor<3x2xf32>
// CHECK: prim.where %{{.*}}, %{{.*}}, %[[MEAN]]
fx.graph @segment_mean(%d: tensor<5x2xf32>, %l: tensor<3xi64>) -> tensor<3x2xf32> {
  %0 = fx.call_function "aten::segment_reduce"(%d, %l) {args = {reduce = "mean", initial = 1.0 : f64}, tensor_arg_sizes = array<i32: 1, 1, 0, 0>} : (tensor<5x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  fx.output %0 : tensor<3x2xf32>
}

// -----

// embedding_bag (mode "mean"): the rows of a bag averaged, an empty bag 0.
// CHECK-LABEL: func.func @embedding_bag_mean
// CHECK: %[[ROWS:.*]] = prim.gather %{{.*}}[%{{.*}}], dim 0 : tensor<10x3xf32>, tensor<5xi64>
// CHECK: %[[SPREAD:.*]] = prim.broadcast_in_dim %[[ROWS]], shape [2, 5, 3], dims [1, 2]
// CHECK: %[[SUM:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<2x5x3xf32>
// CHECK: %[[COUNT:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<2x5x3xi64>
// CHECK: prim.div %[[SUM]], %{{.*}} : tensor<2x3xf32>
fx.graph @embedding_bag_mean(%w: tensor<10x3xf32>, %i: tensor<5xi64>, %o: tensor<2xi64>) -> tensor<2x3xf32> {
  %0:4 = fx.call_function "aten::_embedding_bag_forward_only"(%w, %i, %o) {args = {mode = 1 : i64}, tensor_arg_sizes = array<i32: 1, 1, 1, 0>} : (tensor<10x3xf32>, tensor<5xi64>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<5xi64>, tensor<2xi64>, tensor<2xi64>)
  fx.output %0#0 : tensor<2x3xf32>
}

// -----

// Only the bags are computed: eager's bookkeeping results must be unused.
fx.graph @embedding_bag_bookkeeping(%w: tensor<10x3xf32>, %i: tensor<5xi64>, %o: tensor<2xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{only the bags' values (result 0) are supported}}
  %0:4 = fx.call_function "aten::_embedding_bag_forward_only"(%w, %i, %o) {args = {mode = 1 : i64}, tensor_arg_sizes = array<i32: 1, 1, 1, 0>} : (tensor<10x3xf32>, tensor<5xi64>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<5xi64>, tensor<2xi64>, tensor<2xi64>)
  fx.output %0#2 : tensor<2xi64>
}

// -----

// embedding_renorm: referenced rows above max_norm scaled down.
// CHECK-LABEL: func.func @embedding_renorm
// CHECK: %[[NORM:.*]] = prim.sqrt %{{.*}} : tensor<10x1xf32>
// CHECK: %[[HITS:.*]] = prim.compare eq, %{{.*}}, %{{.*}} : tensor<10x5xi64>
// CHECK: %[[SCALE:.*]] = prim.div %{{.*}}, %{{.*}} : tensor<10x1xf32>
// CHECK: %[[OVER:.*]] = prim.compare gt, %[[NORM]], %{{.*}} : tensor<10x1xf32>
fx.graph @embedding_renorm(%w: tensor<10x3xf32>, %i: tensor<5xi64>) -> tensor<10x3xf32> {
  %0 = fx.call_function "aten::embedding_renorm"(%w, %i) {args = {max_norm = 1.0 : f64, norm_type = 2.0 : f64}} : (tensor<10x3xf32>, tensor<5xi64>) -> tensor<10x3xf32>
  fx.output %0 : tensor<10x3xf32>
}

// -----

// x[mask] = v with no value to take (eager accepts it only when the mask
// is all false): x itself, nothing gathered from the empty values.
// CHECK-LABEL: func.func @index_put_no_values
// CHECK-SAME: (%[[X:.*]]: tensor<5x4xf32>
// CHECK-NOT: prim.gather
// CHECK: return %[[X]]
fx.graph @index_put_no_values(%x: tensor<5x4xf32>, %m: tensor<5xi1>, %v: tensor<0x4xf32>) -> tensor<5x4xf32> {
  %0 = fx.call_function "aten::index_put"(%x, %m, %v) {tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<5x4xf32>, tensor<5xi1>, tensor<0x4xf32>) -> tensor<5x4xf32>
  fx.output %0 : tensor<5x4xf32>
}
