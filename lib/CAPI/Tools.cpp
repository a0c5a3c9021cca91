//===- Tools.cpp - the drivers and the build's description in the C API ---===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc-c/Compiler.h"
#include "tc/Tools/OptMain.h"

#include "llvm/Config/Targets.h"
#include "llvm/Config/llvm-config.h"

#include <string>

int tcOptMain(int argc, char **argv) {
  return mlir::tc::optMain(argc, argv);
}

int tcTranslateMain(int argc, char **argv) {
  return mlir::tc::translateMain(argc, argv);
}

const char *tcBuildInfo(void) {
  static const std::string info = [] {
    std::string text;
    auto add = [&](const char *key, const std::string &value) {
      text += key;
      text += "=";
      text += value;
      text += "\n";
    };
    add("llvm", LLVM_VERSION_STRING);
#ifdef TC_STATIC_LLVM
    add("linkage", "static");
#else
    add("linkage", "shared");
#endif
#ifdef NDEBUG
    add("assertions", "0");
#else
    add("assertions", "1");
#endif
    add("compiler", __VERSION__);
#if defined(LLVM_HAS_NVPTX_TARGET) && LLVM_HAS_NVPTX_TARGET
    add("nvptx", "1");
#else
    add("nvptx", "0");
#endif
#if defined(LLVM_HAS_AMDGPU_TARGET) && LLVM_HAS_AMDGPU_TARGET
    add("amdgpu", "1");
#else
    add("amdgpu", "0");
#endif
    return text;
  }();
  return info.c_str();
}
