// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics

fx.graph @no_decomposition(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::special_airy_ai': no decomposition into prim ops}}
  %0 = fx.call_function "aten::special_airy_ai"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// The graph's symbolic size is a leading dimension only.
fx.graph @symbolic_inner(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{cannot decompose 'aten::sin': a symbolic size is supported as the leading dimension only, not in 'tensor<4x?xf32>'}}
  %0 = fx.call_function "aten::sin"(%x) : (tensor<4x?xf32>) -> tensor<4x?xf32>
  fx.output %0 : tensor<4x?xf32>
}

// -----

fx.graph @symbolic_unsupported_op(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::cumsum': symbolic sizes are not supported by this op yet}}
  %0 = fx.call_function "aten::cumsum"(%x) {args = {dim = 1 : i64}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  fx.output %0 : tensor<?x4xf32>
}

// -----

fx.graph @symbolic_reduction(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::sum.dim_IntList': a reduction over the symbolic size of 'tensor<?x4xf32>' is not supported yet}}
  %0 = fx.call_function "aten::sum.dim_IntList"(%x) {args = {dim = [0], keepdim = false}} : (tensor<?x4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

fx.graph @get_attr() -> tensor<4xf32> {
  // expected-error @+1 {{cannot be decomposed: tc compiles call_function nodes}}
  %w = fx.get_attr parameter "w" : tensor<4xf32>
  fx.output %w : tensor<4xf32>
}

// -----

fx.graph @int_div(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{true division with an integer result}}
  %0 = fx.call_function "aten::div.Tensor"(%x, %x) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  fx.output %0 : tensor<4xi64>
}

// -----

// Types that contradict the op (hand-written IR) are diagnosed, not built.

fx.graph @bad_broadcast(%x: tensor<16xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{cannot decompose 'aten::add.Tensor': operand of type 'tensor<16xf32>' does not broadcast to the result shape of 'tensor<4x8xf32>'}}
  %0 = fx.call_function "aten::add.Tensor"(%x, %y) : (tensor<16xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  fx.output %0 : tensor<4x8xf32>
}

// -----

fx.graph @bad_view(%x: tensor<4x6xf32>) -> tensor<5x5xf32> {
  // expected-error @+1 {{cannot reshape 'tensor<4x6xf32>' to 'tensor<5x5xf32>'}}
  %0 = fx.call_function "aten::view"(%x) {args = {size = array<i64: 5, 5>}} : (tensor<4x6xf32>) -> tensor<5x5xf32>
  fx.output %0 : tensor<5x5xf32>
}

// -----

fx.graph @bad_permute(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{the dimensions do not permute 'tensor<3x4xf32>'}}
  %0 = fx.call_function "aten::permute"(%x) {args = {dims = array<i64: 1, 1>}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}

// -----

fx.graph @bad_reduce_dim(%x: tensor<5x6xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{dimension 2 is out of range for 'tensor<5x6xf32>'}}
  %0 = fx.call_function "aten::amax"(%x) {args = {dim = array<i64: 2>}} : (tensor<5x6xf32>) -> tensor<6xf32>
  fx.output %0 : tensor<6xf32>
}

// -----

fx.graph @bad_mm(%a: tensor<4x5xf32>, %b: tensor<6x7xf32>) -> tensor<4x7xf32> {
  // expected-error @+1 {{cannot multiply 'tensor<4x5xf32>' by 'tensor<6x7xf32>'}}
  %0 = fx.call_function "aten::mm"(%a, %b) : (tensor<4x5xf32>, tensor<6x7xf32>) -> tensor<4x7xf32>
  fx.output %0 : tensor<4x7xf32>
}

// -----

fx.graph @select_out_of_range(%x: tensor<3x5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{cannot decompose 'aten::select.int': index 3 is out of range for dimension 0 of size 3}}
  %0 = fx.call_function "aten::select.int"(%x) {args = {dim = 0 : i64, index = 3 : i64}} : (tensor<3x5xf32>) -> tensor<5xf32>
  fx.output %0 : tensor<5xf32>
}

// -----

fx.graph @split_short(%x: tensor<4x5xf32>) -> (tensor<4x1xf32>, tensor<4x3xf32>) {
  // expected-error @+1 {{cannot decompose 'aten::split_with_sizes': results cover 4 of dimension 1's 5}}
  %0:2 = fx.call_function "aten::split_with_sizes"(%x) {args = {split_sizes = array<i64: 1, 3>, dim = 1 : i64}} : (tensor<4x5xf32>) -> (tensor<4x1xf32>, tensor<4x3xf32>)
  fx.output %0#0, %0#1 : tensor<4x1xf32>, tensor<4x3xf32>
}

// -----

fx.graph @rounding_mode(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{cannot decompose 'aten::div.Tensor_mode': unknown rounding_mode 'ceil'}}
  %0 = fx.call_function "aten::div.Tensor_mode"(%x, %y) {args = {rounding_mode = "ceil"}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

fx.graph @symbolic_partial_slice(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::slice.Tensor': a slice of part of the symbolic size is not supported}}
  %0 = fx.call_function "aten::slice.Tensor"(%x) {args = {dim = 0 : i64, start = 1 : i64, end = 9223372036854775807 : i64}} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  fx.output %0 : tensor<?x4xf32>
}

// -----

fx.graph @symbolic_select(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::select.int': a select of the symbolic size is not supported}}
  %0 = fx.call_function "aten::select.int"(%x) {args = {dim = 0 : i64, index = 1 : i64}} : (tensor<?x4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

fx.graph @matmul_2d(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{cannot decompose 'aten::matmul': aten::matmul is taken as an n-d by 2-d float product only, not 'tensor<4x8xf32>' by 'tensor<8x2xf32>'}}
  %0 = fx.call_function "aten::matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  fx.output %0 : tensor<4x2xf32>
}

// -----

// Operands whose inner sizes differ are a diagnostic, not a crash.
fx.graph @matmul_sizes(%x: tensor<2x16x256xbf16>, %w: tensor<768x256xbf16>) -> tensor<2x16x768xbf16> {
  // expected-error @+1 {{cannot decompose 'aten::matmul': cannot multiply 'tensor<2x16x256xbf16>' by 'tensor<768x256xbf16>'}}
  %0 = fx.call_function "aten::matmul"(%x, %w) : (tensor<2x16x256xbf16>, tensor<768x256xbf16>) -> tensor<2x16x768xbf16>
  fx.output %0 : tensor<2x16x768xbf16>
}
