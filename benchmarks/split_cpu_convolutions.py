#!/usr/bin/env python3
"""A CPU model's inference step split into its convolution calls and the
rest, tc against Inductor: each compiler's calls of PyTorch's convolution
(tc's library calls, `tc.library`; Inductor's extern kernel) are timed by
the host's clock, the two compiled models' calls alternating for 20
rounds; prints the medians of the whole step, of the time inside the
convolution calls, and of the rest (each compiler's own kernels and host
code); then each convolution's shape with its time a step under either
compiler and the layouts they passed (the weight channels-last or not).

    PYTHONPATH=python python3 benchmarks/split_cpu_convolutions.py resnet50
"""

from __future__ import annotations

import collections
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def main() -> int:
    import models_cpu
    import tc.library
    from torch._inductor.select_algorithm import extern_kernels
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet50"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    inside = {"s": 0.0, "who": ""}
    #: (compiler, input shape, weight shape) -> [seconds, calls, weight
    #: channels-last].
    calls: dict = collections.defaultdict(lambda: [0.0, 0, False])

    def timed(fn, first):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                inside["s"] += spent
                x, w = args[first], args[first + 1]
                entry = calls[(inside["who"], tuple(x.shape),
                               tuple(w.shape))]
                entry[0] += spent
                entry[1] += 1
                entry[2] = w.is_contiguous(memory_format=torch.channels_last)
        return run
    # tc's library calls go through tc.library._run(kind, x, w, ...);
    # Inductor's generated code looks extern_kernels.convolution(x, w, ...)
    # up at each call.
    tc.library._run = timed(tc.library._run, 1)
    extern_kernels.convolution = timed(extern_kernels.convolution, 0)
    with torch.no_grad():
        _, inputs, compiled = models_cpu.warm_inference_pair(name)
        calls.clear()
        steps = {k: [] for k in compiled}
        convs = {k: [] for k in compiled}
        for i in range(rounds):
            order = list(compiled.items())
            for label, fn in (order if i % 2 else order[::-1]):
                inside["s"], inside["who"] = 0.0, label
                start = time.perf_counter()
                fn(*inputs)
                steps[label].append((time.perf_counter() - start) * 1e3)
                convs[label].append(inside["s"] * 1e3)
    for label in compiled:
        rest = [s - c for s, c in zip(steps[label], convs[label])]
        print(f"{name}/{label}: step {statistics.median(steps[label]):.2f} "
              f"ms, in convolution calls "
              f"{statistics.median(convs[label]):.2f} ms, the rest "
              f"{statistics.median(rest):.2f} ms")
    print("by shape (input, weight), ms a step; the weight channels-last?")
    for x, w in sorted({key[1:] for key in calls}):
        cells = []
        for label in compiled:
            spent, count, last = calls.get((label, x, w), (0.0, 0, False))
            cells.append(f"{label} {spent / rounds * 1e3:7.2f} "
                         f"(x{count // rounds}, weight channels-last "
                         f"{'yes' if last else 'no'})")
        print(f"  {x} {w}: " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
