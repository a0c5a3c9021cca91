// RUN: tc-opt %s -canonicalize -cse -split-input-file | FileCheck %s

// Factors constant along the summed dimensions (a per-channel vector's
// broadcast) move out of the sum; the factors left are multiplied in the
// order they are defined, so that two sums of the same factors (a batch
// norm's backward: the gradient times (x - mean), once times the weight,
// once times the inverse deviation) become one.
// CHECK-LABEL: func.func @factor_out
// CHECK-SAME: (%[[G:.*]]: tensor<4x8x5xf32>, %[[X:.*]]: tensor<4x8x5xf32>, %[[W:.*]]: tensor<8xf32>, %[[R:.*]]: tensor<8xf32>)
// CHECK: %[[P:.*]] = prim.mul %[[G]], %[[X]] : tensor<4x8x5xf32>
// CHECK: %[[S:.*]] = prim.reduce sum %[[P]], dims [0, 2]
// CHECK-NOT: prim.reduce
// CHECK-DAG: prim.mul %[[S]], %[[W]] : tensor<8xf32>
// CHECK-DAG: prim.mul %[[S]], %[[R]] : tensor<8xf32>
func.func @factor_out(%g: tensor<4x8x5xf32>, %x: tensor<4x8x5xf32>, %w: tensor<8xf32>, %r: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %bw = prim.broadcast_in_dim %w, shape [4, 8, 5], dims [1] : tensor<8xf32>
  %br = prim.broadcast_in_dim %r, shape [4, 8, 5], dims [1] : tensor<8xf32>
  %gw = prim.mul %g, %bw : tensor<4x8x5xf32>
  %a = prim.mul %gw, %x : tensor<4x8x5xf32>
  %sa = prim.reduce sum %a, dims [0, 2] : tensor<4x8x5xf32>
  %xr = prim.mul %x, %br : tensor<4x8x5xf32>
  %b = prim.mul %g, %xr : tensor<4x8x5xf32>
  %sb = prim.reduce sum %b, dims [0, 2] : tensor<4x8x5xf32>
  return %sa, %sb : tensor<8xf32>, tensor<8xf32>
}

// -----

// Negations and doublings (x + x) move out with a broadcast factor, as a
// scale; a unit dimension of the factor that the sum removes is reshaped
// away.
// CHECK-LABEL: func.func @scaled
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>, %[[C:.*]]: tensor<1x6xf32>)
// CHECK-DAG: %[[K:.*]] = prim.constant dense<-2.000000e+00> : tensor<6xf32>
// CHECK-DAG: %[[S:.*]] = prim.reduce sum %[[X]], dims [0]
// CHECK-DAG: %[[C6:.*]] = prim.reshape %[[C]], shape [6]
// CHECK: %[[M:.*]] = prim.mul %[[S]], %[[C6]] : tensor<6xf32>
// CHECK: prim.mul %[[M]], %[[K]]
func.func @scaled(%x: tensor<4x6xf32>, %c: tensor<1x6xf32>) -> tensor<6xf32> {
  %bc = prim.broadcast_in_dim %c, shape [4, 6], dims [0, 1] : tensor<1x6xf32>
  %y = prim.mul %x, %bc : tensor<4x6xf32>
  %d = prim.add %y, %y : tensor<4x6xf32>
  %n = prim.neg %d : tensor<4x6xf32>
  %s = prim.reduce sum %n, dims [0] : tensor<4x6xf32>
  return %s : tensor<6xf32>
}

// -----

// A sum with only scalar factors, with factors that vary along the summed
// dimension, or over trailing dimensions only (a row sum, computed in its
// row's kernel: a layer norm's) is left as it is.
// CHECK-LABEL: func.func @kept
// CHECK: %[[H:.*]] = prim.mul %{{.*}}, %{{.*}} : tensor<6x4xf32>
// CHECK: prim.reduce sum %[[H]], dims [0]
// CHECK: %[[V:.*]] = prim.mul %{{.*}}, %{{.*}} : tensor<6x4xf32>
// CHECK: prim.reduce sum %[[V]], dims [0]
// CHECK: %[[R:.*]] = prim.mul %{{.*}}, %{{.*}} : tensor<6x4xf32>
// CHECK: prim.reduce sum %[[R]], dims [1]
func.func @kept(%x: tensor<6x4xf32>, %v: tensor<6xf32>, %u: tensor<6xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<6xf32>) {
  %half = prim.constant dense<0.5> : tensor<6x4xf32>
  %h = prim.mul %x, %half : tensor<6x4xf32>
  %s = prim.reduce sum %h, dims [0] : tensor<6x4xf32>
  %bv = prim.broadcast_in_dim %v, shape [6, 4], dims [0] : tensor<6xf32>
  %y = prim.mul %x, %bv : tensor<6x4xf32>
  %t = prim.reduce sum %y, dims [0] : tensor<6x4xf32>
  %bu = prim.broadcast_in_dim %u, shape [6, 4], dims [0] : tensor<6xf32>
  %z = prim.mul %x, %bu : tensor<6x4xf32>
  %r = prim.reduce sum %z, dims [1] : tensor<6x4xf32>
  return %s, %t, %r : tensor<4xf32>, tensor<4xf32>, tensor<6xf32>
}

// -----

// The deviations from a mean over the same dimensions sum to zero: by the
// count (batch norm's mean), by its inverse with keepdim's reshape. Another
// count is no mean.
// CHECK-LABEL: func.func @deviations
// CHECK-DAG: %[[Z8:.*]] = prim.constant dense<0.000000e+00> : tensor<8xf32>
// CHECK-DAG: %[[Z6:.*]] = prim.constant dense<0.000000e+00> : tensor<6xf32>
// CHECK: %[[OTHER:.*]] = prim.reduce sum %{{[0-9]+}}, dims [0, 2]
// CHECK: return %[[Z8]], %[[Z6]], %[[OTHER]]
func.func @deviations(%x: tensor<4x8x5xf32>, %y: tensor<4x6xf32>) -> (tensor<8xf32>, tensor<6xf32>, tensor<8xf32>) {
  %n = prim.constant dense<20.0> : tensor<8xf32>
  %sx = prim.reduce sum %x, dims [0, 2] : tensor<4x8x5xf32>
  %mx = prim.div %sx, %n : tensor<8xf32>
  %bx = prim.broadcast_in_dim %mx, shape [4, 8, 5], dims [1] : tensor<8xf32>
  %dx = prim.sub %x, %bx : tensor<4x8x5xf32>
  %zx = prim.reduce sum %dx, dims [0, 2] : tensor<4x8x5xf32>
  %inv = prim.constant dense<0.25> : tensor<1x6xf32>
  %sy = prim.reduce sum %y, dims [0] : tensor<4x6xf32>
  %ky = prim.reshape %sy, shape [1, 6] : tensor<6xf32>
  %my = prim.mul %ky, %inv : tensor<1x6xf32>
  %by = prim.broadcast_in_dim %my, shape [4, 6], dims [0, 1] : tensor<1x6xf32>
  %dy = prim.sub %y, %by : tensor<4x6xf32>
  %zy = prim.reduce sum %dy, dims [0] : tensor<4x6xf32>
  %m = prim.constant dense<10.0> : tensor<8xf32>
  %wx = prim.div %sx, %m : tensor<8xf32>
  %bw = prim.broadcast_in_dim %wx, shape [4, 8, 5], dims [1] : tensor<8xf32>
  %ex = prim.sub %x, %bw : tensor<4x8x5xf32>
  %ox = prim.reduce sum %ex, dims [0, 2] : tensor<4x8x5xf32>
  return %zx, %zy, %ox : tensor<8xf32>, tensor<6xf32>, tensor<8xf32>
}

// -----

// A reduction over a dimension of one element reduces nothing there: a
// batch norm of weights viewed as [1, O, K] (timm's weight
// standardization) is a row reduction of the [O, K] rows; over unit
// dimensions only, a reshape.
// CHECK-LABEL: func.func @unit_dims
// CHECK: %[[R:.*]] = prim.reshape %arg0, shape [4, 6] : tensor<1x4x6xf32>
// CHECK: %[[S:.*]] = prim.reduce sum %[[R]], dims [1] : tensor<4x6xf32>
// CHECK: %[[M:.*]] = prim.reshape %arg1, shape [3] : tensor<3x1xf32>
// CHECK: return %[[S]], %[[M]]
func.func @unit_dims(%x: tensor<1x4x6xf32>, %y: tensor<3x1xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  %0 = prim.reduce sum %x, dims [0, 2] : tensor<1x4x6xf32>
  %1 = prim.reduce max %y, dims [1] : tensor<3x1xf32>
  return %0, %1 : tensor<4xf32>, tensor<3xf32>
}
