// RUN: tc-opt %s --allow-unregistered-dialect | tc-opt --allow-unregistered-dialect | FileCheck %s
// RUN: tc-opt %s --allow-unregistered-dialect --mlir-print-op-generic | tc-opt --allow-unregistered-dialect | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %i: tensor<4x8xi64>) -> tensor<4x8xf32> {
  // CHECK: prim.sin %{{.*}} : tensor<4x8xf32>
  %0 = prim.sin %a : tensor<4x8xf32>
  // CHECK: prim.tanh
  %1 = prim.tanh %0 : tensor<4x8xf32>
  // CHECK: prim.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %2 = prim.add %1, %b : tensor<4x8xf32>
  // CHECK: prim.pow
  %3 = prim.pow %2, %b : tensor<4x8xf32>
  // CHECK: prim.bitwise_and %{{.*}}, %{{.*}} : tensor<4x8xi64>
  %4 = prim.bitwise_and %i, %i : tensor<4x8xi64>
  // CHECK: %[[M:.*]] = prim.compare lt, %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %m = prim.compare lt, %3, %a : tensor<4x8xf32>
  // CHECK: prim.where %[[M]], %{{.*}}, %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>
  %5 = prim.where %m, %3, %a : tensor<4x8xi1>, tensor<4x8xf32>
  // CHECK: prim.clamp
  %6 = prim.clamp %5, %a, %b : tensor<4x8xf32>
  // CHECK: prim.convert %{{.*}} to bf16 : tensor<4x8xf32>
  %7 = prim.convert %6 to bf16 : tensor<4x8xf32>
  %8 = prim.convert %7 to f32 : tensor<4x8xbf16>
  return %8 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<3x4xf32>, %v: tensor<4xf32>, %d: tensor<?x4xf32>) {
  // CHECK: prim.broadcast_in_dim %{{.*}}, shape [3, 4], dims [1] : tensor<4xf32>
  %0 = prim.broadcast_in_dim %v, shape [3, 4], dims [1] : tensor<4xf32>
  // CHECK: prim.reshape %{{.*}}, shape [2, 6] : tensor<3x4xf32>
  %1 = prim.reshape %x, shape [2, 6] : tensor<3x4xf32>
  // CHECK: prim.permute %{{.*}}, [1, 0] : tensor<3x4xf32>
  %2 = prim.permute %x, [1, 0] : tensor<3x4xf32>
  // CHECK: prim.permute %{{.*}}, [1, 0] : tensor<?x4xf32>
  %3 = prim.permute %d, [1, 0] : tensor<?x4xf32>
  // CHECK: prim.slice %{{.*}}, start [0, 1], limit [3, 4], strides [1, 2] : tensor<3x4xf32>
  %4 = prim.slice %x, start [0, 1], limit [3, 4], strides [1, 2] : tensor<3x4xf32>
  // CHECK: prim.pad %{{.*}}, low [0, 1], high [1, 0], interior [0, 1], value 0.000000e+00 : tensor<3x4xf32>
  %5 = prim.pad %x, low [0, 1], high [1, 0], interior [0, 1], value 0.0 : tensor<3x4xf32>
  // CHECK: prim.concatenate %{{.*}}, %{{.*}} dim 0 : tensor<3x4xf32>, tensor<?x4xf32>
  %6 = prim.concatenate %x, %d dim 0 : tensor<3x4xf32>, tensor<?x4xf32>
  // The inferred types, checked through uses.
  // CHECK: "test.use"(%{{.*}}) : (tensor<3x4xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<4x?xf32>, tensor<3x2xf32>, tensor<4x8xf32>, tensor<?x4xf32>) -> ()
  "test.use"(%0, %1, %2, %3, %4, %5, %6) : (tensor<3x4xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<4x?xf32>, tensor<3x2xf32>, tensor<4x8xf32>, tensor<?x4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @creation
func.func @creation(%seed: tensor<i64>, %offset: tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<4xf32>) {
  // CHECK: prim.constant dense<1.000000e+00> : tensor<2x3xf32>
  %0 = prim.constant dense<1.0> : tensor<2x3xf32>
  // CHECK: prim.iota shape [2, 3], dim 1 : i64
  %1 = prim.iota shape [2, 3], dim 1 : i64
  // CHECK: prim.random normal %{{.*}}, %{{.*}}, shape [4] : f32
  %2 = prim.random normal %seed, %offset, shape [4] : f32
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xi64>, tensor<4xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x8x16xf32>) -> (tensor<4xf32>, tensor<4x16xf32>, tensor<4x16xi64>) {
  // CHECK: prim.reduce sum %{{.*}}, dims [1, 2] : tensor<4x8x16xf32>
  %0 = prim.reduce sum %x, dims [1, 2] : tensor<4x8x16xf32>
  // CHECK: prim.reduce max %{{.*}}, dims [1] : tensor<4x8x16xf32>
  %1 = prim.reduce max %x, dims [1] : tensor<4x8x16xf32>
  // CHECK: prim.arg_reduce argmin %{{.*}}, dim 1 : tensor<4x8x16xf32>
  %2 = prim.arg_reduce argmin %x, dim 1 : tensor<4x8x16xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4x16xf32>, tensor<4x16xi64>
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %x: tensor<1x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) -> (tensor<2x3x5xf32>, tensor<1x6x4x4xf32>) {
  // CHECK: prim.dot %{{.*}}, %{{.*}}, batch [0] x [0], contract [2] x [1] : tensor<2x3x4xf32>, tensor<2x4x5xf32>
  %0 = prim.dot %a, %b, batch [0] x [0], contract [2] x [1] : tensor<2x3x4xf32>, tensor<2x4x5xf32>
  // CHECK: prim.convolution %{{.*}}, %{{.*}}, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1
  %1 = prim.convolution %x, %w, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 : tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>
  return %0, %1 : tensor<2x3x5xf32>, tensor<1x6x4x4xf32>
}

// CHECK-LABEL: func.func @gather
func.func @gather(%x: tensor<10x8xf32>, %i: tensor<3x5xi64>, %j: tensor<2xi32>) -> (tensor<3x5x8xf32>, tensor<10x2xf32>) {
  // CHECK: prim.gather %{{.*}}[%{{.*}}], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
  %0 = prim.gather %x[%i], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
  // CHECK: prim.gather %{{.*}}[%{{.*}}], dim 1 : tensor<10x8xf32>, tensor<2xi32>
  %1 = prim.gather %x[%j], dim 1 : tensor<10x8xf32>, tensor<2xi32>
  return %0, %1 : tensor<3x5x8xf32>, tensor<10x2xf32>
}

// CHECK-LABEL: func.func @windows
func.func @windows(%x: tensor<1x4x8x8xf32>, %g: tensor<1x4x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>) {
  // CHECK: %[[K:.*]] = prim.window_argmax %{{.*}}, window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xi8>
  %k = prim.window_argmax %x, window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xi8>
  // CHECK: prim.window_gather %{{.*}}[%[[K]]], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x8x8xf32>, tensor<1x4x4x4xi8> -> tensor<1x4x4x4xf32>
  %y = prim.window_gather %x[%k], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x8x8xf32>, tensor<1x4x4x4xi8> -> tensor<1x4x4x4xf32>
  // CHECK: prim.window_scatter %{{.*}}[%[[K]]], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi8> -> tensor<1x4x8x8xf32>
  %dx = prim.window_scatter %g[%k], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi8> -> tensor<1x4x8x8xf32>
  return %y, %dx : tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>
}

// Ceil mode: a last window that starts inside the input (8 + 1 padding
// points, windows of 2 at stride 2: 5 windows, the last one partial).
// CHECK-LABEL: func.func @windows_ceil
func.func @windows_ceil(%x: tensor<2x8xf32>) -> tensor<2x5xi8> {
  // CHECK: prim.window_argmax %{{.*}}, window [2], strides [2], padding [1], dilation [1] : tensor<2x8xf32> -> tensor<2x5xi8>
  %k = prim.window_argmax %x, window [2], strides [2], padding [1], dilation [1] : tensor<2x8xf32> -> tensor<2x5xi8>
  return %k : tensor<2x5xi8>
}

// CHECK-LABEL: func.func @bitcast
// CHECK: prim.bitcast %{{.*}} to i32 : tensor<4xf32>
// CHECK: prim.bitcast %{{.*}} to bf16 : tensor<4xi16>
func.func @bitcast(%x: tensor<4xf32>, %y: tensor<4xi16>) -> (tensor<4xi32>, tensor<4xbf16>) {
  %0 = prim.bitcast %x to i32 : tensor<4xf32>
  %1 = prim.bitcast %y to bf16 : tensor<4xi16>
  return %0, %1 : tensor<4xi32>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @scatter_add
// CHECK: prim.scatter_add %{{.*}}[%{{.*}}] : tensor<6x8xf32>, tensor<6xi64> -> tensor<10x8xf32>
func.func @scatter_add(%u: tensor<6x8xf32>, %i: tensor<6xi64>) -> tensor<10x8xf32> {
  %0 = prim.scatter_add %u[%i] : tensor<6x8xf32>, tensor<6xi64> -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}
