// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// LU with partial pivoting, unrolled: per step the first largest magnitude
// of the column, a row swap, the scaled column and a rank-1 update; the
// pivots (1-based) concatenated, the info code in i32.
// CHECK-LABEL: func.func @lu_factor_ex
// CHECK-COUNT-2: prim.reduce min
// CHECK: prim.concatenate %{{.*}}, %{{.*}} dim 0 : tensor<1xi64>, tensor<1xi64>
// CHECK: prim.convert %{{.*}} to i32 : tensor<2xi64>
// CHECK: prim.convert %{{.*}} to i32 : tensor<i64>
fx.graph @lu_factor_ex(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xi32>, tensor<i32>) {
  %0:3 = fx.call_function "aten::linalg_lu_factor_ex"(%a) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xi32>, tensor<i32>)
  fx.output %0#0, %0#1, %0#2 : tensor<2x3xf32>, tensor<2xi32>, tensor<i32>
}

// -----

// det: the sign of the permutation times the product of U's diagonal.
// CHECK-LABEL: func.func @det
// CHECK: %[[DIAG:.*]] = prim.reduce sum %{{.*}}, dims [2] : tensor<4x3x3xf32>
// CHECK: %[[PROD:.*]] = prim.reduce prod %[[DIAG]], dims [1] : tensor<4x3xf32>
// CHECK: prim.mul %{{.*}}, %[[PROD]] : tensor<4xf32>
fx.graph @det(%a: tensor<4x3x3xf32>) -> (tensor<4xf32>, tensor<4x3x3xf32>, tensor<4x3xi32>) {
  %0:3 = fx.call_function "aten::_linalg_det"(%a) : (tensor<4x3x3xf32>) -> (tensor<4xf32>, tensor<4x3x3xf32>, tensor<4x3xi32>)
  fx.output %0#0, %0#1, %0#2 : tensor<4xf32>, tensor<4x3x3xf32>, tensor<4x3xi32>
}

// -----

// cholesky: potf2 unrolled, a square root per column.
// CHECK-LABEL: func.func @cholesky
// CHECK-COUNT-3: prim.sqrt
fx.graph @cholesky(%a: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>) {
  %0:2 = fx.call_function "aten::linalg_cholesky_ex"(%a) : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
  fx.output %0#0, %0#1 : tensor<3x3xf32>, tensor<i32>
}

// -----

// A triangular solve is one substitution step per row.
// CHECK-LABEL: func.func @solve_triangular
// CHECK-COUNT-3: prim.div
fx.graph @solve_triangular(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = fx.call_function "aten::linalg_solve_triangular"(%a, %b) {args = {upper = true}} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  fx.output %0 : tensor<3x2xf32>
}

// -----

fx.graph @too_large(%a: tensor<65x65xf32>) -> (tensor<65x65xf32>, tensor<i32>) {
  // expected-error @+1 {{matrices larger than 64 are not unrolled}}
  %0:2 = fx.call_function "aten::linalg_cholesky_ex"(%a) : (tensor<65x65xf32>) -> (tensor<65x65xf32>, tensor<i32>)
  fx.output %0#0, %0#1 : tensor<65x65xf32>, tensor<i32>
}

// -----

fx.graph @solve_rows_mismatch(%a: tensor<3x3xf32>, %b: tensor<4x2xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{operands of shapes the factorization does not take}}
  %0 = fx.call_function "aten::linalg_solve_triangular"(%a, %b) {args = {upper = true}} : (tensor<3x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  fx.output %0 : tensor<3x2xf32>
}

// -----

// geqrf: LAPACK's reflector per column (beta = -sign(alpha) |(alpha, x)|,
// tau = (beta - alpha) / beta, v = x / (alpha - beta)), applied to the
// columns after it.
// CHECK-LABEL: func.func @geqrf
// CHECK: %[[XX:.*]] = prim.reduce sum %{{.*}}, dims [0] : tensor<3xf32>
// CHECK: %[[XNORM:.*]] = prim.sqrt %[[XX]] : tensor<f32>
// CHECK: %[[HYP:.*]] = prim.sqrt %{{.*}} : tensor<f32>
// CHECK: %[[NHYP:.*]] = prim.neg %[[HYP]]
// CHECK: %[[BETA:.*]] = prim.where %{{.*}}, %[[HYP]], %[[NHYP]]
// CHECK: %[[NUM:.*]] = prim.sub %[[BETA]], %{{.*}} : tensor<f32>
// CHECK: prim.div %[[NUM]], %[[BETA]]
// CHECK: prim.concatenate %{{.*}}, %{{.*}} dim 0 : tensor<1xf32>, tensor<1xf32>
fx.graph @geqrf(%a: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>) {
  %0:2 = fx.call_function "aten::geqrf"(%a) : (tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>)
  fx.output %0#0, %0#1 : tensor<3x2xf32>, tensor<2xf32>
}

// -----

// ormqr needs one tau per reflection, at most one per row or column.
fx.graph @ormqr_bad_tau(%a: tensor<3x2xf32>, %tau: tensor<3xf32>, %c: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{operands of shapes the factorization does not take}}
  %0 = fx.call_function "aten::ormqr"(%a, %tau, %c) : (tensor<3x2xf32>, tensor<3xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  fx.output %0 : tensor<3x4xf32>
}

// -----

// linalg_qr (reduced): one reflector per column (two negated hypotenuses
// for beta), R the upper triangle of the packed factor, Q the reflections
// applied to the 3 x 2 identity.
// CHECK-LABEL: func.func @qr_reduced
// CHECK-COUNT-2: prim.neg %{{.*}} : tensor<f32>
// CHECK: return %{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<2x2xf32>
fx.graph @qr_reduced(%a: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<2x2xf32>) {
  %0:2 = fx.call_function "aten::linalg_qr"(%a) {args = {mode = "reduced"}} : (tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<2x2xf32>)
  fx.output %0#0, %0#1 : tensor<3x2xf32>, tensor<2x2xf32>
}
