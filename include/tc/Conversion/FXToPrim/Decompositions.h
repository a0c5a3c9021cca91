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

/// The op families of tc-decompose, one file of lib/Conversion/FXToPrim/
/// each (Elementwise.cpp, ...).
enum class Family : uint8_t {
  Elementwise,
  Shapes,
  Reductions,
  Networks,
  Indexing,
  MasksAndSegments,
  SortAndScan,
  SpecialFunctions,
  PoolingAndProducts,
  Linalg,
  ComplexAndFFT,
};

/// The family's name, as its file is named.
inline constexpr const char *kFamilyNames[] = {
    "Elementwise",      "Shapes",           "Reductions",
    "Networks",         "Indexing",         "MasksAndSegments",
    "SortAndScan",      "SpecialFunctions", "PoolingAndProducts",
    "Linalg",           "ComplexAndFFT"};

inline constexpr const char *getFamilyName(Family family) {
  return kFamilyNames[static_cast<unsigned>(family)];
}

/// One ATen overload tc-decompose lowers.
struct Decomposition {
  /// PyTorch's schema spelling: `aten::add.Tensor`, `aten::sin`.
  const char *op;
  /// Whose file decomposes it.
  Family family;
  /// kSymbolic or 0.
  uint32_t flags;
};

inline constexpr Decomposition kDecompositions[] = {
#define TC_DECOMPOSITION(NAME, FAMILY, FLAGS) {NAME, Family::FAMILY, FLAGS},
#include "tc/Conversion/FXToPrim/Decompositions.def"
#undef TC_DECOMPOSITION
};

} // namespace mlir::tc::decompositions

#endif // TC_CONVERSION_FXTOPRIM_DECOMPOSITIONS_H
