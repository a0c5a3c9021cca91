#!/usr/bin/env python3
"""Compile-time benchmark: cold and warm first calls, tc vs Inductor.

What a user restarting a program waits for: each measurement is a fresh
Python process that builds a workload, wraps it in
`torch.compile(backend=...)` and times its first call (Dynamo's capture
included; CUDA synchronized). Cold: empty cache directories (TC_CACHE_DIR
for tc; TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR for Inductor; the
CUDA driver's PTX cache off). Warm: a second process on the caches the
cold one filled. `backend="eager"` (Dynamo's capture alone, no compiler)
is measured too, so the compilers' own part is the difference.

Workloads: the seed documents' examples (sin+cos, manual GeLU and
softmax, residual + layer norm, seed 004's 3-layer MLP at batch 128) and
seed 002's ResNet-18 training step (forward, backward, SGD step).

    python benchmarks/bench_compile.py [--device cpu|cuda] [--quick]
        [--workloads mlp,resnet] [--backends eager,inductor,tc]
        [--precompile] [--out benchmarks/results]

With --precompile, Inductor and tc are also measured with PyTorch's
precompile cache (TORCH_CACHING_PRECOMPILE=1; the cold process calls
torch.compiler.save_cache_artifacts()): a warm process then skips
Dynamo's capture, and loads the compiled graphs in `torch.compile(...)`,
which the second table adds to the first call.

Prints a table and writes compile-<device>.json to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

_HERE = pathlib.Path(__file__).resolve().parent
_ROOT = _HERE.parent

WORKLOADS = ("sin+cos", "manual GeLU", "manual softmax",
             "residual+layernorm", "MLP batch 128", "ResNet-18 train step")
BACKENDS = ("eager", "inductor", "tc")


def _build(name: str, device: str, quick: bool):
    """The workload's callable and inputs (in the child process)."""
    import torch

    sys.path.insert(0, str(_HERE))
    sys.path.insert(0, str(_ROOT / "test" / "python"))
    import bench_cpu  # noqa: E402 (sets cache variables: reset by caller)

    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device)

    n = 1 << (16 if quick else 20)
    rows, cols = 1024, 1024
    if name == "sin+cos":
        return bench_cpu.sin_cos, (randn(n), randn(n)), None
    if name == "manual GeLU":
        return bench_cpu.manual_gelu, (randn(n),), None
    if name == "manual softmax":
        return bench_cpu.manual_softmax, (randn(rows, cols),), None
    if name == "residual+layernorm":
        module = bench_cpu.ResidualLayerNorm(cols).eval().to(device)
        return module, (randn(rows, cols), randn(rows, cols)), None
    if name == "MLP batch 128":
        return (bench_cpu.SimpleModel().eval().to(device),
                (randn(128, 1024),), None)
    if name == "ResNet-18 train step":
        from resnet import ResNet18

        batch, size = (2, 32) if quick or device == "cpu" else (16, 224)
        model = ResNet18().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = randn(batch, 3, size, size)
        y = torch.randint(0, 10, (batch,), generator=g).to(device)

        def loss_fn(x, y):
            return torch.nn.functional.cross_entropy(model(x), y)

        def after(loss):
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        return loss_fn, (x, y), after
    raise SystemExit(f"unknown workload {name!r}")


def child(name: str, backend: str, device: str, quick: bool,
          caches: str, save: bool) -> None:
    """Times one first call, and `torch.compile(...)` before it; prints
    one JSON line. With `save`, saves PyTorch's precompile cache after."""
    start = time.perf_counter()
    import torch
    import torch._dynamo

    import tc

    imported = time.perf_counter() - start
    fn, args, after = _build(name, device, quick)
    _set_caches(caches)
    grad = after is not None
    with torch.set_grad_enabled(grad):
        t0 = time.perf_counter()
        compiled = torch.compile(fn, backend=backend)
        wrapped = time.perf_counter() - t0
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = compiled(*args)
        if after is not None:
            after(out)
        if device == "cuda":
            torch.cuda.synchronize()
        first = time.perf_counter() - t0
    if save:
        torch.compiler.save_cache_artifacts()
    dynamo_cache = torch._dynamo.utils.counters["dynamo_cache"]
    row = {"first_call_s": first, "import_s": imported,
           "torch_compile_s": wrapped,
           "precompile_hits": dynamo_cache.get("dynamo_cache_hit", 0)}
    if backend == "tc":
        row["tc_disk_cache_hits"] = tc.counters["disk_cache_hits"]
        row["tc_eager_ops"] = tc.counters["ops_eager"]
        row["tc_fallback_graphs"] = tc.counters["fallback_graphs"]
    print("RESULT " + json.dumps(row), flush=True)


def _set_caches(caches: str) -> None:
    os.environ["TC_CACHE_DIR"] = os.path.join(caches, "tc")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(caches, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(caches, "triton")
    os.environ["CUDA_CACHE_DISABLE"] = "1"


def _run_child(name, backend, device, quick, caches,
               precompile: str = "") -> dict:
    """One child process; `precompile` ("save" or "load") turns PyTorch's
    precompile cache on (TORCH_CACHING_PRECOMPILE=1), "save" saving it
    after the first call."""
    env = dict(os.environ)
    if precompile:
        env["TORCH_CACHING_PRECOMPILE"] = "1"
    env["TC_CACHE_DIR"] = os.path.join(caches, "tc")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(caches, "inductor")
    env["TRITON_CACHE_DIR"] = os.path.join(caches, "triton")
    env["CUDA_CACHE_DISABLE"] = "1"
    command = [sys.executable, __file__, "--child", name, "--backend",
               backend, "--device", device, "--caches", caches]
    if quick:
        command.append("--quick")
    if precompile == "save":
        command.append("--save")
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=1800)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}


def _prewarm() -> None:
    """Reads both compilers' libraries once (tc's extensions, Triton) in a
    throwaway process: "cold" means empty compile caches, not libraries
    that the first measured process alone reads from disk (tc's extension
    is 170 MB with LLVM linked in; on a fresh machine that read alone added
    0.3 s to the first row)."""
    code = ("import torch, tc, tc.compiler\n"
            "tc.compiler.extension.load_native(); tc.compiler.extension.load_runtime()\n"
            "try:\n    import triton\nexcept ImportError:\n    pass\n")
    subprocess.run([sys.executable, "-c", code], capture_output=True,
                   timeout=600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", default=None,
                        help="comma-separated substrings of workload names")
    parser.add_argument("--out", default=str(_HERE / "results"))
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated, of " + ", ".join(BACKENDS))
    parser.add_argument("--child", default=None)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--caches", default=None)
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--precompile", action="store_true",
                        help="also measure warm starts with PyTorch's "
                        "precompile cache (Inductor and tc)")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.backend, args.device, args.quick, args.caches,
              args.save)
        return 0

    import torch

    _prewarm()
    names = [w for w in WORKLOADS if not args.workloads or any(
        key.lower() in w.lower() for key in args.workloads.split(","))]
    rows = []
    for name in names:
        row = {"workload": name}
        for backend in args.backends.split(","):
            caches = tempfile.mkdtemp(prefix="tc-bench-compile-")
            cold = _run_child(name, backend, args.device, args.quick, caches)
            warm = _run_child(name, backend, args.device, args.quick, caches)
            row[backend] = {"cold": cold, "warm": warm}
            if args.precompile and backend != "eager":
                caches = tempfile.mkdtemp(prefix="tc-bench-compile-")
                _run_child(name, backend, args.device, args.quick, caches,
                           "save")
                row[backend]["precompiled"] = _run_child(
                    name, backend, args.device, args.quick, caches, "load")
        rows.append(row)
        print(_format_row(row), flush=True)

    print()
    print(_table(rows))
    print()
    print(_warm_table(rows))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.cuda.get_device_name() if args.device == "cuda" \
        else "cpu"
    path = out / f"compile-{args.device}.json"
    path.write_text(json.dumps({"device": device,
                                "torch": torch.__version__,
                                "quick": args.quick, "rows": rows},
                               indent=1) + "\n")
    print(f"wrote {path}")
    return 0


def _first(row, backend, which) -> float | None:
    return row.get(backend, {}).get(which, {}).get("first_call_s")


def _format_row(row) -> str:
    parts = [row["workload"]]
    for backend in (b for b in BACKENDS if b in row):
        for which in ("cold", "warm"):
            t = _first(row, backend, which)
            parts.append(f"{backend} {which} "
                         + (f"{t:.3f}s" if t is not None else
                            row[backend][which].get("error", "?")))
    return "; ".join(parts)


def _table(rows) -> str:
    """Markdown: first-call seconds, and the compilers' own part (less
    Dynamo's capture, the eager backend's first call) with tc's ratio."""
    lines = ["| workload | Dynamo only (eager) cold / warm s | Inductor "
             "cold / warm s | tc cold / warm s | compiler's part, cold: "
             "Inductor / tc (ratio) | compiler's part, warm: Inductor / tc "
             "(ratio) |", "|---|---|---|---|---|---|"]

    def cell(t):
        return "-" if t is None else f"{t:.3f}"

    for row in rows:
        eager = [_first(row, "eager", w) for w in ("cold", "warm")]
        ind = [_first(row, "inductor", w) for w in ("cold", "warm")]
        tcs = [_first(row, "tc", w) for w in ("cold", "warm")]
        parts = []
        for i in range(2):
            if None in (eager[i], ind[i], tcs[i]):
                parts.append("-")
                continue
            a = max(ind[i] - eager[i], 0.0)
            b = max(tcs[i] - eager[i], 0.0)
            ratio = f"{b / a:.3f}" if a > 0 else "-"
            parts.append(f"{a:.3f} / {b:.3f} ({ratio})")
        lines.append(
            f"| {row['workload']} | {cell(eager[0])} / {cell(eager[1])} | "
            f"{cell(ind[0])} / {cell(ind[1])} | {cell(tcs[0])} / "
            f"{cell(tcs[1])} | {parts[0]} | {parts[1]} |")
    return "\n".join(lines)


def _warm_table(rows) -> str:
    """Markdown: warm starts, the first call and `torch.compile(...)` plus
    the first call (PyTorch's precompile cache loads the compiled graphs
    in `torch.compile`), with and without that cache."""
    lines = ["| workload | backend | warm: first call s | warm: "
             "torch.compile + first call s | precompiled: first call s | "
             "precompiled: torch.compile + first call s |",
             "|---|---|---|---|---|---|"]

    def cells(entry, precompiled=False):
        if not entry or "first_call_s" not in entry:
            return "-", "-"
        first = entry["first_call_s"]
        both = first + entry.get("torch_compile_s", 0.0)
        hit = " (no hit)" if precompiled and not entry.get(
            "precompile_hits") else ""
        return f"{first:.3f}{hit}", f"{both:.3f}"

    for row in rows:
        for backend in (b for b in BACKENDS if b in row):
            warm = cells(row[backend].get("warm"))
            pre = cells(row[backend].get("precompiled"), True)
            lines.append(f"| {row['workload']} | {backend} | {warm[0]} | "
                         f"{warm[1]} | {pre[0]} | {pre[1]} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
