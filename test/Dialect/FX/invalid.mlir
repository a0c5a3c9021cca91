// RUN: tc-opt %s -split-input-file -verify-diagnostics

fx.graph @unknown(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{unknown ATen operator 'aten::sine'}}
  %0 = fx.call_function "aten::sine"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @too_many(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'aten::sin' takes at most 1 tensor operands, but the op has 2}}
  %0 = fx.call_function "aten::sin"(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @missing_tensor(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{is missing tensor argument 'other' of 'aten::add.Tensor'}}
  %0 = fx.call_function "aten::add.Tensor"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @list_needs_sizes(%x: tensor<3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{binds list argument 'tensors' and needs 'tensor_arg_sizes'}}
  %0 = fx.call_function "aten::cat"(%x) : (tensor<3xf32>) -> tensor<6xf32>
  fx.output %0 : tensor<6xf32>
}

// -----

fx.graph @sizes_entries(%x: tensor<3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'tensor_arg_sizes' has 2 entries but 'aten::cat' has 1 tensor arguments}}
  %0 = fx.call_function "aten::cat"(%x, %x) {tensor_arg_sizes = array<i32: 1, 1>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
  fx.output %0 : tensor<6xf32>
}

// -----

fx.graph @sizes_kind(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{binds 0 operands to argument 'self' of type Tensor}}
  %0 = fx.call_function "aten::add.Tensor"(%x) {tensor_arg_sizes = array<i32: 0, 1>} : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @sizes_sum(%x: tensor<3xf32>) -> tensor<9xf32> {
  // expected-error @+1 {{'tensor_arg_sizes' adds up to 3 operands, but the op has 2}}
  %0 = fx.call_function "aten::cat"(%x, %x) {tensor_arg_sizes = array<i32: 3>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<9xf32>
  fx.output %0 : tensor<9xf32>
}

// -----

fx.graph @no_such_arg(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'aten::add.Tensor' has no argument named 'beta'}}
  %0 = fx.call_function "aten::add.Tensor"(%x, %x) {args = {beta = 1 : i64}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @tensor_as_attr(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{tensor argument 'other' must be an operand, not an attribute}}
  %0 = fx.call_function "aten::add.Tensor"(%x, %x) {args = {other = 1.0 : f64}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @not_optional(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{argument 'alpha' is not optional and cannot be None}}
  %0 = fx.call_function "aten::add.Tensor"(%x, %x) {args = {alpha}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @wrong_arg_type(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{argument 'dim0' expects int, got "zero"}}
  %0 = fx.call_function "aten::transpose.int"(%x) {args = {dim0 = "zero", dim1 = 1 : i64}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}

// -----

fx.graph @bool_is_not_int(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{argument 'dim' expects int[], got true}}
  %0 = fx.call_function "aten::sum.dim_IntList"(%x) {args = {dim = true}} : (tensor<3x4xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

fx.graph @missing_required(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{is missing required argument 'dim1' of 'aten::transpose.int'}}
  %0 = fx.call_function "aten::transpose.int"(%x) {args = {dim0 = 0 : i64}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}

// -----

fx.graph @result_count(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'aten::sin' returns 1 tensors, but the op has 2 results}}
  %0:2 = fx.call_function "aten::sin"(%x) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  fx.output %0#0 : tensor<3xf32>
}

// -----

fx.graph @non_tensor_result(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'aten::is_nonzero' returns a bool, which is not a tensor}}
  %0 = fx.call_function "aten::is_nonzero"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  fx.output %0 : tensor<3xf32>
}

// -----

// expected-error @+1 {{placeholder name 'x' is used twice}}
fx.graph @duplicate_names(%a: tensor<3xf32> {fx.name = "x"}, %b: tensor<3xf32> {fx.name = "x"}) {
  fx.output
}

// -----

// expected-error @+1 {{placeholder #0 has an 'fx.name' that is not a non-empty string}}
fx.graph @bad_name(%a: tensor<3xf32> {fx.name = 3 : i64}) {
  fx.output
}

// -----

fx.graph @output_count(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{has 0 operands, but the enclosing graph returns 1}}
  fx.output
}

// -----

fx.graph @output_type(%x: tensor<3xf32>) -> tensor<3xf16> {
  // expected-error @+1 {{operand #0 has type 'tensor<3xf32>', but the enclosing graph returns 'tensor<3xf16>'}}
  fx.output %x : tensor<3xf32>
}

// -----

fx.graph @get_attr_path() -> tensor<3xf32> {
  // expected-error @+1 {{target 'lin..weight' is not a dotted attribute path}}
  %w = fx.get_attr parameter "lin..weight" : tensor<3xf32>
  fx.output %w : tensor<3xf32>
}

// -----

fx.graph @get_attr_kind() -> tensor<3xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [parameter, buffer, constant]}}
  %w = fx.get_attr weight "lin.weight" : tensor<3xf32>
  fx.output %w : tensor<3xf32>
}

// -----

// Half-precision complex tensors (complex32) are not among the dtypes tc
// models.
// expected-error @+1 {{must be ranked tensor of PyTorch dtype values}}
%0 = "fx.get_attr"() {kind = 0 : i32, target = "c"} : () -> tensor<2xcomplex<f16>>

// -----

func.func @output_outside_graph(%x: tensor<3xf32>) {
  // expected-error @+1 {{expects parent op 'fx.graph'}}
  fx.output %x : tensor<3xf32>
}

// -----

fx.graph @none_entries_mismatch(%x: tensor<4x5xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{argument 'indices' marks 2 entries present but binds 1 operands}}
  %0 = fx.call_function "aten::index.Tensor"(%x, %i) {args = {indices = array<i1: true, true>}, tensor_arg_sizes = array<i32: 1, 1>} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}

// -----

fx.graph @none_entries_not_a_mask(%x: tensor<4x5xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{argument 'indices' may only mark its present entries (array<i1: ...>)}}
  %0 = fx.call_function "aten::index.Tensor"(%x, %i) {args = {indices = 1 : i64}, tensor_arg_sizes = array<i32: 1, 1>} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  fx.output %0 : tensor<4x3xf32>
}
