// RUN: tc-opt %s -tc-widen-half-products | FileCheck %s
// RUN: tc-opt %s '-tc-widen-half-products=convolutions=false' | FileCheck %s --check-prefix=HALF

// A bf16 product (bf16 autocast's linear layer) as an f32 product of the
// widened operands, rounded to bf16 once; f16 the same; f32 unchanged.
// CHECK-LABEL: func.func @products
// CHECK: %[[A:.*]] = prim.convert %arg0 to f32 : tensor<8x16xbf16>
// CHECK: %[[B:.*]] = prim.convert %arg1 to f32 : tensor<16x4xbf16>
// CHECK: %[[P:.*]] = prim.dot %[[A]], %[[B]], batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x4xf32>
// CHECK: %[[R:.*]] = prim.convert %[[P]] to bf16 : tensor<8x4xf32>
// CHECK: %[[HA:.*]] = prim.convert %arg2 to f32 : tensor<2x3x5xf16>
// CHECK: %[[HB:.*]] = prim.convert %arg3 to f32 : tensor<2x5x7xf16>
// CHECK: %[[HP:.*]] = prim.dot %[[HA]], %[[HB]], batch [0] x [0], contract [2] x [1]
// CHECK: %[[H:.*]] = prim.convert %[[HP]] to f16 : tensor<2x3x7xf32>
// CHECK: %[[F:.*]] = prim.dot %arg4, %arg5
// CHECK: return %[[R]], %[[H]], %[[F]]
func.func @products(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %ha: tensor<2x3x5xf16>, %hb: tensor<2x5x7xf16>, %fa: tensor<2x2xf32>, %fb: tensor<2x2xf32>) -> (tensor<8x4xbf16>, tensor<2x3x7xf16>, tensor<2x2xf32>) {
  %0 = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<8x16xbf16>, tensor<16x4xbf16>
  %1 = prim.dot %ha, %hb, batch [0] x [0], contract [2] x [1] : tensor<2x3x5xf16>, tensor<2x5x7xf16>
  %2 = prim.dot %fa, %fb, batch [] x [], contract [1] x [0] : tensor<2x2xf32>, tensor<2x2xf32>
  return %0, %1, %2 : tensor<8x4xbf16>, tensor<2x3x7xf16>, tensor<2x2xf32>
}

// A transposed weight (a linear layer's) is widened where it is stored and
// transposed after: the GEMM reads the transpose with its flag, where a
// conversion of the transpose was a strided copy.
// CHECK-LABEL: func.func @transposed_weight
// CHECK: %[[X:.*]] = prim.convert %arg0 to f32 : tensor<8x16xbf16>
// CHECK: %[[W:.*]] = prim.convert %arg1 to f32 : tensor<4x16xbf16>
// CHECK: %[[T:.*]] = prim.permute %[[W]], [1, 0] : tensor<4x16xf32>
// CHECK: prim.dot %[[X]], %[[T]], batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x4xf32>
func.func @transposed_weight(%x: tensor<8x16xbf16>, %w: tensor<4x16xbf16>) -> tensor<8x4xbf16> {
  %t = prim.permute %w, [1, 0] : tensor<4x16xbf16>
  %0 = prim.dot %x, %t, batch [] x [], contract [1] x [0] : tensor<8x16xbf16>, tensor<16x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// A bias added to a widened product, through the layout ops of an expanded
// convolution: the add in f32 and one rounding, as eager's epilogue (the
// product rounded, then the sum, was 1 ulp off in f16).
// CHECK-LABEL: func.func @bias
// CHECK: %[[P:.*]] = prim.dot %{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<4x2xf32>
// CHECK: %[[R:.*]] = prim.reshape %[[P]], shape [1, 2, 3, 2] : tensor<6x2xf32>
// CHECK: %[[T:.*]] = prim.permute %[[R]], [0, 3, 1, 2] : tensor<1x2x3x2xf32>
// CHECK: %[[B:.*]] = prim.convert %{{.*}} to f32 : tensor<1x2x2x3xf16>
// CHECK: %[[S:.*]] = prim.add %[[T]], %[[B]] : tensor<1x2x2x3xf32>
// CHECK: prim.convert %[[S]] to f16 : tensor<1x2x2x3xf32>
// A half add whose operands are no product stays half.
// CHECK-LABEL: func.func @plain_add
// CHECK: prim.add %arg0, %arg1 : tensor<4xf16>
func.func @bias(%a: tensor<6x4xf16>, %w: tensor<4x2xf16>, %b: tensor<2xf16>) -> tensor<1x2x2x3xf16> {
  %p = prim.dot %a, %w, batch [] x [], contract [1] x [0] : tensor<6x4xf16>, tensor<4x2xf16>
  %r = prim.reshape %p, shape [1, 2, 3, 2] : tensor<6x2xf16>
  %t = prim.permute %r, [0, 3, 1, 2] : tensor<1x2x3x2xf16>
  %bb = prim.broadcast_in_dim %b, shape [1, 2, 2, 3], dims [1] : tensor<2xf16>
  %s = prim.add %t, %bb : tensor<1x2x2x3xf16>
  return %s : tensor<1x2x2x3xf16>
}
func.func @plain_add(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %s = prim.add %a, %b : tensor<4xf16>
  return %s : tensor<4xf16>
}

// A bf16 library convolution with a bias (the CPU's call of PyTorch's
// kernel): the convolution on f32 operands, the bias added in f32, one
// rounding; its gradients widen too.
// CHECK-LABEL: func.func @convolutions
// CHECK-DAG: %[[X:.*]] = prim.convert %arg0 to f32 : tensor<1x3x8x8xbf16>
// CHECK-DAG: %[[W:.*]] = prim.convert %arg1 to f32 : tensor<4x3x3x3xbf16>
// CHECK: %[[C:.*]] = prim.convolution %[[X]], %[[W]], stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
// CHECK: %[[S:.*]] = prim.add %[[C]], %{{.*}} : tensor<1x4x8x8xf32>
// CHECK: %[[Y:.*]] = prim.convert %[[S]] to bf16 : tensor<1x4x8x8xf32>
// CHECK: %[[DX:.*]] = prim.convolution_backward_input %{{.*}}, %{{.*}}, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x3x8x8xf32>
// CHECK: %[[GX:.*]] = prim.convert %[[DX]] to bf16
// CHECK: %[[DW:.*]] = prim.convolution_backward_weight %{{.*}}, %{{.*}}, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x4x8x8xf32>, tensor<1x3x8x8xf32> -> tensor<4x3x3x3xf32>
// CHECK: %[[GW:.*]] = prim.convert %[[DW]] to bf16
// CHECK: return %[[Y]], %[[GX]], %[[GW]]
// With convolutions=false (a convolution library that computes bf16
// itself: the CPU's oneDNN through PyTorch) the gradients keep bf16, and
// so does a convolution without a bias (@unbiased); the biased one still
// widens, for one rounding after its bias. Products still widen.
// HALF-LABEL: func.func @products
// HALF: prim.dot %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32>
// HALF-LABEL: func.func @convolutions
// HALF: prim.convolution %{{.*}}, %{{.*}} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
// HALF: prim.add %{{.*}}, %{{.*}} : tensor<1x4x8x8xf32>
// HALF: prim.convolution_backward_input %arg3, %arg1, {{.*}} : tensor<1x4x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<1x3x8x8xbf16>
// HALF: prim.convolution_backward_weight %arg3, %arg0, {{.*}} : tensor<1x4x8x8xbf16>, tensor<1x3x8x8xbf16> -> tensor<4x3x3x3xbf16>
// HALF-LABEL: func.func @unbiased
// HALF-NOT: prim.convert
// HALF: prim.convolution %arg0, %arg1, {{.*}} : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>
// HALF-NOT: prim.convert
// HALF: return
func.func @convolutions(%x: tensor<1x3x8x8xbf16>, %w: tensor<4x3x3x3xbf16>, %b: tensor<4xbf16>, %dy: tensor<1x4x8x8xbf16>) -> (tensor<1x4x8x8xbf16>, tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>) {
  %c = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>
  %bb = prim.broadcast_in_dim %b, shape [1, 4, 8, 8], dims [1] : tensor<4xbf16>
  %y = prim.add %c, %bb : tensor<1x4x8x8xbf16>
  %dx = prim.convolution_backward_input %dy, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x4x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<1x3x8x8xbf16>
  %dw = prim.convolution_backward_weight %dy, %x, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x4x8x8xbf16>, tensor<1x3x8x8xbf16> -> tensor<4x3x3x3xbf16>
  return %y, %dx, %dw : tensor<1x4x8x8xbf16>, tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>
}

// CHECK-LABEL: func.func @unbiased
// CHECK: prim.convolution %{{.*}}, %{{.*}} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>
func.func @unbiased(%x: tensor<1x3x8x8xbf16>, %w: tensor<4x3x3x3xbf16>) -> tensor<1x4x8x8xbf16> {
  %c = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>
  %r = prim.maximum %c, %c : tensor<1x4x8x8xbf16>
  return %r : tensor<1x4x8x8xbf16>
}
