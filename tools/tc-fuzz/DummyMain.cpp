//===- DummyMain.cpp - tc-fuzz without libFuzzer ----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Where the build has no libFuzzer, tc-fuzz runs each file named on its
// command line once through the fuzz target: the regression driver for
// inputs the fuzzer once crashed on (test/fuzz/).
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-')
      continue; // libFuzzer flags: nothing to do without it
    auto buffer = llvm::MemoryBuffer::getFile(argv[i]);
    if (!buffer) {
      llvm::errs() << "tc-fuzz: cannot read " << argv[i] << "\n";
      return 1;
    }
    LLVMFuzzerTestOneInput(
        reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
        (*buffer)->getBufferSize());
  }
  return 0;
}
