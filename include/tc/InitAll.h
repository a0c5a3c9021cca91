//===- InitAll.h - register every tc dialect and pass ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The single registration point of tc: tc-opt, the C API and the Python
// binding all call these.
//
//===----------------------------------------------------------------------===//

#ifndef TC_INITALL_H
#define TC_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::tc {

/// Adds the tc dialects and the upstream dialects tc lowers through.
void registerAllDialects(DialectRegistry &registry);

/// Registers the tc passes and the upstream passes tc pipelines use.
void registerAllPasses();

/// Registers tc's named pass pipelines.
void registerAllPipelines();

} // namespace mlir::tc

#endif // TC_INITALL_H
