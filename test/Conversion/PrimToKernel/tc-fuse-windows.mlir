// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A value read through several windows (here the padded exp, sliced twice)
// is realized once instead of being recomputed by each window; a pad reads
// its operand at a clamped index and selects the padding value outside; a
// concatenation selects the part a point falls in; a reduction over a
// leading dimension is realized rather than recomputed for every point it
// is broadcast to.

// CHECK-LABEL: kernel.kernel @windows_fused_exp_pad_0
// CHECK-SAME: (%[[X:.*]]: memref<2x6xf32>, %[[P:.*]]: memref<2x8xf32>)
// CHECK: kernel.loop
// CHECK: %[[J:.*]] = arith.subi %{{.*}}, %c1
// CHECK: %[[LOW:.*]] = arith.cmpi sge, %[[J]], %c0
// CHECK: %[[HIGH:.*]] = arith.cmpi slt, %[[J]], %c6
// CHECK: %[[IN:.*]] = arith.andi %[[LOW]], %[[HIGH]]
// CHECK: %[[CLAMPED:.*]] = arith.select %[[IN]], %[[J]], %c0
// CHECK: memref.load %[[X]][%{{.*}}, %[[CLAMPED]]]
// CHECK: %[[E:.*]] = math.exp
// CHECK: %[[V:.*]] = arith.select %{{.*}}, %[[E]], %cst
// CHECK: memref.store %[[V]], %[[P]]

// The two windows of one value are read with one load, at the column
// start of the part the point falls in (im2col's case).
// CHECK-LABEL: kernel.kernel @windows_fused_slice_concatenate_reduce_1
// CHECK-SAME: (%[[PIN:.*]]: memref<2x8xf32>, %[[SUM:.*]]: memref<6xf32>)
// CHECK: kernel.reduce add %c4
// CHECK: %[[PART:.*]] = arith.divui %{{.*}}, %c2
// CHECK: %[[ROW:.*]] = arith.remui %{{.*}}, %c2
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[PART]], %c0
// CHECK: %[[START:.*]] = arith.select %[[IS0]], %c0, %c2
// CHECK: %[[COL:.*]] = arith.addi %{{.*}}, %[[START]]
// CHECK: memref.load %[[PIN]][%[[ROW]], %[[COL]]]
// CHECK-NOT: memref.load
// CHECK-NOT: math.exp

// CHECK-LABEL: kernel.kernel @windows_fused_mul_2
// CHECK-NOT: kernel.reduce
// CHECK: memref.load %{{.*}} : memref<6xf32>
// CHECK: arith.mulf
func.func @windows(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %e = prim.exp %x : tensor<2x6xf32>
  %p = prim.pad %e, low [0, 1], high [0, 1], interior [0, 0], value 0.0 : tensor<2x6xf32>
  %a = prim.slice %p, start [0, 0], limit [2, 6], strides [1, 1] : tensor<2x8xf32>
  %b = prim.slice %p, start [0, 2], limit [2, 8], strides [1, 1] : tensor<2x8xf32>
  %c = prim.concatenate %a, %b dim 0 : tensor<2x6xf32>, tensor<2x6xf32>
  %s = prim.reduce sum %c, dims [0] : tensor<4x6xf32>
  %r = prim.reshape %s, shape [1, 6] : tensor<6xf32>
  %bb = prim.broadcast_in_dim %r, shape [2, 6], dims [0, 1] : tensor<1x6xf32>
  %o = prim.mul %x, %bb : tensor<2x6xf32>
  return %o : tensor<2x6xf32>
}

// -----

// A sum of four windows of g (what a pooling's or a convolution's input
// gradient is) read by two kernels, a row sum and a product, is realized:
// each would otherwise read four windows per element. A cheap value (one
// read of x) shared the same way is inlined into both.
// CHECK-LABEL: kernel.kernel @shared_fused_slice_add_0
// CHECK-SAME: (%{{.*}}: memref<4x10xf32>, %[[W:.*]]: memref<4x8xf32>)
// CHECK-COUNT-4: memref.load
// CHECK: memref.store %{{.*}}, %[[W]]
// CHECK-LABEL: kernel.kernel @shared_fused_exp_mul_reduce_1
// CHECK-SAME: (%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4xf32>)
// CHECK-COUNT-2: memref.load
// CHECK-NEXT: math.exp
// CHECK-LABEL: kernel.kernel @shared_fused_exp_mul_2
// CHECK-SAME: (%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>)
// CHECK-COUNT-2: memref.load
// CHECK-NEXT: math.exp
// CHECK: kernel.launch @shared_fused_slice_add_0
// CHECK: kernel.launch @shared_fused_exp_mul_reduce_1
// CHECK: kernel.launch @shared_fused_exp_mul_2
func.func @shared(%g: tensor<4x10xf32>, %x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %a = prim.slice %g, start [0, 0], limit [4, 8], strides [1, 1] : tensor<4x10xf32>
  %b = prim.slice %g, start [0, 1], limit [4, 9], strides [1, 1] : tensor<4x10xf32>
  %c = prim.slice %g, start [0, 2], limit [4, 10], strides [1, 1] : tensor<4x10xf32>
  %d = prim.slice %g, start [0, 1], limit [4, 9], strides [1, 1] : tensor<4x10xf32>
  %ab = prim.add %a, %b : tensor<4x8xf32>
  %cd = prim.add %c, %d : tensor<4x8xf32>
  %w = prim.add %ab, %cd : tensor<4x8xf32>
  %e = prim.exp %x : tensor<4x8xf32>
  %m = prim.mul %w, %e : tensor<4x8xf32>
  %s = prim.reduce sum %m, dims [1] : tensor<4x8xf32>
  %o = prim.mul %m, %x : tensor<4x8xf32>
  return %s, %o : tensor<4xf32>, tensor<4x8xf32>
}

// -----

// Parts that are not windows of one value: each is read at its index
// clamped into the part, and the part the point falls in is selected.
// CHECK-LABEL: kernel.kernel @mixed_fused_exp_concatenate_0
// CHECK-SAME: (%[[X:.*]]: memref<2x3xf32>, %[[Y:.*]]: memref<2x3xf32>, %{{.*}}: memref<4x3xf32>)
// CHECK-DAG: %[[A:.*]] = memref.load %[[X]]
// CHECK-DAG: %[[B:.*]] = memref.load %[[Y]]
// CHECK: %[[E:.*]] = math.exp %[[B]]
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %{{.*}}, %c2
// CHECK: arith.select %[[FIRST]], %[[A]], %[[E]]
func.func @mixed(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %e = prim.exp %y : tensor<2x3xf32>
  %c = prim.concatenate %x, %e dim 0 : tensor<2x3xf32>, tensor<2x3xf32>
  return %c : tensor<4x3xf32>
}

// -----

// Max pooling: the pooled value (read at every point of a window by both
// kernels) is realized; the positions' kernel scans the window keeping the
// first maximum (a later point wins if greater or NaN); the values' kernel
// keeps the maximum of the same scan (no load at a position computed from
// the data, which no loop vectorizes) and does not read the positions.
// CHECK-LABEL: kernel.kernel @max_pool_fused_exp_0
// CHECK-LABEL: kernel.kernel @max_pool_fused_window_argmax_1
// CHECK-SAME: (%[[E:.*]]: memref<1x2x6x6xf32>, %[[K:.*]]: memref<1x2x3x3xi8>)
// CHECK: %[[X0:.*]] = memref.load %[[E]]
// CHECK: %[[X1:.*]] = memref.load %[[E]]
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[X1]], %[[X0]] : f32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X1]], %[[X1]] : f32
// CHECK: arith.ori %[[GT]], %[[NAN]]
// CHECK: arith.select %{{.*}}, %c1_i8, %c0_i8 : i8
// CHECK-COUNT-7: arith.cmpf ogt
// CHECK: memref.store %{{.*}}, %[[K]]
// CHECK-LABEL: kernel.kernel @max_pool_fused_window_gather_2
// CHECK-SAME: (%[[E2:.*]]: memref<1x2x6x6xf32>, %[[Y:.*]]: memref<1x2x3x3xf32>)
// CHECK-NOT: arith.index_cast
// CHECK: %[[Y0:.*]] = memref.load %[[E2]]
// CHECK: %[[Y1:.*]] = memref.load %[[E2]]
// CHECK: arith.cmpf ogt, %[[Y1]], %[[Y0]] : f32
// CHECK: %[[BEST:.*]] = arith.select %{{.*}}, %[[Y1]], %[[Y0]] : f32
// CHECK-COUNT-7: arith.cmpf ogt
// CHECK: memref.store %{{.*}}, %[[Y]]
func.func @max_pool(%x: tensor<1x2x6x6xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi8>) {
  %e = prim.exp %x : tensor<1x2x6x6xf32>
  %k = prim.window_argmax %e, window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x2x6x6xf32> -> tensor<1x2x3x3xi8>
  %y = prim.window_gather %e[%k], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x2x6x6xf32>, tensor<1x2x3x3xi8> -> tensor<1x2x3x3xf32>
  return %y, %k : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi8>
}

// -----

// Its backward, one kernel over the input: each window that holds the
// point (the offset divides by the stride) contributes its cotangent when
// its position names the point; bf16 sums in f32.
// CHECK-LABEL: kernel.kernel @max_pool_backward_fused_window_scatter_0
// CHECK-SAME: (%[[G:.*]]: memref<1x2x3x3xbf16>, %[[K:.*]]: memref<1x2x3x3xi8>, %[[DX:.*]]: memref<1x2x6x6xbf16>)
// CHECK: arith.remsi %{{.*}}, %c2 : index
// CHECK: arith.divsi %{{.*}}, %c2 : index
// CHECK: %[[P8:.*]] = memref.load %[[K]]
// CHECK: %[[G8:.*]] = memref.load %[[G]]
// CHECK: arith.cmpi eq, %[[P8]], %c8_i8 : i8
// CHECK: arith.extf %[[G8]] : bf16 to f32
// CHECK: arith.addf %cst, %{{.*}} : f32
// CHECK-COUNT-8: arith.cmpi eq, %{{.*}}, %c{{[0-7]}}_i8 : i8
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %[[DX]]
func.func @max_pool_backward(%g: tensor<1x2x3x3xbf16>, %k: tensor<1x2x3x3xi8>) -> tensor<1x2x6x6xbf16> {
  %dx = prim.window_scatter %g[%k], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<1x2x3x3xbf16>, tensor<1x2x3x3xi8> -> tensor<1x2x6x6xbf16>
  return %dx : tensor<1x2x6x6xbf16>
}

// -----

// A zero border around cheap elementwise arithmetic of a realized value
// (average pooling's padded, widened input), read by several slices, is
// not realized: the one kernel reads the bf16 argument at each window
// point, or the border, instead of writing and reading a padded f32 copy.
// CHECK-LABEL: kernel.kernel @border_fused_pad_slice_add_convert_0
// CHECK-SAME: (%[[X:.*]]: memref<2x6xbf16>, %[[OUT:.*]]: memref<2x6xbf16>)
// CHECK-COUNT-3: memref.load %[[X]]
// CHECK-NOT: memref.load
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT: kernel.kernel
func.func @border(%x: tensor<2x6xbf16>) -> tensor<2x6xbf16> {
  %w = prim.convert %x to f32 : tensor<2x6xbf16>
  %p = prim.pad %w, low [0, 1], high [0, 1], interior [0, 0], value 0.0 : tensor<2x6xf32>
  %a = prim.slice %p, start [0, 0], limit [2, 6], strides [1, 1] : tensor<2x8xf32>
  %b = prim.slice %p, start [0, 1], limit [2, 7], strides [1, 1] : tensor<2x8xf32>
  %c = prim.slice %p, start [0, 2], limit [2, 8], strides [1, 1] : tensor<2x8xf32>
  %ab = prim.add %a, %b : tensor<2x6xf32>
  %s = prim.add %ab, %c : tensor<2x6xf32>
  %r = prim.convert %s to bf16 : tensor<2x6xf32>
  return %r : tensor<2x6xbf16>
}

// -----

// So without a border (windows that tile the input: a 2x2 average pooling
// of even maps): the widened input is not realized as an f32 copy; the
// pooling's kernel reads the bf16 argument at each window point.
// CHECK-LABEL: kernel.kernel @tiles_fused_slice_add_convert_0
// CHECK-SAME: (%[[X:.*]]: memref<2x8xbf16>, %[[OUT:.*]]: memref<2x4xbf16>)
// CHECK-COUNT-2: memref.load %[[X]]
// CHECK-NOT: memref.load
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT: kernel.kernel
func.func @tiles(%x: tensor<2x8xbf16>) -> tensor<2x4xbf16> {
  %w = prim.convert %x to f32 : tensor<2x8xbf16>
  %a = prim.slice %w, start [0, 0], limit [2, 7], strides [1, 2] : tensor<2x8xf32>
  %b = prim.slice %w, start [0, 1], limit [2, 8], strides [1, 2] : tensor<2x8xf32>
  %s = prim.add %a, %b : tensor<2x4xf32>
  %r = prim.convert %s to bf16 : tensor<2x4xf32>
  return %r : tensor<2x4xbf16>
}
