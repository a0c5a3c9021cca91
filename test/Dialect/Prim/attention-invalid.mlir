// RUN: tc-opt %s -split-input-file -verify-diagnostics

func.func @f32(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{takes f16 or bf16 operands}}
  %o = prim.attention %q, %q, %q scale 1.0 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Three query heads cannot share two key heads.
func.func @heads(%q: tensor<1x3x4x8xbf16>, %k: tensor<1x2x4x8xbf16>) -> tensor<1x3x4x8xbf16> {
  // expected-error @+1 {{do not make an attention}}
  %o = prim.attention %q, %k, %k scale 1.0 : tensor<1x3x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16> -> tensor<1x3x4x8xbf16>
  return %o : tensor<1x3x4x8xbf16>
}

// -----

func.func @result(%q: tensor<1x2x4x8xbf16>, %v: tensor<1x2x4x16xbf16>) -> tensor<1x2x4x8xbf16> {
  // expected-error @+1 {{is not (batch, heads, queries, value features)}}
  %o = prim.attention %q, %q, %v scale 1.0 : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x16xbf16> -> tensor<1x2x4x8xbf16>
  return %o : tensor<1x2x4x8xbf16>
}

// -----

// The bias is brought to (batch or 1, heads or 1, queries, keys) before.
func.func @bias(%q: tensor<2x2x4x8xf16>, %b: tensor<2x1x1x4xf16>) -> tensor<2x2x4x8xf16> {
  // expected-error @+1 {{bias 'tensor<2x1x1x4xf16>' is not (batch or 1, heads or 1, queries, keys rounded up to 8)}}
  %o = prim.attention %q, %q, %q bias %b scale 1.0 : tensor<2x2x4x8xf16>, tensor<2x2x4x8xf16>, tensor<2x2x4x8xf16>, tensor<2x1x1x4xf16> -> tensor<2x2x4x8xf16>
  return %o : tensor<2x2x4x8xf16>
}
