// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics

fx.graph @no_decomposition(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::digamma': no decomposition into prim ops}}
  %0 = fx.call_function "aten::digamma"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

fx.graph @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{cannot decompose 'aten::sin': dynamic shapes are not supported yet}}
  %0 = fx.call_function "aten::sin"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  fx.output %0 : tensor<?xf32>
}

// -----

fx.graph @get_attr() -> tensor<4xf32> {
  // expected-error @+1 {{cannot be decomposed: tc compiles call_function nodes}}
  %w = fx.get_attr parameter "w" : tensor<4xf32>
  fx.output %w : tensor<4xf32>
}

// -----

fx.graph @int_div(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{integer division is not supported yet}}
  %0 = fx.call_function "aten::div.Tensor"(%x, %x) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  fx.output %0 : tensor<4xi64>
}
