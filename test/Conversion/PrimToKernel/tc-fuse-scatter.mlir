// RUN: tc-opt %s -tc-fuse -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tc-opt %s --tc-fuse-pipeline --tc-gpu-kernels-pipeline --tc-cuda-binary-pipeline="format=isa" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=PTX
// REQUIRES: libdevice

// A KV cache's update (`k[:, :, pos] = v`) written into the cache's own
// buffer (`tc.written`: the graph's result #1 goes to argument #0): one
// kernel over the updates stores each where its position says, guarded
// against positions out of range; no copy of the cache, and the attention's
// read of the new cache reads the argument.

// CHECK-LABEL: kernel.kernel @step_fused_scatter_0
// CHECK-SAME: (%[[POS:.*]]: memref<1xi64>, %[[NEW:.*]]: memref<1x2x1x8xbf16>, %[[CACHE:.*]]: memref<1x2x16x8xbf16>) attributes {domain = array<i64: 1, 2, 1>}
// CHECK: %[[AT:.*]] = memref.load %[[POS]]
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[CACHE]]
// CHECK-NOT: kernel.kernel @step_copy
// CHECK: kernel.schedule @step(%[[C:.*]]: memref<1x2x16x8xbf16>, %[[P:.*]]: memref<1xi64>, %[[V:.*]]: memref<1x2x1x8xbf16>, %[[OUT:.*]]: memref<1x2x16xf32>)
// CHECK-NEXT: kernel.launch @step_fused_scatter_0(%[[P]], %[[V]], %[[C]])
// CHECK-NEXT: kernel.launch @step_fused_{{.*}}(%[[C]], %[[OUT]])
// CHECK-NEXT: kernel.return

// PTX: .entry step_fused_scatter_0
// PTX: st.global.{{.*}}b16

func.func @step(%cache: tensor<1x2x16x8xbf16> {tc.written = 1 : i64}, %pos: tensor<1xi64>, %v: tensor<1x2x1x8xbf16>) -> (tensor<1x2x16xf32>, tensor<1x2x16x8xbf16>) {
  %new = prim.scatter %cache[%pos] = %v, dim 2 : tensor<1x2x16x8xbf16>, tensor<1xi64>, tensor<1x2x1x8xbf16>
  %wide = prim.convert %new to f32 : tensor<1x2x16x8xbf16>
  %sum = prim.reduce sum %wide, dims [3] : tensor<1x2x16x8xf32>
  return %sum, %new : tensor<1x2x16xf32>, tensor<1x2x16x8xbf16>
}

// -----

// The same scatter over an argument another kernel reads too: the result is
// computed apart (a copy of the operand, then the updates) and copied into
// the argument after the last read of its old value.

// CHECK-LABEL: kernel.schedule @read_twice
// CHECK-SAME: (%[[C:.*]]: memref<1x2x16x8xf32>, %[[P:.*]]: memref<1xi64>, %[[V:.*]]: memref<1x2x1x8xf32>, %[[OUT:.*]]: memref<1x2x16x8xf32>)
// CHECK: kernel.launch @read_twice_copy_0(%[[C]], %[[NEW:[a-z0-9_]+]])
// CHECK-NEXT: kernel.launch @read_twice_fused_scatter_1(%[[P]], %[[V]], %[[NEW]])
// CHECK-NEXT: kernel.launch @read_twice_fused_add_2(%[[NEW]], %[[C]], %[[OUT]])
// CHECK-NEXT: kernel.launch @read_twice_copy_3(%[[NEW]], %[[C]])
// CHECK-NEXT: kernel.return
func.func @read_twice(%cache: tensor<1x2x16x8xf32> {tc.written = 1 : i64}, %pos: tensor<1xi64>, %v: tensor<1x2x1x8xf32>) -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  %new = prim.scatter %cache[%pos] = %v, dim 2 : tensor<1x2x16x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>
  %sum = prim.add %new, %cache : tensor<1x2x16x8xf32>
  return %sum, %new : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

// -----

// expected-error @+1 {{result 0 of type 'tensor<4xf32>' cannot be written into argument #0 of type 'tensor<8xf32>'}}
func.func @mismatch(%x: tensor<8xf32> {tc.written = 0 : i64}, %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = prim.add %y, %y : tensor<4xf32>
  return %z : tensor<4xf32>
}
