// RUN: tc-opt %s -split-input-file -tc-split-reductions -canonicalize | FileCheck %s
// RUN: tc-opt %s -split-input-file -tc-split-reductions="min-parallelism=1" | FileCheck %s --check-prefix=OFF
// RUN: tc-opt %s -split-input-file -tc-split-reductions="column-factor=8" | FileCheck %s --check-prefix=WIDE

// A full sum (one point): the nested reductions become one over the
// flattened range, split into 256 chunks of 4096 by a partial kernel over
// [256]; the kernel sums the partials from the original init.
// CHECK-LABEL: kernel.kernel @full_partial
// CHECK-SAME: %[[P:[a-z0-9]+]]: memref<256xf32>) attributes {domain = array<i64: 256>}
// CHECK: %[[S:.*]] = kernel.index 0
// CHECK: %[[PART:.*]] = kernel.reduce add %c4096 init %cst
// CHECK: %[[BASE:.*]] = arith.muli %[[S]], %c4096
// CHECK: %[[K:.*]] = arith.addi %[[BASE]], %{{.*}}
// CHECK: %[[I:.*]] = arith.divui %[[K]], %c64
// CHECK: %[[J:.*]] = arith.remui %[[K]], %c64
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK: memref.store %[[PART]], %[[P]][%[[S]]]
// CHECK-LABEL: kernel.kernel @full(
// CHECK-SAME: %[[P2:[a-z0-9]+]]: memref<256xf32>) attributes {domain = array<i64>}
// CHECK: %[[ALL:.*]] = kernel.reduce add %c256 init %[[INIT:.*]] : f32
// CHECK: memref.load %[[P2]][%{{.*}}]
// CHECK: arith.mulf %[[ALL]]
// CHECK-LABEL: kernel.schedule @main
// CHECK: %[[T:.*]] = memref.alloc() : memref<256xf32>
// CHECK-NEXT: kernel.launch @full_partial(%{{.*}}, %{{.*}}, %[[T]])
// CHECK-NEXT: kernel.launch @full(%{{.*}}, %{{.*}}, %[[T]])
// OFF-NOT: _partial
kernel.kernel @full(%x: memref<16384x64xf32>, %out: memref<f32>) attributes {domain = array<i64>} {
  %c16384 = arith.constant 16384 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s = kernel.reduce add %c16384 init %zero : f32 {
  ^bb0(%i: index):
    %zero1 = arith.constant 0.0 : f32
    %row = kernel.reduce add %c64 init %zero1 : f32 {
    ^bb0(%j: index):
      %v = memref.load %x[%i, %j] : memref<16384x64xf32>
      kernel.yield %v : f32
    }
    kernel.yield %row : f32
  }
  %m = arith.mulf %s, %half : f32
  memref.store %m, %out[] : memref<f32>
  kernel.return
}
kernel.schedule @main(%x: memref<16384x64xf32>, %out: memref<f32>) {
  kernel.launch @full(%x, %out) : memref<16384x64xf32>, memref<f32>
  kernel.return
}

// -----

// A column max: the column loop becomes a domain dimension (512 points),
// then 64 chunks of 64 rows make 32768 points of partial work. The
// partials are laid out column by column: the final kernel reads each
// column's 64 as a contiguous row.
// CHECK-LABEL: kernel.kernel @columns_partial
// CHECK-SAME: attributes {domain = array<i64: 64, 512>}
// CHECK: %[[S:.*]] = kernel.index 0
// CHECK: %[[C:.*]] = kernel.index 1
// CHECK: kernel.reduce max %c64 init %cst
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[C]]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[C]], %[[S]]] : memref<512x64xf32>
// CHECK-LABEL: kernel.kernel @columns(
// CHECK-SAME: attributes {domain = array<i64: 512>}
// CHECK: kernel.reduce max %c64
// CHECK: memref.load %{{.*}}[%{{.*}}, %arg{{.*}}] : memref<512x64xf32>
// CHECK-NOT: kernel.loop
kernel.kernel @columns(%x: memref<4096x512xf32>, %out: memref<512xf32>) attributes {domain = array<i64>} {
  %c4096 = arith.constant 4096 : index
  %c512 = arith.constant 512 : index
  kernel.loop %c512 {
  ^bb0(%j: index):
    %ninf = arith.constant 0xFF800000 : f32
    %m = kernel.reduce max %c4096 init %ninf : f32 {
    ^bb0(%i: index):
      %v = memref.load %x[%i, %j] : memref<4096x512xf32>
      kernel.yield %v : f32
    }
    memref.store %m, %out[%j] : memref<512xf32>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<4096x512xf32>, %out: memref<512xf32>) {
  kernel.launch @columns(%x, %out) : memref<4096x512xf32>, memref<512xf32>
  kernel.return
}

// -----

// A column sum over two leading dimensions (a weight's gradient over batch
// and sequence, one operand a matrix product's [batch * sequence] rows):
// its nested reductions sit in the column loop, so they are flattened once
// the loop is a domain dimension, with the row offset computed between the
// two reductions, then split (32 chunks of 128 of the 4 x 1024 rows). Left
// nested, each of 1024 threads summed 4096 rows alone.
// CHECK-LABEL: kernel.kernel @batch_columns_partial
// CHECK-SAME: attributes {domain = array<i64: 32, 1024>}
// CHECK: %[[S:.*]] = kernel.index 0
// CHECK: %[[C:.*]] = kernel.index 1
// CHECK: kernel.reduce add %c128 init %cst
// CHECK: %[[K:.*]] = arith.addi
// CHECK: %[[B:.*]] = arith.divui %[[K]], %c1024
// CHECK: %[[R:.*]] = arith.remui %[[K]], %c1024
// CHECK: %[[BASE:.*]] = arith.muli %[[B]], %c1024
// CHECK: %[[ROW:.*]] = arith.addi %[[BASE]], %[[R]]
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[C]]] : memref<4096x1024xbf16>
// CHECK: memref.load %{{.*}}[%[[B]], %[[R]], %[[C]]] : memref<4x1024x1024xbf16>
// CHECK-NOT: kernel.reduce
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[C]], %[[S]]] : memref<1024x32xf32>
// CHECK-LABEL: kernel.kernel @batch_columns(
// CHECK-SAME: attributes {domain = array<i64: 1024>}
// CHECK: kernel.reduce add %c32
// CHECK-NOT: kernel.reduce
kernel.kernel @batch_columns(%x: memref<4096x1024xbf16>, %y: memref<4x1024x1024xbf16>, %out: memref<1024xbf16>) attributes {domain = array<i64>} {
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  kernel.loop %c1024 {
  ^bb0(%j: index):
    %zero = arith.constant 0.0 : f32
    %s = kernel.reduce add %c4 init %zero : f32 {
    ^bb0(%b: index):
      %zero2 = arith.constant 0.0 : f32
      %base = arith.muli %b, %c1024 : index
      %t = kernel.reduce add %c1024 init %zero2 : f32 {
      ^bb0(%r: index):
        %row = arith.addi %base, %r : index
        %v = memref.load %x[%row, %j] : memref<4096x1024xbf16>
        %w = memref.load %y[%b, %r, %j] : memref<4x1024x1024xbf16>
        %p = arith.mulf %v, %w : bf16
        %e = arith.extf %p : bf16 to f32
        kernel.yield %e : f32
      }
      kernel.yield %t : f32
    }
    %h = arith.truncf %s : f32 to bf16
    memref.store %h, %out[%j] : memref<1024xbf16>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<4096x1024xbf16>, %y: memref<4x1024x1024xbf16>, %out: memref<1024xbf16>) {
  kernel.launch @batch_columns(%x, %y, %out) : memref<4096x1024xbf16>, memref<4x1024x1024xbf16>, memref<1024xbf16>
  kernel.return
}

// -----

// Enough rows already (softmax-like kernels), or a short reduction: left
// alone.
// CHECK-LABEL: kernel.kernel @rows
// CHECK-SAME: attributes {domain = array<i64: 65536>}
// CHECK-LABEL: kernel.kernel @short
// CHECK-SAME: attributes {domain = array<i64>}
// CHECK: kernel.reduce add %c512
// CHECK-NOT: _partial
kernel.kernel @rows(%x: memref<65536x64xf32>, %out: memref<65536xf32>) attributes {domain = array<i64: 65536>} {
  %i = kernel.index 0
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %c64 init %zero : f32 {
  ^bb0(%j: index):
    %v = memref.load %x[%i, %j] : memref<65536x64xf32>
    kernel.yield %v : f32
  }
  memref.store %s, %out[%i] : memref<65536xf32>
  kernel.return
}
kernel.kernel @short(%x: memref<512xf32>, %out: memref<f32>) attributes {domain = array<i64>} {
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %c512 init %zero : f32 {
  ^bb0(%j: index):
    %v = memref.load %x[%j] : memref<512xf32>
    kernel.yield %v : f32
  }
  memref.store %s, %out[] : memref<f32>
  kernel.return
}

// -----

// Batch norm's variance over N, H, W of a channels-last tensor: the mean
// (realized) is loaded before the reduction and subtracted in it. The
// partial kernel loads it too: 256 chunks of 196 rows. With
// column-factor=8, 4x more (the chunks must divide the 50176 rows): 1024
// of 49.
// CHECK-LABEL: kernel.kernel @variance_partial
// CHECK-SAME: attributes {domain = array<i64: 256, 64>}
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<64xf32>
// CHECK: kernel.reduce add %c196
// CHECK-LABEL: kernel.kernel @variance(
// CHECK: kernel.reduce add %c256
// WIDE-LABEL: kernel.kernel @variance_partial
// WIDE-SAME: attributes {domain = array<i64: 1024, 64>}
// WIDE: kernel.reduce add %c49
// WIDE: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<64x1024xf32>
kernel.kernel @variance(%x: memref<50176x64xbf16>, %mean: memref<64xf32>, %out: memref<64xf32>) attributes {domain = array<i64>} {
  %c50176 = arith.constant 50176 : index
  %c64 = arith.constant 64 : index
  kernel.loop %c64 {
  ^bb0(%j: index):
    %zero = arith.constant 0.0 : f32
    %m = memref.load %mean[%j] : memref<64xf32>
    %s = kernel.reduce add %c50176 init %zero : f32 {
    ^bb0(%i: index):
      %v = memref.load %x[%i, %j] : memref<50176x64xbf16>
      %w = arith.extf %v : bf16 to f32
      %d = arith.subf %w, %m : f32
      %e = arith.mulf %d, %d : f32
      kernel.yield %e : f32
    }
    memref.store %s, %out[%j] : memref<64xf32>
  }
  kernel.return
}
kernel.schedule @main(%x: memref<50176x64xbf16>, %mean: memref<64xf32>, %out: memref<64xf32>) {
  kernel.launch @variance(%x, %mean, %out) : memref<50176x64xbf16>, memref<64xf32>, memref<64xf32>
  kernel.return
}

// -----

// A full max over an odd length (32 x 50257, 2^5 times an odd number):
// 256 chunks of ceil(1608224 / 256) = 6283, the last one short; its
// iterations past the end read the last element and yield the identity.
// (Dividing chunks only, it took 32.)
// CHECK-LABEL: kernel.kernel @ragged_partial
// CHECK-SAME: attributes {domain = array<i64: 256>}
// CHECK: kernel.reduce max %c6283 init %[[ID:.*]] : i32
// CHECK: %[[K:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[K]], %c1608224
// CHECK: %[[AT:.*]] = arith.minui %[[K]], %c1608223
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%[[AT]]]
// CHECK: %[[SEL:.*]] = arith.select %[[IN]], %[[V]], %[[ID]]
// CHECK: kernel.yield %[[SEL]]
// CHECK-LABEL: kernel.kernel @ragged(
// CHECK: kernel.reduce max %c256
kernel.kernel @ragged(%x: memref<1608224xi32>, %out: memref<i32>) attributes {domain = array<i64>} {
  %n = arith.constant 1608224 : index
  %lowest = arith.constant -2147483648 : i32
  %m = kernel.reduce max %n init %lowest : i32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<1608224xi32>
    kernel.yield %v : i32
  }
  memref.store %m, %out[] : memref<i32>
  kernel.return
}
kernel.schedule @main(%x: memref<1608224xi32>, %out: memref<i32>) {
  kernel.launch @ragged(%x, %out) : memref<1608224xi32>, memref<i32>
  kernel.return
}

// -----

// RMSNorm's weight gradient: a column sum over 4 x 1024 rows of
// dy[r, c] * x[r, c] * rstd[r]. Its index walks the per-row statistic
// rstd contiguously but the big buffers across their rows: a column sum
// (4 KiB read along it, 24 MiB across), split with the partials last, not
// taken for a row reduction (then it had 1024 points and stayed whole:
// Llama's step spent 160 us there).
// WIDE-LABEL: kernel.kernel @rms_weight_grad_partial
// WIDE-SAME: memref<1024x128xf32>) attributes {domain = array<i64: 128, 1024>}
// WIDE: kernel.reduce add %c32
// WIDE-LABEL: kernel.kernel @rms_weight_grad(
// WIDE: kernel.reduce add %c128
kernel.kernel @rms_weight_grad(%dy: memref<4096x1024xbf16>, %x: memref<4x1024x1024xf32>, %rstd: memref<4x1024xf32>, %out: memref<1024xf32>) attributes {domain = array<i64>} {
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  kernel.loop %c1024 {
  ^bb0(%c: index):
    %zero = arith.constant 0.0 : f32
    %s = kernel.reduce add %c4 init %zero : f32 {
    ^bb0(%b: index):
      %zero2 = arith.constant 0.0 : f32
      %base = arith.muli %b, %c1024 : index
      %t = kernel.reduce add %c1024 init %zero2 : f32 {
      ^bb0(%r: index):
        %row = arith.addi %base, %r : index
        %g = memref.load %dy[%row, %c] : memref<4096x1024xbf16>
        %gf = arith.extf %g : bf16 to f32
        %v = memref.load %x[%b, %r, %c] : memref<4x1024x1024xf32>
        %k = memref.load %rstd[%b, %r] : memref<4x1024xf32>
        %n = arith.mulf %v, %k : f32
        %p = arith.mulf %gf, %n : f32
        kernel.yield %p : f32
      }
      kernel.yield %t : f32
    }
    memref.store %s, %out[%c] : memref<1024xf32>
  }
  kernel.return
}
kernel.schedule @main(%dy: memref<4096x1024xbf16>, %x: memref<4x1024x1024xf32>, %rstd: memref<4x1024xf32>, %out: memref<1024xf32>) {
  kernel.launch @rms_weight_grad(%dy, %x, %rstd, %out) : memref<4096x1024xbf16>, memref<4x1024x1024xf32>, memref<4x1024xf32>, memref<1024xf32>
  kernel.return
}

// -----

// Row sums of a [4, 128, 256] activation with a dropout mask drawn from the
// graph's seed, loaded once before the rows' loop: the loop still becomes a
// domain dimension (512 points, the seed read at each), not 4 points each
// walking 128 rows. A loop that writes what a load before it reads stays.
// CHECK-LABEL: kernel.kernel @seeded_rows
// CHECK-SAME: attributes {domain = array<i64: 4, 128>}
// CHECK: memref.load %{{.*}}[] : memref<i64>
// CHECK-NOT: kernel.loop
// CHECK: kernel.reduce add %c256
// CHECK-LABEL: kernel.kernel @rewritten_rows
// CHECK-SAME: attributes {domain = array<i64: 4>}
// CHECK: kernel.loop %c128
// OFF-LABEL: kernel.kernel @seeded_rows
// OFF-SAME: attributes {domain = array<i64: 4>}
kernel.kernel @seeded_rows(%seed: memref<i64>, %x: memref<4x128x256xf32>, %out: memref<4x128xf32>) attributes {domain = array<i64: 4>} {
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %b = kernel.index 0
  %s = memref.load %seed[] : memref<i64>
  kernel.loop %c128 {
  ^bb0(%r: index):
    %zero = arith.constant 0.0 : f32
    %sum = kernel.reduce add %c256 init %zero : f32 {
    ^bb0(%h: index):
      %v = memref.load %x[%b, %r, %h] : memref<4x128x256xf32>
      %i = arith.index_cast %h : index to i64
      %k = arith.xori %i, %s : i64
      %odd = arith.trunci %k : i64 to i1
      %m = arith.select %odd, %v, %zero : f32
      kernel.yield %m : f32
    }
    memref.store %sum, %out[%b, %r] : memref<4x128xf32>
  }
  kernel.return
}
kernel.kernel @rewritten_rows(%first: memref<4x128xf32>, %x: memref<4x128x256xf32>) attributes {domain = array<i64: 4>} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %b = kernel.index 0
  %f = memref.load %first[%b, %c0] : memref<4x128xf32>
  kernel.loop %c128 {
  ^bb0(%r: index):
    %zero = arith.constant 0.0 : f32
    %sum = kernel.reduce add %c256 init %zero : f32 {
    ^bb0(%h: index):
      %v = memref.load %x[%b, %r, %h] : memref<4x128x256xf32>
      kernel.yield %v : f32
    }
    %y = arith.addf %sum, %f : f32
    memref.store %y, %first[%b, %r] : memref<4x128xf32>
  }
  kernel.return
}
kernel.schedule @main(%seed: memref<i64>, %x: memref<4x128x256xf32>, %out: memref<4x128xf32>) {
  kernel.launch @seeded_rows(%seed, %x, %out) : memref<i64>, memref<4x128x256xf32>, memref<4x128xf32>
  kernel.launch @rewritten_rows(%out, %x) : memref<4x128xf32>, memref<4x128x256xf32>
  kernel.return
}

// -----

// A channel sum over N, H, W of a channels-last activation scaled by a
// per-image gate (a squeeze-and-excitation block's batch norm gradient):
// the gate's load sits in the outer reduction over N, before the sums over
// H and W. The three flatten into one reduction over N * H * W that reads
// the gate again at each element, and that is split (a column sum,
// partials last), not left a thread per channel walking all of it.
// CHECK-LABEL: kernel.kernel @gated_channels_partial
// CHECK-SAME: attributes {domain = array<i64: 256, 32>}
// CHECK: kernel.reduce add %c784
// CHECK: %[[HW:.*]] = arith.divui %{{.*}}, %c56
// CHECK: %[[N:.*]] = arith.divui %[[HW]], %c56
// CHECK: memref.load %{{.*}}[%[[N]], %{{.*}}] : memref<64x32xbf16>
// CHECK: memref.load %{{.*}}[%[[N]], %{{.*}}] : memref<64x56x56x32xbf16>
// CHECK-LABEL: kernel.kernel @gated_channels(
// CHECK-SAME: attributes {domain = array<i64: 32>}
// CHECK: kernel.reduce add %c256
// CHECK-LABEL: kernel.kernel @gate_written
// CHECK-SAME: attributes {domain = array<i64: 32>}
// CHECK: kernel.reduce add %c64
kernel.kernel @gated_channels(%x: memref<64x56x56x32xbf16>, %gate: memref<64x32xbf16>, %out: memref<32xf32>) attributes {domain = array<i64: 32>} {
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %c = kernel.index 0
  %s = kernel.reduce add %c64 init %zero : f32 {
  ^bb0(%n: index):
    %g = memref.load %gate[%n, %c] : memref<64x32xbf16>
    %gf = arith.extf %g : bf16 to f32
    %rows = kernel.reduce add %c56 init %zero : f32 {
    ^bb0(%h: index):
      %cols = kernel.reduce add %c56 init %zero : f32 {
      ^bb0(%w: index):
        %v = memref.load %x[%n, %h, %w, %c] : memref<64x56x56x32xbf16>
        %vf = arith.extf %v : bf16 to f32
        %p = arith.mulf %vf, %gf : f32
        kernel.yield %p : f32
      }
      kernel.yield %cols : f32
    }
    kernel.yield %rows : f32
  }
  memref.store %s, %out[%c] : memref<32xf32>
  kernel.return
}
// The same with a gate the kernel writes: its loads stay where they are.
kernel.kernel @gate_written(%x: memref<64x56x56x32xbf16>, %gate: memref<64x32xbf16>, %out: memref<32xf32>) attributes {domain = array<i64: 32>} {
  %c0 = arith.constant 0 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %c = kernel.index 0
  %s = kernel.reduce add %c64 init %zero : f32 {
  ^bb0(%n: index):
    %g = memref.load %gate[%n, %c] : memref<64x32xbf16>
    %gf = arith.extf %g : bf16 to f32
    %rows = kernel.reduce add %c56 init %zero : f32 {
    ^bb0(%h: index):
      %cols = kernel.reduce add %c56 init %zero : f32 {
      ^bb0(%w: index):
        %v = memref.load %x[%n, %h, %w, %c] : memref<64x56x56x32xbf16>
        %vf = arith.extf %v : bf16 to f32
        %p = arith.mulf %vf, %gf : f32
        kernel.yield %p : f32
      }
      kernel.yield %cols : f32
    }
    kernel.yield %rows : f32
  }
  %t = arith.truncf %s : f32 to bf16
  memref.store %t, %gate[%c0, %c] : memref<64x32xbf16>
  memref.store %s, %out[%c] : memref<32xf32>
  kernel.return
}
kernel.schedule @main(%x: memref<64x56x56x32xbf16>, %gate: memref<64x32xbf16>, %out: memref<32xf32>) {
  kernel.launch @gated_channels(%x, %gate, %out) : memref<64x56x56x32xbf16>, memref<64x32xbf16>, memref<32xf32>
  kernel.launch @gate_written(%x, %gate, %out) : memref<64x56x56x32xbf16>, memref<64x32xbf16>, memref<32xf32>
  kernel.return
}

// -----

// Two sums of one kernel, neither reading the other (siblings: a layer
// norm's bias and weight gradients over the rows): split together, one
// partial kernel storing a temporary each, the kernel summing both.
// CHECK-LABEL: kernel.kernel @two_partial
// CHECK-SAME: %[[PA:[a-z0-9]+]]: memref<256xf32>, %[[PB:[a-z0-9]+]]: memref<256xf32>) attributes {domain = array<i64: 256>}
// CHECK: %[[A:.*]] = kernel.reduce add %c64 init
// CHECK: memref.store %[[A]], %[[PA]]
// CHECK: %[[B:.*]] = kernel.reduce add %c64 init
// CHECK: arith.mulf
// CHECK: memref.store %[[B]], %[[PB]]
// CHECK-LABEL: kernel.kernel @two(
// CHECK-SAME: %[[QA:[a-z0-9]+]]: memref<256xf32>, %[[QB:[a-z0-9]+]]: memref<256xf32>) attributes {domain = array<i64>}
// CHECK: kernel.reduce add %c256
// CHECK: memref.load %[[QA]]
// CHECK: kernel.reduce add %c256
// CHECK: memref.load %[[QB]]
// CHECK-LABEL: kernel.schedule @main
// CHECK: %[[TA:.*]] = memref.alloc() : memref<256xf32>
// CHECK: %[[TB:.*]] = memref.alloc() : memref<256xf32>
// CHECK-NEXT: kernel.launch @two_partial(%{{.*}}, %{{.*}}, %{{.*}}, %[[TA]], %[[TB]])
// CHECK-NEXT: kernel.launch @two(%{{.*}}, %{{.*}}, %{{.*}}, %[[TA]], %[[TB]])
kernel.kernel @two(%x: memref<16384xf32>, %a: memref<f32>, %b: memref<f32>) attributes {domain = array<i64>} {
  %n = arith.constant 16384 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<16384xf32>
    kernel.yield %v : f32
  }
  %q = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<16384xf32>
    %sq = arith.mulf %v, %v : f32
    kernel.yield %sq : f32
  }
  memref.store %s, %a[] : memref<f32>
  memref.store %q, %b[] : memref<f32>
  kernel.return
}
kernel.schedule @main(%x: memref<16384xf32>, %a: memref<f32>, %b: memref<f32>) {
  kernel.launch @two(%x, %a, %b) : memref<16384xf32>, memref<f32>, memref<f32>
  kernel.return
}

// -----

// A sum that reads another's result (a variance about the mean) is not
// split with it: the partial kernel would need the whole first sum.
// CHECK-LABEL: kernel.kernel @dependent(
// CHECK-NOT: _partial
kernel.kernel @dependent(%x: memref<16384xf32>, %b: memref<f32>) attributes {domain = array<i64>} {
  %n = arith.constant 16384 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<16384xf32>
    kernel.yield %v : f32
  }
  %q = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<16384xf32>
    %c = arith.subf %v, %s : f32
    %sq = arith.mulf %c, %c : f32
    kernel.yield %sq : f32
  }
  memref.store %q, %b[] : memref<f32>
  kernel.return
}
kernel.schedule @main(%x: memref<16384xf32>, %b: memref<f32>) {
  kernel.launch @dependent(%x, %b) : memref<16384xf32>, memref<f32>
  kernel.return
}

// -----

// Two sums that cannot be split together (here: of different lengths)
// become a kernel each, each split on its own: kept whole, they would
// leave most of the GPU idle.
// CHECK-LABEL: kernel.kernel @uneven_1_partial
// CHECK-LABEL: kernel.kernel @uneven_1(
// CHECK-NOT: memref.store %{{.*}}, %arg1
// CHECK: memref.store %{{.*}}, %arg2
// CHECK-LABEL: kernel.kernel @uneven_0_partial
// CHECK-LABEL: kernel.kernel @uneven_0(
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: memref.store %{{.*}}, %arg2
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @uneven_0_partial
// CHECK: kernel.launch @uneven_0(
// CHECK: kernel.launch @uneven_1_partial
// CHECK: kernel.launch @uneven_1(
// CHECK-NOT: kernel.launch @uneven(
kernel.kernel @uneven(%x: memref<16384xf32>, %a: memref<f32>, %b: memref<f32>) attributes {domain = array<i64>} {
  %n = arith.constant 16384 : index
  %h = arith.constant 8192 : index
  %zero = arith.constant 0.0 : f32
  %s = kernel.reduce add %n init %zero : f32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<16384xf32>
    kernel.yield %v : f32
  }
  %q = kernel.reduce add %h init %zero : f32 {
  ^bb0(%i: index):
    %v = memref.load %x[%i] : memref<16384xf32>
    %sq = arith.mulf %v, %v : f32
    kernel.yield %sq : f32
  }
  memref.store %s, %a[] : memref<f32>
  memref.store %q, %b[] : memref<f32>
  kernel.return
}
kernel.schedule @main(%x: memref<16384xf32>, %a: memref<f32>, %b: memref<f32>) {
  kernel.launch @uneven(%x, %a, %b) : memref<16384xf32>, memref<f32>, memref<f32>
  kernel.return
}
