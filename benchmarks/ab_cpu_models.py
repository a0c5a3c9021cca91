#!/usr/bin/env python3
"""tc against Inductor on one CPU model of benchmarks/models_cpu.py, in
inference: the two compiled models' calls alternate (tc first in even
rounds, Inductor first in odd ones), so that the machine's drift falls on
both; prints their medians and the ratio.

    PYTHONPATH=python python3 benchmarks/ab_cpu_models.py resnet50 [rounds]
"""

from __future__ import annotations

import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def main() -> int:
    import models_cpu
    import tc
    name = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.manual_seed(0)
    model, inputs, _ = models_cpu.build(name, False, torch.device("cpu"))
    model.eval()
    with torch.no_grad():
        inductor = torch.compile(model)
        compiled = torch.compile(model, backend="tc")
        # bf16 rows at bench_models' bf16 bound (relative L2 error 5e-2).
        expected, got = model(*inputs), compiled(*inputs)
        if name in models_cpu.BF16:
            error = float((got.float() - expected.float()).norm()
                          / expected.float().norm())
            assert error <= 5e-2, f"relative L2 error {error:.3g}"
        else:
            torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)
        for _ in range(3):
            inductor(*inputs)
            compiled(*inputs)
        times: dict = {inductor: [], compiled: []}
        for i in range(rounds):
            for fn in (inductor, compiled) if i % 2 else (compiled, inductor):
                start = time.perf_counter()
                fn(*inputs)
                times[fn].append(time.perf_counter() - start)
    ind_ms, tc_ms = (statistics.median(times[f]) * 1e3
                     for f in (inductor, compiled))
    print(f"{name}: Inductor {ind_ms:.2f} ms, tc {tc_ms:.2f} ms, "
          f"tc/Inductor speed {ind_ms / tc_ms:.3f}x; tc ops in eager "
          f"{tc.counters['ops_eager']}, run-time fallbacks "
          f"{tc.counters['runtime_fallbacks']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
