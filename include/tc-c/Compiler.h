/*===- tc-c/Compiler.h - C API of the tc compiler ------------------*- C -*-===*\
|*                                                                            *|
|* Part of the tc project.                                                    *|
|*                                                                            *|
|* The stable boundary the Python binding (and any other client) uses:       *|
|* compile an imported graph, run it on caller-owned buffers.                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TC_C_COMPILER_H
#define TC_C_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TcExecutable *TcExecutableRef;

/// Compiles the fx-dialect module `source` for the CPU. Returns NULL on
/// failure and stores a malloc'ed message (diagnostics with locations) in
/// `*error`, which the caller frees with tcFreeString. `cacheDir` (may be
/// NULL) is a folder where compiled graphs are cached across processes.
TcExecutableRef tcCompileCPU(const char *source, size_t length,
                             int keepStageIR, const char *cacheDir,
                             char **error);

/// Runs `exe` on `count` buffers: inputs, outputs, then the arena. Returns
/// 0 on success, else nonzero with a malloc'ed message in `*error`.
int tcExecutableRun(TcExecutableRef exe, void *const *buffers, size_t count,
                    char **error);

int64_t tcExecutableArenaBytes(TcExecutableRef exe);
int64_t tcExecutableIntermediateBytes(TcExecutableRef exe);
int64_t tcExecutableNumKernels(TcExecutableRef exe);
int64_t tcExecutableNumBuffers(TcExecutableRef exe);
/// 1 if the graph was loaded from the cache folder rather than compiled.
int tcExecutableFromCache(TcExecutableRef exe);

/// The IR after stage `stage` ("prim", "kernel", "loops", "llvm") when
/// compiled with keepStageIR, else NULL. Owned by `exe`.
const char *tcExecutableStageIR(TcExecutableRef exe, const char *stage);

void tcExecutableDestroy(TcExecutableRef exe);
void tcFreeString(char *string);

#ifdef __cplusplus
}
#endif

#endif /* TC_C_COMPILER_H */
