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
  SmallVector<bool> placed(blocks.size(), false);
  arenaBytes = 0;
  SmallVector<std::pair<int64_t, int64_t>> busy;
  for (auto [index, block] : llvm::enumerate(order)) {
    const LiveBlock &current = blocks[block];
    // The block it may replace in place: placed already, the same size,
    // last live where this one starts.
    int64_t replaced = -1;
    if (current.inPlaceOf >= 0) {
      const LiveBlock &other = blocks[current.inPlaceOf];
      if (placed[current.inPlaceOf] && other.bytes == current.bytes &&
          other.last == current.first)
        replaced = current.inPlaceOf;
    }
    busy.clear();
    for (size_t other : ArrayRef<size_t>(order).take_front(index))
      if (static_cast<int64_t>(other) != replaced &&
          blocks[other].first <= current.last &&
          current.first <= blocks[other].last)
        busy.push_back({offsets[other], offsets[other] + blocks[other].bytes});
    llvm::sort(busy);
    int64_t offset = -1;
    if (replaced >= 0) {
      int64_t start = offsets[replaced], end = start + current.bytes;
      if (llvm::none_of(busy, [&](std::pair<int64_t, int64_t> b) {
            return b.first < end && start < b.second;
          }))
        offset = start;
      else
        busy.push_back({start, start + blocks[replaced].bytes});
      llvm::sort(busy);
    }
    if (offset < 0) {
      offset = 0;
      for (auto [start, end] : busy) {
        if (offset + current.bytes <= start)
          break;
        offset = std::max<int64_t>(offset, llvm::alignTo(end, alignment));
      }
    }
    offsets[block] = offset;
    placed[block] = true;
    arenaBytes = std::max(arenaBytes, offset + current.bytes);
  }
  return offsets;
}
