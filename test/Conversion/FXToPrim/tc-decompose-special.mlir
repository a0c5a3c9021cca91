// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// lgamma: Lanczos' sum in f64, reflected below 0.5, infinite at the poles;
// the result is rounded once.
// CHECK-LABEL: func.func @lgamma
// CHECK: %[[X:.*]] = prim.convert %{{.*}} to f64 : tensor<4xf32>
// CHECK: prim.compare lt, %[[X]], %{{.*}} : tensor<4xf64>
// CHECK: prim.log
// CHECK: prim.sin
// CHECK: prim.floor
// CHECK: %[[R:.*]] = prim.where
// CHECK: prim.convert %[[R]] to f32 : tensor<4xf64>
fx.graph @lgamma(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::lgamma"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// Half precision rounds through f32 (the CPU runtime has no f64-to-bf16
// routine).
// CHECK-LABEL: func.func @erfc_bf16
// CHECK: %[[F32:.*]] = prim.convert %{{.*}} to f32 : tensor<4xf64>
// CHECK: prim.convert %[[F32]] to bf16 : tensor<4xf32>
fx.graph @erfc_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = fx.call_function "aten::erfc"(%x) : (tensor<4xbf16>) -> tensor<4xbf16>
  fx.output %0 : tensor<4xbf16>
}

// -----

// An integer input promotes to float like eager's, through f64.
// CHECK-LABEL: func.func @i0_int
// CHECK: prim.convert %{{.*}} to f64 : tensor<3xi64>
// CHECK: prim.exp
fx.graph @i0_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %0 = fx.call_function "aten::i0"(%x) : (tensor<3xi64>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

// polygamma of order 2: Hurwitz's zeta by Euler-Maclaurin, reflected below
// 0 through the cotangent's second derivative.
// CHECK-LABEL: func.func @polygamma_2
// CHECK: prim.compare le
// CHECK: prim.cos
// CHECK: prim.sin
// CHECK: prim.where
fx.graph @polygamma_2(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = fx.call_function "aten::polygamma"(%x) {args = {n = 2 : i64}} : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @polygamma_order(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cannot decompose 'aten::polygamma': polygamma of order 31 is not supported}}
  %0 = fx.call_function "aten::polygamma"(%x) {args = {n = 31 : i64}} : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @erfc_int_result(%x: tensor<3xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{cannot decompose 'aten::erfc': a result of 'tensor<3xi64>'}}
  %0 = fx.call_function "aten::erfc"(%x) : (tensor<3xf32>) -> tensor<3xi64>
  fx.output %0 : tensor<3xi64>
}

// -----

// Chebyshev polynomials in closed form: the angle inside [-1, 1], the
// hyperbolic angle outside; no loop over the (tensor) degree.
// CHECK-LABEL: func.func @chebyshev_t
// CHECK: prim.floor
// CHECK: prim.acos
// CHECK: prim.cos
// CHECK: prim.exp
// CHECK: prim.convert %{{.*}} to f32 : tensor<5xf64>
fx.graph @chebyshev_t(%x: tensor<5xf32>, %n: tensor<5xf32>) -> tensor<5xf32> {
  %0 = fx.call_function "aten::special_chebyshev_polynomial_t"(%x, %n) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  fx.output %0 : tensor<5xf32>
}

// -----

// signbit reads the sign bit (of -0.0 and NaN too); copysign selects -|a|
// there.
// CHECK-LABEL: func.func @copysign
// CHECK: %[[ABS:.*]] = prim.abs %{{.*}} : tensor<3xf32>
// CHECK: %[[BITS:.*]] = prim.bitcast %{{.*}} to i32 : tensor<3xf32>
// CHECK: %[[NEG:.*]] = prim.compare lt, %[[BITS]], %{{.*}} : tensor<3xi32>
// CHECK: %[[MINUS:.*]] = prim.neg %[[ABS]]
// CHECK: prim.where %[[NEG]], %[[MINUS]], %[[ABS]]
fx.graph @copysign(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = fx.call_function "aten::copysign.Tensor"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

// Legendre polynomials: eager's recurrence in f32, unrolled to degree 64;
// step k is kept where k < trunc(n) and the value is not NaN.
// CHECK-LABEL: func.func @legendre
// CHECK: %[[FINITE:.*]] = prim.compare lt, %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: %[[DEG:.*]] = prim.where %[[FINITE]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>
// CHECK: %[[ACTIVE:.*]] = prim.compare lt, %{{.*}}, %[[DEG]] : tensor<4xf32>
// CHECK-COUNT-62: prim.compare lt, %{{.*}}, %[[DEG]] : tensor<4xf32>
// CHECK-NOT: prim.compare lt, %{{.*}}, %[[DEG]] : tensor<4xf32>
// CHECK: return
fx.graph @legendre(%x: tensor<4xf32>, %n: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::special_legendre_polynomial_p"(%x, %n) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}
