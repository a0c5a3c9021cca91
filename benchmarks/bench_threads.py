"""tc's CPU launches on PyTorch's OpenMP team against tc's own thread pool.

Each configuration runs in a process of its own: by default tc's launches
and its GEMMs' row blocks run on the OpenMP team PyTorch loaded; with
`TC_NUM_THREADS` set, tc keeps its own pool and large GEMMs use OpenBLAS's
threads (the runtime before the change). In each process eager, Inductor
and tc alternate calls on the same inputs; medians.

    python3 benchmarks/bench_threads.py            # writes results/threads-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

CASES = ("mlp-128", "mlp-4096", "gather", "top-p-gather", "index-select")


def build(case: str):
    import torch
    torch.manual_seed(0)
    if case.startswith("mlp"):
        batch = int(case.split("-")[1])
        model = torch.nn.Sequential(
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 10)).eval()
        return model, (torch.randn(batch, 1024),)
    if case == "gather":
        return (lambda x, i: torch.gather(x, 1, i),
                (torch.randn(4096, 1024), torch.randint(0, 1024, (4096, 256))))
    if case == "top-p-gather":
        return (lambda p, i: p.gather(-1, i),
                (torch.randn(32, 50257).softmax(-1),
                 torch.argsort(torch.randn(32, 50257), -1)))
    return (lambda w, i: torch.index_select(w, 0, i),
            (torch.randn(50257, 768), torch.randint(0, 50257, (8192,))))


def child(case: str) -> dict:
    import torch
    fn, args = build(case)
    backends = {"eager": fn, "inductor": torch.compile(fn),
                "tc": torch.compile(fn, backend="tc")}
    times: dict[str, list[float]] = {name: [] for name in backends}
    rounds = 15 if case == "mlp-4096" else 40
    with torch.no_grad():
        for f in backends.values():
            f(*args)
        for _ in range(rounds):
            for name, f in backends.items():
                start = time.perf_counter()
                f(*args)
                times[name].append(time.perf_counter() - start)
    return {name + "_ms": statistics.median(t) * 1e3
            for name, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path(__file__).parent / "results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(child(opts.child)))
        return 0
    import torch
    rows = []
    for case in opts.cases.split(","):
        for repeat in range(opts.repeats):
            for pool, extra in (("openmp", {}),
                                ("own", {"TC_NUM_THREADS": str(
                                    torch.get_num_threads())})):
                env = dict(os.environ, **extra)
                env.pop("TC_NUM_THREADS", None) if not extra else None
                done = subprocess.run(
                    [sys.executable, __file__, "--child", case], env=env,
                    capture_output=True, text=True, timeout=600)
                row = {"case": case, "pool": pool, "repeat": repeat}
                if done.returncode == 0:
                    row.update(json.loads(done.stdout.strip().splitlines()[-1]))
                    row["tc_vs_inductor"] = row["inductor_ms"] / row["tc_ms"]
                    row["tc_vs_eager"] = row["eager_ms"] / row["tc_ms"]
                else:
                    row["error"] = done.stderr[-2000:]
                rows.append(row)
                print(json.dumps(row), flush=True)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "threads-cpu.json").write_text(json.dumps(
        {"torch": torch.__version__, "threads": torch.get_num_threads(),
         "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
