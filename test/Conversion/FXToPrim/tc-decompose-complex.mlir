// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// A complex tensor is a real one with a trailing (real, imaginary) pair;
// conj negates the imaginary part.
// CHECK-LABEL: func.func @conj
// CHECK-SAME: (%[[X:.*]]: tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK: %[[RE:.*]] = prim.slice %[[X]], start [0, 0], limit [3, 1], strides [1, 1]
// CHECK: %[[IM:.*]] = prim.slice %[[X]], start [0, 1], limit [3, 2], strides [1, 1]
// CHECK: %[[IMR:.*]] = prim.reshape %[[IM]], shape [3]
// CHECK: %[[NEG:.*]] = prim.neg %[[IMR]]
// CHECK: prim.concatenate %{{.*}}, %{{.*}} dim 1 : tensor<3x1xf32>, tensor<3x1xf32>
fx.graph @conj(%x: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  %0 = fx.call_function "aten::_conj_physical"(%x) : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
  fx.output %0 : tensor<3xcomplex<f32>>
}

// -----

// rfft of 8 points: products with the 8 x 5 cos and -sin matrices of
// 2 pi (j k mod 8) / 8, computed in f64.
// CHECK-LABEL: func.func @rfft
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>) -> tensor<2x5x2xf32>
// CHECK: %[[JK:.*]] = prim.mul %{{.*}}, %{{.*}} : tensor<8x5xi64>
// CHECK: %[[MOD:.*]] = prim.rem %[[JK]], %{{.*}} : tensor<8x5xi64>
// CHECK: %[[THETA:.*]] = prim.mul %{{.*}}, %{{.*}} : tensor<8x5xf64>
// CHECK: %[[COS:.*]] = prim.cos %[[THETA]] : tensor<8x5xf64>
// CHECK: %[[SIN:.*]] = prim.sin %[[THETA]] : tensor<8x5xf64>
// CHECK: %[[NSIN:.*]] = prim.neg %[[SIN]]
// CHECK-DAG: %[[C:.*]] = prim.convert %[[COS]] to f32
// CHECK-DAG: %[[S:.*]] = prim.convert %[[NSIN]] to f32
// CHECK: prim.dot %[[X]], %[[C]]
// CHECK: prim.dot %[[X]], %[[S]]
// CHECK: prim.concatenate %{{.*}}, %{{.*}} dim 2 : tensor<2x5x1xf32>, tensor<2x5x1xf32>
fx.graph @rfft(%x: tensor<2x8xf32>) -> tensor<2x5xcomplex<f32>> {
  %0 = fx.call_function "aten::_fft_r2c"(%x) {args = {dim = array<i64: 1>, normalization = 0 : i64, onesided = true}} : (tensor<2x8xf32>) -> tensor<2x5xcomplex<f32>>
  fx.output %0 : tensor<2x5xcomplex<f32>>
}

// -----

// irfft to 8 points: the half spectrum weighted by its Hermitian partners
// (2, but 1 for k = 0 and k = 4, whose imaginary parts are ignored), the
// result scaled by 1/8.
// CHECK-LABEL: func.func @irfft
// CHECK-SAME: (%[[X:.*]]: tensor<5x2xf32>) -> tensor<8xf32>
// CHECK: %[[W:.*]] = prim.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<5x8xi1>, tensor<5x8xf64>
// CHECK: prim.dot
// CHECK: prim.dot
// CHECK: %[[X8:.*]] = prim.sub
// CHECK: prim.mul %[[X8]], %{{.*}} : tensor<8xf32>
fx.graph @irfft(%x: tensor<5xcomplex<f32>>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::_fft_c2r"(%x) {args = {dim = array<i64: 0>, normalization = 2 : i64, last_dim_size = 8 : i64}} : (tensor<5xcomplex<f32>>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}

// -----

// An op that only moves elements runs its real decomposition on each part.
// CHECK-LABEL: func.func @slice_complex
// CHECK: %[[R:.*]] = prim.slice %{{.*}}, start [1], limit [3], strides [1] : tensor<4xf64>
// CHECK: %[[I:.*]] = prim.slice %{{.*}}, start [1], limit [3], strides [1] : tensor<4xf64>
// CHECK: prim.concatenate
fx.graph @slice_complex(%x: tensor<4xcomplex<f64>>) -> tensor<2xcomplex<f64>> {
  %0 = fx.call_function "aten::slice.Tensor"(%x) {args = {dim = 0 : i64, start = 1 : i64, end = 3 : i64, step = 1 : i64}} : (tensor<4xcomplex<f64>>) -> tensor<2xcomplex<f64>>
  fx.output %0 : tensor<2xcomplex<f64>>
}

// -----

// Other ops reject complex operands instead of computing on the pairs.
fx.graph @exp_complex(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  // expected-error @+1 {{complex tensors are not supported by this op}}
  %0 = fx.call_function "aten::exp"(%x) : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  fx.output %0 : tensor<4xcomplex<f32>>
}

// -----

// A complex operand of an op without results is rejected, not read.
fx.graph @complex_check(%x: tensor<3xcomplex<f32>>) {
  // expected-error @+1 {{complex tensors are not supported by this op}}
  fx.call_function "aten::_linalg_check_errors"(%x) {args = {api_name = "x", is_matrix = true}} : (tensor<3xcomplex<f32>>) -> ()
  fx.output
}

// -----

// A transform of no points is an error, not a division by zero.
fx.graph @irfft_empty(%x: tensor<5xcomplex<f32>>) -> tensor<0xf32> {
  // expected-error @+1 {{a transform of no points}}
  %0 = fx.call_function "aten::_fft_c2r"(%x) {args = {dim = array<i64: 0>, normalization = 0 : i64, last_dim_size = 0 : i64}} : (tensor<5xcomplex<f32>>) -> tensor<0xf32>
  fx.output %0 : tensor<0xf32>
}

// -----

// The inverse transform of complex input: no negated sin (backward), four
// products of the parts, each part scaled by 1/sqrt(4) (normalization 1).
// CHECK-LABEL: func.func @ifft_c2c
// CHECK-NOT: prim.neg
// CHECK-COUNT-4: prim.dot %{{.*}}, %{{.*}}, batch [] x [], contract [1] x [0] : tensor<1x4xf32>, tensor<4x4xf32>
// CHECK: prim.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK: return %{{.*}} : tensor<4x2xf32>
fx.graph @ifft_c2c(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = fx.call_function "aten::_fft_c2c"(%x) {args = {dim = array<i64: 0>, normalization = 1 : i64, forward = false}} : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  fx.output %0 : tensor<4xcomplex<f32>>
}
