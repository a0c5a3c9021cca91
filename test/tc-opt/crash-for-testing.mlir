// tc-decompose's crash-for-testing plants a compiler crash (a fatal error)
// on one ATen op: how tests check that the runtimes contain a crash
// (test_seeds.py's test_contained_compiler_crash); other ops are unharmed.
// RUN: not --crash tc-opt %s --tc-decompose=crash-for-testing=aten::cos 2>&1 | FileCheck %s
// RUN: tc-opt %s --tc-decompose=crash-for-testing=aten::tan | FileCheck %s --check-prefix=OTHER

// CHECK: tc-decompose: crash-for-testing met aten::cos
// OTHER: prim.cos
fx.graph @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::cos"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}
