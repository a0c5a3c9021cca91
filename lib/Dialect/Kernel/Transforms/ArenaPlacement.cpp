//===- ArenaPlacement.cpp - blocks with live ranges in one arena ----------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/ArenaPlacement.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <tuple>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::kernel;

SmallVector<int64_t> kernel::placeLiveBlocks(ArrayRef<LiveBlock> blocks,
                                             int64_t alignment,
                                             int64_t &arenaBytes) {
  SmallVector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](size_t a, size_t b) {
    return std::make_tuple(-blocks[a].bytes, blocks[a].first, a) <
           std::make_tuple(-blocks[b].bytes, blocks[b].first, b);
  });
  SmallVector<int64_t> offsets(blocks.size(), 0);
  arenaBytes = 0;
  SmallVector<std::pair<int64_t, int64_t>> busy;
  for (auto [index, block] : llvm::enumerate(order)) {
    const LiveBlock &current = blocks[block];
    busy.clear();
    for (size_t other : ArrayRef<size_t>(order).take_front(index))
      if (blocks[other].first <= current.last &&
          current.first <= blocks[other].last)
        busy.push_back({offsets[other], offsets[other] + blocks[other].bytes});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [start, end] : busy) {
      if (offset + current.bytes <= start)
        break;
      offset = std::max<int64_t>(offset, llvm::alignTo(end, alignment));
    }
    offsets[block] = offset;
    arenaBytes = std::max(arenaBytes, offset + current.bytes);
  }
  return offsets;
}
