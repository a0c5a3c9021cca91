// RUN: tc-opt --show-dialects | FileCheck %s
// RUN: tc-opt --help | FileCheck %s --check-prefix=HELP

// The three tc dialects are registered.
// CHECK: Available Dialects:
// CHECK-SAME: fx
// CHECK-SAME: kernel
// CHECK-SAME: prim

// HELP: Available Dialects: {{.*}}fx{{.*}}kernel{{.*}}prim
