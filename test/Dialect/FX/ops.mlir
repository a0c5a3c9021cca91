// RUN: tc-opt %s | tc-opt | FileCheck %s
// RUN: tc-opt %s --mlir-print-op-generic | tc-opt | FileCheck %s

// Seed 000's `foo`: placeholder and node names survive as SSA names.
// CHECK-LABEL: fx.graph @foo
// CHECK-SAME: (%x: tensor<3x3xf32> {fx.name = "x"}, %y: tensor<3x3xf32> {fx.name = "y"}) -> tensor<3x3xf32>
fx.graph @foo(%arg0: tensor<3x3xf32> {fx.name = "x"},
              %arg1: tensor<3x3xf32> {fx.name = "y"}) -> tensor<3x3xf32> {
  // CHECK: %[[SIN:sin]] = fx.call_function "aten::sin"(%x) {name = "sin"}
  %0 = fx.call_function "aten::sin"(%arg0) {name = "sin"} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  // CHECK: %[[COS:cos]] = fx.call_function "aten::cos"(%y)
  %1 = fx.call_function "aten::cos"(%arg1) {name = "cos"} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  // CHECK: %[[ADD:.*]] = fx.call_function "aten::add.Tensor"(%[[SIN]], %[[COS]]) {args = {alpha = 1 : i64}, name = "add"}
  %2 = fx.call_function "aten::add.Tensor"(%0, %1) {name = "add", args = {alpha = 1 : i64}}
      : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  // CHECK: fx.output %[[ADD]] : tensor<3x3xf32>
  fx.output %2 : tensor<3x3xf32>
}

// Seed 000's MyModule: parameters are get_attr values.
// CHECK-LABEL: fx.graph @my_module
fx.graph @my_module(%arg0: tensor<3x3xf32> {fx.name = "x"}) -> tensor<3x3xf32> {
  // CHECK: %[[W:lin_weight]] = fx.get_attr parameter "lin.weight" : tensor<3x3xf32>
  %w = fx.get_attr parameter "lin.weight" : tensor<3x3xf32>
  // CHECK: %[[B:lin_bias]] = fx.get_attr parameter "lin.bias" : tensor<3xf32>
  %b = fx.get_attr parameter "lin.bias" : tensor<3xf32>
  // CHECK: fx.call_function "aten::linear"(%x, %[[W]], %[[B]])
  %l = fx.call_function "aten::linear"(%arg0, %w, %b) : (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  %r = fx.call_function "aten::relu"(%l) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  fx.output %r : tensor<3x3xf32>
}

// Dynamic dimensions and every PyTorch dtype.
// CHECK-LABEL: fx.graph @dtypes
// CHECK-SAME: tensor<?x4xf16>, %{{.*}}: tensor<2xbf16>, %{{.*}}: tensor<f64>, %{{.*}}: tensor<2xi64>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2xi16>, %{{.*}}: tensor<2xi8>, %{{.*}}: tensor<2xui8>, %{{.*}}: tensor<2xi1>
fx.graph @dtypes(%a: tensor<?x4xf16>, %b: tensor<2xbf16>, %c: tensor<f64>,
                 %d: tensor<2xi64>, %e: tensor<2xi32>, %f: tensor<2xi16>,
                 %g: tensor<2xi8>, %h: tensor<2xui8>, %i: tensor<2xi1>) {
  fx.output
}

// A buffer and a constant.
// CHECK-LABEL: fx.graph @attrs
fx.graph @attrs() -> (tensor<4xf32>, tensor<2xi64>) {
  // CHECK: fx.get_attr buffer "bn.running_mean"
  %m = fx.get_attr buffer "bn.running_mean" : tensor<4xf32>
  // CHECK: fx.get_attr constant "_tensor_constant0"
  %c = fx.get_attr constant "_tensor_constant0" : tensor<2xi64>
  fx.output %m, %c : tensor<4xf32>, tensor<2xi64>
}
