// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// Seed 000's foo.
// CHECK-LABEL: func.func @foo
// CHECK-SAME: (%[[X:.*]]: tensor<3x3xf32> {fx.name = "x"}, %[[Y:.*]]: tensor<3x3xf32> {fx.name = "y"}) -> tensor<3x3xf32>
// CHECK: %[[S:.*]] = prim.sin %[[X]] : tensor<3x3xf32>
// CHECK: %[[C:.*]] = prim.cos %[[Y]] : tensor<3x3xf32>
// CHECK: %[[A:.*]] = prim.add %[[S]], %[[C]] : tensor<3x3xf32>
// CHECK: return %[[A]]
// CHECK-NOT: fx.
fx.graph @foo(%x: tensor<3x3xf32> {fx.name = "x"}, %y: tensor<3x3xf32> {fx.name = "y"}) -> tensor<3x3xf32> {
  %0 = fx.call_function "aten::sin"(%x) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %1 = fx.call_function "aten::cos"(%y) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %2 = fx.call_function "aten::add.Tensor"(%0, %1) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  fx.output %2 : tensor<3x3xf32>
}

// -----

// Broadcasting and type promotion are explicit; alpha scales the rhs.
// CHECK-LABEL: func.func @promote
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xi64>)
// CHECK: %[[CONV:.*]] = prim.convert %[[B]] to f32 : tensor<3xi64>
// CHECK: %[[BC:.*]] = prim.broadcast_in_dim %[[CONV]], shape [2, 3], dims [1] : tensor<3xf32>
// CHECK: %[[ALPHA:.*]] = prim.constant dense<2.000000e+00> : tensor<2x3xf32>
// CHECK: %[[SCALED:.*]] = prim.mul %[[BC]], %[[ALPHA]]
// CHECK: prim.sub %[[A]], %[[SCALED]] : tensor<2x3xf32>
fx.graph @promote(%a: tensor<2x3xf32>, %b: tensor<3xi64>) -> tensor<2x3xf32> {
  %0 = fx.call_function "aten::sub.Tensor"(%a, %b) {args = {alpha = 2 : i64}} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  fx.output %0 : tensor<2x3xf32>
}

// -----

// Scalars become splat constants of the result type; pow by 3 is a product.
// CHECK-LABEL: func.func @scalars
// CHECK: %[[HALF:.*]] = prim.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK: %[[M:.*]] = prim.mul %{{.*}}, %[[HALF]]
// CHECK: %[[SQ:.*]] = prim.mul %[[M]], %[[M]]
// CHECK: prim.mul %[[SQ]], %[[M]]
fx.graph @scalars(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::mul.Scalar"(%x) {args = {other = 5.000000e-01 : f64}} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = fx.call_function "aten::pow.Tensor_Scalar"(%0) {args = {exponent = 3 : i64}} : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %1 : tensor<4xf32>
}

// -----

// Linear + ReLU after core-ATen decomposition: permute, addmm, relu.
// CHECK-LABEL: func.func @linear_relu
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[W:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[WT:.*]] = prim.permute %[[W]], [1, 0] : tensor<3x4xf32>
// CHECK: %[[MM:.*]] = prim.dot %[[X]], %[[WT]], batch [] x [], contract [1] x [0]
// CHECK: %[[BIAS:.*]] = prim.broadcast_in_dim %[[B]], shape [8, 3], dims [1]
// CHECK: %[[ADD:.*]] = prim.add %[[MM]], %[[BIAS]]
// CHECK: %[[ZERO:.*]] = prim.constant dense<0.000000e+00> : tensor<8x3xf32>
// CHECK: prim.maximum %[[ADD]], %[[ZERO]]
fx.graph @linear_relu(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %mm = fx.call_function "aten::addmm"(%b, %x, %t) : (tensor<3xf32>, tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %r = fx.call_function "aten::relu"(%mm) : (tensor<8x3xf32>) -> tensor<8x3xf32>
  fx.output %r : tensor<8x3xf32>
}

// -----

// _softmax: max-shifted exp over the row, divided by its sum.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = prim.reduce max %{{.*}}, dims [1] {prim.stop_gradient} : tensor<4x16xf32>
// CHECK: %[[MAXK:.*]] = prim.reshape %[[MAX]], shape [4, 1]
// CHECK: prim.broadcast_in_dim %[[MAXK]], shape [4, 16], dims [0, 1]
// CHECK: %[[E:.*]] = prim.exp
// CHECK: prim.reduce sum %[[E]], dims [1]
// CHECK: prim.div %[[E]]
fx.graph @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = fx.call_function "aten::_softmax"(%x) {args = {dim = -1 : i64, half_to_float = false}} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  fx.output %0 : tensor<4x16xf32>
}

// -----

// native_layer_norm: mean, rstd, and the normalised, scaled, shifted rows.
// CHECK-LABEL: func.func @layer_norm
// CHECK: prim.reduce sum %{{.*}}, dims [1]
// CHECK: %[[N:.*]] = prim.constant dense<8.000000e+00> : tensor<4x1xf32>
// CHECK: %[[MEAN:.*]] = prim.div %{{.*}}, %[[N]]
// CHECK: %[[EPS:.*]] = prim.constant dense<9.99999974E-6> : tensor<4x1xf32>
// CHECK: %[[RSTD:.*]] = prim.rsqrt
// CHECK: %[[Y:.*]] = prim.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: %[[YW:.*]] = prim.mul %[[Y]], %{{.*}} : tensor<4x8xf32>
// CHECK: %[[YB:.*]] = prim.add %[[YW]], %{{.*}} : tensor<4x8xf32>
// CHECK: return %[[YB]], %[[MEAN]], %[[RSTD]]
fx.graph @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %0:3 = fx.call_function "aten::native_layer_norm"(%x, %w, %b) {args = {normalized_shape = array<i64: 8>, eps = 1.0e-05 : f64}} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  fx.output %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Comparisons promote to a common dtype and return bool; where broadcasts.
// CHECK-LABEL: func.func @compare_where
// CHECK: %[[XF:.*]] = prim.convert %{{.*}} to f32 : tensor<4xi32>
// CHECK: %[[M:.*]] = prim.compare gt, %[[XF]], %{{.*}} : tensor<4xf32>
// CHECK: prim.where %[[M]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>
fx.graph @compare_where(%i: tensor<4xi32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %m = fx.call_function "aten::gt.Tensor"(%i, %y) : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi1>
  %0 = fx.call_function "aten::where.self"(%m, %y, %i) : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// Views are reshapes, slices clamp their end as PyTorch does.
// CHECK-LABEL: func.func @views
// CHECK: prim.reshape %{{.*}}, shape [4, 1, 6] : tensor<4x6xf32>
// CHECK: prim.slice %{{.*}}, start [0, 2], limit [4, 6], strides [1, 2] : tensor<4x6xf32>
// CHECK: prim.broadcast_in_dim %{{.*}}, shape [3, 4, 6], dims [0, 1, 2] : tensor<1x4x6xf32>
fx.graph @views(%x: tensor<4x6xf32>) -> (tensor<4x1x6xf32>, tensor<4x2xf32>, tensor<3x4x6xf32>) {
  %0 = fx.call_function "aten::unsqueeze"(%x) {args = {dim = 1 : i64}} : (tensor<4x6xf32>) -> tensor<4x1x6xf32>
  %1 = fx.call_function "aten::slice.Tensor"(%x) {args = {dim = 1 : i64, start = 2 : i64, end = 9223372036854775807 : i64, step = 2 : i64}} : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %2 = fx.call_function "aten::view"(%x) {args = {size = array<i64: 1, 4, 6>}} : (tensor<4x6xf32>) -> tensor<1x4x6xf32>
  %3 = fx.call_function "aten::expand"(%2) {args = {size = array<i64: 3, -1, -1>}} : (tensor<1x4x6xf32>) -> tensor<3x4x6xf32>
  fx.output %0, %1, %3 : tensor<4x1x6xf32>, tensor<4x2xf32>, tensor<3x4x6xf32>
}

// -----

// gather along dim 1: a gather from self's elements, flattened, at the
// linear positions row * 8 + index (one read per output element, not a
// one-hot selection over the row).
// CHECK-LABEL: func.func @gather
// CHECK: %[[ROW:.*]] = prim.iota shape [4, 3], dim 0 : i64
// CHECK: %[[EIGHT:.*]] = prim.constant dense<8> : tensor<4x3xi64>
// CHECK: %[[START:.*]] = prim.mul %[[ROW]], %[[EIGHT]] : tensor<4x3xi64>
// CHECK: %[[AT:.*]] = prim.add %arg1, %[[START]] : tensor<4x3xi64>
// CHECK: %[[FLAT:.*]] = prim.reshape %arg0, shape [32] : tensor<4x8xf32>
// CHECK: prim.gather %[[FLAT]][%[[AT]]], dim 0 : tensor<32xf32>, tensor<4x3xi64>
// CHECK-NOT: prim.reduce
fx.graph @gather(%x: tensor<4x8xf32>, %i: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %0 = fx.call_function "aten::gather"(%x, %i) {args = {dim = 1 : i64}} : (tensor<4x8xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}

// -----

// A number to the power of a tensor (logspace's base ** steps).
// CHECK-LABEL: func.func @pow_scalar
// CHECK: %[[BASE:.*]] = prim.constant dense<1.000000e+01> : tensor<4xf32>
// CHECK: prim.pow %[[BASE]], %{{.*}} : tensor<4xf32>
fx.graph @pow_scalar(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::pow.Scalar"(%x) {args = {self = 10.0 : f64}} : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// The functional batch norm with update: an empty uint8 reserve, then the
// running statistics (1 - momentum) * running + momentum * batch, the
// variance unbiased (20 / 19 * 0.1).
// CHECK-LABEL: func.func @batch_norm_with_update
// CHECK: prim.constant dense<0> : tensor<0xui8>
// CHECK: prim.constant dense<0.899999976> : tensor<3xf32>
// CHECK: prim.constant dense<0.105263159> : tensor<3xf32>
fx.graph @batch_norm_with_update(%x: tensor<4x3x5xf32>, %rm: tensor<3xf32>, %rv: tensor<3xf32>) -> (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0:6 = fx.call_function "aten::_batch_norm_with_update_functional"(%x, %rm, %rv) {args = {momentum = 0.1 : f64, eps = 1.0e-5 : f64}, tensor_arg_sizes = array<i32: 1, 0, 0, 1, 1>} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<0xui8>, tensor<3xf32>, tensor<3xf32>)
  fx.output %0#0, %0#4, %0#5 : tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Evaluation's batch norm as eager's CPU kernel computes it: per channel
// alpha = rsqrt(var + eps) * weight and beta = bias - mean * alpha, then
// one multiply and one add a point (in f32 for a bf16 input, rounded
// once).
// CHECK-LABEL: func.func @batch_norm_eval
// CHECK: %[[RSTD:.*]] = prim.rsqrt
// CHECK: %[[W:.*]] = prim.convert %arg1
// CHECK: %[[ALPHA:.*]] = prim.mul %[[RSTD]], %[[W]] : tensor<3xf32>
// CHECK: %[[SHIFT:.*]] = prim.mul %{{.*}}, %[[ALPHA]] : tensor<3xf32>
// CHECK: %[[BETA:.*]] = prim.sub %{{.*}}, %[[SHIFT]] : tensor<3xf32>
// CHECK: %[[A:.*]] = prim.broadcast_in_dim %[[ALPHA]], shape [4, 3, 5], dims [1]
// CHECK: %[[SCALED:.*]] = prim.mul %{{.*}}, %[[A]] : tensor<4x3x5xf32>
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %[[BETA]], shape [4, 3, 5], dims [1]
// CHECK: %[[Y:.*]] = prim.add %[[SCALED]], %[[B]] : tensor<4x3x5xf32>
// CHECK: prim.convert %[[Y]] to bf16
fx.graph @batch_norm_eval(%x: tensor<4x3x5xbf16>, %w: tensor<3xbf16>, %b: tensor<3xbf16>, %rm: tensor<3xbf16>, %rv: tensor<3xbf16>) -> tensor<4x3x5xbf16> {
  %0:3 = fx.call_function "aten::_native_batch_norm_legit_no_training"(%x, %w, %b, %rm, %rv) {args = {momentum = 0.1 : f64, eps = 1.0e-5 : f64}} : (tensor<4x3x5xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<4x3x5xbf16>, tensor<0xbf16>, tensor<0xbf16>)
  fx.output %0#0 : tensor<4x3x5xbf16>
}
