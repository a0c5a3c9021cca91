//===- ArenaPlacement.h - blocks with live ranges in one arena --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The placement rule of tc-plan-memory, shared with the GPU runtimes (which
// place the arena again once library workspaces are known).
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_TRANSFORMS_ARENAPLACEMENT_H
#define TC_DIALECT_KERNEL_TRANSFORMS_ARENAPLACEMENT_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::tc::kernel {

/// `bytes` that must stay intact from step `first` to step `last`
/// (inclusive).
struct LiveBlock {
  int64_t bytes;
  size_t first, last;
  /// A block this one may take the place of exactly (same offset, same
  /// bytes) though both are live at step `first`: that block's last step,
  /// which writes this one element by element where it reads the other (a
  /// pointwise epilogue written in place); -1: none.
  int64_t inPlaceOf = -1;
};

/// Places `blocks` in one arena: largest first (then the earliest, then in
/// order), each at the lowest offset, a multiple of `alignment`, that no
/// block placed before it and live at the same time occupies; a block
/// with `inPlaceOf` first tries that block's offset. Returns each block's
/// offset and sets `arenaBytes` to the arena's size.
SmallVector<int64_t> placeLiveBlocks(ArrayRef<LiveBlock> blocks,
                                     int64_t alignment, int64_t &arenaBytes);

} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_TRANSFORMS_ARENAPLACEMENT_H
