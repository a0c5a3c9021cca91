//===- ExactRoundings.h - drop roundings of exact bf16 values ---*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_CONVERSION_KERNELTOCPU_EXACTROUNDINGS_H
#define TC_CONVERSION_KERNELTOCPU_EXACTROUNDINGS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tc {

/// After bf16 arithmetic is emulated in f32: widening a rounded f32 value
/// that bf16 holds exactly (a maximum, minimum, choice, negation or
/// absolute value of bf16 values) becomes the f32 value itself.
void populateExactRoundingPatterns(RewritePatternSet &patterns);

} // namespace mlir::tc

#endif // TC_CONVERSION_KERNELTOCPU_EXACTROUNDINGS_H
