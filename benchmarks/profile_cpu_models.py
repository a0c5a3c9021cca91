#!/usr/bin/env python3
"""torch.profiler over 5 inference calls of a CPU model of
benchmarks/models_cpu.py, Inductor's and tc's compiled models in one
process (after 3 warm calls each): the ops taking the most CPU time of
their own, so that the library calls (oneDNN's convolutions), the copies
around them and each compiler's own code can be set side by side.

    PYTHONPATH=python python3 benchmarks/profile_cpu_models.py resnet50
"""

from __future__ import annotations

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def main() -> int:
    import models_cpu
    import tc  # noqa: F401 - registers the backend
    from torch.profiler import ProfilerActivity, profile
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet50"
    with torch.no_grad():
        _, inputs, compiled = models_cpu.warm_inference_pair(name)
        for label, fn in compiled.items():
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(5):
                    fn(*inputs)
            print(f"== {name}/{label}: 5 calls")
            print(prof.key_averages().table(
                sort_by="self_cpu_time_total", row_limit=16,
                max_name_column_width=60), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
