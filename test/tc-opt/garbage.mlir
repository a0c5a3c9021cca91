// RUN: not tc-opt %s 2>&1 | FileCheck %s
// A file that is not IR at all gets a located parse error and exit code 1.

// CHECK: garbage.mlir:[[@LINE+1]]:1: error: custom op 'this' is unknown
this is ~ not MLIR @@@ {{{
