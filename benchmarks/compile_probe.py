#!/usr/bin/env python3
"""One cold first call with tc's compile-time log: where a compile goes.

    TC_CACHE_DIR=$(mktemp -d) TC_LOGS=compile_time \\
        python benchmarks/compile_probe.py [sin+cos|manual GeLU|...] [--device cuda]

Builds the workload as benchmarks/bench_compile.py does and prints the
first call's time with Python's profile of tc's backend (top entries).
"""

import cProfile
import pstats
import sys
import time

import bench_compile


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    name = args[0] if args else "sin+cos"
    device = "cuda" if "--device" in sys.argv and "cuda" in sys.argv else "cpu"
    import torch

    import tc

    fn, inputs, _ = bench_compile._build(name, device, quick=False)
    compiled = torch.compile(fn, backend="tc")
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    compiled(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    profile.disable()
    print(f"{name}: first call {time.perf_counter() - start:.3f} s; "
          f"{dict(tc.counters)}")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
