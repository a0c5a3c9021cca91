// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-fuse=cache-rows=false -split-input-file | FileCheck %s --check-prefix=GPU

// A training forward's layer norm returns its row sums for the backward
// (tc-partition saves them: tc-partition.mlir @layer_norm). The norm's
// kernel computes them at each row anyway and stores them there: one
// kernel, not a kernel per sum and one for the rows.
// CHECK-LABEL: kernel.kernel @main_fused_div_add_rsqrt_mul_0
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[S:.*]]: memref<4xf32>, %[[SS:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4x8xf32>)
// CHECK: %[[ROW:.*]] = kernel.index 0
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK: memref.store %[[SUM]], %[[S]][%[[ROW]]]
// CHECK: %[[SQUARES:.*]] = kernel.reduce add
// CHECK: memref.store %[[SQUARES]], %[[SS]][%[[ROW]]]
// CHECK: kernel.loop
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-LABEL: kernel.schedule @main
// CHECK-SAME: (%[[AX:.*]]: memref<4x8xf32>, %[[AY:.*]]: memref<4x8xf32>, %[[AS:.*]]: memref<4xf32>, %[[ASS:.*]]: memref<4xf32>)
// CHECK-NEXT: kernel.launch @main_fused_div_add_rsqrt_mul_0(%[[AX]], %[[AS]], %[[ASS]], %[[AY]])
// CHECK-NEXT: kernel.return
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %n = prim.constant dense<8.0> : tensor<4xf32>
  %eps = prim.constant dense<1.0e-5> : tensor<4xf32>
  %s = prim.reduce sum %x, dims [1] : tensor<4x8xf32>
  %mean = prim.div %s, %n : tensor<4xf32>
  %bm = prim.broadcast_in_dim %mean, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %x, %bm : tensor<4x8xf32>
  %sq = prim.mul %c, %c : tensor<4x8xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<4x8xf32>
  %var = prim.div %ss, %n : tensor<4xf32>
  %ve = prim.add %var, %eps : tensor<4xf32>
  %r = prim.rsqrt %ve : tensor<4xf32>
  %br = prim.broadcast_in_dim %r, shape [4, 8], dims [0] : tensor<4xf32>
  %y = prim.mul %c, %br : tensor<4x8xf32>
  return %y, %s, %ss : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A sum read along the kernel's columns (one element per row, but not the
// row's own: y[i, j] = x[j, i] + s[j]) would be computed inside the row's
// loop: it keeps its own kernel, which the other reads.
// CHECK-LABEL: kernel.kernel @main_fused_reduce_0
// CHECK-LABEL: kernel.kernel @main_fused_add_1
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @main_fused_reduce_0
// CHECK: kernel.launch @main_fused_add_1
func.func @main(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %s = prim.reduce sum %x, dims [1] : tensor<4x4xf32>
  %t = prim.permute %x, [1, 0] : tensor<4x4xf32>
  %b = prim.broadcast_in_dim %s, shape [4, 4], dims [1] : tensor<4xf32>
  %y = prim.add %t, %b : tensor<4x4xf32>
  return %y, %s : tensor<4x4xf32>, tensor<4xf32>
}

// -----

// Siblings: a GELU recomputed for a weight's gradient and the GELU's
// gradient both read the activation; the gradient, later in program order,
// reads only what is written before the GELU's kernel (the activation, the
// output gradient), so one kernel computes both, from one read.
// CHECK-LABEL: kernel.kernel @main_fused_erf_add_mul_0
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[G:.*]]: memref<8x16xf32>, %[[DX:.*]]: memref<8x16xf32>, %[[Y:.*]]: memref<8x16xf32>)
// CHECK: kernel.loop
// CHECK: math.erf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK: memref.store %{{.*}}, %[[DX]]
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @main_fused_erf_add_mul_0
// CHECK-NEXT: kernel.gemm
// CHECK-NEXT: kernel.return
func.func @main(%x: tensor<8x16xf32>, %g: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  %half = prim.constant dense<0.5> : tensor<8x16xf32>
  %one = prim.constant dense<1.0> : tensor<8x16xf32>
  %r2 = prim.constant dense<0.707106769> : tensor<8x16xf32>
  %xs = prim.mul %x, %r2 : tensor<8x16xf32>
  %e = prim.erf %xs : tensor<8x16xf32>
  %e1 = prim.add %e, %one : tensor<8x16xf32>
  %xh = prim.mul %x, %half : tensor<8x16xf32>
  %y = prim.mul %xh, %e1 : tensor<8x16xf32>
  %p = prim.dot %y, %w, batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x4xf32>
  %sq = prim.mul %xs, %xs : tensor<8x16xf32>
  %nsq = prim.neg %sq : tensor<8x16xf32>
  %pdf = prim.exp %nsq : tensor<8x16xf32>
  %xp = prim.mul %x, %pdf : tensor<8x16xf32>
  %d = prim.add %e1, %xp : tensor<8x16xf32>
  %dx = prim.mul %g, %d : tensor<8x16xf32>
  return %p, %dx : tensor<8x4xf32>, tensor<8x16xf32>
}

// -----

// A later value that reads what the product writes after the first kernel
// (or that reduces) is not its sibling: three kernels.
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @main_fused_exp_0
// CHECK-NEXT: kernel.gemm
// CHECK-NEXT: kernel.launch @main_fused_
// CHECK-NEXT: kernel.launch @main_fused_
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>) {
  %y = prim.exp %x : tensor<8x16xf32>
  %p = prim.dot %y, %w, batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x16xf32>
  %z = prim.mul %p, %x : tensor<8x16xf32>
  %s = prim.reduce sum %x, dims [1] : tensor<8x16xf32>
  return %z, %p, %s : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8xf32>
}

// -----

// Point values: a residual sum the graph returns (a training forward saves
// it) and the layer norm of it. The norm's kernel computes the sum at each
// point anyway (its statistics read it across the row): it stores it too,
// and the sum has no kernel of its own. With cache-rows the first reduction
// stores the sum's row and the rest reads it back; without (GPUs), the
// sum is computed in each pass and stored at the point.
// CHECK-LABEL: kernel.kernel @main_fused_div_add_rsqrt_mul_0
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[R:.*]]: memref<4x8xf32>, %[[H:.*]]: memref<4x8xf32>, %[[Y:.*]]: memref<4x8xf32>)
// CHECK: kernel.reduce add
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: memref.store %[[SUM]], %[[H]]
// CHECK: kernel.reduce add
// CHECK: memref.load %[[H]]
// CHECK: kernel.loop
// CHECK: memref.load %[[H]]
// CHECK-NOT: memref.store %{{.*}}, %[[H]]
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-LABEL: kernel.schedule @main
// CHECK-SAME: (%[[AX:.*]]: memref<4x8xf32>, %[[AR:.*]]: memref<4x8xf32>, %[[AY:.*]]: memref<4x8xf32>, %[[AH:.*]]: memref<4x8xf32>)
// CHECK-NEXT: kernel.launch @main_fused_div_add_rsqrt_mul_0(%[[AX]], %[[AR]], %[[AH]], %[[AY]])
// CHECK-NEXT: kernel.return
// GPU-LABEL: kernel.kernel @main_fused_div_add_rsqrt_mul_0(%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>)
// GPU: kernel.reduce add
// GPU-NOT: memref.store
// GPU: kernel.reduce add
// GPU-NOT: memref.store
// GPU: kernel.loop
// GPU: %[[LX:.*]] = memref.load %arg0
// GPU: %[[LR:.*]] = memref.load %arg1
// GPU: %[[SUM:.*]] = arith.addf %[[LX]], %[[LR]]
// GPU: memref.store %{{.*}}, %arg3
// GPU: memref.store %[[SUM]], %arg2
// GPU-LABEL: kernel.schedule @main
// GPU-NEXT: kernel.launch @main_fused_div_add_rsqrt_mul_0
// GPU-NEXT: kernel.return
func.func @main(%x: tensor<4x8xf32>, %res: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = prim.add %x, %res : tensor<4x8xf32>
  %n = prim.constant dense<8.0> : tensor<4xf32>
  %eps = prim.constant dense<1.0e-5> : tensor<4xf32>
  %s = prim.reduce sum %h, dims [1] : tensor<4x8xf32>
  %mean = prim.div %s, %n : tensor<4xf32>
  %bm = prim.broadcast_in_dim %mean, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %h, %bm : tensor<4x8xf32>
  %sq = prim.mul %c, %c : tensor<4x8xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<4x8xf32>
  %var = prim.div %ss, %n : tensor<4xf32>
  %ve = prim.add %var, %eps : tensor<4xf32>
  %r = prim.rsqrt %ve : tensor<4xf32>
  %br = prim.broadcast_in_dim %r, shape [4, 8], dims [0] : tensor<4xf32>
  %y = prim.mul %c, %br : tensor<4x8xf32>
  return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A value read at other points than the reader's own (a shifted slice of
// it, padded back) keeps its kernel: computed at the reader's points only,
// some of its elements would never be stored.
// CHECK-LABEL: kernel.kernel @main_fused_add_0
// CHECK-LABEL: kernel.kernel @main_fused_slice_pad_mul_1
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @main_fused_add_0
// CHECK: kernel.launch @main_fused_slice_pad_mul_1
func.func @main(%x: tensor<4x8xf32>, %res: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = prim.add %x, %res : tensor<4x8xf32>
  %s = prim.slice %h, start [0, 1], limit [4, 8], strides [1, 1] : tensor<4x8xf32>
  %p = prim.pad %s, low [0, 0], high [0, 1], interior [0, 0], value 0.0 : tensor<4x7xf32>
  %y = prim.mul %p, %x : tensor<4x8xf32>
  return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Reduction siblings: a layer norm's bias gradient (the column sums of the
// output gradient) and its weight gradient (the column sums of the output
// gradient times the normalized input) reduce the same rows and read the
// gradient both: one kernel computes both sums (tc-split-reductions then
// splits them together).
// CHECK-LABEL: kernel.kernel @main_fused_reduce_0
// CHECK-SAME: (%[[G:.*]]: memref<64x8xf32>, %[[X:.*]]: memref<64x8xf32>, %[[W:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>)
// CHECK: kernel.loop
// CHECK: %[[SB:.*]] = kernel.reduce add
// CHECK: %[[SW:.*]] = kernel.reduce add
// CHECK: arith.mulf
// CHECK: memref.store %[[SB]], %[[B]]
// CHECK: memref.store %[[SW]], %[[W]]
// CHECK-LABEL: kernel.schedule @main
// CHECK-NEXT: kernel.launch @main_fused_reduce_0
// CHECK-NEXT: kernel.return
func.func @main(%g: tensor<64x8xf32>, %x: tensor<64x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %db = prim.reduce sum %g, dims [0] : tensor<64x8xf32>
  %gx = prim.mul %g, %x : tensor<64x8xf32>
  %dw = prim.reduce sum %gx, dims [0] : tensor<64x8xf32>
  return %db, %dw : tensor<8xf32>, tensor<8xf32>
}

// -----

// Two index checks' 0-d flags and their or (tc.backend.checks reads the
// or): each flag is an output of its own kernel, and the or reads both
// (a 0-d reader has no rows to compute a flag at: this crashed).
// CHECK-LABEL: kernel.kernel @flags_fused_convert_compare_0
// CHECK-LABEL: kernel.kernel @flags_fused_convert_reduce_compare_1
// CHECK: kernel.reduce max
// CHECK-LABEL: kernel.kernel @flags_fused_bitwise_or_2
// CHECK: arith.ori
// CHECK-LABEL: kernel.schedule @flags
// CHECK-NEXT: kernel.launch @flags_fused_convert_compare_0(%{{.*}}, %[[A:.*]])
// CHECK-NEXT: kernel.launch @flags_fused_convert_reduce_compare_1(%{{.*}}, %[[B:.*]])
// CHECK-NEXT: kernel.launch @flags_fused_bitwise_or_2(%[[A]], %[[B]], %{{.*}})
func.func @flags(%i: tensor<1xi64>, %j: tensor<2x1xi64>) -> (tensor<i1>, tensor<i1>, tensor<i1>) {
  %b1 = prim.constant dense<63> : tensor<i32>
  %b2 = prim.constant dense<49> : tensor<i32>
  %0 = prim.convert %i to i32 : tensor<1xi64>
  %1 = prim.reshape %0, shape [] : tensor<1xi32>
  %a = prim.compare gt, %1, %b1 : tensor<i32>
  %2 = prim.convert %j to i32 : tensor<2x1xi64>
  %3 = prim.reshape %2, shape [2] : tensor<2x1xi32>
  %4 = prim.reduce max %3, dims [0] : tensor<2xi32>
  %b = prim.compare gt, %4, %b2 : tensor<i32>
  %any = prim.bitwise_or %a, %b : tensor<i1>
  return %a, %b, %any : tensor<i1>, tensor<i1>, tensor<i1>
}

// -----

// A layer norm after a Linear on rows whose count is the graph's symbolic
// size (a graph compiled once for every sequence length): its statistics
// are row statistics of its kernel as with static rows (one kernel, where
// a kernel per statistic and one for the rows ran before).
// CHECK-LABEL: kernel.schedule @symbolic_rows
// CHECK: kernel.gemm
// CHECK-NOT: kernel.launch
// CHECK: kernel.launch @symbolic_rows_fused_sub_mul_convert_0
// CHECK-NEXT: kernel.return
// GPU-LABEL: kernel.schedule @symbolic_rows
// GPU: kernel.gemm
// GPU-NOT: kernel.launch
// GPU: kernel.launch @symbolic_rows_fused_sub_mul_convert_0
// GPU-NEXT: kernel.return
func.func @symbolic_rows(%a: tensor<?x768xbf16>, %m: tensor<768x768xbf16>, %b: tensor<768xbf16>, %w: tensor<768xbf16>) -> tensor<?x768xbf16> {
  %x = prim.dot %a, %m, batch [] x [], contract [1] x [0] : tensor<?x768xbf16>, tensor<768x768xbf16>
  %eps = prim.constant dense<9.99999974E-6> : tensor<f32>
  %n = prim.constant dense<768.0> : tensor<f32>
  %bb = prim.broadcast_in_dim %b, shape [?, 768], dims [1] : tensor<768xbf16>
  %h = prim.add %x, %bb : tensor<?x768xbf16>
  %f = prim.convert %h to f32 : tensor<?x768xbf16>
  %s = prim.reduce sum %f, dims [1] : tensor<?x768xf32>
  %s1 = prim.reshape %s, shape [?, 1] : tensor<?xf32>
  %nb = prim.broadcast_in_dim %n, shape [?, 1], dims [] : tensor<f32>
  %mean = prim.div %s1, %nb : tensor<?x1xf32>
  %bm = prim.broadcast_in_dim %mean, shape [?, 768], dims [0, 1] : tensor<?x1xf32>
  %c = prim.sub %f, %bm : tensor<?x768xf32>
  %sq = prim.mul %c, %c : tensor<?x768xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<?x768xf32>
  %ss1 = prim.reshape %ss, shape [?, 1] : tensor<?xf32>
  %var = prim.div %ss1, %nb : tensor<?x1xf32>
  %eb = prim.broadcast_in_dim %eps, shape [?, 1], dims [] : tensor<f32>
  %ve = prim.add %var, %eb : tensor<?x1xf32>
  %r = prim.rsqrt %ve : tensor<?x1xf32>
  %br = prim.broadcast_in_dim %r, shape [?, 768], dims [0, 1] : tensor<?x1xf32>
  %y = prim.mul %c, %br : tensor<?x768xf32>
  %wf = prim.convert %w to f32 : tensor<768xbf16>
  %wb = prim.broadcast_in_dim %wf, shape [?, 768], dims [1] : tensor<768xf32>
  %z = prim.mul %y, %wb : tensor<?x768xf32>
  %o = prim.convert %z to bf16 : tensor<?x768xf32>
  return %o : tensor<?x768xbf16>
}
