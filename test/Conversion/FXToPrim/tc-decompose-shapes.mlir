// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// cat converts every input to the result dtype and concatenates.
// CHECK-LABEL: func.func @cat
// CHECK: %[[C:.*]] = prim.convert %{{.*}} to f32 : tensor<2x3xi64>
// CHECK: prim.concatenate %{{.*}}, %[[C]] dim 0 : tensor<1x3xf32>, tensor<2x3xf32>
fx.graph @cat(%a: tensor<1x3xf32>, %b: tensor<2x3xi64>) -> tensor<3x3xf32> {
  %0 = fx.call_function "aten::cat"(%a, %b) {args = {dim = -2 : i64}, tensor_arg_sizes = array<i32: 2>} : (tensor<1x3xf32>, tensor<2x3xi64>) -> tensor<3x3xf32>
  fx.output %0 : tensor<3x3xf32>
}

// -----

// transpose swaps two dims; t is the 2-d transpose; squeeze and flatten
// are reshapes to the result type.
// CHECK-LABEL: func.func @layout
// CHECK: prim.permute %{{.*}}, [0, 2, 1] : tensor<2x3x4xf32>
// CHECK: prim.permute %{{.*}}, [1, 0] : tensor<5x6xf32>
// CHECK: prim.reshape %{{.*}}, shape [5] : tensor<5x1xf32>
// CHECK: prim.reshape %{{.*}}, shape [2, 12] : tensor<2x3x4xf32>
fx.graph @layout(%x: tensor<2x3x4xf32>, %y: tensor<5x6xf32>, %z: tensor<5x1xf32>) -> (tensor<2x4x3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<2x12xf32>) {
  %0 = fx.call_function "aten::transpose.int"(%x) {args = {dim0 = -1 : i64, dim1 = 1 : i64}} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %1 = fx.call_function "aten::t"(%y) : (tensor<5x6xf32>) -> tensor<6x5xf32>
  %2 = fx.call_function "aten::squeeze.dim"(%z) {args = {dim = 1 : i64}} : (tensor<5x1xf32>) -> tensor<5xf32>
  %3 = fx.call_function "aten::flatten.using_ints"(%x) {args = {start_dim = 1 : i64}} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  fx.output %0, %1, %2, %3 : tensor<2x4x3xf32>, tensor<6x5xf32>, tensor<5xf32>, tensor<2x12xf32>
}

// -----

// A negative slice start counts from the end.
// CHECK-LABEL: func.func @slice_negative
// CHECK: prim.slice %{{.*}}, start [6], limit [10], strides [1] : tensor<10xf32>
fx.graph @slice_negative(%x: tensor<10xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::slice.Tensor"(%x) {args = {dim = 0 : i64, start = -4 : i64}} : (tensor<10xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// select: the one-row slice at the (negative) index, reshaped to drop the
// dimension.
// CHECK-LABEL: func.func @select_negative
// CHECK: %[[ROW:.*]] = prim.slice %arg0, start [0, 4], limit [3, 5], strides [1, 1] : tensor<3x5xf32>
// CHECK: prim.reshape %[[ROW]], shape [3] : tensor<3x1xf32>
fx.graph @select_negative(%x: tensor<3x5xf32>) -> tensor<3xf32> {
  %0 = fx.call_function "aten::select.int"(%x) {args = {dim = 1 : i64, index = -1 : i64}} : (tensor<3x5xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

// arange of an integer dtype with integer start and step: start + i * step
// in i64, then the result's dtype (no f64 converts).
// CHECK-LABEL: func.func @arange_start_step
// CHECK: %[[I:.*]] = prim.iota shape [3], dim 0 : i64
// CHECK-NOT: f64
// CHECK: %[[S:.*]] = prim.mul %[[I]], %{{.*}} : tensor<3xi64>
// CHECK: %[[V:.*]] = prim.add %[[S]], %{{.*}} : tensor<3xi64>
// CHECK: return %[[V]]
fx.graph @arange_start_step() -> tensor<3xi64> {
  %0 = fx.call_function "aten::arange.start_step"() {args = {start = 2 : i64, end = 11 : i64, step = 3 : i64}} : () -> tensor<3xi64>
  fx.output %0 : tensor<3xi64>
}

// -----

// An integer range from 0 by 1 is the iota itself, converted to i32.
// CHECK-LABEL: func.func @arange_i32
// CHECK: %[[I:.*]] = prim.iota shape [5], dim 0 : i64
// CHECK-NEXT: %[[C:.*]] = prim.convert %[[I]] to i32 : tensor<5xi64>
// CHECK-NEXT: return %[[C]]
fx.graph @arange_i32() -> tensor<5xi32> {
  %0 = fx.call_function "aten::arange"() {args = {end = 5 : i64, dtype = i32}} : () -> tensor<5xi32>
  fx.output %0 : tensor<5xi32>
}

// -----

// A floating-point range: start + i * step in f64, then the result's
// dtype.
// CHECK-LABEL: func.func @arange_float
// CHECK: %[[I:.*]] = prim.iota shape [4], dim 0 : i64
// CHECK: %[[F:.*]] = prim.convert %[[I]] to f64 : tensor<4xi64>
// CHECK: %[[S:.*]] = prim.mul %[[F]], %{{.*}} : tensor<4xf64>
// CHECK: %[[V:.*]] = prim.add %[[S]], %{{.*}} : tensor<4xf64>
// CHECK: prim.convert %[[V]] to f32 : tensor<4xf64>
fx.graph @arange_float() -> tensor<4xf32> {
  %0 = fx.call_function "aten::arange.start_step"() {args = {start = 0.5 : f64, end = 2.5 : f64, step = 0.5 : f64}} : () -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// copy: src broadcast to self's shape in self's dtype.
// CHECK-LABEL: func.func @copy
// CHECK: %[[C:.*]] = prim.convert %arg1 to f32 : tensor<4xf64>
// CHECK: prim.broadcast_in_dim %[[C]], shape [3, 4], dims [1] : tensor<4xf32>
fx.graph @copy(%self: tensor<3x4xf32>, %src: tensor<4xf64>) -> tensor<3x4xf32> {
  %0 = fx.call_function "aten::copy"(%self, %src) : (tensor<3x4xf32>, tensor<4xf64>) -> tensor<3x4xf32>
  fx.output %0 : tensor<3x4xf32>
}

// -----

// split_with_sizes: consecutive slices along dim, each its result's length.
// CHECK-LABEL: func.func @split_with_sizes
// CHECK: prim.slice %arg0, start [0, 0], limit [4, 1], strides [1, 1] : tensor<4x5xf32>
// CHECK: prim.slice %arg0, start [0, 1], limit [4, 4], strides [1, 1] : tensor<4x5xf32>
// CHECK: prim.slice %arg0, start [0, 4], limit [4, 5], strides [1, 1] : tensor<4x5xf32>
fx.graph @split_with_sizes(%x: tensor<4x5xf32>) -> (tensor<4x1xf32>, tensor<4x3xf32>, tensor<4x1xf32>) {
  %0:3 = fx.call_function "aten::split_with_sizes"(%x) {args = {split_sizes = array<i64: 1, 3, 1>, dim = 1 : i64}} : (tensor<4x5xf32>) -> (tensor<4x1xf32>, tensor<4x3xf32>, tensor<4x1xf32>)
  fx.output %0#0, %0#1, %0#2 : tensor<4x1xf32>, tensor<4x3xf32>, tensor<4x1xf32>
}

// -----

// Slices of a tensor with the graph's symbolic size (docs/DynamicShapes.md):
// over the size itself only whole (no op), over the other dimensions as
// usual; prim.slice's limit there is `?`.
// CHECK-LABEL: func.func @symbolic_slices
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK-NEXT: %[[S:.*]] = prim.slice %[[X]], start [0, 1], limit [?, 3], strides [1, 1] : tensor<?x8xf32>
// CHECK-NEXT: prim.sin %[[S]] : tensor<?x2xf32>
fx.graph @symbolic_slices(%x: tensor<?x8xf32>) -> tensor<?x2xf32> {
  %a = fx.call_function "aten::slice.Tensor"(%x) {args = {dim = 0 : i64, start = 0 : i64, end = 9223372036854775807 : i64}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %b = fx.call_function "aten::slice.Tensor"(%a) {args = {dim = 1 : i64, start = 1 : i64, end = 3 : i64}} : (tensor<?x8xf32>) -> tensor<?x2xf32>
  %c = fx.call_function "aten::sin"(%b) : (tensor<?x2xf32>) -> tensor<?x2xf32>
  fx.output %c : tensor<?x2xf32>
}
