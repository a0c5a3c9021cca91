// REQUIRES: libdevice
// RUN: tc-opt %s --tc-split-training-pipeline="expand-convolutions=false" | FileCheck %s --check-prefix=SPLIT
// RUN: tc-opt %s --tc-split-training-pipeline="expand-convolutions=false" --tc-cuda-pipeline="format=isa expand-convolutions=false" | FileCheck %s
// RUN: tc-opt %s --tc-split-training-pipeline | FileCheck %s --check-prefix=EXPANDED

// A convolution and ReLU, trained, where the target keeps convolutions
// (cuDNN): the joint graph differentiates prim.convolution into its two
// gradient ops, tc-partition saves the convolution's input and the ReLU's
// mask, and the CUDA pipeline makes three library calls of them around
// the fused kernels.
// SPLIT-LABEL: func.func @conv_relu_forward
// SPLIT: prim.convolution
// SPLIT-LABEL: func.func @conv_relu_backward
// SPLIT-DAG: prim.convolution_backward_input
// SPLIT-DAG: prim.convolution_backward_weight

// CHECK-LABEL: kernel.schedule @conv_relu_forward
// CHECK: kernel.conv forward
// CHECK: kernel.launch @tc_kernels::@conv_relu_forward_fused
// CHECK-LABEL: kernel.schedule @conv_relu_backward
// CHECK: kernel.launch @tc_kernels::@conv_relu_backward_fused
// CHECK-DAG: kernel.conv backward_input
// CHECK-DAG: kernel.conv backward_weight

// By default (the CPU, ROCm) the convolution is a matrix product of
// windows before differentiation.
// EXPANDED-NOT: prim.convolution
// EXPANDED: prim.dot
fx.graph @conv_relu(%x: tensor<2x3x8x8xf32> {tc.requires_grad}, %w: tensor<4x3x3x3xf32> {fx.name = "w", tc.requires_grad}) -> tensor<2x4x8x8xf32> {
  %c = fx.call_function "aten::convolution"(%x, %w) {args = {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, transposed = false, output_padding = array<i64: 0, 0>, groups = 1 : i64}} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %r = fx.call_function "aten::relu"(%c) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  fx.output %r : tensor<2x4x8x8xf32>
}
