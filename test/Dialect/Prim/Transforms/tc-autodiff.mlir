// RUN: tc-opt %s -tc-autodiff -split-input-file -verify-diagnostics | FileCheck %s

// The joint graph: a cotangent argument per float result, a gradient result
// per marked argument; the chain rule through exp and mul. %y is not marked:
// no gradient for it.
// CHECK-LABEL: func.func @mul_exp
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32> {fx.name = "cotangent_0"}) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[M:.*]] = prim.mul %[[X]], %[[Y]]
// CHECK: %[[E:.*]] = prim.exp %[[M]]
// CHECK: %[[GE:.*]] = prim.mul %[[G]], %[[E]]
// CHECK: %[[GX:.*]] = prim.mul %[[GE]], %[[Y]]
// CHECK: return %[[E]], %[[GX]]
func.func @mul_exp(%x: tensor<4xf32> {tc.requires_grad}, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = prim.mul %x, %y : tensor<4xf32>
  %1 = prim.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A linear layer: the bias gradient sums the broadcast dimension away; the
// weight gradient is x^T g, its operand permuted into a plain matrix
// product (what the GEMM lowering takes).
// CHECK-LABEL: func.func @linear
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x16xf32>, %{{.*}}: tensor<16x4xf32>, %{{.*}}: tensor<4xf32>, %[[G:.*]]: tensor<8x4xf32>
// CHECK: %[[GB:.*]] = prim.reduce sum %[[G]], dims [0] : tensor<8x4xf32>
// CHECK: %[[XT:.*]] = prim.permute %[[X]], [1, 0] : tensor<8x16xf32>
// CHECK: %[[GW:.*]] = prim.dot %[[XT]], %[[G]], batch [] x [], contract [1] x [0] : tensor<16x8xf32>, tensor<8x4xf32>
// CHECK: return %{{.*}}, %[[GW]], %[[GB]] : tensor<8x4xf32>, tensor<16x4xf32>, tensor<4xf32>
func.func @linear(%x: tensor<8x16xf32>, %w: tensor<16x4xf32> {tc.requires_grad}, %b: tensor<4xf32> {tc.requires_grad}) -> tensor<8x4xf32> {
  %0 = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x4xf32>
  %1 = prim.broadcast_in_dim %b, shape [8, 4], dims [1] : tensor<4xf32>
  %2 = prim.add %0, %1 : tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}

// -----

// A max shares the gradient among the elements equal to it.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[MAX:.*]] = prim.reduce max %[[X:.*]], dims [1]
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %[[MAX]], shape [4, 8], dims [0]
// CHECK: %[[EQ:.*]] = prim.compare eq, %[[X]], %[[B]]
// CHECK: %[[MASK:.*]] = prim.convert %[[EQ]] to f32
// CHECK: %[[COUNT:.*]] = prim.reduce sum %[[MASK]], dims [1]
// CHECK: %[[SHARE:.*]] = prim.div %{{.*}}, %[[COUNT]]
// CHECK: %[[SB:.*]] = prim.broadcast_in_dim %[[SHARE]], shape [4, 8], dims [0]
// CHECK: prim.mul %[[SB]], %[[MASK]]
func.func @row_max(%x: tensor<4x8xf32> {tc.requires_grad}) -> tensor<4xf32> {
  %0 = prim.reduce max %x, dims [1] : tensor<4x8xf32>
  return %0 : tensor<4xf32>
}

// -----

// ReLU as a maximum with zero: the gradient is zero where x <= 0 and
// passes elsewhere, NaN included (a tie with the constant gives nothing):
// PyTorch's threshold_backward, one mask.
// CHECK-LABEL: func.func @relu
// CHECK: %[[LE:.*]] = prim.compare le, %[[X:.*]], %[[ZERO:.*]] : tensor<4xf32>
// CHECK: prim.where %[[LE]], %{{.*}}, %arg1 : tensor<4xi1>, tensor<4xf32>
// CHECK-NOT: prim.compare
func.func @relu(%x: tensor<4xf32> {tc.requires_grad}) -> tensor<4xf32> {
  %zero = prim.constant dense<0.0> : tensor<4xf32>
  %0 = prim.maximum %x, %zero : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Integer results take no cotangent; a marked argument no result depends
// on gets zeros.
// CHECK-LABEL: func.func @signature
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4x8xf32> {fx.name = "cotangent_0"}) -> (tensor<4x8xf32>, tensor<4xi64>, tensor<4x8xf32>, tensor<4xf32>)
// CHECK: %[[ZEROS:.*]] = prim.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: return {{.*}}, %[[ZEROS]]
func.func @signature(%x: tensor<4x8xf32> {tc.requires_grad}, %unused: tensor<4xf32> {tc.requires_grad}) -> (tensor<4x8xf32>, tensor<4xi64>) {
  %0 = prim.exp %x : tensor<4x8xf32>
  %1 = prim.arg_reduce argmax %x, dim 1 : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4xi64>
}

// -----

// Without marked arguments there is nothing to do.
// CHECK-LABEL: func.func @inference(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: prim.exp
// CHECK-NEXT: return
func.func @inference(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = prim.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_rule(%x: tensor<4xf32> {tc.requires_grad}) -> tensor<4xf32> {
  // expected-error @+1 {{'prim.floor' op has no gradient rule yet}}
  %0 = prim.floor %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0 is marked tc.requires_grad but 'tensor<4xi64>' has no gradient}}
func.func @integer_argument(%x: tensor<4xi64> {tc.requires_grad}) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// A strided slice's gradient pads the cotangent back into place, the
// stride becoming interior padding; a pad's gradient slices it out.
// CHECK-LABEL: func.func @slice_pad
// CHECK-SAME: (%[[X:.*]]: tensor<4x9xf32>, %[[G:.*]]: tensor<5x5xf32> {fx.name = "cotangent_0"})
// CHECK: %[[S:.*]] = prim.slice %[[X]], start [1, 1], limit [3, 8], strides [1, 3]
// CHECK: %[[P:.*]] = prim.pad %[[S]], low [1, 1], high [2, 1], interior [0, 0], value 0.000000e+00
// CHECK: %[[GS:.*]] = prim.slice %[[G]], start [1, 1], limit [3, 4], strides [1, 1]
// CHECK: %[[GX:.*]] = prim.pad %[[GS]], low [1, 1], high [1, 1], interior [0, 2], value 0.000000e+00
// CHECK: return %[[P]], %[[GX]]
func.func @slice_pad(%x: tensor<4x9xf32> {tc.requires_grad}) -> tensor<5x5xf32> {
  %0 = prim.slice %x, start [1, 1], limit [3, 8], strides [1, 3] : tensor<4x9xf32>
  %1 = prim.pad %0, low [1, 1], high [2, 1], interior [0, 0], value 0.0 : tensor<2x3xf32>
  return %1 : tensor<5x5xf32>
}

// -----

// An embedding lookup: the table's gradient adds the cotangent's rows of
// every position that read a row (repeated indices accumulate): a
// scatter-add of the cotangent's rows, no one-hot matrix. The indices get
// no gradient.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[W:.*]]: tensor<10x8xf32>, %[[I:.*]]: tensor<3x5xi64>, %[[G:.*]]: tensor<3x5x8xf32> {fx.name = "cotangent_0"}) -> (tensor<3x5x8xf32>, tensor<10x8xf32>)
// CHECK: %[[Y:.*]] = prim.gather %[[W]][%[[I]]], dim 0
// CHECK: %[[ROWS:.*]] = prim.reshape %[[G]], shape [15, 8]
// CHECK: %[[FLAT:.*]] = prim.reshape %[[I]], shape [15]
// CHECK-NOT: prim.iota
// CHECK-NOT: prim.dot
// CHECK: %[[GW:.*]] = prim.scatter_add %[[ROWS]][%[[FLAT]]] : tensor<15x8xf32>, tensor<15xi64> -> tensor<10x8xf32>
// CHECK: %[[GW2:.*]] = prim.reshape %[[GW]], shape [10, 8]
// CHECK: return %[[Y]], %[[GW2]]
func.func @embedding(%w: tensor<10x8xf32> {tc.requires_grad}, %i: tensor<3x5xi64>) -> tensor<3x5x8xf32> {
  %0 = prim.gather %w[%i], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
  return %0 : tensor<3x5x8xf32>
}

// -----

// Along an inner dimension the cotangent's index dimension goes first and
// the scattered rows go back to that dimension.
// CHECK-LABEL: func.func @gather_columns
// CHECK: %[[T:.*]] = prim.permute %{{.*}}, [1, 0, 2] : tensor<4x3x2xf32>
// CHECK: %[[ROWS:.*]] = prim.reshape %[[T]], shape [3, 8]
// CHECK: %[[GX:.*]] = prim.scatter_add %[[ROWS]][%{{.*}}] : tensor<3x8xf32>, tensor<3xi32> -> tensor<6x8xf32>
// CHECK: %[[R:.*]] = prim.reshape %[[GX]], shape [6, 4, 2]
// CHECK: %[[B:.*]] = prim.permute %[[R]], [1, 0, 2] : tensor<6x4x2xf32>
// CHECK: return %{{.*}}, %[[B]]
func.func @gather_columns(%x: tensor<4x6x2xf32> {tc.requires_grad}, %i: tensor<3xi32>) -> tensor<4x3x2xf32> {
  %0 = prim.gather %x[%i], dim 1 : tensor<4x6x2xf32>, tensor<3xi32>
  return %0 : tensor<4x3x2xf32>
}

// -----

// One element of each row (nll_loss's pick of each row's class, as
// FXToPrim's aten::gather makes it: linear positions row * 5 + column):
// the gradient is the cotangent where a column is its row's pick, an
// elementwise select, not a scatter-add into a zero-filled tensor.
// CHECK-LABEL: func.func @pick_per_row
// CHECK-SAME: %[[G:[^:]*]]: tensor<4x1xf32> {fx.name = "cotangent_0"}
// CHECK-NOT: prim.scatter_add
// CHECK: %[[COL:.*]] = prim.iota shape [4, 5], dim 1 : i64
// CHECK: %[[HIT:.*]] = prim.compare eq, %[[COL]], %{{.*}} : tensor<4x5xi64>
// CHECK: %[[PICK:.*]] = prim.where %[[HIT]], %{{.*}}, %{{.*}} : tensor<4x5xi1>, tensor<4x5xf32>
// CHECK: %[[GX:.*]] = prim.reshape %[[PICK]], shape [20]
// CHECK: return %{{.*}}, %[[GX]]
func.func @pick_per_row(%x: tensor<20xf32> {tc.requires_grad}, %c: tensor<4x1xi64>) -> tensor<4x1xf32> {
  %w = prim.constant dense<5> : tensor<4x1xi64>
  %r = prim.iota shape [4, 1], dim 0 : i64
  %s = prim.mul %r, %w : tensor<4x1xi64>
  %p = prim.add %c, %s : tensor<4x1xi64>
  %0 = prim.gather %x[%p], dim 0 : tensor<20xf32>, tensor<4x1xi64>
  return %0 : tensor<4x1xf32>
}

// -----

// A stride other than the rows' width is a general gather: a scatter-add.
// CHECK-LABEL: func.func @pick_at_other_stride
// CHECK: prim.scatter_add
func.func @pick_at_other_stride(%x: tensor<20xf32> {tc.requires_grad}, %c: tensor<4x1xi64>) -> tensor<4x1xf32> {
  %w = prim.constant dense<4> : tensor<4x1xi64>
  %r = prim.iota shape [4, 1], dim 0 : i64
  %s = prim.mul %r, %w : tensor<4x1xi64>
  %p = prim.add %c, %s : tensor<4x1xi64>
  %0 = prim.gather %x[%p], dim 0 : tensor<20xf32>, tensor<4x1xi64>
  return %0 : tensor<4x1xf32>
}

// -----

// An op marked prim.stop_gradient (softmax's stabilizing max) is a
// constant to the backward: no gradient through the max's extremes.
// CHECK-LABEL: func.func @stop_gradient
// CHECK-SAME: %[[G:[^:]*]]: tensor<2x3xf32> {fx.name = "cotangent_0"}
// CHECK-NOT: prim.compare
// CHECK: return %{{.*}}, %[[G]]
func.func @stop_gradient(%x: tensor<2x3xf32> {tc.requires_grad}) -> tensor<2x3xf32> {
  %m = prim.reduce max %x, dims [1] {prim.stop_gradient} : tensor<2x3xf32>
  %b = prim.broadcast_in_dim %m, shape [2, 3], dims [0] : tensor<2xf32>
  %y = prim.sub %x, %b : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Dropout: random numbers and the mask they make carry no gradient; the
// backward multiplies by the forward's mask and scale (the same values:
// the joint graph computes them once, from the same seed).
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: %[[G:[^:]*]]: tensor<16xf32> {fx.name = "cotangent_0"}
// CHECK: %[[U:.*]] = prim.random uniform
// CHECK: %[[M:.*]] = prim.compare lt, %[[U]]
// CHECK: %[[MF:.*]] = prim.convert %[[M]] to f32
// CHECK: %[[S:.*]] = prim.constant dense<2.000000e+00>
// CHECK: %[[GS:.*]] = prim.mul %[[G]], %[[S]]
// CHECK: %[[GX:.*]] = prim.mul %[[GS]], %[[MF]]
// CHECK-NOT: prim.random
// CHECK: return %{{.*}}, %[[GX]]
func.func @dropout(%x: tensor<16xf32> {tc.requires_grad}, %seed: tensor<i64>) -> tensor<16xf32> {
  %o = prim.constant dense<0> : tensor<i64>
  %u = prim.random uniform %seed, %o, shape [16] : f32
  %k = prim.constant dense<0.5> : tensor<16xf32>
  %m = prim.compare lt, %u, %k : tensor<16xf32>
  %mf = prim.convert %m to f32 : tensor<16xi1>
  %mx = prim.mul %mf, %x : tensor<16xf32>
  %s = prim.constant dense<2.0> : tensor<16xf32>
  %y = prim.mul %mx, %s : tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// A convolution's gradients are its two gradient ops, with its window:
// the input's from the cotangent and the weight, the weight's from the
// cotangent and the input.
// CHECK-LABEL: func.func @convolution
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x7x7xf32>, %[[W:[^:]*]]: tensor<4x3x3x3xf32>, %[[G:[^:]*]]: tensor<2x4x3x3xf32> {fx.name = "cotangent_0"}
// CHECK: %[[Y:.*]] = prim.convolution %[[X]], %[[W]], stride [2, 2], padding [0, 0], dilation [1, 1], groups 1
// CHECK-DAG: %[[GX:.*]] = prim.convolution_backward_input %[[G]], %[[W]], stride [2, 2], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x4x3x3xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x7x7xf32>
// CHECK-DAG: %[[GW:.*]] = prim.convolution_backward_weight %[[G]], %[[X]], stride [2, 2], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x4x3x3xf32>, tensor<2x3x7x7xf32> -> tensor<4x3x3x3xf32>
// CHECK: return %[[Y]], %[[GX]], %[[GW]]
func.func @convolution(%x: tensor<2x3x7x7xf32> {tc.requires_grad}, %w: tensor<4x3x3x3xf32> {tc.requires_grad}) -> tensor<2x4x3x3xf32> {
  %0 = prim.convolution %x, %w, stride [2, 2], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

// Only what is marked gets a gradient: the weight's alone here.
// CHECK-LABEL: func.func @convolution_weight_only
// CHECK-NOT: prim.convolution_backward_input
// CHECK: prim.convolution_backward_weight
func.func @convolution_weight_only(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32> {tc.requires_grad}) -> tensor<1x2x4x4xf32> {
  %0 = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// The window ops are each other's transpose: a scatter's gradient gathers
// the cotangent at the same positions (max pooling's double backward). The
// positions get no gradient.
// CHECK-LABEL: func.func @window_scatter
// CHECK-SAME: (%[[S:.*]]: tensor<1x4x4xf32>, %[[K:.*]]: tensor<1x4x4xi8>, %[[G:.*]]: tensor<1x8x8xf32> {fx.name = "cotangent_0"})
// CHECK: %[[DS:.*]] = prim.window_gather %[[G]][%[[K]]], window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x8x8xf32>, tensor<1x4x4xi8> -> tensor<1x4x4xf32>
// CHECK: return %{{.*}}, %[[DS]]
func.func @window_scatter(%s: tensor<1x4x4xf32> {tc.requires_grad}, %k: tensor<1x4x4xi8>) -> tensor<1x8x8xf32> {
  %0 = prim.window_scatter %s[%k], window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x4x4xf32>, tensor<1x4x4xi8> -> tensor<1x8x8xf32>
  return %0 : tensor<1x8x8xf32>
}
