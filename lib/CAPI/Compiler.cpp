//===- Compiler.cpp - C API of the tc compiler ------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc-c/Compiler.h"

#include "tc/Runtime/CPURuntime.h"
#include "llvm/Support/CrashRecoveryContext.h"

#include <cstdlib>
#include <cstring>

using mlir::tc::CPUExecutable;

struct TcExecutable {
  std::unique_ptr<CPUExecutable> exe;
};

static char *copyString(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

TcExecutableRef tcCompileCPU(const char *source, size_t length,
                             int keepStageIR, const char *cacheDir,
                             char **error) {
  std::string diagnostics;
  std::unique_ptr<CPUExecutable> exe;
  // A bug in the compiler must not take the caller's process down: a crash
  // (or a failed assertion) while compiling becomes an error.
  llvm::CrashRecoveryContext::Enable();
  llvm::CrashRecoveryContext recovery;
  bool survived = recovery.RunSafely([&] {
    exe = CPUExecutable::compile(llvm::StringRef(source, length),
                                 keepStageIR != 0, diagnostics,
                                 cacheDir ? cacheDir : "");
  });
  if (!survived) {
    exe.reset();
    diagnostics += "error: tc crashed while compiling this graph (the crash "
                   "was contained); this is a bug in tc\n";
  }
  if (!exe) {
    if (error)
      *error = copyString(diagnostics);
    return nullptr;
  }
  return new TcExecutable{std::move(exe)};
}

int tcExecutableRun(TcExecutableRef exe, void *const *buffers, size_t count,
                    char **error) {
  std::string message;
  if (exe->exe->run(llvm::ArrayRef<void *>(buffers, count), message))
    return 0;
  if (error)
    *error = copyString(message);
  return 1;
}

int64_t tcExecutableArenaBytes(TcExecutableRef exe) {
  return exe->exe->arenaBytes();
}
int64_t tcExecutableIntermediateBytes(TcExecutableRef exe) {
  return exe->exe->intermediateBytes();
}
int64_t tcExecutableNumKernels(TcExecutableRef exe) {
  return exe->exe->numKernels();
}
int64_t tcExecutableNumBuffers(TcExecutableRef exe) {
  return exe->exe->numBuffers();
}
int tcExecutableFromCache(TcExecutableRef exe) {
  return exe->exe->fromCache() ? 1 : 0;
}

const char *tcExecutableStageIR(TcExecutableRef exe, const char *stage) {
  const auto &stages = exe->exe->stageIR();
  auto it = stages.find(stage);
  return it == stages.end() ? nullptr : it->second.c_str();
}

void tcExecutableDestroy(TcExecutableRef exe) { delete exe; }
void tcFreeString(char *string) { std::free(string); }
