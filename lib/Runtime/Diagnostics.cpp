//===- Diagnostics.cpp - diagnostics as text for callers --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/Diagnostics.h"

using namespace mlir;

void mlir::tc::printDiagnostic(llvm::raw_ostream &os, Diagnostic &d) {
  os << d.getLocation() << ": ";
  switch (d.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  default:
    os << "note: ";
    break;
  }
  os << d.str() << "\n";
  for (Diagnostic &note : d.getNotes())
    os << note.getLocation() << ": note: " << note.str() << "\n";
}
