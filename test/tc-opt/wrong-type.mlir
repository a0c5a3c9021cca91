// RUN: not tc-opt %s -split-input-file 2>&1 | FileCheck %s

// A memref where the graph dialect wants a tensor.
fx.graph @g(%x: memref<3xf32>) {
  // CHECK: wrong-type.mlir:[[@LINE+1]]:8: error: 'fx.call_function' op operand #0 must be variadic of ranked tensor of PyTorch dtype values, but got 'memref<3xf32>'
  %0 = fx.call_function "aten::sin"(%x) : (memref<3xf32>) -> tensor<3xf32>
  fx.output
}

// -----

// A type that does not exist.
// CHECK: wrong-type.mlir:[[@LINE+1]]:26: error: expected non-function type
fx.graph @h(%x: tensor<3xf33>) {
  fx.output
}

// -----

// Operands of an elementwise prim op of two shapes.
func.func @f(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // CHECK: wrong-type.mlir:[[@LINE+1]]:8: error: 'prim.mul' op all non-scalar operands/results must have the same shape and base type
  %0 = "prim.mul"(%a, %b) : (tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}
