// RUN: tc-opt %s -tc-lower-kernel-to-gpu="vector-width=1 min-row-blocks=1" -canonicalize | FileCheck %s --check-prefix=SCALAR
// RUN: tc-opt %s -tc-lower-kernel-to-gpu="replicate-trig=false min-row-blocks=1" -canonicalize | FileCheck %s --check-prefix=NOTRIG
// RUN: tc-opt %s -tc-lower-kernel-to-gpu="max-block-size=256 min-row-blocks=1" -canonicalize | FileCheck %s --check-prefix=NARROW
// RUN: tc-opt %s -tc-lower-kernel-to-gpu -canonicalize | FileCheck %s --check-prefix=FEWROWS

// The schedule knobs (what an autotuner varies). vector-width=1: one
// element per thread and iteration, the constant-trip strided loop unrolled
// by 4 instead. replicate-trig=false: a body with sin is neither vectorized
// nor unrolled. By default a pointwise row takes 2048 / 4 = 512 threads;
// max-block-size=256 caps that, the thread taking 2 groups of 4. (Each
// runs with min-row-blocks=1.) By default, 4 rows are fewer than
// min-row-blocks: one thread per point, 32 blocks instead of 4.
// FEWROWS: kernel.launch @tc_kernels::@rows({{.*}}) {block = 256 : i64, grid = 32 : i64}
// FEWROWS: gpu.block_id
// FEWROWS-NOT: scf.for
// FEWROWS: math.sin
// SCALAR: kernel.launch @tc_kernels::@rows({{.*}}) {block = 512 : i64, grid = 4 : i64}
// SCALAR-COUNT-4: math.sin
// SCALAR-NOT: math.sin
// NOTRIG: kernel.launch @tc_kernels::@rows({{.*}}) {block = 512 : i64, grid = 4 : i64}
// NOTRIG: scf.for
// NOTRIG-COUNT-1: math.sin
// NOTRIG-NOT: math.sin
// NARROW: kernel.launch @tc_kernels::@rows({{.*}}) {block = 256 : i64, grid = 4 : i64}
// NARROW: scf.for %{{.*}} = %c0 to %c2 step %c1
// NARROW-COUNT-4: math.sin
// NARROW-NOT: math.sin
kernel.kernel @rows(%x: memref<4x2048xf32>, %out: memref<4x2048xf32>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %c2048 = arith.constant 2048 : index
  kernel.loop %c2048 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<4x2048xf32>
    %s = math.sin %v : f32
    memref.store %s, %out[%i, %k] : memref<4x2048xf32>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<4x2048xf32>, %out: memref<4x2048xf32>) {
  kernel.launch @rows(%x, %out) : memref<4x2048xf32>, memref<4x2048xf32>
  kernel.return
}
