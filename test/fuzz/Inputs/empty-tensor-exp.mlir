func.func @empty(%x: tensor<2x0xf32>) -> tensor<2x0xf32> {
  %0 = prim.exp %x : tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}
