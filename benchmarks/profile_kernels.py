#!/usr/bin/env python3
"""TC_LOGS=kernels on a real model: each of tc's graphs timed kernel by kernel.

Builds a model of bench_models (random weights, its real size), compiles it
with tc, and runs steps with the `kernels` log on: the second run of every
compiled graph is issued step by step between CUDA events (on the CPU,
timed by the host's clock), and the log lists its kernels slowest first
with their buffers' bytes and bandwidth. Then, the log off, the median of
steady steps by CUDA events, to set beside the profiles' sum (the
profiles count GPU time only; a host-bound step is longer).

    python3 benchmarks/profile_kernels.py --models bert,resnet50 --out DIR
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def profile(name: str, steps: int) -> str:
    import torch
    import tc

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, inputs, training = bench_models.build(name, False, device)
    compiled = torch.compile(model, backend="tc")
    step = bench_models.make_step(name, compiled, model, inputs, training)
    keep = _Keep()
    logging.getLogger("tc.kernels").addHandler(keep)
    tc.set_logs("kernels")
    try:
        for _ in range(3):
            step()
    finally:
        tc.set_logs()
        logging.getLogger("tc.kernels").removeHandler(keep)
    times = []
    for _ in range(steps + 3):
        if device.type == "cuda":
            start, end = (torch.cuda.Event(enable_timing=True),
                          torch.cuda.Event(enable_timing=True))
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            import time
            began = time.perf_counter()
            step()
            times.append((time.perf_counter() - began) * 1e3)
    steady = statistics.median(times[3:])
    total = 0.0
    for message in keep.messages:
        head = message.splitlines()[0]
        total += float(head.rsplit(",", 1)[1].split()[0])
    lines = [f"== {name} on {device}: {len(keep.messages)} graphs profiled, "
             f"their steps {total:.3f} ms in all; a steady step "
             f"{steady:.3f} ms (median of {steps}, CUDA events); "
             f"runtime_fallbacks {tc.counters['runtime_fallbacks']}, "
             f"ops in eager {tc.counters['ops_eager']}"]
    lines += keep.messages
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", default=None,
                        help="folder for kernels-profile.txt (else stdout)")
    opts = parser.parse_args()
    text = "".join(profile(name, opts.steps)
                   for name in opts.models.split(","))
    if opts.out:
        path = pathlib.Path(opts.out) / "kernels-profile.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
