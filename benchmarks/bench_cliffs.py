#!/usr/bin/env python3
"""Cliffs benchmark: ops whose natural compiled form can be far slower than
eager's kernel (sorts, scans, scatters, gathers, embedding bags, FFTs,
histograms, searchsorted), at realistic sizes, tc against eager.

Each case runs in its own process with a time limit, so that a compiled
kernel that never returns is reported (as a timeout) instead of hanging
the benchmark. Per case: eager's and tc's median time, their ratio, whether
tc compiled the op (`tc.counters`: ops compiled, left to eager, runtime
fallbacks, guard reruns) and whether tc's result matches eager's.

    python benchmarks/bench_cliffs.py [--device cpu|cuda] [--quick]
        [--only NAME[,NAME]] [--timeout S] [--out benchmarks/results]

Writes cliffs-<device>.json to the output folder and prints a table. The
issue's bar: every row at most 1.25x eager's time, with eager's results
(tc compiled the op, or its cost model left it to eager).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

#: The most a case may take (compile, check and both timings), seconds.
DEFAULT_TIMEOUT = 240


def cases(device: str, quick: bool):
    """name -> (function, inputs factory). Sizes from the issue: 1M
    elements, [256, 4096] rows, 50k vocabularies."""
    import torch

    n = 1 << (18 if quick else 20)
    rows, cols = (64, 4096) if quick else (256, 4096)
    vocab = 50257
    d = device
    f32 = torch.float32

    def randn(*shape, dtype=f32):
        return torch.randn(*shape, device=d, dtype=dtype)

    def randint(high, *shape):
        return torch.randint(0, high, shape, device=d)

    tokens = 2048 if quick else 8192
    table = {
        "gather [4096,1024] by [4096,256]": (
            lambda x, i: torch.gather(x, 1, i),
            lambda: (randn(4096, 1024), randint(1024, 4096, 256))),
        "top-p gather [32,50257]": (
            lambda p, i: p.gather(-1, i),
            lambda: (randn(32, vocab).softmax(-1),
                     torch.argsort(randn(32, vocab), -1))),
        "index_select 50257x768 by 8192": (
            lambda w, i: torch.index_select(w, 0, i),
            lambda: (randn(vocab, 768), randint(vocab, tokens))),
        "embedding backward 50257x768, 8192 tokens": (
            lambda g, i: torch.ops.aten.embedding_dense_backward(
                g, i, vocab, -1, False),
            lambda: (randn(tokens, 768), randint(vocab, tokens))),
        "index_add 200k rows into 65536x64": (
            lambda x, i, s: torch.index_add(x, 0, i, s),
            lambda: (randn(65536, 64), randint(65536, n // 5),
                     randn(n // 5, 64))),
        f"scatter_add rows [{rows},{cols}]": (
            lambda x, i, s: torch.scatter_add(x, 1, i, s),
            lambda: (randn(rows, cols), randint(cols, rows, cols),
                     randn(rows, cols))),
        f"cumsum 1-d {n}": (
            lambda x: torch.cumsum(x, 0),
            lambda: (randn(n),)),
        f"cumsum rows [{rows},{cols}]": (
            lambda x: torch.cumsum(x, 1),
            lambda: (randn(rows, cols),)),
        f"cumprod rows [{rows},{cols}]": (
            lambda x: torch.cumprod(x, 1),
            lambda: (1 + 1e-3 * randn(rows, cols),)),
        f"logcumsumexp rows [{rows},{cols}]": (
            lambda x: torch.logcumsumexp(x, 1),
            lambda: (randn(rows, cols),)),
        f"cummax rows [{rows},{cols}]": (
            lambda x: torch.cummax(x, 1).values,
            lambda: (randn(rows, cols),)),
        f"sort rows [{rows},{cols}]": (
            lambda x: torch.sort(x, 1).values,
            lambda: (randn(rows, cols),)),
        f"argsort 1-d {n}": (
            lambda x: torch.argsort(x),
            lambda: (randn(n),)),
        "topk 50 of [32,50257]": (
            lambda x: torch.topk(x, 50, -1).values,
            lambda: (randn(32, vocab),)),
        f"rfft rows [{rows},{cols}]": (
            lambda x: torch.view_as_real(torch.fft.rfft(x)),
            lambda: (randn(rows, cols),)),
        f"histc {n} into 100 bins": (
            lambda x: torch.histc(x, 100, -3, 3),
            lambda: (randn(n),)),
        f"bincount {n} into 1000": (
            lambda i: torch.bincount(i, minlength=1000),
            lambda: (randint(1000, n),)),
        f"searchsorted {n} in 4096": (
            lambda b, x: torch.searchsorted(b, x),
            lambda: (torch.sort(randn(4096)).values, randn(n))),
        # A CNN's pooling at ResNet's sizes, compiled apart from its
        # convolutions (a graph break): channels-last and -first memory.
        "max_pool2d 3x3/2 [8,64,112,112] channels-last": (
            lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
            lambda: (randn(8, 64, 112, 112).contiguous(
                memory_format=torch.channels_last),)),
        "max_pool2d 3x3/2 [8,64,112,112]": (
            lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
            lambda: (randn(8, 64, 112, 112),)),
        "global avg pool [64,2048,7,7] channels-last": (
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, 1),
            lambda: (randn(64, 2048, 7, 7).contiguous(
                memory_format=torch.channels_last),)),
        "embedding_bag sum 50257x256, 8192 bags of 8": (
            lambda w, i, o: torch.nn.functional.embedding_bag(
                i, w, o, mode="sum"),
            lambda: (randn(vocab, 256), randint(vocab, tokens * 8),
                     torch.arange(0, tokens * 8, 8, device=d))),
    }
    return table


def calibration_cases(device: str, quick: bool):
    """name -> (function, inputs factory): each family of the cost model
    (tc/Conversion/FXToPrim/CostModel.h) at sizes on both sides of where it
    hands the op to eager. `--calibrate` compiles them with the model off
    (`TC_COST_MODEL=0`) and prints the measured tc/eager ratio beside the
    model's."""
    import torch

    d = device

    def randn(*shape):
        return torch.randn(*shape, device=d)

    def randint(high, *shape):
        return torch.randint(0, high, shape, device=d)

    table = {}
    for rows, n in ((256, 64), (16, 256), (256, 256), (4, 1024),
                    (16, 1024)):
        table[f"sort rows [{rows},{n}]"] = (
            lambda x: torch.sort(x, 1).values,
            lambda r=rows, n=n: (randn(r, n),))
        table[f"cumsum rows [{rows},{n}]"] = (
            lambda x: torch.cumsum(x, 1),
            lambda r=rows, n=n: (randn(r, n),))
        table[f"scatter_add rows [{rows},{n}]"] = (
            lambda x, i, s: torch.scatter_add(x, 1, i, s),
            lambda r=rows, n=n: (randn(r, n), randint(n, r, n),
                                 randn(r, n)))
    for n in (64, 1024):
        table[f"searchsorted 65536 in {n}"] = (
            lambda b, x: torch.searchsorted(b, x),
            lambda n=n: (torch.sort(randn(n)).values, randn(65536)))
    for bins in (100, 10000):
        table[f"histc 1048576 into {bins} bins"] = (
            (lambda b: lambda x: torch.histc(x, b, -3, 3))(bins),
            lambda: (randn(1 << 20),))
    table["index_add 200k rows into 65536x64"] = (
        lambda x, i, s: torch.index_add(x, 0, i, s),
        lambda: (randn(65536, 64), randint(65536, 200000),
                 randn(200000, 64)))
    for rows, n in ((256, 16), (256, 64), (256, 128), (4096, 128)):
        table[f"rfft rows [{rows},{n}]"] = (
            lambda x: torch.view_as_real(torch.fft.rfft(x)),
            lambda r=rows, n=n: (randn(r, n),))
    return table


def _model_estimate(fn, args) -> tuple | None:
    """The cost model's estimate for the op of `fn` it knows (traced to
    ATen), or None."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from tc import cost

    graph = make_fx(fn, tracing_mode="fake")(*args)
    for node in graph.graph.nodes:
        found = cost.node_estimate(node)
        if found:
            return found
    return None


def _kernel_times(fns, args, calls: int = 20) -> list[float]:
    """Per call, the GPU time of the kernels each of `fns` launches (CUDA
    kernels in a profiler trace; host overhead excluded)."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    result = []
    for fn in fns:
        fn(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(*args)
            torch.cuda.synchronize()
        total_us = sum(e.time_range.elapsed_us() for e in prof.events()
                       if e.device_type == DeviceType.CUDA)
        result.append(total_us / 1e6 / calls)
    return result


def _median_times(fns, args, device: str, min_time: float = 0.6,
                  max_rounds: int = 200) -> list[float]:
    """Median seconds per call of each of `fns`, called in turn in rounds
    (eager, tc, ..., eager, tc, ...), so that a change in the machine's
    load moves all alike. On a GPU each round queues 10 calls back to back
    between two CUDA events, as a program does (the host's work for a call
    overlaps the device's work for the previous one)."""
    import torch

    cuda = device == "cuda"
    reps = 10 if cuda else 1
    for fn in fns:
        for _ in range(2):
            fn(*args)
    if cuda:
        torch.cuda.synchronize()
    times: list[list] = [[] for _ in fns]
    start = time.perf_counter()
    while len(times[0]) < 5 or (time.perf_counter() - start < min_time
                                and len(times[0]) < max_rounds):
        for fn, spent in zip(fns, times):
            if cuda:
                begin, end = (torch.cuda.Event(enable_timing=True),
                              torch.cuda.Event(enable_timing=True))
                begin.record()
                for _ in range(reps):
                    fn(*args)
                end.record()
                spent.append((begin, end))
            else:
                t0 = time.perf_counter()
                fn(*args)
                spent.append(time.perf_counter() - t0)
        if cuda:
            torch.cuda.synchronize()
    if cuda:
        times = [[b.elapsed_time(e) / 1e3 / reps for b, e in spent]
                 for spent in times]
    return [statistics.median(spent) for spent in times]


def _agrees(out, expected) -> bool:
    import torch

    if out.dtype.is_floating_point:
        return torch.allclose(out, expected, rtol=1e-4, atol=1e-4,
                              equal_nan=True)
    return torch.equal(out, expected)


def run_case(name: str, device: str, quick: bool,
             calibrate: bool = False) -> dict:
    """Times one case in this process (a calibration case, compiled with
    the cost model off, with `calibrate`)."""
    import torch

    if calibrate:
        os.environ["TC_COST_MODEL"] = "0"
    import tc

    table = calibration_cases(device, quick) if calibrate \
        else cases(device, quick)
    fn, make = table[name]
    torch.manual_seed(0)
    args = make()
    row = {"case": name, "device": device}
    expected = fn(*args)
    found = _model_estimate(fn, args)
    if found:
        row["model_tc_s"], row["model_eager_s"], row["model_algorithm"] = \
            found[:3]
        row["model_eager_reason"] = found[3]

    tc.reset_counters()
    compiled = torch.compile(fn, backend="tc", dynamic=False)
    t0 = time.perf_counter()
    out = compiled(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    row["tc_first_call_s"] = time.perf_counter() - t0
    row["agrees"] = bool(_agrees(out, expected))
    # Dynamo's own cost per call (guards, the frame's wrapper), which any
    # torch.compile backend pays: the floor for an op left to eager.
    dynamo = torch.compile(lambda *a: fn(*a), backend="eager", dynamic=False)
    row["eager_s"], row["tc_s"], row["dynamo_s"] = _median_times(
        (fn, compiled, dynamo), args, device)
    if device == "cuda":
        # The ops' own cost: at these sizes a call's host work (Dynamo's
        # guards, PyTorch's dispatch) outlasts eager's kernel, so the
        # times above are host-bound (dynamo_s is their floor).
        row["eager_kernel_s"], row["tc_kernel_s"] = _kernel_times(
            (fn, compiled), args)
        row["kernel_ratio"] = row["tc_kernel_s"] / max(
            row["eager_kernel_s"], 1e-9)
    for key in ("ops_compiled", "ops_eager", "kernels", "runtime_fallbacks",
                "guard_reruns", "fallback_graphs"):
        row[key] = tc.counters[key]
    row["compiled_by_tc"] = bool(
        tc.counters["kernels"] > 0 and tc.counters["ops_eager"] == 0
        and tc.counters["runtime_fallbacks"] == 0
        and tc.counters["guard_reruns"] == 0)
    row["ratio"] = row["tc_s"] / row["eager_s"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="",
                        help="comma-separated substrings of case names")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--out", default=str(
        pathlib.Path(__file__).parent / "results"))
    parser.add_argument("--calibrate", action="store_true",
                        help="the cost model's calibration cases, compiled "
                        "with the model off, beside its estimates")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    opts = parser.parse_args()

    if opts.case:  # A child: one case, its row as JSON on the last line.
        print(json.dumps(run_case(opts.case, opts.device, opts.quick,
                                  opts.calibrate)))
        return 0

    names = list((calibration_cases if opts.calibrate else cases)(
        "cpu", opts.quick))
    if opts.only:
        wanted = opts.only.split(",")
        names = [n for n in names if any(w in n for w in wanted)]
    cache = tempfile.mkdtemp(prefix="tc-cliffs-")
    env = dict(os.environ, TC_CACHE_DIR=os.path.join(cache, "tc"))
    results = []
    for name in names:
        command = [sys.executable, __file__, "--case", name, "--device",
                   opts.device] + (["--quick"] if opts.quick else []) + (
                       ["--calibrate"] if opts.calibrate else [])
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=opts.timeout, env=env)
            lines = done.stdout.strip().splitlines()
            if done.returncode == 0 and lines:
                row = json.loads(lines[-1])
            else:
                row = {"case": name, "device": opts.device,
                       "error": (done.stderr.strip().splitlines()
                                 or ["exit %d" % done.returncode])[-1]}
        except subprocess.TimeoutExpired:
            row = {"case": name, "device": opts.device,
                   "error": f"timeout after {opts.timeout:.0f} s"}
        row["wall_s"] = time.perf_counter() - start
        results.append(row)
        print(_line(row), flush=True)

    out = pathlib.Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    kind = "calibration-" if opts.calibrate else ""
    path = out / (f"cliffs-{kind}{opts.device}"
                  f"{'-quick' if opts.quick else ''}.json")
    meta = _environment(opts.device)
    path.write_text(json.dumps({"environment": meta, "rows": results},
                               indent=1) + "\n")
    if opts.calibrate:
        print(f"wrote {path}")
        return 0
    slow = [r for r in results if "error" in r or not r["agrees"]
            or _ratio(r) > 1.25]
    print(f"\n{len(results) - len(slow)} of {len(results)} rows at most "
          f"1.25x eager with eager's results; wrote {path}")
    return 0


def _ratio(row: dict) -> float:
    """The row's tc/eager ratio for the bar: the kernels' GPU time on CUDA
    (where the calls' time is host-bound), the call's time on the CPU."""
    return row.get("kernel_ratio", row["ratio"])


def _line(row: dict) -> str:
    if "error" in row:
        return f"{row['case']:<46} ERROR {row['error']}"
    where = "tc" if row["compiled_by_tc"] else (
        "eager" if row["kernels"] == 0 else "mixed")
    line = (f"{row['case']:<46} eager {row['eager_s'] * 1e3:9.3f} ms  "
            f"tc {row['tc_s'] * 1e3:9.3f} ms  {row['ratio']:6.2f}x  "
            f"(Dynamo alone {row['dynamo_s'] / row['eager_s']:4.2f}x)  ")
    if "kernel_ratio" in row:
        line += (f"kernels {row['eager_kernel_s'] * 1e6:8.1f} / "
                 f"{row['tc_kernel_s'] * 1e6:8.1f} us "
                 f"{row['kernel_ratio']:6.2f}x  ")
    if "model_tc_s" in row:
        line += (f"model {row['model_tc_s'] / row['model_eager_s']:7.2f}x"
                 f" {'eager' if row['model_eager_reason'] else 'tc':<5} ")
    return line + f"{where:<5} {'ok' if row['agrees'] else 'WRONG'}"


def _environment(device: str) -> dict:
    import platform

    import torch

    meta = {"torch": torch.__version__, "python": platform.python_version(),
            "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    if device == "cuda":
        meta["gpu"] = torch.cuda.get_device_name()
    return meta


if __name__ == "__main__":
    sys.exit(main())
