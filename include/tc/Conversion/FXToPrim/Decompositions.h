//===- Decompositions.h - the ATen ops tc decomposes ------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The table of Decompositions.def as constants: header-only, so that
// tc._runtime (which links no MLIR) exports it as tc-decompose reads it.
//
//===----------------------------------------------------------------------===//

#ifndef TC_CONVERSION_FXTOPRIM_DECOMPOSITIONS_H
#define TC_CONVERSION_FXTOPRIM_DECOMPOSITIONS_H

#include <cstdint>

namespace mlir::tc::decompositions {

/// The decomposition handles the graph's symbolic leading dimension.
inline constexpr uint32_t kSymbolic = 1;

/// One ATen overload tc-decompose lowers.
struct Decomposition {
  /// PyTorch's schema spelling: `aten::add.Tensor`, `aten::sin`.
  const char *op;
  /// kSymbolic or 0.
  uint32_t flags;
};

inline constexpr Decomposition kDecompositions[] = {
#define TC_DECOMPOSITION(NAME, FLAGS) {NAME, FLAGS},
#include "tc/Conversion/FXToPrim/Decompositions.def"
};

} // namespace mlir::tc::decompositions

#endif // TC_CONVERSION_FXTOPRIM_DECOMPOSITIONS_H
