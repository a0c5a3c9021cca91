//===- tc-opt.cpp - tc's mlir-opt -------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The driver lives in lib/Tools/OptMain.cpp, which the Python extension
// also links (a wheel's `tc-opt` console script).
//
//===----------------------------------------------------------------------===//

#include "tc/Tools/OptMain.h"

int main(int argc, char **argv) { return mlir::tc::optMain(argc, argv); }
