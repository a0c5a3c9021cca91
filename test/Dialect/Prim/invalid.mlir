// RUN: tc-opt %s -split-input-file -verify-diagnostics

// expected-note @+1 {{prior use here}}
func.func @mismatched_operands(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{use of value '%b' expects different type than prior uses: 'tensor<4xf32>' vs 'tensor<3xf32>'}}
  %0 = prim.add %a, %b : tensor<4xf32>
  return
}

// -----

func.func @mismatched_generic(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "prim.add"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @float_only(%a: tensor<4xi64>) {
  // expected-error @+1 {{must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = prim.exp %a : tensor<4xi64>
  return
}

// -----

func.func @int_only(%a: tensor<4xf32>) {
  // expected-error @+1 {{op operand #0 must be ranked tensor of}}
  %0 = prim.bitwise_not %a : tensor<4xf32>
  return
}

// -----

func.func @compare_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "prim.compare"(%a, %a) {predicate = 0 : i32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<3xi1>
  return
}

// -----

func.func @where_condition(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{all of {condition, on_true} have same shape}}
  %0 = prim.where %c, %a, %a : tensor<3xi1>, tensor<4xf32>
  return
}

// -----

func.func @broadcast_rank(%v: tensor<4xf32>) {
  // expected-error @+1 {{'prim.broadcast_in_dim' op needs one broadcast dimension per operand dimension (1), got 2}}
  %0 = prim.broadcast_in_dim %v, shape [3, 4], dims [0, 1] : tensor<4xf32>
  return
}

// -----

func.func @broadcast_size(%v: tensor<4xf32>) {
  // expected-error @+1 {{operand dimension 0 of size 4 cannot broadcast to size 3}}
  %0 = prim.broadcast_in_dim %v, shape [3, 4], dims [0] : tensor<4xf32>
  return
}

// -----

func.func @broadcast_order(%v: tensor<1x4xf32>) {
  // expected-error @+1 {{broadcast dimensions must be increasing}}
  %0 = prim.broadcast_in_dim %v, shape [4, 4], dims [1, 0] : tensor<1x4xf32>
  return
}

// -----

func.func @broadcast_range(%v: tensor<4xf32>) {
  // expected-error @+1 {{broadcast dimension 2 is out of range for rank 2}}
  %0 = prim.broadcast_in_dim %v, shape [3, 4], dims [2] : tensor<4xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{cannot reshape 12 elements into 10}}
  %0 = prim.reshape %x, shape [2, 5] : tensor<3x4xf32>
  return
}

// -----

func.func @reshape_negative(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{shape has a negative size -1}}
  %0 = prim.reshape %x, shape [-1, 4] : tensor<3x4xf32>
  return
}

// -----

func.func @permute_repeat(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{permuted dimension 0 is repeated}}
  %0 = prim.permute %x, [0, 0] : tensor<3x4xf32>
  return
}

// -----

func.func @permute_length(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{permutation has 3 entries for rank 2}}
  %0 = prim.permute %x, [0, 1, 2] : tensor<3x4xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{range [0, 5) of dimension 1 is out of bounds}}
  %0 = prim.slice %x, start [0, 0], limit [3, 5], strides [1, 1] : tensor<3x4xf32>
  return
}

// -----

func.func @slice_symbolic_part(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{dimension 0 of the symbolic size is sliced whole or not at all ([0, ?) by 1)}}
  %0 = prim.slice %x, start [1, 0], limit [?, 4], strides [1, 1] : tensor<?x4xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{stride 0 of dimension 0 is not positive}}
  %0 = prim.slice %x, start [0, 0], limit [3, 4], strides [0, 1] : tensor<3x4xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{dimension 0 would have negative size -1}}
  %0 = prim.pad %x, low [-2, 0], high [-2, 0], interior [0, 0], value 0.0 : tensor<3x4xf32>
  return
}

// -----

func.func @concatenate_mismatch(%a: tensor<3x4xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{inputs differ in dimension 1}}
  %0 = prim.concatenate %a, %b dim 0 : tensor<3x4xf32>, tensor<3x5xf32>
  return
}

// -----

func.func @concatenate_dtype(%a: tensor<3x4xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+1 {{inputs must have one rank and element type}}
  %0 = prim.concatenate %a, %b dim 0 : tensor<3x4xf32>, tensor<3x4xf16>
  return
}

// -----

func.func @iota_dim() {
  // expected-error @+1 {{dimension 2 is out of range for rank 2}}
  %0 = prim.iota shape [2, 3], dim 2 : i64
  return
}

// -----

func.func @reduce_order(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{reduced dimensions must be increasing}}
  %0 = prim.reduce sum %x, dims [1, 0] : tensor<3x4xf32>
  return
}

// -----

func.func @arg_reduce_range(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{reduced dimension 2 is out of range for rank 2}}
  %0 = prim.arg_reduce argmax %x, dim 2 : tensor<3x4xf32>
  return
}

// -----

func.func @dot_sizes(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{lhs dimension 1 (4) does not match rhs dimension 0 (5)}}
  %0 = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<3x4xf32>, tensor<5x6xf32>
  return
}

// -----

func.func @dot_counts(%a: tensor<3x4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{lhs and rhs need as many batch and contracting dimensions as each other}}
  %0 = prim.dot %a, %b, batch [] x [], contract [1] x [] : tensor<3x4xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @dot_dtypes(%a: tensor<3x4xf32>, %b: tensor<4x6xf16>) {
  // expected-error @+1 {{all of {lhs, rhs} have same element type}}
  %0 = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<3x4xf32>, tensor<4x6xf16>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+1 {{input has 3 channels but weight expects 4 x 1 groups}}
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x3x8x8xf32>, tensor<6x4x3x3xf32>
  return
}

// -----

func.func @conv_kernel(%x: tensor<1x3x2x2xf32>, %w: tensor<6x3x5x5xf32>) {
  // expected-error @+1 {{kernel is larger than the padded input in spatial dimension 0}}
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x3x2x2xf32>, tensor<6x3x5x5xf32>
  return
}

// -----

func.func @conv_attrs(%x: tensor<1x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+1 {{stride, padding and dilation need 2 entries each}}
  %0 = prim.convolution %x, %w, stride [1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>
  return
}

// -----

func.func @random_dtype(%s: tensor<i64>) {
  // expected-error @+1 {{attribute 'dtype' failed to satisfy constraint}}
  %0 = prim.random uniform %s, %s, shape [4] : i32
  return
}

// -----

func.func @slice_entries(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{start, limit and strides need 2 entries each}}
  %0 = prim.slice %x, start [0], limit [3, 4], strides [1, 1] : tensor<3x4xf32>
  return
}

// -----

func.func @pad_entries(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{low, high and interior need 2 entries each}}
  %0 = prim.pad %x, low [0], high [0, 0], interior [0, 0], value 0.0 : tensor<3x4xf32>
  return
}

// -----

func.func @pad_interior(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{interior padding is negative}}
  %0 = prim.pad %x, low [0, 0], high [0, 0], interior [0, -1], value 0.0 : tensor<3x4xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{groups must be positive}}
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 0 : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>
  return
}

// -----

func.func @conv_out_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+1 {{output channels are not divisible by groups}}
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 2 : tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>
  return
}

// -----

func.func @conv_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{stride and dilation must be positive and padding non-negative}}
  %0 = prim.convolution %x, %w, stride [0, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @random_shape(%s: tensor<i64>) {
  // expected-error @+1 {{shape has a negative size -4}}
  %0 = prim.random uniform %s, %s, shape [-4] : f32
  return
}

// -----

func.func @gather_dim(%x: tensor<3x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{dimension 2 is out of range for rank 2}}
  %0 = prim.gather %x[%i], dim 2 : tensor<3x4xf32>, tensor<2xi64>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<3x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = prim.gather %x[%i], dim 0 : tensor<3x4xf32>, tensor<2xf32>
  return
}

// -----

func.func @gather_result(%x: tensor<3x4xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'prim.gather' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{'prim.gather' op failed to infer returned types}}
  %0 = "prim.gather"(%x, %i) {dim = 0 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @conv_grad_shape(%dy: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error @+1 {{'prim.convolution_backward_input' op grad 'tensor<1x4x3x3xf32>' is not the shape of the convolution's result 'tensor<1x4x4x4xf32>'}}
  %0 = prim.convolution_backward_input %dy, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32> -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

func.func @conv_grad_groups(%dy: tensor<1x4x3x3xf32>, %x: tensor<1x4x5x5xf32>) -> tensor<4x3x3x3xf32> {
  // expected-error @+1 {{'prim.convolution_backward_weight' op input has 4 channels but weight expects 3 x 1 groups}}
  %0 = prim.convolution_backward_weight %dy, %x, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x4x3x3xf32>, tensor<1x4x5x5xf32> -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

func.func @conv_grad_type(%dy: tensor<1x4x3x3xf32>, %x: tensor<1x4x5x5xf16>) -> tensor<4x4x3x3xf32> {
  // expected-error @+1 {{'prim.convolution_backward_weight' op needs one element type for all tensors}}
  %0 = prim.convolution_backward_weight %dy, %x, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x4x3x3xf32>, tensor<1x4x5x5xf16> -> tensor<4x4x3x3xf32>
  return %0 : tensor<4x4x3x3xf32>
}

// -----

func.func @window_size(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xi8> {
  // expected-error @+1 {{'prim.window_argmax' op output 'tensor<1x4x3x3xi8>' does not have 4 windows of input 'tensor<1x4x8x8xf32>' in dimension 2}}
  %0 = prim.window_argmax %x, window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x3x3xi8>
  return %0 : tensor<1x4x3x3xi8>
}

// -----

func.func @window_ceil_outside(%x: tensor<2x8xf32>) -> tensor<2x6xi8> {
  // expected-error @+1 {{'prim.window_argmax' op output 'tensor<2x6xi8>' does not have 5 windows of input 'tensor<2x8xf32>' in dimension 1}}
  %0 = prim.window_argmax %x, window [2], strides [2], padding [1], dilation [1] : tensor<2x8xf32> -> tensor<2x6xi8>
  return %0 : tensor<2x6xi8>
}

// -----

func.func @window_position_width(%x: tensor<1x40x40xf32>) -> tensor<1x2x2xi8> {
  // expected-error @+1 {{'prim.window_argmax' op 'i8' cannot hold the 400 positions of a window}}
  %0 = prim.window_argmax %x, window [20, 20], strides [20, 20], padding [0, 0], dilation [1, 1] : tensor<1x40x40xf32> -> tensor<1x2x2xi8>
  return %0 : tensor<1x2x2xi8>
}

// -----

func.func @window_attributes(%x: tensor<1x8x8xf32>) -> tensor<1x4x4xi8> {
  // expected-error @+1 {{'prim.window_argmax' op needs window, strides, padding and dilation of one non-zero length}}
  %0 = prim.window_argmax %x, window [2, 2], strides [2], padding [0, 0], dilation [1, 1] : tensor<1x8x8xf32> -> tensor<1x4x4xi8>
  return %0 : tensor<1x4x4xi8>
}

// -----

func.func @window_rank(%x: tensor<8x8xf32>) -> tensor<1x4x4xi8> {
  // expected-error @+1 {{'prim.window_argmax' op needs input 'tensor<8x8xf32>' and output 'tensor<1x4x4xi8>' of one rank, at least 2}}
  %0 = prim.window_argmax %x, window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<8x8xf32> -> tensor<1x4x4xi8>
  return %0 : tensor<1x4x4xi8>
}

// -----

func.func @window_gather_positions(%x: tensor<1x8x8xf32>, %k: tensor<1x4x3xi8>) -> tensor<1x4x4xf32> {
  // expected-error @+1 {{'prim.window_gather' op positions 'tensor<1x4x3xi8>' do not have the windows' shape 'tensor<1x4x4xf32>'}}
  %0 = prim.window_gather %x[%k], window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x8x8xf32>, tensor<1x4x3xi8> -> tensor<1x4x4xf32>
  return %0 : tensor<1x4x4xf32>
}

// -----

func.func @window_scatter_type(%g: tensor<1x4x4xf32>, %k: tensor<1x4x4xi8>) -> tensor<2x8x8xf32> {
  // expected-error @+1 {{'prim.window_scatter' op output 'tensor<1x4x4xf32>' does not match input 'tensor<2x8x8xf32>' in dimension 0}}
  %0 = prim.window_scatter %g[%k], window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x4x4xf32>, tensor<1x4x4xi8> -> tensor<2x8x8xf32>
  return %0 : tensor<2x8x8xf32>
}

// -----

func.func @bitcast_width(%x: tensor<4xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{'prim.bitcast' op reinterprets 'f32' as 'i64': widths must match, and neither be i1 or unsigned}}
  %0 = prim.bitcast %x to i64 : tensor<4xf32>
  return %0 : tensor<4xi64>
}

// -----

func.func @scatter_add_indices_rank(%u: tensor<6x8xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{needs 1-d indices, not 'tensor<2x3xi64>'}}
  %0 = prim.scatter_add %u[%i] : tensor<6x8xf32>, tensor<2x3xi64> -> tensor<10x8xf32>
  return
}

// -----

func.func @scatter_add_rows(%u: tensor<6x8xf32>, %i: tensor<5xi64>) {
  // expected-error @+1 {{needs a row of updates per index}}
  %0 = prim.scatter_add %u[%i] : tensor<6x8xf32>, tensor<5xi64> -> tensor<10x8xf32>
  return
}

// -----

func.func @scatter_add_result(%u: tensor<6x8xf32>, %i: tensor<6xi64>) {
  // expected-error @+1 {{must be the updates' rows}}
  %0 = prim.scatter_add %u[%i] : tensor<6x8xf32>, tensor<6xi64> -> tensor<10x4xf32>
  return
}
