// RUN: tc-opt %s -tc-fuse | FileCheck %s

// A rotary embedding's pairs: the query part of a projection (a slice of
// the product), converted to f32 and reshaped to [.., pairs, 2], is read
// through two slices (each pair's first and second element) by one
// elementwise expression. The slices' source is loads of the product
// alone, so the rotation's kernel reads the product where it is: no
// kernel writes the converted part first.

// CHECK-LABEL: kernel.schedule @rotary
// CHECK: kernel.gemm
// CHECK-NEXT: kernel.launch @rotary_fused_{{.*}}(%alloc, %arg2, %arg3)
// CHECK-NEXT: kernel.return
func.func @rotary(%x: tensor<4x16xbf16>, %w: tensor<16x24xbf16>, %cos: tensor<4x4x1xf32>) -> tensor<4x4x2xf32> {
  %p = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<4x16xbf16>, tensor<16x24xbf16>
  %q = prim.slice %p, start [0, 0], limit [4, 8], strides [1, 1] : tensor<4x24xbf16>
  %f = prim.convert %q to f32 : tensor<4x8xbf16>
  %r = prim.reshape %f, shape [4, 4, 2] : tensor<4x8xf32>
  %a = prim.slice %r, start [0, 0, 0], limit [4, 4, 1], strides [1, 1, 1] : tensor<4x4x2xf32>
  %b = prim.slice %r, start [0, 0, 1], limit [4, 4, 2], strides [1, 1, 1] : tensor<4x4x2xf32>
  %ac = prim.mul %a, %cos : tensor<4x4x1xf32>
  %bc = prim.mul %b, %cos : tensor<4x4x1xf32>
  %o = prim.concatenate %ac, %bc dim 2 : tensor<4x4x1xf32>, tensor<4x4x1xf32>
  return %o : tensor<4x4x2xf32>
}
