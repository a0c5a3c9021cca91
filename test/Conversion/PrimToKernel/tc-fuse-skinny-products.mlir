// RUN: tc-opt %s -split-input-file '--tc-cuda-fuse-pipeline=chip=sm_90' | FileCheck %s
// RUN: tc-opt %s -split-input-file '--tc-cuda-fuse-pipeline=chip=sm_90 skinny-rows=0' | FileCheck %s --check-prefix=GEMM

// A decode step's SiLU-gated MLP of one row (tc-skinny-products, then
// tc-fuse): the RMS norm before it is realized by its row kernel (not run
// again for each output of the products that read it); the gate and up
// products and the gate's SiLU are one kernel over the 512 outputs, each a
// dot product of the realized row with a weight row; the down product and
// the residual added to it one kernel over its 256 outputs, realized
// before the next norm's statistics (which would otherwise run it in their
// own row kernel).
// CHECK: kernel.kernel @mlp_fused_div_reduce_convert_mul_1({{.*}}) attributes {domain = array<i64: 1, 512>}
// CHECK-COUNT-2: kernel.reduce add %c256
// CHECK: kernel.kernel @mlp_fused_mul_reduce_convert_add_2({{.*}}) attributes {domain = array<i64: 1, 256>}
// CHECK-LABEL: kernel.schedule @mlp
// CHECK: kernel.launch @mlp_fused_add_rsqrt_convert_mul_0(%arg0, %arg1, %[[N:.*]]) :
// CHECK: kernel.launch @mlp_fused_div_reduce_convert_mul_1(%[[N]], %arg2, %arg3, %[[G:.*]]) :
// CHECK: kernel.launch @mlp_fused_mul_reduce_convert_add_2(%arg0, %[[G]], %arg4, %arg5) :
// CHECK: kernel.launch @mlp_fused_convert_mul_reduce_3(%arg5, %arg6) :
// CHECK-NOT: kernel.gemm
// CHECK: kernel.return

// Off, the three products are cuBLAS GEMMs.
// GEMM-LABEL: kernel.schedule @mlp
// GEMM-COUNT-3: kernel.gemm
func.func @mlp(%h: tensor<1x256xbf16>, %g: tensor<256xbf16>, %w1: tensor<512x256xbf16>, %w3: tensor<512x256xbf16>, %w2: tensor<256x512xbf16>) -> (tensor<1x256xbf16>, tensor<1xf32>) {
  %h32 = prim.convert %h to f32 : tensor<1x256xbf16>
  %sq = prim.mul %h32, %h32 : tensor<1x256xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<1x256xf32>
  %eps = prim.constant dense<1.0e-05> : tensor<1xf32>
  %v = prim.add %ss, %eps : tensor<1xf32>
  %r = prim.rsqrt %v : tensor<1xf32>
  %rb = prim.broadcast_in_dim %r, shape [1, 256], dims [0] : tensor<1xf32>
  %n32 = prim.mul %h32, %rb : tensor<1x256xf32>
  %n16 = prim.convert %n32 to bf16 : tensor<1x256xf32>
  %gb = prim.broadcast_in_dim %g, shape [1, 256], dims [1] : tensor<256xbf16>
  %n = prim.mul %n16, %gb : tensor<1x256xbf16>
  %t1 = prim.permute %w1, [1, 0] : tensor<512x256xbf16>
  %a = prim.dot %n, %t1, batch [] x [], contract [1] x [0] : tensor<1x256xbf16>, tensor<256x512xbf16>
  %t3 = prim.permute %w3, [1, 0] : tensor<512x256xbf16>
  %b = prim.dot %n, %t3, batch [] x [], contract [1] x [0] : tensor<1x256xbf16>, tensor<256x512xbf16>
  %na = prim.neg %a : tensor<1x512xbf16>
  %e = prim.exp %na : tensor<1x512xbf16>
  %one = prim.constant dense<1.0> : tensor<1x512xbf16>
  %d = prim.add %e, %one : tensor<1x512xbf16>
  %s = prim.div %a, %d : tensor<1x512xbf16>
  %gate = prim.mul %s, %b : tensor<1x512xbf16>
  %t2 = prim.permute %w2, [1, 0] : tensor<256x512xbf16>
  %o = prim.dot %gate, %t2, batch [] x [], contract [1] x [0] : tensor<1x512xbf16>, tensor<512x256xbf16>
  %y = prim.add %h, %o : tensor<1x256xbf16>
  %y32 = prim.convert %y to f32 : tensor<1x256xbf16>
  %y2 = prim.mul %y32, %y32 : tensor<1x256xf32>
  %ys = prim.reduce sum %y2, dims [1] : tensor<1x256xf32>
  return %y, %ys : tensor<1x256xbf16>, tensor<1xf32>
}

// -----

// A weight dequantized in the forward (torchao's weight-only int8: int8
// values times one scale per output channel) is broadcast along no
// dimension larger than 1: each of its elements is read once, so it is not
// realized, and the product's one kernel reads the int8 weight itself.
// CHECK: kernel.kernel @dequantized_fused_mul_reduce_convert_0(%arg0: memref<1x256xbf16>, %arg1: memref<512x256xi8>, %arg2: memref<512xbf16>, %arg3: memref<1x512xbf16>) attributes {domain = array<i64: 1, 512>}
// CHECK: arith.sitofp %{{.*}} : i8 to bf16
// CHECK-LABEL: kernel.schedule @dequantized
// CHECK-NEXT: kernel.launch @dequantized_fused_mul_reduce_convert_0(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: kernel.return
func.func @dequantized(%x: tensor<1x256xbf16>, %q: tensor<512x256xi8>, %s: tensor<512xbf16>) -> tensor<1x512xbf16> {
  %w16 = prim.convert %q to bf16 : tensor<512x256xi8>
  %sb = prim.broadcast_in_dim %s, shape [512, 256], dims [0] : tensor<512xbf16>
  %w = prim.mul %w16, %sb : tensor<512x256xbf16>
  %t = prim.permute %w, [1, 0] : tensor<512x256xbf16>
  %0 = prim.dot %x, %t, batch [] x [], contract [1] x [0] : tensor<1x256xbf16>, tensor<256x512xbf16>
  return %0 : tensor<1x512xbf16>
}
