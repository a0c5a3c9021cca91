// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A value that two kernels inline (a column sum, realized, and the output)
// is realized when computing one element of it reads at least four large
// tensors. Batch norm's backward scales its upstream gradient by a
// per-channel vector computed from other per-channel vectors (weight and
// `rsqrt(var + eps)`): that vector reads nothing large, so the scaled
// gradient (three large reads) is recomputed by both kernels rather than
// written to an activation-sized buffer and read twice.
// CHECK-LABEL: kernel.schedule @scale_from_vectors
// CHECK-NOT: memref.alloc
// CHECK: kernel.launch @scale_from_vectors_fused_{{.*}}reduce_0(%arg2, %arg0, %arg1, %arg3, %arg4, %arg6)
// CHECK-NEXT: kernel.launch @scale_from_vectors_fused_{{.*}}sub_1(%arg2, %arg0, %arg1, %arg3, %arg4, %arg6, %arg5)
// CHECK-NEXT: kernel.return
func.func @scale_from_vectors(%a: tensor<64x16xf32>, %b: tensor<64x16xf32>, %x: tensor<64x16xf32>, %w: tensor<16xf32>, %var: tensor<16xf32>) -> (tensor<64x16xf32>, tensor<16xf32>) {
  %zero = prim.constant dense<0.0> : tensor<64x16xf32>
  %pos = prim.compare gt, %x, %zero : tensor<64x16xf32>
  %g = prim.add %a, %b : tensor<64x16xf32>
  %m = prim.where %pos, %g, %zero : tensor<64x16xi1>, tensor<64x16xf32>
  %eps = prim.constant dense<1.0e-5> : tensor<16xf32>
  %ve = prim.add %var, %eps : tensor<16xf32>
  %rstd = prim.rsqrt %ve : tensor<16xf32>
  %scale = prim.mul %w, %rstd : tensor<16xf32>
  %sb = prim.broadcast_in_dim %scale, shape [64, 16], dims [1] : tensor<16xf32>
  %v = prim.mul %m, %sb : tensor<64x16xf32>
  %s = prim.reduce sum %v, dims [0] : tensor<64x16xf32>
  %smb = prim.broadcast_in_dim %s, shape [64, 16], dims [1] : tensor<16xf32>
  %out = prim.sub %v, %smb : tensor<64x16xf32>
  return %out, %s : tensor<64x16xf32>, tensor<16xf32>
}

// -----

// The same with a fourth large read in place of the vector: realized once,
// read by the column sum and the output.
// CHECK-LABEL: kernel.schedule @four_large_reads
// CHECK: %[[V:.*]] = memref.alloc() : memref<64x16xf32>
// CHECK-NEXT: kernel.launch @four_large_reads_fused_compare_add_where_mul_0(%arg2, %arg0, %arg1, %arg3, %[[V]])
// CHECK-NEXT: kernel.launch @four_large_reads_fused_reduce_1(%[[V]], %arg5)
// CHECK-NEXT: kernel.launch @four_large_reads_fused_sub_2(%[[V]], %arg5, %arg4)
func.func @four_large_reads(%a: tensor<64x16xf32>, %b: tensor<64x16xf32>, %x: tensor<64x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<16xf32>) {
  %zero = prim.constant dense<0.0> : tensor<64x16xf32>
  %pos = prim.compare gt, %x, %zero : tensor<64x16xf32>
  %g = prim.add %a, %b : tensor<64x16xf32>
  %m = prim.where %pos, %g, %zero : tensor<64x16xi1>, tensor<64x16xf32>
  %v = prim.mul %m, %c : tensor<64x16xf32>
  %s = prim.reduce sum %v, dims [0] : tensor<64x16xf32>
  %smb = prim.broadcast_in_dim %s, shape [64, 16], dims [1] : tensor<16xf32>
  %out = prim.sub %v, %smb : tensor<64x16xf32>
  return %out, %s : tensor<64x16xf32>, tensor<16xf32>
}

// -----

// Reads are counted by tensor, not by path: GELU's tanh argument
// `x + 0.044715 * x * x * x` reaches x along four paths but loads it once
// per element, so its two readers (the column sum and the output, as the
// recomputed activation and the GELU gradient in a backward) each
// compute it from x: no buffer.
// CHECK-LABEL: kernel.schedule @one_tensor_many_paths
// CHECK-NOT: memref.alloc
// CHECK: kernel.launch @one_tensor_many_paths_fused_{{.*}}reduce_0(%arg0, %arg2)
// CHECK-NEXT: kernel.launch @one_tensor_many_paths_fused_{{.*}}_1(%arg0, %arg2, %arg1)
// CHECK-NEXT: kernel.return
func.func @one_tensor_many_paths(%x: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<16xf32>) {
  %c = prim.constant dense<0.044715> : tensor<64x16xf32>
  %x2 = prim.mul %x, %x : tensor<64x16xf32>
  %x3 = prim.mul %x2, %x : tensor<64x16xf32>
  %cx3 = prim.mul %x3, %c : tensor<64x16xf32>
  %arg = prim.add %x, %cx3 : tensor<64x16xf32>
  %t = prim.tanh %arg : tensor<64x16xf32>
  %s = prim.reduce sum %t, dims [0] : tensor<64x16xf32>
  %smb = prim.broadcast_in_dim %s, shape [64, 16], dims [1] : tensor<16xf32>
  %out = prim.sub %t, %smb : tensor<64x16xf32>
  return %out, %s : tensor<64x16xf32>, tensor<16xf32>
}
