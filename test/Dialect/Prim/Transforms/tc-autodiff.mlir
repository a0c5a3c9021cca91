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

// ReLU as a maximum with zero: the gradient passes where x > 0 (a tie with
// the constant gives nothing, as PyTorch's ReLU).
// CHECK-LABEL: func.func @relu
// CHECK: %[[GT:.*]] = prim.compare gt, %[[X:.*]], %[[ZERO:.*]] : tensor<4xf32>
// CHECK: prim.where %[[GT]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>
// CHECK-NOT: prim.compare eq
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
