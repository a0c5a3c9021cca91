#!/usr/bin/env python3
"""bf16 memory-bound kernels at transformer sizes: tc vs Inductor, one
process: each call's kernel time on the device (by the profiler) and the
bandwidth it achieves.

GPT-2's tanh GELU on [4096, 3072], residual + layer norm on [4096, 768]
and [8192, 4096], a softmax over [2048, 4096] rows (an attention score
row), SiLU-gated product on [4096, 2816]. Each tc variant (tc-cuda-
pipeline options, as `TC_CUDA_OPTIONS` takes them) compiles afresh:

    python3 benchmarks/bench_half_rows.py --variants ";vector-width=2"

Prints a table; with --out, writes half-rows.json there.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import tempfile

os.environ.setdefault("TC_CACHE_DIR", tempfile.mkdtemp(prefix="tc-half-"))


def workloads():
    import torch
    import torch.nn.functional as F

    def gelu(x):
        return 0.5 * x * (1 + torch.tanh(0.7978845608 * (
            x + 0.044715 * torch.pow(x, 3.0))))

    def res_ln(x, r, w, b):
        return F.layer_norm(x + r, (x.shape[-1],), w, b)

    def softmax(x):
        return torch.softmax(x, dim=-1)

    def swiglu(g, u):
        return F.silu(g) * u

    bf16 = torch.bfloat16

    def t(*shape):
        return torch.randn(*shape, device="cuda", dtype=bf16)
    return [
        ("gelu 4096x3072", gelu, lambda: (t(4096, 3072),), 2),
        ("res+ln 4096x768", res_ln,
         lambda: (t(4096, 768), t(4096, 768), t(768), t(768)), 3),
        ("res+ln 8192x4096", res_ln,
         lambda: (t(8192, 4096), t(8192, 4096), t(4096), t(4096)), 3),
        ("softmax 2048x4096", softmax, lambda: (t(2048, 4096),), 2),
        ("swiglu 4096x2816", swiglu, lambda: (t(4096, 2816),
                                              t(4096, 2816)), 3),
    ]


def timed(fn, args, iters=50):
    """Device time of one call: its kernels' time by the profiler (the
    calls are too short for CUDA events around them to time anything but
    the host's launch path)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn(*args)
        torch.cuda.synchronize()
    total_us = sum(e.self_device_time_total for e in prof.key_averages())
    return total_us / iters / 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="",
                        help="';'-separated tc option sets ('' = default)")
    parser.add_argument("--out", type=pathlib.Path)
    opts = parser.parse_args()
    import torch
    import tc
    variants = opts.variants.split(";") if opts.variants else [""]
    rows = []
    for name, fn, make, tensors in workloads():
        torch.manual_seed(0)
        args = make()
        nbytes = sum(a.numel() * a.element_size() for a in args[:tensors])
        nbytes += args[0].numel() * args[0].element_size()
        expected = fn(*args)
        row = {"workload": name, "bytes": nbytes}
        torch._dynamo.reset()
        row["inductor_ms"] = timed(torch.compile(fn), args)
        for variant in variants:
            os.environ["TC_CUDA_OPTIONS"] = variant
            torch._dynamo.reset()
            tc.reset_counters()
            compiled = torch.compile(fn, backend="tc")
            out = compiled(*args)
            torch.testing.assert_close(out, expected, rtol=1.6e-2,
                                       atol=1e-2)
            assert tc.counters["ops_eager"] == 0, dict(tc.counters)
            row[f"tc[{variant}]_ms"] = timed(compiled, args)
            # tc's kernels ran every timed call: none switched to eager.
            assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
        os.environ.pop("TC_CUDA_OPTIONS", None)
        rows.append(row)
        cells = "  ".join(
            f"{k[:-3]} {v:.3f} ms ({nbytes / v / 1e6:.0f} GB/s)"
            for k, v in row.items() if k.endswith("_ms"))
        print(f"{name:20s} {cells}", flush=True)
    if opts.out:
        opts.out.mkdir(parents=True, exist_ok=True)
        (opts.out / "half-rows.json").write_text(json.dumps(
            {"device": torch.cuda.get_device_name(),
             "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
