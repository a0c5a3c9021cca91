//===- Diagnostics.h - diagnostics as text for callers ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The compilers behind the C API collect MLIR's diagnostics as text lines,
// "<location>: error: <message>", which the Python side shows its users
// and logs.
//
//===----------------------------------------------------------------------===//

#ifndef TC_RUNTIME_DIAGNOSTICS_H
#define TC_RUNTIME_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::tc {

/// Writes `d` and its notes to `os`, a line each.
void printDiagnostic(llvm::raw_ostream &os, Diagnostic &d);

/// Collects every diagnostic of `context` into `os` while alive.
class DiagnosticCollector : public ScopedDiagnosticHandler {
public:
  DiagnosticCollector(MLIRContext *context, llvm::raw_ostream &os)
      : ScopedDiagnosticHandler(context, [&os](Diagnostic &d) {
          printDiagnostic(os, d);
          return success();
        }) {}
};

} // namespace mlir::tc

#endif // TC_RUNTIME_DIAGNOSTICS_H
