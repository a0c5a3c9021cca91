// RUN: tc-opt %s -tc-fuse -split-input-file -verify-diagnostics

func.func @dot_general(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{is not a (batched) matrix product the GEMM library call supports}}
  %0 = prim.dot %a, %b, batch [] x [], contract [0] x [0] : tensor<4x3xf32>, tensor<4x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @literal(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{non-splat constants are not supported yet}}
  %c = prim.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = prim.add %a, %c : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// An op of another dialect in a function of tensors: a diagnostic, not a
// crash in the fusion plan.
func.func @not_prim(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is not a prim op: tc-fuse fuses functions of prim ops}}
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
