#!/usr/bin/env python3
"""Per-call time of a small graph, where the host's overhead dominates:
seed 004's MLP at batch 128 (inference, fp32, TF32 off) on a CUDA device,
eager vs Inductor (default and mode="reduce-overhead", its CUDA graphs)
vs tc (default, mode="reduce-overhead" and the max-autotune modes), in one
process.

Each backend is timed two ways after warm-up: `steady`, the same input
tensor every call, and `fresh`, a new input tensor every call (made before
the timed loop; reduce-overhead copies it into its own buffer). The time
per call is the wall time of N calls and one synchronize at the end,
divided by N (what a serving loop sees), in interleaved rounds.

    python benchmarks/bench_overhead.py [--calls 2000] [--rounds 5] [--out DIR]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from bench_cpu import SimpleModel  # noqa: E402

BACKENDS = {
    "eager": None,
    "inductor": dict(backend="inductor"),
    "inductor reduce-overhead": dict(backend="inductor",
                                     mode="reduce-overhead"),
    "tc": dict(backend="tc"),
    "tc reduce-overhead": dict(backend="tc", mode="reduce-overhead"),
    "tc max-autotune": dict(backend="tc", mode="max-autotune"),
    "tc max-autotune-no-cudagraphs": dict(
        backend="tc", mode="max-autotune-no-cudagraphs"),
}


def per_call_ms(fn, inputs) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for x in inputs:
        fn(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / len(inputs) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = SimpleModel().cuda().eval()
    x = torch.randn(128, 1024, device="cuda")
    fresh = [torch.randn(128, 1024, device="cuda") for _ in range(args.calls)]
    steady = [x] * args.calls
    with torch.no_grad():
        expected = model(x)
    fns = {}
    rows = {}
    for name in args.backends.split(","):
        torch._dynamo.reset()
        kwargs = BACKENDS[name]
        fn = model if kwargs is None else torch.compile(model, **kwargs)
        with torch.no_grad():
            start = time.perf_counter()
            out = fn(x)
            torch.cuda.synchronize()
            first = time.perf_counter() - start
            for i in range(20):  # warm up (CUDA graphs record and replay)
                fn(fresh[i])
                fn(x)
            # Inductor's reduce-overhead output is overwritten by the next
            # replay: compare before.
            torch.testing.assert_close(fn(x).clone(), expected, rtol=1e-4,
                                       atol=1e-5)
        fns[name] = fn
        rows[name] = {"backend": name, "first_call_s": first,
                      "steady": [], "fresh": []}
    with torch.no_grad():
        for _ in range(args.rounds):
            for name, fn in fns.items():
                rows[name]["steady"].append(per_call_ms(fn, steady))
                rows[name]["fresh"].append(per_call_ms(fn, fresh))
    print(f"seed 004 MLP, batch 128, fp32, {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}; ms per call (median of "
          f"{args.rounds} rounds of {args.calls} calls)")
    print("| backend | steady input | fresh input | first call (s) |")
    print("| --- | --- | --- | --- |")
    for row in rows.values():
        row["steady_ms"] = statistics.median(row.pop("steady"))
        row["fresh_ms"] = statistics.median(row.pop("fresh"))
        print(f"| {row['backend']} | {row['steady_ms']:.4f} | "
              f"{row['fresh_ms']:.4f} | {row['first_call_s']:.2f} |")
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "overhead-cuda.json").write_text(
            json.dumps(list(rows.values()), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
