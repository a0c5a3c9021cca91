// RUN: tc-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
func.func @identities(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = prim.constant dense<1.0> : tensor<4xf32>
  %negzero = prim.constant dense<-0.0> : tensor<4xf32>
  %zero = prim.constant dense<0.0> : tensor<4xf32>
  %0 = prim.mul %x, %one : tensor<4xf32>
  %1 = prim.div %x, %one : tensor<4xf32>
  %2 = prim.add %x, %negzero : tensor<4xf32>
  %3 = prim.sub %x, %zero : tensor<4xf32>
  %n = prim.neg %x : tensor<4xf32>
  %4 = prim.neg %n : tensor<4xf32>
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// x + 0.0 is not x: it turns -0.0 into +0.0.
// CHECK-LABEL: func.func @signed_zero
func.func @signed_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = prim.constant dense<0.0> : tensor<4xf32>
  // CHECK: prim.add
  %0 = prim.add %x, %zero : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @int_identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xi64>)
func.func @int_identities(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %zero = prim.constant dense<0> : tensor<4xi64>
  %one = prim.constant dense<1> : tensor<4xi64>
  %0 = prim.add %x, %zero : tensor<4xi64>
  %1 = prim.mul %one, %x : tensor<4xi64>
  // CHECK: return %[[X]], %[[X]]
  return %0, %1 : tensor<4xi64>, tensor<4xi64>
}

// -----

// Splat constants fold through arithmetic and shape ops.
// CHECK-LABEL: func.func @constant_folding
func.func @constant_folding() -> (tensor<2x3xf32>, tensor<6xi64>) {
  %a = prim.constant dense<2.0> : tensor<3xf32>
  %b = prim.constant dense<3.0> : tensor<3xf32>
  %s = prim.add %a, %b : tensor<3xf32>
  %m = prim.mul %s, %s : tensor<3xf32>
  %n = prim.neg %m : tensor<3xf32>
  %r = prim.broadcast_in_dim %n, shape [2, 3], dims [1] : tensor<3xf32>
  %i = prim.constant dense<7> : tensor<2x3xi64>
  %j = prim.sub %i, %i : tensor<2x3xi64>
  %k = prim.reshape %j, shape [6] : tensor<2x3xi64>
  // CHECK-DAG: %[[F:.*]] = prim.constant dense<-2.500000e+01> : tensor<2x3xf32>
  // CHECK-DAG: %[[I:.*]] = prim.constant dense<0> : tensor<6xi64>
  // CHECK: return %[[F]], %[[I]]
  return %r, %k : tensor<2x3xf32>, tensor<6xi64>
}

// -----

// CHECK-LABEL: func.func @shape_identities
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>)
func.func @shape_identities(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %0 = prim.reshape %x, shape [3, 4] : tensor<3x4xf32>
  %1 = prim.permute %x, [0, 1] : tensor<3x4xf32>
  %t = prim.permute %x, [1, 0] : tensor<3x4xf32>
  %2 = prim.permute %t, [1, 0] : tensor<4x3xf32>
  %3 = prim.broadcast_in_dim %x, shape [3, 4], dims [0, 1] : tensor<3x4xf32>
  %4 = prim.slice %x, start [0, 0], limit [3, 4], strides [1, 1] : tensor<3x4xf32>
  %5 = prim.concatenate %x dim 0 : tensor<3x4xf32>
  %6 = prim.convert %x to f32 : tensor<3x4xf32>
  %7 = prim.pad %x, low [0, 0], high [0, 0], interior [0, 0], value 1.0 : tensor<3x4xf32>
  // A pad that adds or crops something stays.
  // CHECK: %[[P:.*]] = prim.pad %[[X]], low [0, 1]
  %8 = prim.pad %x, low [0, 1], high [0, -1], interior [0, 0], value 0.0 : tensor<3x4xf32>
  // CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[P]]
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}

// -----

// reshape(reshape(x)) and permute(permute(x)) collapse to one op.
// CHECK-LABEL: func.func @compose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
func.func @compose(%x: tensor<2x3x4xf32>) -> (tensor<4x6xf32>, tensor<3x4x2xf32>) {
  %0 = prim.reshape %x, shape [6, 4] : tensor<2x3x4xf32>
  // CHECK: prim.reshape %[[X]], shape [4, 6] : tensor<2x3x4xf32>
  %1 = prim.reshape %0, shape [4, 6] : tensor<6x4xf32>
  %2 = prim.permute %x, [1, 0, 2] : tensor<2x3x4xf32>
  // CHECK: prim.permute %[[X]], [1, 2, 0] : tensor<2x3x4xf32>
  %3 = prim.permute %2, [0, 2, 1] : tensor<3x2x4xf32>
  return %1, %3 : tensor<4x6xf32>, tensor<3x4x2xf32>
}

// -----

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:.*]]: tensor<4xi1>, %[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
func.func @where(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = prim.constant dense<true> : tensor<4xi1>
  %f = prim.constant dense<false> : tensor<4xi1>
  %0 = prim.where %c, %a, %a : tensor<4xi1>, tensor<4xf32>
  %1 = prim.where %t, %a, %b : tensor<4xi1>, tensor<4xf32>
  %2 = prim.where %f, %a, %b : tensor<4xi1>, tensor<4xf32>
  // CHECK: return %[[A]], %[[A]], %[[B]]
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_nothing
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
func.func @reduce_nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = prim.reduce sum %x, dims [] : tensor<4xf32>
  // CHECK: return %[[X]]
  return %0 : tensor<4xf32>
}

// -----

// A reduction of no elements is its identity; nothing reads the empty
// operand.
// CHECK-LABEL: func.func @reduce_empty
// CHECK-DAG: %[[SUM:.*]] = prim.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-DAG: %[[MAX:.*]] = prim.constant dense<0xFF800000> : tensor<3xf32>
// CHECK-DAG: %[[PROD:.*]] = prim.constant dense<1> : tensor<3xi64>
// CHECK: return %[[SUM]], %[[MAX]], %[[PROD]]
func.func @reduce_empty(%x: tensor<3x0xf32>, %y: tensor<0x3xi64>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi64>) {
  %0 = prim.reduce sum %x, dims [1] : tensor<3x0xf32>
  %1 = prim.reduce max %x, dims [1] : tensor<3x0xf32>
  %2 = prim.reduce prod %y, dims [0] : tensor<0x3xi64>
  return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xi64>
}
