#!/usr/bin/env python3
"""One zoo model on the CPU, Inductor and tc in one process, timed in
alternating rounds (each round's median of five steps): on a small
machine whose speed drifts by 5-10% between runs, the rounds put both
backends through the same drift. For A/B comparisons of two builds, run
it once per build, each in a fresh process with its own TC_CACHE_DIR.

    python3 benchmarks/cpu_rounds.py XLNetLMHeadModel [rounds]
"""

import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch  # noqa: E402

import zoo_models  # noqa: E402


def main() -> None:
    name = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    torch.set_num_threads(2)
    built = zoo_models.build(name, "cpu", torch.device("cpu"), torch.float32)
    model = built.model.eval()
    compiled = {backend: torch.compile(model, backend=backend)
                for backend in ("inductor", "tc")}
    with torch.no_grad():
        for fn in compiled.values():
            for _ in range(3):
                fn(**built.inputs)
        times: dict[str, list[float]] = {b: [] for b in compiled}
        for _ in range(rounds):
            for backend, fn in compiled.items():
                steps = []
                for _ in range(5):
                    start = time.perf_counter()
                    fn(**built.inputs)
                    steps.append(time.perf_counter() - start)
                times[backend].append(statistics.median(steps) * 1e3)
    for backend, values in times.items():
        print(backend, [round(v, 1) for v in values], "median",
              round(statistics.median(values), 2))
    print("tc/inductor speed", round(statistics.median(times["inductor"])
                                     / statistics.median(times["tc"]), 3))


if __name__ == "__main__":
    main()
