// RUN: tc-opt %s -tc-fuse="realize-broadcast-sources=true" -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s --check-prefix=OFF

// Batch norm's per-channel scale, channels-last: the square root and the
// division are computed once per channel into a buffer of their own, not
// at each of the 2 x 8 x 8 points the inner loop broadcasts them to.
// CHECK-LABEL: kernel.kernel @scale_fused_add_rsqrt_{{[0-9]+}}
// CHECK-SAME: memref<16xf32>
// CHECK-SAME: attributes {domain = array<i64>}
// CHECK: kernel.schedule @scale
// CHECK: %[[S:.*]] = memref.alloc() : memref<16xf32>
// CHECK: kernel.launch @scale_fused_add_rsqrt_{{[0-9]+}}(%{{.*}}, %[[S]])
// CHECK: kernel.launch @scale_fused_mul_{{[0-9]+}}(%{{.*}}, %[[S]], %{{.*}})
// OFF-LABEL: kernel.schedule @scale
// OFF-NOT: memref.alloc
// OFF: kernel.launch
// OFF-NEXT: kernel.return
func.func @scale(%x: tensor<2x8x8x16xf32>, %var: tensor<16xf32>) -> tensor<2x8x8x16xf32> {
  %eps = prim.constant dense<1.0e-5> : tensor<16xf32>
  %v = prim.add %var, %eps : tensor<16xf32>
  %r = prim.rsqrt %v : tensor<16xf32>
  %b = prim.broadcast_in_dim %r, shape [2, 8, 8, 16], dims [3] : tensor<16xf32>
  %y = prim.mul %x, %b : tensor<2x8x8x16xf32>
  return %y : tensor<2x8x8x16xf32>
}

// -----

// A row's scale (constant along the inner loop, which the compiler hoists
// it out of) and a per-column cast (no division) stay inline: one kernel.
// CHECK-LABEL: kernel.schedule @rows
// CHECK-NOT: memref.alloc
// CHECK: kernel.launch
// CHECK-NEXT: kernel.return
func.func @rows(%x: tensor<64x256xf32>, %var: tensor<64xf32>, %w: tensor<256xf16>) -> tensor<64x256xf32> {
  %r = prim.rsqrt %var : tensor<64xf32>
  %b = prim.broadcast_in_dim %r, shape [64, 256], dims [0] : tensor<64xf32>
  %c = prim.convert %w to f32 : tensor<256xf16>
  %cb = prim.broadcast_in_dim %c, shape [64, 256], dims [1] : tensor<256xf32>
  %y = prim.mul %x, %b : tensor<64x256xf32>
  %z = prim.mul %y, %cb : tensor<64x256xf32>
  return %z : tensor<64x256xf32>
}

// -----

// Batch norm's per-channel shift, bias - mean * scale: no division, but
// three tensors read (and, from bf16, converted) at each point; it is
// computed once per channel too.
// CHECK-LABEL: kernel.kernel @shift_fused_convert_mul_sub_{{[0-9]+}}
// CHECK-SAME: attributes {domain = array<i64>}
// CHECK: kernel.schedule @shift
// CHECK: %[[S:.*]] = memref.alloc() : memref<16xf32>
// CHECK: kernel.launch @shift_fused_convert_mul_sub_{{[0-9]+}}(%{{.*}}, %{{.*}}, %{{.*}}, %[[S]])
// CHECK: kernel.launch @shift_fused_{{.*}}(%{{.*}}, %{{.*}}, %[[S]], %{{.*}})
func.func @shift(%x: tensor<2x8x8x16xf32>, %scale: tensor<16xf32>, %mean: tensor<16xbf16>, %bias: tensor<16xbf16>) -> tensor<2x8x8x16xf32> {
  %m = prim.convert %mean to f32 : tensor<16xbf16>
  %b = prim.convert %bias to f32 : tensor<16xbf16>
  %ms = prim.mul %m, %scale : tensor<16xf32>
  %shift = prim.sub %b, %ms : tensor<16xf32>
  %sb = prim.broadcast_in_dim %shift, shape [2, 8, 8, 16], dims [3] : tensor<16xf32>
  %scb = prim.broadcast_in_dim %scale, shape [2, 8, 8, 16], dims [3] : tensor<16xf32>
  %y = prim.mul %x, %scb : tensor<2x8x8x16xf32>
  %z = prim.add %y, %sb : tensor<2x8x8x16xf32>
  return %z : tensor<2x8x8x16xf32>
}

// -----

// GRN's scale per image and channel, `n / (mean(n) + eps)` of the channels'
// norms: a division by a computed value is some 20 instructions, so GPUs
// realize it too (the OFF run: no realize-broadcast-sources, the GPU's
// choice) instead of dividing again at each of the 8 x 8 pixels; the
// rsqrt above stays inline there.
// CHECK-LABEL: kernel.schedule @grn_scale
// OFF-LABEL: kernel.schedule @grn_scale
// OFF: %[[S:.*]] = memref.alloc() : memref<2x1x1x16xf32>
// OFF: kernel.launch @grn_scale_fused_{{.*}}div{{.*}}(%{{.*}}, %[[S]])
// OFF: kernel.launch @grn_scale_fused_{{.*}}(%{{.*}}, %[[S]], %{{.*}})
// OFF-NEXT: kernel.return
func.func @grn_scale(%x: tensor<2x8x8x16xf32>, %norms: tensor<2x1x1x16xf32>, %mean: tensor<2x1x1x1xf32>) -> tensor<2x8x8x16xf32> {
  %eps = prim.constant dense<1.0e-6> : tensor<2x1x1x1xf32>
  %m = prim.add %mean, %eps : tensor<2x1x1x1xf32>
  %mb = prim.broadcast_in_dim %m, shape [2, 1, 1, 16], dims [0, 1, 2, 3] : tensor<2x1x1x1xf32>
  %s = prim.div %norms, %mb : tensor<2x1x1x16xf32>
  %b = prim.broadcast_in_dim %s, shape [2, 8, 8, 16], dims [0, 1, 2, 3] : tensor<2x1x1x16xf32>
  %y = prim.mul %x, %b : tensor<2x8x8x16xf32>
  return %y : tensor<2x8x8x16xf32>
}

// -----

// Squeeze-and-excitation's gate, as tc-channels-last-convolutions leaves
// it: `sigmoid(s)` of [N, C, 1, 1], permuted to [N, 1, 1, C], then
// broadcast over the pixels. The rule looks through the permute: the
// exponential and the division run once per image and channel, not at
// each pixel (the GPU's rule is unchanged: OFF keeps one kernel).
// CHECK-LABEL: kernel.schedule @gate
// CHECK: %[[G:.*]] = memref.alloc() : memref<2x16x1x1xf32>
// CHECK: kernel.launch @gate_fused_neg_exp_add_div_{{[0-9]+}}(%arg1, %[[G]])
// CHECK: kernel.launch @gate_fused_mul_{{[0-9]+}}(%arg0, %[[G]], %{{.*}})
// OFF-LABEL: kernel.schedule @gate
// OFF: kernel.launch
// OFF-NEXT: kernel.return
func.func @gate(%x: tensor<2x8x8x16xf32>, %s: tensor<2x16x1x1xf32>) -> tensor<2x8x8x16xf32> {
  %one = prim.constant dense<1.0> : tensor<2x16x1x1xf32>
  %n = prim.neg %s : tensor<2x16x1x1xf32>
  %e = prim.exp %n : tensor<2x16x1x1xf32>
  %d = prim.add %e, %one : tensor<2x16x1x1xf32>
  %g = prim.div %one, %d : tensor<2x16x1x1xf32>
  %p = prim.permute %g, [0, 2, 3, 1] : tensor<2x16x1x1xf32>
  %b = prim.broadcast_in_dim %p, shape [2, 8, 8, 16], dims [0, 1, 2, 3] : tensor<2x1x1x16xf32>
  %y = prim.mul %x, %b : tensor<2x8x8x16xf32>
  return %y : tensor<2x8x8x16xf32>
}
