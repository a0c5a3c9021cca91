// RUN: tc-opt %s --tc-split-training-pipeline | FileCheck %s
// RUN: tc-opt %s --tc-split-training-pipeline --tc-cpu-pipeline | FileCheck %s --check-prefix=COMPILED

// What the backend runs first on a training graph: the fx graph of a
// linear layer and ReLU, differentiated for the weight and split. The
// forward keeps the ReLU's mask (1 byte per element) for the backward,
// not the float product; x is saved by reference (the Python side keeps
// the input itself). The forward's argument no longer carries the mark, so
// compiling it does not differentiate it again.
// CHECK-LABEL: func.func @linear_relu_forward
// CHECK-SAME: (%[[X:[a-z0-9]*]]: tensor<8x4xf32>, %{{[a-z0-9]*}}: tensor<3x4xf32> {fx.name = "w"}) -> (tensor<8x3xf32>, tensor<8x4xf32>, tensor<8x3xi1>)
// CHECK-NOT: tc.requires_grad
// CHECK: prim.dot
// CHECK: %[[MASK:.*]] = prim.compare le
// CHECK: return %{{.*}}, %[[X]], %[[MASK]]
// CHECK-LABEL: func.func @linear_relu_backward
// CHECK-SAME: (%{{[a-z0-9]*}}: tensor<8x4xf32>, %[[SMASK:[a-z0-9]*]]: tensor<8x3xi1>, %[[G:[a-z0-9]*]]: tensor<8x3xf32>) -> tensor<3x4xf32>
// CHECK: prim.where %[[SMASK]], %{{.*}}, %[[G]]
// CHECK: prim.dot
// CHECK: return

// Both halves compile through the CPU pipeline.
// COMPILED-DAG: kernel.schedule @linear_relu_forward
// COMPILED-DAG: kernel.schedule @linear_relu_backward
fx.graph @linear_relu(%x: tensor<8x4xf32>, %w: tensor<3x4xf32> {fx.name = "w", tc.requires_grad}) -> tensor<8x3xf32> {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %mm = fx.call_function "aten::mm"(%x, %t) : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %r = fx.call_function "aten::relu"(%mm) : (tensor<8x3xf32>) -> tensor<8x3xf32>
  fx.output %r : tensor<8x3xf32>
}
