#!/usr/bin/env python3
"""cProfile of tc's first step of a bench_models model (after one eager
step, in a fresh process): the 60 functions with the most cumulative time,
then the 30 with the most of their own.

    python3 benchmarks/cprofile_first_step.py bert
"""

import cProfile
import pathlib
import pstats
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402


def main() -> int:
    import torch
    name = sys.argv[1] if len(sys.argv) > 1 else "bert"
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    base, inputs, training = bench_models.build(name, False, device)
    step = bench_models.tc_step_after_eager(name, base, inputs, training)
    profiler = cProfile.Profile()
    profiler.enable()
    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(60)
    stats.sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
