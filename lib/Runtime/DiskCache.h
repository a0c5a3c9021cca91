//===- DiskCache.h - compiled graphs cached across processes ----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// What the CPU and GPU runtimes' disk caches share: keys that change with
// tc's build, and files written so that a concurrent reader never sees half
// of one. Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_DISKCACHE_H
#define TC_LIB_RUNTIME_DISKCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::tc::runtime {

/// Which build of tc this is: the path, size and modification time of the
/// binary holding this code (the Python extension, tc-opt). A rebuilt tc
/// (new passes, new code generation) then misses the cache of an older
/// one even where a cache's format version was not bumped.
const std::string &buildIdentity();

/// The hex SHA-256 of `parts` and buildIdentity().
std::string cacheKey(llvm::ArrayRef<llvm::StringRef> parts);

/// `source` (an MLIR module's text) without what cannot change what it
/// compiles to: locations (`loc(...)` and `#loc` aliases), the values of
/// `name` and `fx.name` attributes (FX node names, kept for diagnostics and
/// printing only), and SSA value names (renumbered in order of first
/// appearance). Two graphs that differ only there, such as the subgraphs
/// of a model's identical layers, share a cache entry: the second is
/// deserialized instead of compiled. String literals are kept whole.
std::string structuralText(llvm::StringRef source);

/// Writes `bytes` to `dir`/`name` through a temporary file and a rename.
/// Best effort: a cache that cannot be written is no error (returns false,
/// for callers writing several files that belong together).
bool writeCacheFile(llvm::StringRef dir, llvm::StringRef name,
                    llvm::StringRef bytes);

} // namespace mlir::tc::runtime

#endif // TC_LIB_RUNTIME_DISKCACHE_H
