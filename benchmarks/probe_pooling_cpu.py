#!/usr/bin/env python3
"""CPU pooling at ResNet's sizes: eager, Inductor and tc in one process,
inference (no gradient), each call timed alone, median of 50 after 5
warm-up calls.

    PYTHONPATH=python python3 benchmarks/probe_pooling_cpu.py

Cases: max pooling 3x3/2 of a [8, 64, 112, 112] activation channels-last
in memory (ResNet's stem pooling compiled apart from its convolution)
and after a ReLU, and after a ReLU in bf16 at ResNet-50 bf16's batch 16;
global average pooling of ResNet-50's [8, 2048, 7, 7]
head, channels-last, after a ReLU, flattened; a column sum [4096, 1024].
Each result is checked against eager's.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch


def _median_ms(fn, *args, calls: int = 50) -> float:
    for _ in range(5):
        fn(*args)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> int:
    import tc  # noqa: F401 - registers the backend
    F = torch.nn.functional
    torch.manual_seed(0)
    last = torch.channels_last
    cases = {
        "max_pool2d 3x3/2 [8,64,112,112] channels-last": (
            lambda x: F.max_pool2d(x, 3, 2, 1),
            torch.randn(8, 64, 112, 112).contiguous(memory_format=last)),
        "relu + max_pool2d 3x3/2 [8,64,112,112] channels-last": (
            lambda x: F.max_pool2d(x.relu(), 3, 2, 1),
            torch.randn(8, 64, 112, 112).contiguous(memory_format=last)),
        "relu + max_pool2d 3x3/2 [16,64,112,112] bf16 channels-last": (
            lambda x: F.max_pool2d(x.relu(), 3, 2, 1),
            torch.randn(16, 64, 112, 112).to(torch.bfloat16).contiguous(
                memory_format=last)),
        "relu + global avg pool [8,2048,7,7] channels-last": (
            lambda x: F.adaptive_avg_pool2d(x.relu(), 1).flatten(1),
            torch.randn(8, 2048, 7, 7).contiguous(memory_format=last)),
        "column sum [4096,1024]": (
            lambda x: x.sum(0), torch.randn(4096, 1024)),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    with torch.no_grad():
        for name, (fn, x) in cases.items():
            inductor = torch.compile(fn)
            compiled = torch.compile(fn, backend="tc")
            torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4,
                                       atol=1e-3)
            eager_ms, inductor_ms, tc_ms = (_median_ms(f, x) for f in
                                            (fn, inductor, compiled))
            print(f"{name}: eager {eager_ms:.3f} ms, Inductor "
                  f"{inductor_ms:.3f} ms, tc {tc_ms:.3f} ms "
                  f"(tc/Inductor speed {inductor_ms / tc_ms:.2f}x)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
