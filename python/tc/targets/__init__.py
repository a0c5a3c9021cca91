"""GPU targets: where each finds its toolchain and which options its
pipeline runs with (`tc.targets.cuda`, `tc.targets.rocm`). The CPU target
needs neither: its pipeline options are tc.compiler's."""
