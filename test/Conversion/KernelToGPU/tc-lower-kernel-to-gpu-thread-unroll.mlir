// RUN: tc-opt %s -tc-lower-kernel-to-gpu -canonicalize -cse -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-lower-kernel-to-gpu="thread-unroll=1" -canonicalize -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: tc-opt %s -tc-lower-kernel-to-gpu="column-groups=0" -canonicalize -split-input-file | FileCheck %s --check-prefix=SINGLE

// A column reduction over a channels-last tensor's 196 pixels: a thread per
// (image, channel), each folding its column alone. The loop is unrolled
// (the loads of several iterations issued before they are combined, in
// order) by thread-unroll (4), doubled while all threads' loads of that
// many iterations stay under the bytes the GPU needs in flight (4 MiB):
// 10240 threads of 2-byte loads take 16, the most; the remaining 4 pixels
// are a loop of their own. thread-unroll=1 keeps one load per iteration.
// CHECK-LABEL: gpu.func @columns
// CHECK: scf.for %{{.*}} = %c0 to %c192 step %c16 iter_args
// CHECK-COUNT-16: memref.load %arg0
// CHECK-NOT: memref.load %arg0
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %c192 to %c196 step %c1 iter_args
// ONE-LABEL: gpu.func @columns
// ONE: scf.for %{{.*}} = %c0 to %c196 step %c1 iter_args
// ONE-COUNT-1: memref.load %arg0
// ONE-NOT: memref.load %arg0
// ONE: scf.yield
kernel.kernel @columns(%x: memref<8x196x1280xbf16>, %out: memref<8x1280xf32>) attributes {domain = array<i64: 8, 1280>} {
  %n = kernel.index 0
  %c = kernel.index 1
  %c196 = arith.constant 196 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c196 init %zero : f32 {
  ^bb0(%p: index):
    %v = memref.load %x[%n, %p, %c] : memref<8x196x1280xbf16>
    %w = arith.extf %v : bf16 to f32
    %s = arith.mulf %w, %w : f32
    kernel.yield %s : f32
  }
  memref.store %sum, %out[%n, %c] : memref<8x1280xf32>
  kernel.return
}

// -----

// 256 images: enough threads for column groups, each thread four
// neighbouring channels (their loads of a pixel one 16-byte load), 81920
// threads whose loads of thread-unroll's 4 pixels keep 5.2 MB in flight.
// Without groups, a thread per channel stays at 4 too.
// CHECK-LABEL: gpu.func @many_columns
// CHECK-SAME: known_grid_size = array<i32: 320, 1, 1>
// CHECK: scf.for %{{.*}} = %c0 to %c196 step %c4 iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK-COUNT-16: memref.load %arg0
// CHECK-NOT: memref.load %arg0
// CHECK: scf.yield
// CHECK-COUNT-4: memref.store
// SINGLE-LABEL: gpu.func @many_columns
// SINGLE-SAME: known_grid_size = array<i32: 1280, 1, 1>
// SINGLE: scf.for %{{.*}} = %c0 to %c196 step %c4 iter_args
// SINGLE-COUNT-4: memref.load %arg0
// SINGLE-NOT: memref.load %arg0
// SINGLE: scf.yield
kernel.kernel @many_columns(%x: memref<256x196x1280xf32>, %out: memref<256x1280xf32>) attributes {domain = array<i64: 256, 1280>} {
  %n = kernel.index 0
  %c = kernel.index 1
  %c196 = arith.constant 196 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c196 init %zero : f32 {
  ^bb0(%p: index):
    %v = memref.load %x[%n, %p, %c] : memref<256x196x1280xf32>
    %s = arith.mulf %v, %v : f32
    kernel.yield %s : f32
  }
  memref.store %sum, %out[%n, %c] : memref<256x1280xf32>
  kernel.return
}

// -----

// A split column sum's partial kernel (chunks x channels, the partials
// stored in their channel's row), two sibling sums of bf16 products: column
// groups of 8 channels (16-byte loads), the copies' two sums one loop of 16
// accumulators reading each element once, 40960 threads unrolled by 4.
// (A kernel that would have fewer than 32768 groups keeps a thread per
// column: GRN's norm at ConvNeXt-V2's batch 128 read 0.7 TB/s in groups.)
// CHECK-LABEL: gpu.func @column_partials
// CHECK-SAME: known_grid_size = array<i32: 160, 1, 1>
// CHECK: scf.for %{{.*}} = %c0 to %c196 step %c4 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-64: memref.load
// CHECK-NOT: memref.load
// CHECK: scf.yield
// CHECK-COUNT-16: memref.store
// SINGLE-LABEL: gpu.func @column_partials
// SINGLE-SAME: known_grid_size = array<i32: 1280, 1, 1>
kernel.kernel @column_partials(%dy: memref<50176x1280xbf16>, %x: memref<50176x1280xbf16>, %p0: memref<1280x256xf32>, %p1: memref<1280x256xf32>) attributes {domain = array<i64: 256, 1280>} {
  %s = kernel.index 0
  %c = kernel.index 1
  %n = arith.constant 196 : index
  %zero = arith.constant 0.0 : f32
  %r0 = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %base = arith.muli %s, %n : index
    %row = arith.addi %base, %i : index
    %a = memref.load %dy[%row, %c] : memref<50176x1280xbf16>
    %b = memref.load %x[%row, %c] : memref<50176x1280xbf16>
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %m = arith.mulf %af, %bf : f32
    kernel.yield %m : f32
  }
  %r1 = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %base = arith.muli %s, %n : index
    %row = arith.addi %base, %i : index
    %a = memref.load %dy[%row, %c] : memref<50176x1280xbf16>
    %af = arith.extf %a : bf16 to f32
    kernel.yield %af : f32
  }
  memref.store %r0, %p0[%c, %s] : memref<1280x256xf32>
  memref.store %r1, %p1[%c, %s] : memref<1280x256xf32>
  kernel.return
}

// -----

// A reduction whose loads take the channel as an outer index (the image
// innermost): neighbouring channels are not neighbouring elements, so a
// thread per channel stays.
// CHECK-LABEL: gpu.func @transposed_columns
// CHECK-SAME: known_grid_size = array<i32: 1280, 1, 1>
kernel.kernel @transposed_columns(%x: memref<196x1280x256xf32>, %out: memref<256x1280xf32>) attributes {domain = array<i64: 256, 1280>} {
  %n = kernel.index 0
  %c = kernel.index 1
  %c196 = arith.constant 196 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c196 init %zero : f32 {
  ^bb0(%p: index):
    %v = memref.load %x[%p, %c, %n] : memref<196x1280x256xf32>
    kernel.yield %v : f32
  }
  memref.store %sum, %out[%n, %c] : memref<256x1280xf32>
  kernel.return
}
