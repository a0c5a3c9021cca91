// RUN: tc-opt %s -tc-fuse | FileCheck %s
// RUN: tc-opt %s --tc-fuse-pipeline --tc-gpu-kernels-pipeline | FileCheck %s --check-prefix=GPU
// RUN: tc-opt %s --tc-fuse-pipeline --tc-gpu-kernels-pipeline --tc-cuda-binary-pipeline="format=isa" | FileCheck %s --check-prefix=PTX
// REQUIRES: libdevice

// An embedding's gradient: the output's gradient rows (bf16, summed in f32)
// added into the rows of the table its indices select. Two kernels write
// the table's gradient: zeros over its rows, then one atomic add per
// update element over the updates' rows; nothing is proportional to
// positions x rows (the one-hot product this replaces).

// CHECK-LABEL: kernel.kernel @grad_fused_convert_scatter_add_0
// CHECK-SAME: (%[[Z:.*]]: memref<1000x64xf32>) attributes {domain = array<i64: 1000>}
// CHECK: kernel.loop
// CHECK: memref.store %{{.*}}, %[[Z]]
// CHECK-LABEL: kernel.kernel @grad_fused_convert_scatter_add_1
// CHECK-SAME: (%[[U:.*]]: memref<128x64xbf16>, %[[I:.*]]: memref<128xi64>, %[[O:.*]]: memref<1000x64xf32>) attributes {domain = array<i64: 128>}
// CHECK: %[[ROW:.*]] = memref.load %[[I]]
// CHECK: kernel.loop
// CHECK: arith.extf
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: memref.atomic_rmw addf %{{.*}}, %[[O]]
// CHECK: kernel.schedule @grad
// CHECK: kernel.launch @grad_fused_convert_scatter_add_0(%[[BUF:.*]])
// CHECK-NEXT: kernel.launch @grad_fused_convert_scatter_add_1(%{{.*}}, %{{.*}}, %[[BUF]])

// GPU: gpu.func @grad_fused_convert_scatter_add_1
// GPU: memref.atomic_rmw addf

// PTX: .entry grad_fused_convert_scatter_add_1
// PTX-SAME: {{(atom|red)}}.global.add.f32

func.func @grad(%rows: tensor<128x64xbf16>, %indices: tensor<128xi64>) -> tensor<1000x64xbf16> {
  %wide = prim.convert %rows to f32 : tensor<128x64xbf16>
  %sum = prim.scatter_add %wide[%indices] : tensor<128x64xf32>, tensor<128xi64> -> tensor<1000x64xf32>
  %out = prim.convert %sum to bf16 : tensor<1000x64xf32>
  return %out : tensor<1000x64xbf16>
}
