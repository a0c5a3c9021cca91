kernel.kernel @loop_yield(%x: memref<4x8xf32>) attributes {domain = array< index
  kernel.loop %n {
  ^bb0(%j: index):
    %c = arith.constant 1.0 : f32
    kernel.yield %c : f32
  }
  kernel.return
}
