#!/usr/bin/env python3
"""tc's first step of a CPU model of benchmarks/models_cpu.py in a fresh
process (after one eager step, as bench_models takes it), and whether the
whole decomposition tables were built in it.

    PYTHONPATH=python python3 benchmarks/first_step_cpu_models.py mlp-train
"""

from __future__ import annotations

import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def main() -> int:
    import bench_models
    import models_cpu
    import tc
    from tc import decompositions
    name = sys.argv[1] if len(sys.argv) > 1 else "mlp-train"
    base, inputs, training = models_cpu.build(name, False,
                                              torch.device("cpu"))
    step = bench_models.tc_step_after_eager(name, base, inputs, training)
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    built = [f.cache_info().currsize for f in (
        decompositions.forward_decompositions,
        decompositions.core_aten_decompositions)]
    print(f"{name}: first step {first:.2f} s; whole tables built "
          f"(forward, core) {built}; training graphs "
          f"{tc.counters['training_graphs']}, ops in eager "
          f"{tc.counters['ops_eager']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
