// RUN: tc-opt %s -split-input-file -tc-lower-kernel-to-gpu="min-row-blocks=1" -canonicalize | FileCheck %s

// Long pointwise rows: one block per row; each thread takes 4 neighbouring
// elements (one 16-byte access once lowered) at (tid + i * block) * 4, the
// four copies of the body interleaved op by op (loads side by side, then
// the tanh's, then the stores). Buffers never alias and are 16-byte
// aligned. The launch names the gpu.func and carries its configuration.
// CHECK: module attributes {gpu.container_module}
// CHECK: kernel.launch @tc_kernels::@tanh(%{{.*}}, %{{.*}}) {block = 128 : i64, grid = 6 : i64}
// CHECK: gpu.module @tc_kernels
// CHECK: gpu.func @tanh(%[[X:.*]]: memref<2x3x512xf32> {llvm.align = 16 : i64, llvm.noalias}, %[[OUT:.*]]: memref<2x3x512xf32> {llvm.align = 16 : i64, llvm.noalias}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 6, 1, 1>}
// CHECK-DAG: %[[TID:.*]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.*]] = gpu.block_id x
// CHECK-DAG: %[[J:.*]] = arith.remui %[[BID]], %c3
// CHECK-DAG: %[[I:.*]] = arith.divui %[[BID]], %c3
// CHECK: %[[K0:.*]] = arith.muli %[[TID]], %c4
// CHECK: %[[K1:.*]] = arith.addi %[[K0]], %c1
// CHECK: memref.load %[[X]][%[[I]], %[[J]], %[[K0]]]
// CHECK-NEXT: memref.load %[[X]][%[[I]], %[[J]], %[[K1]]]
// CHECK-NEXT: memref.load %[[X]]
// CHECK-NEXT: memref.load %[[X]]
// CHECK-COUNT-4: math.tanh
// CHECK-COUNT-4: memref.store
// CHECK-NOT: memref.load
// CHECK-NOT: kernel.kernel
kernel.kernel @tanh(%x: memref<2x3x512xf32>, %out: memref<2x3x512xf32>) attributes {domain = array<i64: 2, 3>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %c512 = arith.constant 512 : index
  kernel.loop %c512 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %j, %k] : memref<2x3x512xf32>
    %t = math.tanh %v : f32
    memref.store %t, %out[%i, %j, %k] : memref<2x3x512xf32>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<2x3x512xf32>, %out: memref<2x3x512xf32>) {
  kernel.launch @tanh(%x, %out) : memref<2x3x512xf32>, memref<2x3x512xf32>
  kernel.return
}

// -----

// Short pointwise rows (a convolution's 56-wide rows): the row's loop joins
// the domain, one thread per point over all 4 * 64 * 56 of them, each
// computing what the row computed once (the channel's scale).
// CHECK: kernel.launch @tc_kernels::@scale_rows(%{{.*}}) {block = 256 : i64, grid = 56 : i64}
// CHECK: gpu.func @scale_rows(%[[X:[^:]*]]: memref<4x64x56xf32> {{.*}}, %[[S:[^:]*]]: memref<64xf32> {{.*}}, %[[OUT:[^:]*]]: memref<4x64x56xf32>
// CHECK: %[[LINEAR:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LINEAR]], %c14336
// CHECK: scf.if %[[IN]]
// CHECK-DAG: %[[K:.*]] = arith.remui %[[LINEAR]], %c56
// CHECK-DAG: %[[ROW:.*]] = arith.divui %[[LINEAR]], %c56
// CHECK-DAG: %[[C:.*]] = arith.remui %[[ROW]], %c64
// CHECK-DAG: %[[I:.*]] = arith.divui %[[ROW]], %c64
// CHECK: memref.load %[[S]][%[[C]]]
// CHECK: math.rsqrt
// CHECK: memref.load %[[X]][%[[I]], %[[C]], %[[K]]]
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I]], %[[C]], %[[K]]]
// CHECK-NOT: scf.for
kernel.kernel @scale_rows(%x: memref<4x64x56xf32>, %s: memref<64xf32>, %out: memref<4x64x56xf32>) attributes {domain = array<i64: 4, 64>} {
  %i = kernel.index 0
  %c = kernel.index 1
  %c56 = arith.constant 56 : index
  %scale = memref.load %s[%c] : memref<64xf32>
  %r = math.rsqrt %scale : f32
  kernel.loop %c56 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %c, %k] : memref<4x64x56xf32>
    %y = arith.mulf %v, %r : f32
    memref.store %y, %out[%i, %c, %k] : memref<4x64x56xf32>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<4x64x56xf32>, %s: memref<64xf32>, %out: memref<4x64x56xf32>) {
  kernel.launch @scale_rows(%x, %s, %out) : memref<4x64x56xf32>, memref<64xf32>, memref<4x64x56xf32>
  kernel.return
}

// -----

// A channels-first gradient written channels-last (visformer's backward):
// its loop walks the input across its rows, which runs a thread per row;
// with 128 * 7 * 7 = 6272 rows that left the GPU nearly idle, each thread
// looping over 768 channels. Fewer than 8192 such rows join the loop to
// the domain: a thread per group of 4 elements, 1204224 of them (grid
// 4704 of 256), writing along the channels. 16384 rows keep a thread each.
// CHECK: kernel.launch @tc_kernels::@to_channels_last(%{{.*}}) {block = 256 : i64, grid = 4704 : i64}
// CHECK: kernel.launch @tc_kernels::@many_rows_to_channels_last(%{{.*}}) {block = 256 : i64, grid = 64 : i64}
// CHECK: gpu.func @to_channels_last(
// CHECK-NOT: scf.for
// CHECK: gpu.return
// CHECK: gpu.func @many_rows_to_channels_last(
// CHECK: scf.for
kernel.kernel @to_channels_last(%x: memref<128x768x7x7xf32>, %out: memref<128x7x7x768xbf16>) attributes {domain = array<i64: 128, 7, 7>} {
  %c768 = arith.constant 768 : index
  %n = kernel.index 0
  %h = kernel.index 1
  %w = kernel.index 2
  kernel.loop %c768 {
  ^bb0(%c: index):
    %v = memref.load %x[%n, %c, %h, %w] : memref<128x768x7x7xf32>
    %y = arith.truncf %v : f32 to bf16
    memref.store %y, %out[%n, %h, %w, %c] : memref<128x7x7x768xbf16>
  }
  kernel.return
}
kernel.kernel @many_rows_to_channels_last(%x: memref<64x768x16x16xf32>, %out: memref<64x16x16x768xbf16>) attributes {domain = array<i64: 64, 16, 16>} {
  %c768 = arith.constant 768 : index
  %n = kernel.index 0
  %h = kernel.index 1
  %w = kernel.index 2
  kernel.loop %c768 {
  ^bb0(%c: index):
    %v = memref.load %x[%n, %c, %h, %w] : memref<64x768x16x16xf32>
    %y = arith.truncf %v : f32 to bf16
    memref.store %y, %out[%n, %h, %w, %c] : memref<64x16x16x768xbf16>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<128x768x7x7xf32>, %out: memref<128x7x7x768xbf16>, %x2: memref<64x768x16x16xf32>, %out2: memref<64x16x16x768xbf16>) {
  kernel.launch @to_channels_last(%x, %out) : memref<128x768x7x7xf32>, memref<128x7x7x768xbf16>
  kernel.launch @many_rows_to_channels_last(%x2, %out2) : memref<64x768x16x16xf32>, memref<64x16x16x768xbf16>
  kernel.return
}

// -----

// A row reduction: per-thread partials from the identity (folded away for
// a max from -inf), combined in each warp by butterfly shuffles, then across
// the block's 8 warps through a workgroup buffer that every thread reads;
// the row's scalar is stored by thread 0. The stores of the first loop are
// ordered before the second by a barrier.
// CHECK-LABEL: gpu.func @softmax_like
// CHECK-SAME: workgroup(%[[SLOTS:.*]] : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-COUNT-4: memref.load
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: %[[WARP_MAX:.*]] = arith.maximumf
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[WARP_MAX]], %[[SLOTS]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[SLOTS]]
// CHECK: %[[ALL:.*]] = arith.maximumf
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[ALL]], %{{.*}}[%{{.*}}] : memref<64xf32>
// CHECK-COUNT-4: memref.store
// CHECK: gpu.barrier
// CHECK: math.exp
// CHECK: gpu.return
kernel.kernel @softmax_like(%x: memref<64x1024xf32>, %m: memref<64xf32>, %out: memref<64x1024xf32>) attributes {domain = array<i64: 64>} {
  %i = kernel.index 0
  %c1024 = arith.constant 1024 : index
  %init = arith.constant 0xFF800000 : f32
  %max = kernel.reduce max %c1024 init %init : f32 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<64x1024xf32>
    kernel.yield %v : f32
  }
  memref.store %max, %m[%i] : memref<64xf32>
  kernel.loop %c1024 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<64x1024xf32>
    %d = arith.subf %v, %max : f32
    memref.store %d, %out[%i, %k] : memref<64x1024xf32>
  }
  kernel.loop %c1024 {
  ^bb0(%k: index):
    %v = memref.load %out[%i, %k] : memref<64x1024xf32>
    %e = math.exp %v : f32
    memref.store %e, %out[%i, %k] : memref<64x1024xf32>
  }
  kernel.return
}

// -----

// Rows one warp covers (128 f32, 4 per thread) go 4 to a block of 128
// threads, a warp each: the row is the block's index times 4 plus the
// thread's warp, the thread's place in the row its lane; the reduction is
// the warp's shuffles alone (no workgroup buffer, no barrier for it), and
// the row's first lane stores the scalar.
// CHECK-LABEL: gpu.func @short_rows
// CHECK-SAME: llvm.noalias}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1024, 1, 1>}
// CHECK-DAG: %[[TID:.*]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.*]] = gpu.block_id x
// CHECK-DAG: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK-DAG: %[[FIRST:.*]] = arith.muli %[[BID]], %c4
// CHECK-DAG: %[[ROW:.*]] = arith.addi %[[FIRST]], %[[WARP]]
// CHECK-DAG: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK-DAG: %[[LEAD:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[K0:.*]] = arith.muli %[[LANE]], %c4
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[K0]]]
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: scf.if %[[LEAD]]
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<4096xf32>
// CHECK: gpu.return
kernel.kernel @short_rows(%x: memref<4096x128xf32>, %m: memref<4096xf32>, %out: memref<4096x128xf32>) attributes {domain = array<i64: 4096>} {
  %i = kernel.index 0
  %c128 = arith.constant 128 : index
  %init = arith.constant 0xFF800000 : f32
  %max = kernel.reduce max %c128 init %init : f32 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<4096x128xf32>
    kernel.yield %v : f32
  }
  memref.store %max, %m[%i] : memref<4096xf32>
  kernel.loop %c128 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<4096x128xf32>
    %d = arith.subf %v, %max : f32
    memref.store %d, %out[%i, %k] : memref<4096x128xf32>
  }
  kernel.return
}

// -----

// Rows shorter than a warp's sweep share it: 49 f32 elements (a 7x7
// window's softmax row) need 13 threads of 4, so 16 lanes each, 8 rows to
// a block of 128 threads; the reduction's shuffles stay within the lanes
// (XOR offsets 8, 4, 2, 1), and each row's first lane stores.
// CHECK-LABEL: gpu.func @rows_sharing_a_warp
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 2048, 1, 1>
// CHECK-DAG: %[[TID:.*]] = gpu.thread_id x
// CHECK-DAG: %[[BID:.*]] = gpu.block_id x
// CHECK-DAG: %[[GROUP:.*]] = arith.divui %[[TID]], %c16
// CHECK-DAG: %[[FIRST:.*]] = arith.muli %[[BID]], %c8
// CHECK-DAG: %[[ROW:.*]] = arith.addi %[[FIRST]], %[[GROUP]]
// CHECK-DAG: %[[LANE:.*]] = arith.remui %[[TID]], %c16
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c49 step %c16
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ROW]]] : memref<16384xf32>
// CHECK: gpu.return
kernel.kernel @rows_sharing_a_warp(%x: memref<16384x49xf32>, %m: memref<16384xf32>) attributes {domain = array<i64: 16384>} {
  %i = kernel.index 0
  %c49 = arith.constant 49 : index
  %init = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c49 init %init : f32 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<16384x49xf32>
    kernel.yield %v : f32
  }
  memref.store %sum, %m[%i] : memref<16384xf32>
  kernel.return
}

// -----

// A column sum reduces over the outer dimension: one thread per output
// column (neighbouring threads read neighbouring addresses), the reduction
// sequential in each thread, unrolled (by 16: 1000 threads keep few bytes
// in flight).
// CHECK-LABEL: gpu.func @colsum
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[BASE:.*]] = arith.muli %{{.*}}, %c256
// CHECK: %[[COL:.*]] = arith.addi %[[BASE]], %{{.*}}
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[COL]], %c1000
// CHECK: scf.if %[[IN]]
// CHECK: scf.for %[[R:.*]] = %c0 to %c4096 step %c16 iter_args
// CHECK: memref.load %{{.*}}[%[[R]], %[[COL]]]
// CHECK-NOT: gpu.all_reduce
kernel.kernel @colsum(%x: memref<4096x1000xf32>, %out: memref<1000xf32>) attributes {domain = array<i64: 1000>} {
  %j = kernel.index 0
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %c4096 init %zero : f32 {
  ^bb0(%r: index):
    %v = memref.load %x[%r, %j] : memref<4096x1000xf32>
    kernel.yield %v : f32
  }
  memref.store %s, %out[%j] : memref<1000xf32>
  kernel.return
}

// -----

// A layer norm over the channels of an NCHW tensor, written channels-last
// (ConvNeXt's): its reductions and its loop read the input across its rows
// three times and write the output along them once. The kernel's accesses
// are mostly strided along the rows, so it is a thread per point (the
// neighbouring W positions side by side), not a block per row whose
// warps' loads each touch 32 sectors.
// CHECK-LABEL: gpu.func @channels_norm
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.*}} = %c0 to %c96 step %c16 iter_args
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
kernel.kernel @channels_norm(%x: memref<8x96x56x56xf32>, %out: memref<8x56x56x96xf32>) attributes {domain = array<i64: 8, 56, 56>} {
  %c96 = arith.constant 96 : index
  %zero = arith.constant 0.0 : f32
  %n96 = arith.constant 96.0 : f32
  %n = kernel.index 0
  %h = kernel.index 1
  %w = kernel.index 2
  %s = kernel.reduce add %c96 init %zero : f32 {
  ^bb0(%c: index):
    %v = memref.load %x[%n, %c, %h, %w] : memref<8x96x56x56xf32>
    kernel.yield %v : f32
  }
  %mean = arith.divf %s, %n96 : f32
  %q = kernel.reduce add %c96 init %zero : f32 {
  ^bb0(%c: index):
    %v = memref.load %x[%n, %c, %h, %w] : memref<8x96x56x56xf32>
    %d = arith.subf %v, %mean : f32
    %d2 = arith.mulf %d, %d : f32
    kernel.yield %d2 : f32
  }
  %var = arith.divf %q, %n96 : f32
  %r = math.rsqrt %var : f32
  kernel.loop %c96 {
  ^bb0(%c: index):
    %v = memref.load %x[%n, %c, %h, %w] : memref<8x96x56x56xf32>
    %d = arith.subf %v, %mean : f32
    %y = arith.mulf %d, %r : f32
    memref.store %y, %out[%n, %h, %w, %c] : memref<8x56x56x96xf32>
  }
  kernel.return
}

// -----

// The same with a per-row statistic read along the index (RMSNorm's weight
// gradient: dy * x * rstd summed over the rows): the index walks rstd
// contiguously but the big buffers across their rows, so this is still a
// column sum, a thread per column (as a row reduction, each column's block
// of threads strode down the rows: uncoalesced).
// CHECK-LABEL: gpu.func @colsum_row_statistic
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: scf.for %[[R:.*]] = %c0 to %c4096 step %c16 iter_args
// CHECK: memref.load %{{.*}}[%[[R]], %{{.*}}] : memref<4096x1000xf32>
// CHECK: memref.load %{{.*}}[%[[R]]] : memref<4096xf32>
// CHECK-NOT: gpu.all_reduce
kernel.kernel @colsum_row_statistic(%x: memref<4096x1000xf32>, %rstd: memref<4096xf32>, %out: memref<1000xf32>) attributes {domain = array<i64: 1000>} {
  %j = kernel.index 0
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %c4096 init %zero : f32 {
  ^bb0(%r: index):
    %v = memref.load %x[%r, %j] : memref<4096x1000xf32>
    %k = memref.load %rstd[%r] : memref<4096xf32>
    %p = arith.mulf %v, %k : f32
    kernel.yield %p : f32
  }
  memref.store %s, %out[%j] : memref<1000xf32>
  kernel.return
}

// -----

// 64-bit sums have no shuffle-based block reduction: row per thread.
// CHECK-LABEL: gpu.func @rowsum_i64
// CHECK-NOT: gpu.all_reduce
// CHECK: scf.if
kernel.kernel @rowsum_i64(%x: memref<8x64xi64>, %out: memref<8xi64>) attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0 : i64
  %s = kernel.reduce add %c64 init %zero : i64 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<8x64xi64>
    kernel.yield %v : i64
  }
  memref.store %s, %out[%i] : memref<8xi64>
  kernel.return
}

// -----

// A long row: pointwise rows take blocks of up to 1024 threads, here a
// loop over 2 groups of (1024 x 4) elements. (Up to 4 groups are unrolled
// in full in rows that reduce, to keep a thread's share of the row in
// registers.)
// CHECK-LABEL: gpu.func @long_row
// CHECK-SAME: known_block_size = array<i32: 1024, 1, 1>
// CHECK: scf.for %[[G:.*]] = %c0 to %c2 step %c1
// CHECK-COUNT-4: memref.load
// CHECK-NOT: memref.load
kernel.kernel @long_row(%x: memref<8x8192xf32>, %out: memref<8x8192xf32>) attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %c8192 = arith.constant 8192 : index
  kernel.loop %c8192 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<8x8192xf32>
    memref.store %v, %out[%i, %k] : memref<8x8192xf32>
  }
  kernel.return
}

// -----

// A row longer than a chunk that no chunk divides (a 50257-entry
// vocabulary in bf16; a block that reduces has 512 threads, 8 elements
// each, a chunk): groups cover the first 12 chunks, then each thread
// strides over the tail from 12 x 4096 plus its id, one element at a time;
// the reduction's tail continues the thread's partial of the groups. The
// loop's stores go to rows padded to 50264 elements (16-byte aligned), so
// it takes groups too.
// CHECK-LABEL: gpu.func @vocab_rows
// CHECK-SAME: known_block_size = array<i32: 512, 1, 1>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[P:.*]] = scf.for %{{.*}} = %c0 to %c12 step %c1 iter_args
// CHECK-COUNT-8: memref.load
// CHECK: %[[T:.*]] = arith.addi %[[TID]], %c49152
// CHECK: %[[S:.*]] = scf.for %{{.*}} = %[[T]] to %c50257 step %c512 iter_args(%{{.*}} = %[[P]])
// CHECK: gpu.shuffle xor %[[S]]
// CHECK: scf.for %{{.*}} = %c0 to %c12 step %c1 {
// CHECK-COUNT-8: memref.store
// CHECK: %[[T2:.*]] = arith.addi %[[TID]], %c49152
// CHECK: scf.for %[[K:.*]] = %[[T2]] to %c50257 step %c512 {
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[K]]]
kernel.kernel @vocab_rows(%x: memref<16x50257xbf16>, %out: memref<16x50264xbf16>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %n = arith.constant 50257 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %n init %zero : f32 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<16x50257xbf16>
    %e = arith.extf %v : bf16 to f32
    kernel.yield %e : f32
  }
  kernel.loop %n {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<16x50257xbf16>
    %e = arith.extf %v : bf16 to f32
    %d = arith.divf %e, %sum : f32
    %t = arith.truncf %d : f32 to bf16
    memref.store %t, %out[%i, %k] : memref<16x50264xbf16>
  }
  kernel.return
}

// -----

// Stores to rows of 50257 elements start anywhere in a 16-byte vector,
// and a group's stores would not merge: the loop strides over the whole
// row, one element per thread at a time (the reduction, which only loads,
// takes groups and a tail as above).
// CHECK-LABEL: gpu.func @vocab_rows_unaligned_stores
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %c0 to %c12 step %c1 iter_args
// CHECK: gpu.shuffle
// CHECK-NOT: to %c12 step
// CHECK: scf.for %[[K:.*]] = %[[TID]] to %c50257 step %c512 {
// CHECK-NEXT: memref.load %{{.*}}[%{{.*}}, %[[K]]]
// CHECK-NOT: memref.load
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[K]]]
kernel.kernel @vocab_rows_unaligned_stores(%x: memref<16x50257xbf16>, %out: memref<16x50257xbf16>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %n = arith.constant 50257 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %n init %zero : f32 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<16x50257xbf16>
    %e = arith.extf %v : bf16 to f32
    kernel.yield %e : f32
  }
  kernel.loop %n {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<16x50257xbf16>
    %e = arith.extf %v : bf16 to f32
    %d = arith.divf %e, %sum : f32
    %t = arith.truncf %d : f32 to bf16
    memref.store %t, %out[%i, %k] : memref<16x50257xbf16>
  }
  kernel.return
}

// -----

// A row the block does not divide: threads stride from their id.
// CHECK-LABEL: gpu.func @ragged
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %[[TID]] to %c1000 step %c256
kernel.kernel @ragged(%x: memref<8x1000xf32>, %out: memref<8x1000xf32>) attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %c1000 = arith.constant 1000 : index
  kernel.loop %c1000 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<8x1000xf32>
    memref.store %v, %out[%i, %k] : memref<8x1000xf32>
  }
  kernel.return
}

// -----

// A large pointwise kernel without an inner loop (row per thread): each
// thread takes 4 consecutive points of the innermost dimension, so
// 65536 groups / 256 threads = 256 blocks; the copies are interleaved.
// CHECK-LABEL: kernel.schedule @points_main
// CHECK: kernel.launch @tc_kernels::@points({{.*}}) {block = 256 : i64, grid = 256 : i64}
// CHECK-LABEL: gpu.func @points
// CHECK: %[[LIN:.*]] = arith.addi
// CHECK: arith.cmpi ult, %[[LIN]], %c65536
// CHECK: %[[COL:.*]] = arith.remui %[[LIN]], %c128
// CHECK: %[[ROW:.*]] = arith.divui %[[LIN]], %c128
// CHECK: %[[C0:.*]] = arith.muli %[[COL]], %c4
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[C0]]]
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load
// CHECK-COUNT-4: math.sin
// CHECK-COUNT-4: memref.store
kernel.kernel @points(%x: memref<512x512xf32>, %out: memref<512x512xf32>) attributes {domain = array<i64: 512, 512>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %v = memref.load %x[%i, %j] : memref<512x512xf32>
  %s = math.sin %v : f32
  memref.store %s, %out[%i, %j] : memref<512x512xf32>
  kernel.return
}
kernel.schedule @points_main(%x: memref<512x512xf32>, %out: memref<512x512xf32>) {
  kernel.launch @points(%x, %out) : memref<512x512xf32>, memref<512x512xf32>
  kernel.return
}

// -----

// Short rows with an index check's flag store at the top level
// (tc-fuse-index-checks): the store is idempotent, so the rows still
// flatten to a thread per point, each point checking its row's index.
// CHECK-LABEL: gpu.func @checked_rows
// CHECK-NOT: scf.for
// CHECK: memref.load %{{.*}} : memref<8xi64>
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %{{.*}}[] : memref<i1>
// CHECK: memref.load %{{.*}} : memref<100x64xf32>
kernel.kernel @checked_rows(%i: memref<8xi64>, %w: memref<100x64xf32>, %out: memref<8x64xf32>, %flag: memref<i1>) attributes {domain = array<i64: 8>} {
  %r = kernel.index 0
  %v = memref.load %i[%r] : memref<8xi64>
  %bound = arith.constant 99 : i64
  %bad = arith.cmpi sgt, %v, %bound : i64
  scf.if %bad {
    %true = arith.constant true
    memref.store %true, %flag[] : memref<i1>
  }
  %k = arith.index_cast %v : i64 to index
  %c64 = arith.constant 64 : index
  kernel.loop %c64 {
  ^bb0(%j: index):
    %x = memref.load %w[%k, %j] : memref<100x64xf32>
    memref.store %x, %out[%r, %j] : memref<8x64xf32>
  }
  kernel.return
}

// -----

// An int64 row sum (a cumsum of an attention mask, written densely) is a
// row per block too: each 64-bit partial crosses lanes as two 32-bit
// shuffles of its halves, joined again before the add.
// CHECK-LABEL: gpu.func @int64_rows
// CHECK-SAME: workgroup(%[[SLOTS:.*]] : memref<4xi64, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: %[[LOW:.*]] = arith.trunci %[[PART:.*]] : i64 to i32
// CHECK: %[[HIGH:.*]] = arith.shrui %[[PART]], %c32_i64 : i64
// CHECK: %[[HIGH32:.*]] = arith.trunci %[[HIGH]] : i64 to i32
// CHECK: %[[SL:.*]], %{{.*}} = gpu.shuffle xor %[[LOW]], %c16_i32, %c32_i32 : i32
// CHECK: %[[SH:.*]], %{{.*}} = gpu.shuffle xor %[[HIGH32]], %c16_i32, %c32_i32 : i32
// CHECK: arith.extui %[[SH]] : i32 to i64
// CHECK: arith.ori
// CHECK: arith.addi %[[PART]]
// CHECK-COUNT-8: gpu.shuffle xor %{{.*}} : i32
// CHECK: memref.store %{{.*}}, %[[SLOTS]]
// CHECK: gpu.barrier
kernel.kernel @int64_rows(%x: memref<8x512xi64>, %out: memref<8xi64>) attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0 : i64
  %s = kernel.reduce add %c512 init %zero : i64 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %k] : memref<8x512xi64>
    kernel.yield %v : i64
  }
  memref.store %s, %out[%i] : memref<8xi64>
  kernel.return
}
kernel.schedule @int64_rows_main(%x: memref<8x512xi64>, %out: memref<8xi64>) {
  kernel.launch @int64_rows(%x, %out) : memref<8x512xi64>, memref<8xi64>
  kernel.return
}
