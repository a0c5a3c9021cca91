// RUN: tc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{argument #0 must be a memref, got 'tensor<4xf32>'}}
kernel.kernel @tensor_arg(%x: tensor<4xf32>) attributes {domain = array<i64: 4>} {
  kernel.return
}

// -----

// expected-error @+1 {{domain has a negative size -4}}
kernel.kernel @negative_domain(%x: memref<4xf32>) attributes {domain = array<i64: -4>} {
  kernel.return
}

// -----

// expected-error @+1 {{returns no values: outputs are buffers passed as arguments}}
kernel.kernel @results(%x: memref<4xf32>) -> f32 attributes {domain = array<i64: 4>} {
  kernel.return
}

// -----

// expected-error @+1 {{body must end in 'kernel.return'}}
kernel.kernel @no_return(%x: memref<4xf32>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
}

// -----

kernel.kernel @index_range(%x: memref<4xf32>) attributes {domain = array<i64: 4>} {
  // expected-error @+1 {{dimension 1 is out of range for a domain of rank 1}}
  %i = kernel.index 1
  kernel.return
}

// -----

func.func @index_outside() {
  // expected-error @+1 {{must be inside a 'kernel.kernel'}}
  %i = kernel.index 0
  return
}

// -----

kernel.kernel @reduce_yield(%x: memref<4x8xf32>) attributes {domain = array<i64: 4>} {
  %n = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %n init %zero : f32 {
  ^bb0(%j: index):
    %c = arith.constant 1 : i32
    // expected-error @+1 {{must yield one value of the reduction's type 'f32'}}
    kernel.yield %c : i32
  }
  kernel.return
}

// -----

kernel.kernel @reduce_args(%x: memref<4x8xf32>) attributes {domain = array<i64: 4>} {
  %n = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{body must take one 'index' argument}}
  %s = kernel.reduce add %n init %zero : f32 {
  ^bb0(%j: index, %k: index):
    kernel.yield %zero : f32
  }
  kernel.return
}

// -----

kernel.kernel @loop_yield(%x: memref<4x8xf32>) attributes {domain = array<i64: 4>} {
  %n = arith.constant 8 : index
  kernel.loop %n {
  ^bb0(%j: index):
    %c = arith.constant 1.0 : f32
    // expected-error @+1 {{in a 'kernel.loop' yields no values}}
    kernel.yield %c : f32
  }
  kernel.return
}

// -----

kernel.schedule @arena_alignment() {
  // expected-error @+1 {{alignment 48 is not a power of two}}
  %a = kernel.arena {alignment = 48} : memref<64xi8>
  kernel.return
}

// -----

kernel.schedule @buffer_overflow() {
  %a = kernel.arena : memref<64xi8>
  // expected-error @+1 {{buffer [32, 96) does not fit in an arena of 64 bytes}}
  %b = kernel.buffer %a[32] : memref<64xi8> to memref<4x4xf32>
  kernel.return
}

// -----

kernel.schedule @buffer_misaligned() {
  %a = kernel.arena : memref<64xi8>
  // expected-error @+1 {{offset 2 is not a non-negative multiple of the element size (4 bytes)}}
  %b = kernel.buffer %a[2] : memref<64xi8> to memref<4xf32>
  kernel.return
}

// -----

func.func @arena_outside() {
  // expected-error @+1 {{expects parent op 'kernel.schedule'}}
  %a = kernel.arena : memref<64xi8>
  return
}

// -----

kernel.schedule @launch_unknown(%x: memref<4xf32>) {
  // expected-error @+1 {{'missing' does not name a 'kernel.kernel'}}
  kernel.launch @missing(%x) : memref<4xf32>
  kernel.return
}

// -----

kernel.kernel @k(%x: memref<4xf32>) attributes {domain = array<i64: 4>} {
  kernel.return
}

kernel.schedule @launch_types(%x: memref<8xf32>) {
  // expected-error @+1 {{buffer #0 has type 'memref<8xf32>', but kernel 'k' expects 'memref<4xf32>'}}
  kernel.launch @k(%x) : memref<8xf32>
  kernel.return
}

// -----

kernel.kernel @k(%x: memref<4xf32>) attributes {domain = array<i64: 4>} {
  kernel.return
}

kernel.schedule @launch_count(%x: memref<4xf32>) {
  // expected-error @+1 {{passes 2 buffers, but kernel 'k' takes 1}}
  kernel.launch @k(%x, %x) : memref<4xf32>, memref<4xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_k(%a: memref<3x4xf32>, %b: memref<5x6xf32>, %c: memref<3x6xf32>) {
  // expected-error @+1 {{contracting sizes differ: 4 vs 5}}
  kernel.gemm %a, %b, %c : memref<3x4xf32>, memref<5x6xf32>, memref<3x6xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_out(%a: memref<3x4xf32>, %b: memref<6x4xf32>, %c: memref<3x4xf32>) {
  // expected-error @+1 {{output must be 3x6}}
  kernel.gemm %a, %b, %c {transpose_b} : memref<3x4xf32>, memref<6x4xf32>, memref<3x4xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_rank(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  // expected-error @+1 {{operands must all be rank 2, or all rank 3 with a leading batch dimension}}
  kernel.gemm %a, %b, %c : memref<4xf32>, memref<4xf32>, memref<4xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_bias(%a: memref<3x4xf32>, %b: memref<4x6xf32>, %c: memref<3x6xf32>, %bias: memref<3xf32>) {
  // expected-error @+1 {{bias must be a rank-1 buffer of 6 output elements}}
  kernel.gemm %a, %b, %c bias %bias : memref<3x4xf32>, memref<4x6xf32>, memref<3x6xf32>, memref<3xf32>
  kernel.return
}

// -----

kernel.kernel @k(%x: memref<4x4xf32>, %y: memref<4x4xf32>) attributes {domain = array<i64: 4>} {
  kernel.return
}

kernel.schedule @epilogue_without_gemm(%x: memref<4x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{with 'row_epilogue' must directly follow a rank-2 'kernel.gemm' whose output it reads}}
  kernel.launch @k(%x, %y) {row_epilogue} : memref<4x4xf32>, memref<4x4xf32>
  kernel.return
}

// -----

kernel.kernel @reduce_bool(%x: memref<4x8xi1>) attributes {domain = array<i64: 4>} {
  %n = arith.constant 8 : index
  %f = arith.constant false
  // expected-error @+1 {{cannot take max/min of i1 values}}
  %m = kernel.reduce max %n init %f : i1 {
  ^bb0(%j: index):
    kernel.yield %f : i1
  }
  kernel.return
}

// -----

kernel.schedule @arena_rank() {
  // expected-error @+1 {{arena must be a rank-1 byte buffer}}
  %a = kernel.arena : memref<8x8xi8>
  kernel.return
}

// -----

kernel.schedule @buffer_layout() {
  %a = kernel.arena : memref<64xi8>
  // expected-error @+1 {{buffers are dense row-major: no layout allowed}}
  %b = kernel.buffer %a[0] : memref<64xi8> to memref<2x2xf32, strided<[1, 2]>>
  kernel.return
}

// -----

kernel.schedule @gemm_dtypes(%a: memref<3x4xf32>, %b: memref<4x6xf16>, %c: memref<3x6xf32>) {
  // expected-error @+1 {{operands must have one element type}}
  kernel.gemm %a, %b, %c : memref<3x4xf32>, memref<4x6xf16>, memref<3x6xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_batch(%a: memref<2x3x4xf32>, %b: memref<3x4x6xf32>, %c: memref<2x3x6xf32>) {
  // expected-error @+1 {{batch sizes differ}}
  kernel.gemm %a, %b, %c : memref<2x3x4xf32>, memref<3x4x6xf32>, memref<2x3x6xf32>
  kernel.return
}

// -----

kernel.schedule @conv_size(%x: memref<1x2x8x8xf32>, %w: memref<4x2x3x3xf32>, %y: memref<1x4x8x8xf32>) {
  // expected-error @+1 {{'kernel.conv' op output size 8 in spatial dimension 0 does not match the input and window}}
  kernel.conv forward %x, %w, %y stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : memref<1x2x8x8xf32>, memref<4x2x3x3xf32>, memref<1x4x8x8xf32>
  kernel.return
}

// -----

kernel.schedule @conv_weight_first(%x: memref<1x8x8x3xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x8x8x4xf32>) {
  // expected-error @+1 {{'kernel.conv' op weight_channels_first needs channels_last}}
  kernel.conv forward %x, %w, %y stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 weight_channels_first : memref<1x8x8x3xf32>, memref<4x3x3x3xf32>, memref<1x8x8x4xf32>
  kernel.return
}

// -----

kernel.schedule @conv_weight_last(%x: memref<1x8x8x3xf32>, %w: memref<4x3x5x5xf32>, %y: memref<1x8x8x4xf32>) {
  // A channels-first weight without weight_channels_first reads as
  // channels-last: 5 input channels.
  // expected-error @+1 {{'kernel.conv' op input channels 3 and weight 'memref<4x3x5x5xf32>' do not make a convolution of 1 groups}}
  kernel.conv forward %x, %w, %y stride [1, 1] padding [2, 2] dilation [1, 1] groups 1 channels_last : memref<1x8x8x3xf32>, memref<4x3x5x5xf32>, memref<1x8x8x4xf32>
  kernel.return
}

// -----

kernel.schedule @conv_weight_first_ok(%x: memref<1x8x8x3xf32>, %w: memref<4x3x5x5xf32>, %y: memref<1x8x8x4xf32>) {
  kernel.conv forward %x, %w, %y stride [1, 1] padding [2, 2] dilation [1, 1] groups 1 channels_last weight_channels_first : memref<1x8x8x3xf32>, memref<4x3x5x5xf32>, memref<1x8x8x4xf32>
  kernel.return
}

// -----

kernel.schedule @conv_channels(%x: memref<1x3x8x8xf32>, %w: memref<4x2x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{'kernel.conv' op input channels 3 and weight 'memref<4x2x3x3xf32>' do not make a convolution of 1 groups}}
  kernel.conv backward_input %x, %w, %y stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : memref<1x3x8x8xf32>, memref<4x2x3x3xf32>, memref<1x4x6x6xf32>
  kernel.return
}

// -----

kernel.kernel @k(%x: memref<?x4xf32>) attributes {domain = array<i64: -9223372036854775808>} {
  kernel.return
}

kernel.schedule @launch_two_grids(%x: memref<?x4xf32>) {
  // expected-error @+1 {{takes one of 'grid', 'grid_per_symbol' and 'threads_per_symbol'}}
  kernel.launch @k(%x) {block = 32 : i64, grid = 4 : i64, threads_per_symbol = 4 : i64} : memref<?x4xf32>
  kernel.return
}

// -----

kernel.kernel @k(%x: memref<?x4xf32>) attributes {domain = array<i64: -9223372036854775808>} {
  kernel.return
}

kernel.schedule @launch_no_block(%x: memref<?x4xf32>) {
  // expected-error @+1 {{with a grid needs a 'block'}}
  kernel.launch @k(%x) {grid_per_symbol = 4 : i64} : memref<?x4xf32>
  kernel.return
}

// -----

kernel.kernel @k(%x: memref<4xf32>) attributes {domain = array<i64: 4>} {
  kernel.return
}

kernel.schedule @launch_empty_grid(%x: memref<4xf32>) {
  // expected-error @+1 {{launch sizes must not be negative, not -1}}
  kernel.launch @k(%x) {block = 32 : i64, grid = -1 : i64} : memref<4xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_flattened_transposed(%a: memref<?x4x32xf32>, %b: memref<32x16xf32>, %out: memref<?x4x16xf32>) {
  // expected-error @+1 {{an n-d by 2-d product reads a as it is}}
  kernel.gemm %a, %b, %out {transpose_a} : memref<?x4x32xf32>, memref<32x16xf32>, memref<?x4x16xf32>
  kernel.return
}

// -----

kernel.schedule @gemm_flattened_rows(%a: memref<?x4x32xf32>, %b: memref<32x16xf32>, %out: memref<?x5x16xf32>) {
  // expected-error @+1 {{a's and out's leading dimensions differ}}
  kernel.gemm %a, %b, %out : memref<?x4x32xf32>, memref<32x16xf32>, memref<?x5x16xf32>
  kernel.return
}

// -----

kernel.schedule @attention_view_length(%qkv: memref<2x16x96xbf16>, %o: memref<2x4x16x8xbf16>) {
  // expected-error @+1 {{query_view must be [offset, 4 sizes, 4 strides]}}
  kernel.attention %qkv, %qkv, %qkv, %o scale 1.0 query_view [0, 2, 4, 16, 8, 1536, 8, 96] key_view [32, 2, 4, 16, 8, 1536, 8, 96, 1] value_view [64, 2, 4, 16, 8, 1536, 8, 96, 1] : memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x4x16x8xbf16>
  kernel.return
}

// -----

kernel.schedule @attention_view_outside(%qkv: memref<2x16x96xbf16>, %o: memref<2x4x16x8xbf16>) {
  // expected-error @+1 {{value_view reads outside its buffer 'memref<2x16x96xbf16>'}}
  kernel.attention %qkv, %qkv, %qkv, %o scale 1.0 query_view [0, 2, 4, 16, 8, 1536, 8, 96, 1] key_view [32, 2, 4, 16, 8, 1536, 8, 96, 1] value_view [96, 2, 4, 16, 8, 1536, 8, 96, 1] : memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x4x16x8xbf16>
  kernel.return
}

// -----

kernel.schedule @attention_view_rows(%qkv: memref<2x16x96xbf16>, %o: memref<2x4x16x8xbf16>) {
  // expected-error @+1 {{key_view must have an innermost stride of 1 and its offset and other strides in whole 16-byte rows}}
  kernel.attention %qkv, %qkv, %qkv, %o scale 1.0 query_view [0, 2, 4, 16, 8, 1536, 8, 96, 1] key_view [4, 2, 4, 16, 8, 1536, 8, 96, 1] value_view [64, 2, 4, 16, 8, 1536, 8, 96, 1] : memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x4x16x8xbf16>
  kernel.return
}

// -----

kernel.schedule @attention_view_unviewed(%qkv: memref<2x16x96xbf16>, %o: memref<2x4x16x8xbf16>) {
  // expected-error @+1 {{buffers must be static, dense, 4-d (or viewed) and of one element type, not 'memref<2x16x96xbf16>'}}
  kernel.attention %qkv, %qkv, %qkv, %o scale 1.0 query_view [0, 2, 4, 16, 8, 1536, 8, 96, 1] key_view [32, 2, 4, 16, 8, 1536, 8, 96, 1] : memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x16x96xbf16>, memref<2x4x16x8xbf16>
  kernel.return
}

// -----

kernel.schedule @attention_out_view(%q: memref<2x4x16x8xbf16>, %o: memref<2x16x32xbf16>) {
  // expected-error @+1 {{query 'memref<2x4x16x8xbf16>', key 'memref<2x4x16x8xbf16>', value 'memref<2x4x16x8xbf16>' and out 'memref<2x16x32xbf16>' do not make an attention}}
  kernel.attention %q, %q, %q, %o scale 1.0 out_view [0, 2, 2, 16, 8, 512, 8, 32, 1] : memref<2x4x16x8xbf16>, memref<2x4x16x8xbf16>, memref<2x4x16x8xbf16>, memref<2x16x32xbf16>
  kernel.return
}

// -----

kernel.schedule @alias_count(%w: memref<128x4x16xf32>) {
  // expected-error @+1 {{must keep the element type and count}}
  %a = kernel.alias %w : memref<128x4x16xf32> to memref<128x32xf32>
  kernel.return
}

// -----

kernel.schedule @alias_of_buffer(%w: memref<64xf32>) {
  %arena = kernel.arena : memref<256xi8>
  %t = kernel.buffer %arena[0] : memref<256xi8> to memref<64xf32>
  // expected-error @+1 {{aliases a schedule argument}}
  %a = kernel.alias %t : memref<64xf32> to memref<8x8xf32>
  kernel.return
}
