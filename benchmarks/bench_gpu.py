#!/usr/bin/env python3
"""GPU benchmark: eager PyTorch vs torch.compile (Inductor) vs tc, one process.

The CPU benchmark's workloads (benchmarks/bench_cpu.py) at GPU sizes:
sin+cos and manual GeLU on 2^26 fp32 elements, manual softmax and residual
+ layer norm on 16384x4096 fp32, seed 004's MLP at batch 128 and 8192; and
a full sum and a column sum of 16384x4096 fp32. For
each: median time per call by CUDA events (after warm-up), speed ratios,
achieved bandwidth against a measured device copy for the memory-bound
rows, and cold compile seconds (fresh caches for both compilers and the
CUDA driver's PTX cache): the
first call's time less a steady call, and the backend's own part of it.
Inductor's part is that less what Dynamo's capture costs (measured as the
same with backend="eager"; Inductor tunes some kernels in its first run, so
the first call is where its whole compile shows). tc's part is timed
directly, as the time inside tc's backend function (tracing to ATen, the
native compile, the driver's load of the kernels) plus what its first run
takes beyond a steady run: the subtraction of two separately timed Dynamo
captures is noisier (+-0.03 s on the H100's host) than the whole of it.
TF32 is off on every side.

    python benchmarks/bench_gpu.py [--quick] [--out benchmarks/results]
    python benchmarks/bench_gpu.py --backends tc --only softmax  # a probe
    python benchmarks/bench_gpu.py --variants "max-block-size=512;vector-width=2"
    python benchmarks/bench_gpu.py --autotune  # tc: max-autotune vs default

Writes gpu.json and gpu.png to the output folder and prints a table.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

# Fresh on-disk caches, so that first calls measure cold compiles.
_CACHE = tempfile.mkdtemp(prefix="tc-bench-gpu-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_CACHE, "inductor")
os.environ["TRITON_CACHE_DIR"] = os.path.join(_CACHE, "triton")
os.environ["TC_CACHE_DIR"] = os.path.join(_CACHE, "tc")
# The CUDA driver caches its PTX compiles on disk (~/.nv/ComputeCache), across
# processes: a fresh one, or tc's kernels from an earlier run load warm.
os.environ["CUDA_CACHE_PATH"] = os.path.join(_CACHE, "cuda")

import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from bench_cpu import (ResidualLayerNorm, SimpleModel,  # noqa: E402
                       manual_gelu, manual_softmax, plot, sin_cos)


def workloads(quick: bool):
    n = 1 << (22 if quick else 26)
    rows, cols = (2048, 4096) if quick else (16384, 4096)
    f32 = 4
    g = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g, device="cuda")

    yield ("sin+cos", sin_cos, (randn(n), randn(n)), 3 * n * f32)
    yield ("manual GeLU", manual_gelu, (randn(n),), 2 * n * f32)
    yield ("manual softmax", manual_softmax, (randn(rows, cols),),
           2 * rows * cols * f32)
    ln = ResidualLayerNorm(cols).cuda().eval()
    yield ("residual+layernorm", ln, (randn(rows, cols), randn(rows, cols)),
           3 * rows * cols * f32)
    mlp = SimpleModel().cuda().eval()
    for batch in (128, 8192):
        yield (f"MLP batch {batch}", mlp, (randn(batch, 1024),), None)
    # Reductions to one value and along columns (split in two stages).
    x = randn(rows, cols)
    yield ("full sum", full_sum, (x,), rows * cols * f32)
    yield ("column sum", column_sum, (x,), rows * cols * f32)


def full_sum(x):
    return x.sum()


def column_sum(x):
    return x.sum(dim=0)


def check(out, expected, args):
    """Compiled vs eager. A reduction's result is compared with a tolerance
    that grows with the square root of its terms (fp32 summation order)."""
    atol = 1e-4
    x = args[0]
    if expected.numel() * 100 <= x.numel():
        terms = x.numel() // max(expected.numel(), 1)
        rms = float(x.float().pow(2).mean().sqrt())
        atol = max(atol, 1e-5 * terms ** 0.5 * rms)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=atol)


def median_time(fn, args, min_time=0.5, max_iters=500):
    """Median seconds per call, by CUDA events around each call.

    Calls are queued back to back (one synchronization at the end), as
    in a real program and in Triton's do_bench: the host's work for a call
    overlaps the GPU's work for the previous ones.
    """
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    once = max(time.perf_counter() - t0, 1e-6)
    iters = int(min(max_iters, max(10, min_time / once)))
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for begin, end in events:
        begin.record()
        fn(*args)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(b.elapsed_time(e) for b, e in events) / 1e3


def copy_bandwidth():
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda").fill_(1.0)
    y = torch.empty_like(x)
    t = median_time(lambda: y.copy_(x), ())
    return 2 * x.numel() * 4 / t


class TcTimer:
    """Times tc's backend function and its compiled graphs' first runs."""

    def __init__(self):
        import tc.backend
        import tc.compiler

        self.backend_s = 0.0
        self.runs: dict[int, list[float]] = {}
        backend = tc.backend.tc_backend

        def timed_backend(gm, example_inputs, **kwargs):
            t0 = time.perf_counter()
            try:
                return backend(gm, example_inputs, **kwargs)
            finally:
                self.backend_s += time.perf_counter() - t0

        self.backend = timed_backend
        call = tc.compiler.CompiledFunction.__call__

        def timed_call(compiled, *args):
            # The first few runs only: synchronizing would slow the
            # steady-state timing.
            if len(self.runs.get(id(compiled), ())) >= 3:
                return call(compiled, *args)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            try:
                return call(compiled, *args)
            finally:
                torch.cuda.synchronize()
                self.runs.setdefault(id(compiled), []).append(
                    time.perf_counter() - t0)

        tc.compiler.CompiledFunction.__call__ = timed_call

    def reset(self):
        self.backend_s = 0.0
        self.runs.clear()

    def compile_s(self):
        """Backend time plus each graph's first run beyond its fastest."""
        extra = sum(max(0.0, times[0] - min(times[1:]))
                    for times in self.runs.values() if len(times) > 1)
        return self.backend_s + extra


def first_call(fn, args):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(*args)
    torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def scan_variants(opts) -> int:
    """tc's time and compile time under each TC_CUDA_OPTIONS variant."""
    import tc

    torch.set_grad_enabled(False)
    variants = [v.strip() for v in opts.variants.split(";")]
    print("| workload | variant | tc ms | TB/s | compile s |")
    print("|---|---|---|---|---|")
    for name, fn, args, floor_bytes in workloads(opts.quick):
        if opts.only not in name:
            continue
        expected = fn(*args)
        for variant in variants:
            os.environ["TC_CUDA_OPTIONS"] = variant
            tc.reset_counters()
            torch._dynamo.reset()
            cfn = torch.compile(fn, backend="tc")
            out, first = first_call(cfn, args)
            check(out, expected, args)
            assert tc.counters["ops_eager"] == 0, tc.counters
            steady = median_time(cfn, args)
            assert tc.counters["runtime_fallbacks"] == 0, tc.counters
            tbps = f"{floor_bytes / steady / 1e12:.2f}" if floor_bytes else "-"
            print(f"| {name} | {variant or 'default'} | {steady * 1e3:.3f} | "
                  f"{tbps} | {first - steady:.3f} |", flush=True)
    os.environ.pop("TC_CUDA_OPTIONS", None)
    return 0


def autotune_rows(opts) -> int:
    """tc's mode="max-autotune" against its mode="default" on each row:
    steady times (CUDA events), the schedule max-autotune chose, and the
    first call (compile and tuning). Writes gpu-autotune.json."""
    import tc
    import tc.compiler

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_grad_enabled(False)
    rows = []
    seen: set[str] = set()
    print("| workload | tc default ms | tc max-autotune ms | speed-up | "
          "chosen | max-autotune first call s |")
    print("|---|---|---|---|---|---|")
    for name, fn, args, _ in workloads(opts.quick):
        if opts.only not in name:
            continue
        expected = fn(*args)
        row = {"workload": name}
        for mode in ("default", "max-autotune"):
            tc.reset_counters()
            torch._dynamo.reset()
            tc.compiler.clear_cache()
            cfn = torch.compile(fn, backend="tc", mode=mode)
            out, first = first_call(cfn, args)
            check(out, expected, args)
            assert tc.counters["ops_eager"] == 0, tc.counters
            row[f"{mode}_s"] = median_time(cfn, args)
            assert tc.counters["runtime_fallbacks"] == 0, tc.counters
            row[f"{mode}_first_call_s"] = first
        chosen = [c for r, c in sorted(_chosen().items()) if r not in seen]
        seen.update(_chosen())
        row["chosen"] = chosen
        row["speedup"] = row["default_s"] / row["max-autotune_s"]
        rows.append(row)
        print(f"| {name} | {row['default_s'] * 1e3:.3f} | "
              f"{row['max-autotune_s'] * 1e3:.3f} | {row['speedup']:.2f}x | "
              f"{', '.join(c or 'default' for c in chosen)} | "
              f"{row['max-autotune_first_call_s']:.2f} |", flush=True)
    if not opts.only:
        opts.out.mkdir(parents=True, exist_ok=True)
        meta = {"torch": torch.__version__,
                "device": torch.cuda.get_device_name(), "quick": opts.quick}
        (opts.out / "gpu-autotune.json").write_text(
            json.dumps({"meta": meta, "rows": rows}, indent=2))
    return 0


def _chosen() -> dict[str, str]:
    """The schedule max-autotune chose for each graph tuned in this
    process so far, by its record under TC_CACHE_DIR/autotune."""
    import tc

    return {record.name: json.loads(record.read_text())["choice"]
            for record in (tc.cache_dir() / "autotune").glob("*.json")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes (a smoke test, not a measurement)")
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path(__file__).parent / "results")
    parser.add_argument("--only", default="",
                        help="run only the workloads whose name contains this")
    parser.add_argument("--backends", default="inductor,tc",
                        help="comma-separated; with fewer than both nothing "
                        "is written")
    parser.add_argument("--variants", default="",
                        help="';'-separated TC_CUDA_OPTIONS values: times tc "
                        "under each (schedule knobs), writes nothing")
    parser.add_argument("--autotune", action="store_true",
                        help="tc's max-autotune against its default mode")
    opts = parser.parse_args()
    if opts.variants:
        return scan_variants(opts)
    if opts.autotune:
        return autotune_rows(opts)
    backends = [b for b in opts.backends.split(",") if b]
    full = backends == ["inductor", "tc"] and not opts.only

    import tc

    timer = TcTimer()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_grad_enabled(False)
    bandwidth = copy_bandwidth()
    rows = []
    for name, fn, args, floor_bytes in workloads(opts.quick):
        if opts.only not in name:
            continue
        eager_t = median_time(fn, args)
        expected = fn(*args)
        result = {"workload": name, "eager_s": eager_t}
        # Dynamo's capture alone, twice: the first compile of a function
        # in a process fills caches (source, bytecode analysis) that every
        # later compile of it, Inductor's and tc's, finds warm.
        for backend in ["eager", "eager"] + backends:
            tc.reset_counters()
            torch._dynamo.reset()
            timer.reset()
            cfn = torch.compile(fn, backend=(timer.backend if backend == "tc"
                                             else backend))
            out, first = first_call(cfn, args)
            check(out, expected, args)
            if backend == "tc":
                result["tc_ops_compiled"] = tc.counters["ops_compiled"]
                result["tc_ops_eager"] = tc.counters["ops_eager"]
                result["tc_kernels"] = tc.counters["kernels"]
            steady = median_time(cfn, args)
            if backend == "tc":  # eager's time is not tc's
                assert tc.counters["runtime_fallbacks"] == 0, tc.counters
            if backend == "eager":  # Dynamo's capture alone
                result["dynamo_compile_s"] = first - steady
                continue
            result[f"{backend}_s"] = steady
            result[f"{backend}_first_call_s"] = first
            result[f"{backend}_compile_s"] = first - steady
            result[f"{backend}_backend_compile_s"] = (
                timer.compile_s() if backend == "tc" else
                first - steady - result["dynamo_compile_s"])
        if floor_bytes:
            result["floor_s"] = floor_bytes / bandwidth
        if not full:
            for backend in backends:
                tbps = (f", {floor_bytes / result[backend + '_s'] / 1e12:.2f}"
                        " TB/s" if floor_bytes else "")
                print(f"{name}: {backend} {result[backend + '_s'] * 1e3:.3f} "
                      f"ms{tbps}, compile {result[backend + '_compile_s']:.3f}"
                      f" s (backend {result[backend + '_backend_compile_s']:.3f}"
                      f" s), eager {eager_t * 1e3:.3f} ms", flush=True)
            continue
        result["tc_vs_inductor"] = result["inductor_s"] / result["tc_s"]
        result["tc_vs_eager"] = result["eager_s"] / result["tc_s"]
        result["compile_ratio"] = (result["tc_compile_s"] /
                                   result["inductor_compile_s"])
        result["backend_compile_ratio"] = (
            result["tc_backend_compile_s"] /
            result["inductor_backend_compile_s"])
        if floor_bytes:
            for who in ("eager", "inductor", "tc"):
                result[f"{who}_TBps"] = floor_bytes / result[f"{who}_s"] / 1e12
        rows.append(result)
        print(f"{name}: done", file=sys.stderr, flush=True)
    if not full:
        return 0

    print("| workload | eager ms | inductor ms | tc ms | tc/inductor speed | "
          "tc/eager speed | TB/s eager / inductor / tc | compile s inductor "
          "/ tc | backend compile s inductor / tc | tc ops (compiled/eager) |")
    print("|" + "---|" * 10)
    for r in rows:
        tbps = (f"{r['eager_TBps']:.2f} / {r['inductor_TBps']:.2f} / "
                f"{r['tc_TBps']:.2f}" if "floor_s" in r else "-")
        print(f"| {r['workload']} | {r['eager_s'] * 1e3:.3f} | "
              f"{r['inductor_s'] * 1e3:.3f} | {r['tc_s'] * 1e3:.3f} | "
              f"{r['tc_vs_inductor']:.2f}x | {r['tc_vs_eager']:.2f}x | "
              f"{tbps} | {r['inductor_compile_s']:.2f} / "
              f"{r['tc_compile_s']:.3f} | "
              f"{r['inductor_backend_compile_s']:.2f} / "
              f"{r['tc_backend_compile_s']:.3f} | "
              f"{r['tc_ops_compiled']}/{r['tc_ops_eager']} |")
    device = torch.cuda.get_device_name()
    print(f"\ncopy bandwidth {bandwidth / 1e12:.2f} TB/s (read + write); "
          f"{device}; torch {torch.__version__}")

    opts.out.mkdir(parents=True, exist_ok=True)
    meta = {"torch": torch.__version__, "device": device,
            "copy_bandwidth_Bps": bandwidth, "quick": opts.quick}
    (opts.out / "gpu.json").write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=2))
    plot(rows, opts.out / "gpu.png", f"tc vs Inductor on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
