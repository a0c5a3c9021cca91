// REQUIRES: libdevice
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline | FileCheck %s --check-prefix=GPU

// A residual add + layer norm in bf16 (as BERT-base's, at hidden 1536: 8
// elements a thread): a row per block of 192 threads, 6 warps, two block
// reductions (mean, variance), each through its own 6-slot shared array.
// The backend reads the slots with ld.shared.v4.b32 + v2: each array must
// be 16-byte aligned. At the element's alignment (4) the second array
// started 24 bytes in, and the v4 read was a misaligned address that killed
// the CUDA context (BERT, ViT and GPT-2 in bf16 on the H100).

// GPU: gpu.func
// GPU-SAME: workgroup(%{{.*}} : memref<6xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<6xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})

// CHECK: .maxntid 192, 1, 1
// CHECK-NOT: .shared .align 4
// CHECK-SAME: .shared .align 16 .b8 [[A:__wg_[a-z_0-9]+]][24];
// CHECK-SAME: .shared .align 16 .b8 [[B:__wg_[a-z_0-9]+]][24];
// CHECK-SAME: ld.shared.v4.b32 {{[^,]*}}, {{[^,]*}}, {{[^,]*}}, {{[^]]*}}}, [[[A]]]
// CHECK-SAME: ld.shared.v4.b32 {{[^,]*}}, {{[^,]*}}, {{[^,]*}}, {{[^]]*}}}, [[[B]]]

fx.graph @main(%x: tensor<64x1536xbf16>, %r: tensor<64x1536xbf16>, %w: tensor<1536xbf16>, %b: tensor<1536xbf16>) -> tensor<64x1536xbf16> {
  %add = fx.call_function "aten::add.Tensor"(%x, %r) : (tensor<64x1536xbf16>, tensor<64x1536xbf16>) -> tensor<64x1536xbf16>
  %ln:3 = fx.call_function "aten::native_layer_norm"(%add, %w, %b) {args = {normalized_shape = array<i64: 1536>, eps = 1.0e-12 : f64}} : (tensor<64x1536xbf16>, tensor<1536xbf16>, tensor<1536xbf16>) -> (tensor<64x1536xbf16>, tensor<64x1xbf16>, tensor<64x1xbf16>)
  fx.output %ln#0 : tensor<64x1536xbf16>
}
