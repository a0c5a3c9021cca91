#!/usr/bin/env python3
"""Long rows on the GPU: a vocabulary's softmax, log-softmax, cross entropy
(forward and backward) and a pad of its rows, eager beside tc and Inductor.

Rows of 5120 to 50257 elements in bf16 and fp16, the shapes of LM heads'
logits: the kernels of a causal LM's loss and of a padded LM head. Each
case is compiled on its own; the median of 30 calls is timed with CUDA
events (the cross entropy's include autograd's host time), and tc's result
is checked against eager's (allclose at 2e-2) with tc's counters (its
kernels ran: no ATen op in eager, no run-time fallback).

    python3 benchmarks/bench_long_rows.py --label mine --out results.json
    python3 benchmarks/bench_long_rows.py --backends tc   # tc beside eager
"""

from __future__ import annotations

import argparse
import json
import pathlib

import torch
import torch.nn.functional as F

import tc

CASES = [(16384, 50257, torch.bfloat16), (4096, 32000, torch.bfloat16),
         (8192, 50257, torch.float16), (2048, 30522, torch.bfloat16),
         (4096, 5120, torch.bfloat16)]


def cross_entropy_step(x, y):
    x = x.detach().requires_grad_()
    loss = F.cross_entropy(x.float(), y)
    loss.backward()
    return loss, x.grad


def log_softmax(x):
    return torch.log_softmax(x.float(), -1).to(x.dtype)


def pad(x):
    return F.pad(x, (0, 7)) * 1.0


def softmax(x):
    return torch.softmax(x, -1)


def median_ms(fn, *args, calls: int = 30) -> float:
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    times = []
    for _ in range(calls):
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[calls // 2]


def agrees(ref, got) -> bool:
    ref = ref if isinstance(ref, tuple) else (ref,)
    got = got if isinstance(got, tuple) else (got,)
    return all(torch.allclose(a.float(), b.float(), atol=2e-2, rtol=2e-2)
               for a, b in zip(ref, got))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="tc,inductor")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=pathlib.Path)
    opts = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for m, n, dtype in CASES:
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        y = torch.randint(0, n, (m,), device="cuda")
        for name, fn, args in [("cross_entropy", cross_entropy_step, (x, y)),
                               ("log_softmax", log_softmax, (x,)),
                               ("pad", pad, (x,)), ("softmax", softmax, (x,))]:
            ref = fn(*args)
            row = {"variant": opts.label, "kernel": name, "m": m, "n": n,
                   "dtype": str(dtype).removeprefix("torch."),
                   "eager_ms": median_ms(fn, *args)}
            for backend in opts.backends.split(","):
                torch._dynamo.reset()
                tc.reset_counters()
                compiled = torch.compile(fn, backend=backend)
                row[f"{backend}_ok"] = agrees(ref, compiled(*args))
                if backend == "tc":
                    row["tc_counters"] = {
                        k: tc.counters[k] for k in (
                            "kernels", "ops_eager", "fallback_graphs",
                            "runtime_fallbacks")}
                row[f"{backend}_ms"] = median_ms(compiled, *args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if opts.out:
        opts.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
