// REQUIRES: libdevice
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline="checks=true" | FileCheck %s
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa checks=true" | FileCheck %s --check-prefix=PTX

// The checks of a kernel with workgroup arrays (a layer norm's bf16 row of
// 1536 reduced by 6 warps, which meet in shared memory): the kernel's five
// buffers are checked; its workgroup arrays, block arguments after them,
// keep their alignment and get no check (tc-opt used to abort here, reading
// the argument attributes of arguments that have none).

// CHECK: gpu.func @ln_fused_{{.*}}(%arg0: memref<64x1536xbf16> {llvm.noalias}, {{.*}}) workgroup(%arg5 : memref<6xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}
// CHECK-COUNT-5: is not 16-byte aligned
// CHECK-NOT: argument #5
// CHECK-NOT: argument #6
// CHECK: gpu.return

// PTX: vprintf
// PTX-NOT: trap;

fx.graph @ln(%x: tensor<64x1536xbf16>, %r: tensor<64x1536xbf16>, %w: tensor<1536xbf16>, %b: tensor<1536xbf16>) -> tensor<64x1536xbf16> {
  %0 = fx.call_function "aten::add.Tensor"(%x, %r) : (tensor<64x1536xbf16>, tensor<64x1536xbf16>) -> tensor<64x1536xbf16>
  %1:3 = fx.call_function "aten::native_layer_norm"(%0, %w, %b) {args = {normalized_shape = array<i64: 1536>, eps = 1.0e-12 : f64}} : (tensor<64x1536xbf16>, tensor<1536xbf16>, tensor<1536xbf16>) -> (tensor<64x1536xbf16>, tensor<64x1xbf16>, tensor<64x1xbf16>)
  fx.output %1#0 : tensor<64x1536xbf16>
}
