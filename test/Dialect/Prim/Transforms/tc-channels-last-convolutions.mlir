// RUN: tc-opt %s -tc-channels-last-convolutions -cse -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-channels-last-convolutions=all-floats -cse -split-input-file | FileCheck %s --check-prefix=ALL
// RUN: tc-opt %s -tc-channels-last-convolutions="all-floats small-maps-first" -cse -split-input-file | FileCheck %s --check-prefix=SMALL

// A stem: convolution, batch norm's scale (a per-channel broadcast), ReLU
// (a splat), max pooling, a 1x1 convolution, a residual add and a global
// sum. Everything between the input's permute and the sum runs
// channels-last: no permute back to channels-first is left.
// CHECK-LABEL: func.func @stem
// CHECK-DAG: %[[ZERO:.*]] = prim.constant dense<0.000000e+00> : tensor<2x8x6x8xbf16>
// CHECK-DAG: %[[X:.*]] = prim.permute %arg0, [0, 2, 3, 1] : tensor<2x3x16x12xbf16>
// CHECK-DAG: %[[W:.*]] = prim.permute %arg1, [0, 2, 3, 1] : tensor<8x3x3x3xbf16>
// CHECK: %[[Y:.*]] = prim.convolution %[[X]], %[[W]], stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 channels_last : tensor<2x16x12x3xbf16>, tensor<8x3x3x3xbf16>
// CHECK: %[[S:.*]] = prim.broadcast_in_dim %arg2, shape [2, 8, 6, 8], dims [3] : tensor<8xbf16>
// CHECK: %[[M:.*]] = prim.mul %[[Y]], %[[S]] : tensor<2x8x6x8xbf16>
// CHECK: %[[R:.*]] = prim.maximum %[[M]], %[[ZERO]] : tensor<2x8x6x8xbf16>
// CHECK: %[[K:.*]] = prim.window_argmax %[[R]], window [1, 3, 3, 1], strides [1, 2, 2, 1], padding [0, 1, 1, 0], dilation [1, 1, 1, 1] : tensor<2x8x6x8xbf16> -> tensor<2x4x3x8xi8>
// CHECK: %[[P:.*]] = prim.window_gather %[[R]][%[[K]]], window [1, 3, 3, 1], strides [1, 2, 2, 1], padding [0, 1, 1, 0], dilation [1, 1, 1, 1] : tensor<2x8x6x8xbf16>, tensor<2x4x3x8xi8> -> tensor<2x4x3x8xbf16>
// CHECK: %[[W2:.*]] = prim.permute %arg3, [0, 2, 3, 1] : tensor<8x8x1x1xbf16>
// CHECK: %[[C:.*]] = prim.convolution %[[P]], %[[W2]], {{.*}} channels_last : tensor<2x4x3x8xbf16>, tensor<8x1x1x8xbf16>
// CHECK: %[[A:.*]] = prim.add %[[C]], %[[P]] : tensor<2x4x3x8xbf16>
// CHECK: %[[O:.*]] = prim.reduce sum %[[A]], dims [1, 2] : tensor<2x4x3x8xbf16>
// CHECK-NOT: prim.permute
// CHECK: return %[[O]]
func.func @stem(%x: tensor<2x3x16x12xbf16>, %w1: tensor<8x3x3x3xbf16>, %s: tensor<8xbf16>, %w2: tensor<8x8x1x1xbf16>) -> tensor<2x8xbf16> {
  %y = prim.convolution %x, %w1, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x3x16x12xbf16>, tensor<8x3x3x3xbf16>
  %sb = prim.broadcast_in_dim %s, shape [2, 8, 8, 6], dims [1] : tensor<8xbf16>
  %m = prim.mul %y, %sb : tensor<2x8x8x6xbf16>
  %z = prim.constant dense<0.0> : tensor<2x8x8x6xbf16>
  %r = prim.maximum %m, %z : tensor<2x8x8x6xbf16>
  %k = prim.window_argmax %r, window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<2x8x8x6xbf16> -> tensor<2x8x4x3xi8>
  %p = prim.window_gather %r[%k], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<2x8x8x6xbf16>, tensor<2x8x4x3xi8> -> tensor<2x8x4x3xbf16>
  %c = prim.convolution %p, %w2, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x4x3xbf16>, tensor<8x8x1x1xbf16>
  %a = prim.add %c, %p : tensor<2x8x4x3xbf16>
  %o = prim.reduce sum %a, dims [2, 3] : tensor<2x8x4x3xbf16>
  return %o : tensor<2x8xbf16>
}

// -----

// A returned activation goes back to channels-first once, at the end; an
// operand that is neither channels-last nor a broadcast (%b) stops the
// permute where it is.
// CHECK-LABEL: func.func @edges
// CHECK: %[[Y:.*]] = prim.convolution {{.*}} channels_last
// CHECK: %[[T:.*]] = prim.tanh %[[Y]] : tensor<1x5x7x4xf16>
// CHECK: %[[F:.*]] = prim.permute %[[T]], [0, 3, 1, 2] : tensor<1x5x7x4xf16>
// CHECK: %[[A:.*]] = prim.add %[[F]], %arg2 : tensor<1x4x5x7xf16>
// CHECK: return %[[F]], %[[A]]
func.func @edges(%x: tensor<1x2x5x7xf16>, %w: tensor<4x2x1x1xf16>, %b: tensor<1x4x5x7xf16>) -> (tensor<1x4x5x7xf16>, tensor<1x4x5x7xf16>) {
  %y = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x2x5x7xf16>, tensor<4x2x1x1xf16>
  %t = prim.tanh %y : tensor<1x4x5x7xf16>
  %a = prim.add %t, %b : tensor<1x4x5x7xf16>
  return %t, %a : tensor<1x4x5x7xf16>, tensor<1x4x5x7xf16>
}

// -----

// The gradients: all three tensors channels-last; batch norm's
// per-channel sum of the cotangent reduces the channels-last tensor.
// CHECK-LABEL: func.func @gradients
// CHECK: %[[DY:.*]] = prim.permute %arg0, [0, 2, 3, 1] : tensor<2x6x4x3xbf16>
// CHECK: %[[DX:.*]] = prim.convolution_backward_input %[[DY]], %{{.*}}, {{.*}} channels_last : tensor<2x4x3x6xbf16>, tensor<6x3x3x5xbf16> -> tensor<2x8x6x5xbf16>
// CHECK: %[[DW:.*]] = prim.convolution_backward_weight %[[DY]], %{{.*}}, {{.*}} channels_last : tensor<2x4x3x6xbf16>, tensor<2x8x6x5xbf16> -> tensor<6x3x3x5xbf16>
// CHECK-DAG: prim.permute %[[DW]], [0, 3, 1, 2] : tensor<6x3x3x5xbf16>
// CHECK-DAG: prim.reduce sum %[[DX]], dims [0, 1, 2] : tensor<2x8x6x5xbf16>
func.func @gradients(%dy: tensor<2x6x4x3xbf16>, %w: tensor<6x5x3x3xbf16>, %x: tensor<2x5x8x6xbf16>) -> (tensor<5xbf16>, tensor<6x5x3x3xbf16>) {
  %dx = prim.convolution_backward_input %dy, %w, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x6x4x3xbf16>, tensor<6x5x3x3xbf16> -> tensor<2x5x8x6xbf16>
  %dw = prim.convolution_backward_weight %dy, %x, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x6x4x3xbf16>, tensor<2x5x8x6xbf16> -> tensor<6x5x3x3xbf16>
  %s = prim.reduce sum %dx, dims [0, 2, 3] : tensor<2x5x8x6xbf16>
  return %s, %dw : tensor<5xbf16>, tensor<6x5x3x3xbf16>
}

// -----

// f32 convolutions keep PyTorch's layout (cuDNN's f32 kernels gain
// nothing), unless all-floats asks; 1-d and 3-d ones keep it always.
// CHECK-LABEL: func.func @other_types
// CHECK-NOT: channels_last
// ALL-LABEL: func.func @other_types
// ALL: prim.convolution {{.*}} channels_last : tensor<1x5x7x2xf32>, tensor<4x1x1x2xf32>
// ALL-NOT: channels_last
func.func @other_types(%x: tensor<1x2x5x7xf32>, %w: tensor<4x2x1x1xf32>, %x1: tensor<1x2x9xbf16>, %w1: tensor<4x2x3xbf16>) -> (tensor<1x4x5x7xf32>, tensor<1x4x7xbf16>) {
  %y = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x2x5x7xf32>, tensor<4x2x1x1xf32>
  %y1 = prim.convolution %x1, %w1, stride [1], padding [0], dilation [1], groups 1 : tensor<1x2x9xbf16>, tensor<4x2x3xbf16>
  return %y, %y1 : tensor<1x4x5x7xf32>, tensor<1x4x7xbf16>
}

// -----

// ReLU's gradient as AOTAutograd writes it (a comparison and a select) and
// a widening: ops with attributes keep them.
// CHECK-LABEL: func.func @attributes
// ALL-LABEL: func.func @attributes
// CHECK: %[[Y:.*]] = prim.convolution {{.*}} channels_last
// CHECK: %[[M:.*]] = prim.compare le, %[[Y]], %{{.*}} : tensor<2x5x7x4xbf16>
// CHECK: %[[S:.*]] = prim.where %[[M]], %{{.*}}, %[[Y]] : tensor<2x5x7x4xi1>, tensor<2x5x7x4xbf16>
// CHECK: %[[F:.*]] = prim.convert %[[S]] to f32 : tensor<2x5x7x4xbf16>
// CHECK: prim.reduce sum %[[F]], dims [0, 1, 2] : tensor<2x5x7x4xf32>
func.func @attributes(%x: tensor<2x3x5x7xbf16>, %w: tensor<4x3x1x1xbf16>) -> tensor<4xf32> {
  %y = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x3x5x7xbf16>, tensor<4x3x1x1xbf16>
  %z = prim.constant dense<0.0> : tensor<2x4x5x7xbf16>
  %m = prim.compare le, %y, %z : tensor<2x4x5x7xbf16>
  %s = prim.where %m, %z, %y : tensor<2x4x5x7xi1>, tensor<2x4x5x7xbf16>
  %f = prim.convert %s to f32 : tensor<2x4x5x7xbf16>
  %r = prim.reduce sum %f, dims [0, 2, 3] : tensor<2x4x5x7xf32>
  return %r : tensor<4xf32>
}

// -----

// A depthwise convolution (one channel per group) runs channels-last like
// the others: its weight as (C, kh, kw, 1), one permute at each edge.
// CHECK-LABEL: func.func @depthwise
// CHECK: %[[X:.*]] = prim.permute %arg0, [0, 2, 3, 1]
// CHECK: %[[W:.*]] = prim.permute %arg1, [0, 2, 3, 1]
// CHECK: %[[Y:.*]] = prim.convolution %[[X]], %[[W]], {{.*}} groups 8 channels_last : tensor<2x9x7x8xbf16>, tensor<8x3x3x1xbf16>
// CHECK: prim.convolution %[[Y]], {{.*}} groups 1 channels_last
// CHECK: prim.permute {{.*}}, [0, 3, 1, 2]
// CHECK-NOT: prim.permute
func.func @depthwise(%x: tensor<2x8x9x7xbf16>, %w: tensor<8x1x3x3xbf16>, %p: tensor<16x8x1x1xbf16>) -> tensor<2x16x9x7xbf16> {
  %y = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 8 : tensor<2x8x9x7xbf16>, tensor<8x1x3x3xbf16>
  %z = prim.convolution %y, %p, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x9x7xbf16>, tensor<16x8x1x1xbf16>
  return %z : tensor<2x16x9x7xbf16>
}

// -----

// So do a depthwise convolution's gradients (the backward of a forward
// compiled apart).
// CHECK-LABEL: func.func @depthwise_gradients
// CHECK: prim.convolution_backward_input {{.*}} groups 8 channels_last
// CHECK: prim.convolution_backward_weight {{.*}} groups 8 channels_last
func.func @depthwise_gradients(%dy: tensor<2x8x9x7xbf16>, %w: tensor<8x1x3x3xbf16>, %x: tensor<2x8x9x7xbf16>) -> (tensor<2x8x9x7xbf16>, tensor<8x1x3x3xbf16>) {
  %dx = prim.convolution_backward_input %dy, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 8 : tensor<2x8x9x7xbf16>, tensor<8x1x3x3xbf16> -> tensor<2x8x9x7xbf16>
  %dw = prim.convolution_backward_weight %dy, %x, stride [1, 1], padding [1, 1], dilation [1, 1], groups 8 : tensor<2x8x9x7xbf16>, tensor<2x8x9x7xbf16> -> tensor<8x1x3x3xbf16>
  return %dx, %dw : tensor<2x8x9x7xbf16>, tensor<8x1x3x3xbf16>
}

// -----

// small-maps-first (the CPU's choice): an f32 convolution with 7x7 output
// maps and 4 x 49 = 196 output pixels stays channels-first; one with
// 14x14 maps, and one with 7x7 maps but 16 x 49 = 784 pixels, run
// channels-last. (Without the option all three do.)
// SMALL-LABEL: func.func @small_maps
// SMALL: %[[A:.*]] = prim.convolution %arg0, %arg1, {{.*}} groups 1 : tensor<4x64x7x7xf32>, tensor<64x64x3x3xf32>
// SMALL: prim.permute %arg2, [0, 2, 3, 1] : tensor<4x64x14x14xf32>
// SMALL: prim.convolution {{.*}} channels_last : tensor<4x14x14x64xf32>, tensor<64x1x1x64xf32>
// SMALL: prim.permute %arg3, [0, 2, 3, 1] : tensor<16x64x7x7xf32>
// SMALL: prim.convolution {{.*}} channels_last : tensor<16x7x7x64xf32>, tensor<64x1x1x64xf32>
// ALL-LABEL: func.func @small_maps
// ALL-COUNT-3: channels_last
func.func @small_maps(%x: tensor<4x64x7x7xf32>, %w: tensor<64x64x3x3xf32>, %x2: tensor<4x64x14x14xf32>, %x3: tensor<16x64x7x7xf32>, %w1: tensor<64x64x1x1xf32>) -> (tensor<4x64x7x7xf32>, tensor<4x64x14x14xf32>, tensor<16x64x7x7xf32>) {
  %a = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<4x64x7x7xf32>, tensor<64x64x3x3xf32>
  %b = prim.convolution %x2, %w1, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<4x64x14x14xf32>, tensor<64x64x1x1xf32>
  %c = prim.convolution %x3, %w1, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<16x64x7x7xf32>, tensor<64x64x1x1xf32>
  return %a, %b, %c : tensor<4x64x7x7xf32>, tensor<4x64x14x14xf32>, tensor<16x64x7x7xf32>
}

// -----

// A function with a convolution's gradient (a training graph) keeps its
// small-map convolutions channels-last too.
// SMALL-LABEL: func.func @small_maps_training
// SMALL: prim.convolution {{.*}} channels_last : tensor<4x7x7x64xf32>
// SMALL: prim.convolution_backward_input {{.*}} channels_last
func.func @small_maps_training(%x: tensor<4x64x7x7xf32>, %w: tensor<64x64x3x3xf32>, %g: tensor<4x64x7x7xf32>) -> (tensor<4x64x7x7xf32>, tensor<4x64x7x7xf32>) {
  %a = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<4x64x7x7xf32>, tensor<64x64x3x3xf32>
  %b = prim.convolution_backward_input %g, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<4x64x7x7xf32>, tensor<64x64x3x3xf32> -> tensor<4x64x7x7xf32>
  return %a, %b : tensor<4x64x7x7xf32>, tensor<4x64x7x7xf32>
}

// -----

// Average pooling's pattern (a zero pad, window slices, a divisor that is
// a product of broadcast counts) and a concatenation along the channels
// run channels-last between the convolutions: the only permutes left are
// the input's, the weights' and the result's.
// CHECK-LABEL: func.func @pool_and_concatenate
// CHECK: prim.pad %{{.*}}, low [0, 1, 1, 0], high [0, 1, 1, 0], interior [0, 0, 0, 0], value 0.000000e+00 : tensor<2x5x5x8xbf16>
// CHECK: prim.slice %{{.*}}, start [0, 0, 1, 0], limit [2, 5, 6, 8], strides [1, 1, 1, 1] : tensor<2x7x7x8xbf16>
// CHECK: prim.slice %{{.*}}, start [0, 2, 1, 0], limit [2, 7, 6, 8], strides [1, 1, 1, 1] : tensor<2x7x7x8xbf16>
// CHECK: prim.broadcast_in_dim %{{.*}}, shape [2, 5, 5, 8], dims [1]
// CHECK: prim.broadcast_in_dim %{{.*}}, shape [2, 5, 5, 8], dims [2]
// CHECK: prim.div {{.*}} : tensor<2x5x5x8xbf16>
// CHECK: prim.concatenate {{.*}} dim 3 : tensor<2x5x5x8xbf16>, tensor<2x5x5x8xbf16>
// CHECK: prim.convolution {{.*}} channels_last : tensor<2x5x5x16xbf16>
// CHECK: prim.permute {{.*}}, [0, 3, 1, 2] : tensor<2x5x5x4xbf16>
// CHECK-NOT: prim.permute
func.func @pool_and_concatenate(%x: tensor<2x8x5x5xbf16>, %w: tensor<8x8x1x1xbf16>, %v: tensor<4x16x1x1xbf16>, %n: tensor<5xbf16>) -> tensor<2x4x5x5xbf16> {
  %y = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x5x5xbf16>, tensor<8x8x1x1xbf16>
  %p = prim.pad %y, low [0, 0, 1, 1], high [0, 0, 1, 1], interior [0, 0, 0, 0], value 0.0 : tensor<2x8x5x5xbf16>
  %a = prim.slice %p, start [0, 0, 0, 1], limit [2, 8, 5, 6], strides [1, 1, 1, 1] : tensor<2x8x7x7xbf16>
  %b = prim.slice %p, start [0, 0, 2, 1], limit [2, 8, 7, 6], strides [1, 1, 1, 1] : tensor<2x8x7x7xbf16>
  %s = prim.add %a, %b : tensor<2x8x5x5xbf16>
  %h = prim.broadcast_in_dim %n, shape [2, 8, 5, 5], dims [2] : tensor<5xbf16>
  %k = prim.broadcast_in_dim %n, shape [2, 8, 5, 5], dims [3] : tensor<5xbf16>
  %count = prim.mul %h, %k : tensor<2x8x5x5xbf16>
  %mean = prim.div %s, %count : tensor<2x8x5x5xbf16>
  %cat = prim.concatenate %y, %mean dim 1 : tensor<2x8x5x5xbf16>, tensor<2x8x5x5xbf16>
  %z = prim.convolution %cat, %v, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x16x5x5xbf16>, tensor<4x16x1x1xbf16>
  return %z : tensor<2x4x5x5xbf16>
}

// -----

// A squeeze-and-excitation gate: the pooled activation's 1x1 convolution
// (channels-last, [N, 1, 1, C]) back in [N, C, 1, 1] and expanded in place
// over the maps scales the activation channels-last; the gate's broadcast
// expands the channels-last [N, 1, 1, C] instead: the activation between
// the convolutions is not permuted (only the pooled [N, C, 1, 1] is).
// CHECK-LABEL: func.func @squeeze_excite
// CHECK: %[[Y:.*]] = prim.convolution {{.*}} channels_last : tensor<2x6x6x8xbf16>
// CHECK: %[[G:.*]] = prim.convolution {{.*}} channels_last : tensor<2x1x1x8xbf16>
// CHECK: %[[S:.*]] = prim.tanh %[[G]] : tensor<2x1x1x8xbf16>
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %[[S]], shape [2, 6, 6, 8], dims [0, 1, 2, 3] : tensor<2x1x1x8xbf16>
// CHECK: %[[M:.*]] = prim.mul %[[Y]], %[[B]] : tensor<2x6x6x8xbf16>
// CHECK: prim.convolution %[[M]], {{.*}} channels_last
// CHECK: prim.permute {{.*}}, [0, 3, 1, 2] : tensor<2x6x6x4xbf16>
// CHECK-NOT: prim.permute
func.func @squeeze_excite(%x: tensor<2x8x6x6xbf16>, %w: tensor<8x8x1x1xbf16>, %v: tensor<4x8x1x1xbf16>) -> tensor<2x4x6x6xbf16> {
  %y = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x6x6xbf16>, tensor<8x8x1x1xbf16>
  %s = prim.reduce sum %y, dims [2, 3] : tensor<2x8x6x6xbf16>
  %p = prim.reshape %s, shape [2, 8, 1, 1] : tensor<2x8xbf16>
  %g = prim.convolution %p, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x1x1xbf16>, tensor<8x8x1x1xbf16>
  %e = prim.tanh %g : tensor<2x8x1x1xbf16>
  %b = prim.broadcast_in_dim %e, shape [2, 8, 6, 6], dims [0, 1, 2, 3] : tensor<2x8x1x1xbf16>
  %m = prim.mul %y, %b : tensor<2x8x6x6xbf16>
  %z = prim.convolution %m, %v, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x6x6xbf16>, tensor<4x8x1x1xbf16>
  return %z : tensor<2x4x6x6xbf16>
}

// -----

// So on the CPU (f32), where the gate's 1x1 convolutions stay
// channels-first (1x1 maps): the gate's [N, C, 1, 1] reads the same
// channels-last, a permute of unit dimensions, and the gated activation
// stays channels-last between the convolutions.
// SMALL-LABEL: func.func @squeeze_excite_f32
// SMALL: %[[Y:.*]] = prim.convolution {{.*}} channels_last : tensor<2x8x8x8xf32>
// SMALL: %[[G:.*]] = prim.convolution %{{.*}}, %{{.*}}, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x1x1xf32>
// SMALL: %[[T:.*]] = prim.tanh %[[G]] : tensor<2x8x1x1xf32>
// SMALL: %[[L:.*]] = prim.permute %[[T]], [0, 2, 3, 1] : tensor<2x8x1x1xf32>
// SMALL: %[[B:.*]] = prim.broadcast_in_dim %[[L]], shape [2, 8, 8, 8], dims [0, 1, 2, 3] : tensor<2x1x1x8xf32>
// SMALL: %[[M:.*]] = prim.mul %[[Y]], %[[B]] : tensor<2x8x8x8xf32>
// SMALL: prim.convolution %[[M]], {{.*}} channels_last
func.func @squeeze_excite_f32(%x: tensor<2x8x8x8xf32>, %w: tensor<8x8x1x1xf32>, %v: tensor<4x8x1x1xf32>) -> tensor<2x4x8x8xf32> {
  %y = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x8x8xf32>, tensor<8x8x1x1xf32>
  %s = prim.reduce sum %y, dims [2, 3] : tensor<2x8x8x8xf32>
  %p = prim.reshape %s, shape [2, 8, 1, 1] : tensor<2x8xf32>
  %g = prim.convolution %p, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x1x1xf32>, tensor<8x8x1x1xf32>
  %e = prim.tanh %g : tensor<2x8x1x1xf32>
  %b = prim.broadcast_in_dim %e, shape [2, 8, 8, 8], dims [0, 1, 2, 3] : tensor<2x8x1x1xf32>
  %m = prim.mul %y, %b : tensor<2x8x8x8xf32>
  %z = prim.convolution %m, %v, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x8x8xf32>, tensor<4x8x1x1xf32>
  return %z : tensor<2x4x8x8xf32>
}
