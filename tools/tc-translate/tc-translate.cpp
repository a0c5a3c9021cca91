//===- tc-translate.cpp - tc's mlir-translate -------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The driver lives in lib/Tools/TranslateMain.cpp, which the Python
// extension also links (a wheel's `tc-translate` console script).
//
//===----------------------------------------------------------------------===//

#include "tc/Tools/OptMain.h"

int main(int argc, char **argv) { return mlir::tc::translateMain(argc, argv); }
