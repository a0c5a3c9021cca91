// RUN: tc-opt %s -split-input-file -tc-fuse | FileCheck %s

// Dropout in one kernel: each point computes its own Philox-4x32-10 number
// from the seed (the key, split into 32-bit halves) and its counter (offset
// + row-major linear index): ten rounds of two 32x32->64 products, with
// the key bumped between rounds. The top 24 bits of the first word make an
// f32 on [0, 1), compared with the keep probability.
// CHECK-LABEL: kernel.kernel @dropout_fused_random_compare_where_0
// CHECK-SAME: (%[[SEED:.*]]: memref<i64>, %[[X:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK: %[[ROW:.*]] = kernel.index 0
// CHECK: %[[S:.*]] = memref.load %[[SEED]][] : memref<i64>
// CHECK: kernel.loop %c8
// CHECK-NEXT: ^bb0(%[[COL:.*]]: index):
// CHECK: %[[LIN:.*]] = arith.addi %{{.*}}, %[[COL]] : index
// CHECK: %[[N:.*]] = arith.index_cast %[[LIN]] : index to i64
// CHECK: %[[CTR:.*]] = arith.addi %c5_i64, %[[N]] : i64
// CHECK: arith.trunci %[[CTR]] : i64 to i32
// CHECK: arith.trunci %[[S]] : i64 to i32
// CHECK-COUNT-20: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: %[[BITS:.*]] = arith.shrui %{{.*}}, %c8_i32 : i32
// CHECK: %[[F:.*]] = arith.uitofp %[[BITS]] : i32 to f32
// CHECK: %[[U:.*]] = arith.mulf %[[F]], %cst{{.*}} : f32
// CHECK: %[[KEEP:.*]] = arith.cmpf olt, %[[U]], %{{.*}} : f32
// CHECK: %[[V:.*]] = memref.load %[[X]][%[[ROW]], %[[COL]]]
// CHECK: arith.select %[[KEEP]], %[[V]], %{{.*}} : f32
func.func @dropout(%x: tensor<4x8xf32>, %seed: tensor<i64>) -> tensor<4x8xf32> {
  %o = prim.constant dense<5> : tensor<i64>
  %u = prim.random uniform %seed, %o, shape [4, 8] : f32
  %k = prim.constant dense<0.7> : tensor<4x8xf32>
  %m = prim.compare lt, %u, %k : tensor<4x8xf32>
  %z = prim.constant dense<0.0> : tensor<4x8xf32>
  %y = prim.where %m, %x, %z : tensor<4x8xi1>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// f64 takes 53 bits from two words; normal numbers are Box-Muller of two
// uniforms (log and cos).
// CHECK-LABEL: kernel.kernel @wide_fused_random_0
// CHECK: arith.shli %{{.*}}, %c32_i64{{.*}} : i64
// CHECK: arith.shrui %{{.*}}, %c11_i64 : i64
// CHECK: arith.uitofp %{{.*}} : i64 to f64
// CHECK-LABEL: kernel.kernel @wide_fused_random_1
// CHECK: math.log
// CHECK: math.cos
func.func @wide(%seed: tensor<i64>) -> (tensor<16xf64>, tensor<16xf32>) {
  %o = prim.constant dense<0> : tensor<i64>
  %u = prim.random uniform %seed, %o, shape [16] : f64
  %n = prim.random normal %seed, %o, shape [16] : f32
  return %u, %n : tensor<16xf64>, tensor<16xf32>
}

// -----

// A gather loads the index at the point's index positions, clamps it into
// the table (once per row, outside the row's loop) and reads the table's
// row there.
// CHECK-LABEL: kernel.kernel @embedding_fused_gather_0
// CHECK-SAME: (%[[W:.*]]: memref<10x8xf32>, %[[I:.*]]: memref<3x5xi64>, %[[OUT:.*]]: memref<3x5x8xf32>)
// CHECK-DAG: %[[A:.*]] = kernel.index 0
// CHECK-DAG: %[[B:.*]] = kernel.index 1
// CHECK: %[[IDX:.*]] = memref.load %[[I]][%[[A]], %[[B]]] : memref<3x5xi64>
// CHECK: %[[C:.*]] = arith.index_cast %[[IDX]] : i64 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[C]], %c0
// CHECK: %[[HI:.*]] = arith.minsi %[[LO]], %c9
// CHECK: kernel.loop %c8
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK: %[[V:.*]] = memref.load %[[W]][%[[HI]], %[[J]]]
// CHECK: memref.store %[[V]], %[[OUT]][%[[A]], %[[B]], %[[J]]]
func.func @embedding(%w: tensor<10x8xf32>, %i: tensor<3x5xi64>) -> tensor<3x5x8xf32> {
  %r = prim.gather %w[%i], dim 0 : tensor<10x8xf32>, tensor<3x5xi64>
  return %r : tensor<3x5x8xf32>
}

// -----

// Along an inner dimension the index positions sit in the middle.
// CHECK-LABEL: kernel.kernel @columns_fused_gather_0
// CHECK-SAME: (%[[X:.*]]: memref<4x6xf32>, %[[I:.*]]: memref<3xi32>, %{{.*}}: memref<4x3xf32>)
// CHECK: kernel.loop %c3
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK: %[[IDX:.*]] = memref.load %[[I]][%[[J]]] : memref<3xi32>
// CHECK: arith.index_cast %[[IDX]] : i32 to index
// CHECK: memref.load %[[X]][%{{.*}}, %{{.*}}] : memref<4x6xf32>
func.func @columns(%x: tensor<4x6xf32>, %i: tensor<3xi32>) -> tensor<4x3xf32> {
  %r = prim.gather %x[%i], dim 1 : tensor<4x6xf32>, tensor<3xi32>
  return %r : tensor<4x3xf32>
}
