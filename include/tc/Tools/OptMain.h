//===- OptMain.h - tc-opt's and tc-translate's drivers ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc's command-line drivers, callable from the binaries of a build tree
// (tc-opt, tc-translate) and from the Python extension (the console
// scripts of a wheel, which ships no second copy of MLIR and LLVM).
//
//===----------------------------------------------------------------------===//

#ifndef TC_TOOLS_OPTMAIN_H
#define TC_TOOLS_OPTMAIN_H

namespace mlir::tc {

/// Runs tc-opt with `argv` (argv[0] the program's name): MLIR's opt driver
/// with tc's dialects, passes and pipelines registered, plus
/// `--tc-list-decompositions`. Returns the process's exit code. Parses
/// LLVM's command line, so call it once per process.
int optMain(int argc, char **argv);

/// Runs tc-translate with `argv`: MLIR's translation driver with
/// `--mlir-to-llvmir` for the dialects tc's pipelines end in (LLVM, GPU,
/// NVVM, ROCDL), the step after tc-opt that tc's CPU JIT and GPU
/// serialisation take. Once per process, as optMain.
int translateMain(int argc, char **argv);

} // namespace mlir::tc

#endif // TC_TOOLS_OPTMAIN_H
