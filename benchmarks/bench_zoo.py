#!/usr/bin/env python3
"""The dashboard suites: PyTorch's TIMM and HuggingFace model lists through
eager, Inductor (default and reduce-overhead) and tc, one process per model.

The models are those of PyTorch's own benchmark lists (`zoo_models.py`),
with random weights, no download. Two modes on the GPU:

    infer   bf16 inference (`model.eval()`), the list's batch; agreement:
            each backend's ||out - ref|| / ||ref|| against the float32
            model on the same (bf16-rounded) weights and inputs, at most
            AGREE_FACTOR times eager's own error plus AGREE_FLOOR (the
            rule of PyTorch's own accuracy checks against a float64 run);
    train   an AdamW step under bf16 autocast with the config's own dropout
            (float32 weights); agreement, in a separate check on the model
            built with dropout 0: the first loss and the gradients of one
            backward against float32 eager without autocast, by the same
            rule, for eager, and tc.

and `--device cpu`: float32 inference of the TIMM list and the HF models of
at most 1B parameters, CPU_BATCH images / CPU_BATCH x CPU_SEQ tokens,
against Inductor's CPU backend (agreement against the float32 eager run at
FP32_TOLERANCE).

Per backend: the first step (Dynamo's capture and a cold compile, fresh
caches), the median steady step (CUDA events; the backends' timed steps
interleaved in rounds, as bench_models.py does), peak memory, Dynamo's
graphs and graph breaks; for tc its counters (kernels, ATen ops left to
eager, graphs wholly in eager, run-time fallbacks, library convolutions)
and the reasons its `fallbacks` log gave. A model whose child dies or runs
past --timeout is a row with its exit status and the end of its output.

    python benchmarks/bench_zoo.py --mode infer --shard 1/4      # a quarter
    python benchmarks/bench_zoo.py --models ghostnet_100 --mode train
    python benchmarks/bench_zoo.py --device cpu --suite timm
    python benchmarks/bench_zoo.py --merge benchmarks/results/zoo-cuda-*.json

`--reuse FILES` takes the rows of backends other than tc from earlier
results files of the same device and torch (so that a change to tc needs
only tc's column again; the rows say so); `--rejoin RUN --reuse FILES`
does so after the fact for a run of eager and tc alone. Each shard writes
zoo-<device>-<mode>-<i>of<n>.json to --out after every model; `--merge`
joins shard files into zoo-<device>.json, a markdown table sorted worst
first (zoo-<device>.md) and a chart (zoo-<device>.png).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
import bench_models  # noqa: E402
import zoo_models  # noqa: E402

AGREE_FACTOR = 2.0
AGREE_FLOOR = 1e-2
FP32_TOLERANCE = 1e-3
#: Untimed steps after the first, and before each round's timed ones (the
#: rounds are bench_models.py's).
WARM_STEPS = 4
ROUND_WARM_STEPS = 2


def git_build() -> str:
    """The checkout's commit, `+dirty` when tracked files differ from it
    (the rows then measured code no commit holds)."""
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", *args], cwd=HERE,
                                  capture_output=True, text=True,
                                  check=True).stdout.strip()
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty
                                                       else "")
    except (OSError, subprocess.CalledProcessError):
        import tc
        return getattr(tc, "__version__", "unknown")


# ----------------------------------------------------------------------------
# Child: one model, one mode
# ----------------------------------------------------------------------------

def make_step(name: str, fn, model, built, training: bool, cuda: bool):
    import torch
    mark = torch.compiler.cudagraph_mark_step_begin
    if training:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                foreach=cuda)

        def step():
            mark()
            with torch.autocast(built.device_type, dtype=torch.bfloat16,
                                enabled=cuda):
                loss = zoo_models.loss(name, fn, built)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss
    else:
        def step():
            mark()
            with torch.no_grad():
                return zoo_models.output(name, fn, built)
    return step


def dynamo_counts() -> dict:
    from torch._dynamo.utils import counters
    return {"graphs": int(counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(counters["graph_break"].values()))}


def prepare(name: str, backend: str, base, built, training: bool,
            cuda: bool) -> tuple[dict, dict]:
    """Compiles `backend`'s copy, times its first step, warms it up."""
    import torch
    import tc
    import torch._dynamo
    from torch._dynamo.utils import counters
    counters.clear()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    model = copy.deepcopy(base)
    tc.reset_counters()
    step = make_step(name, bench_models.compile_backend(backend, model),
                     model, built, training, cuda)
    tc_backend = backend.startswith("tc")
    lines = bench_models._FallbackLines() if tc_backend else None
    gc.collect()
    row: dict = {"backend": backend}
    start = time.perf_counter()
    result = step()
    bench_models._sync(built.device)
    row["first_step_s"] = time.perf_counter() - start
    if lines is not None:
        row["tc_eager_reasons"] = sorted(set(lines.records))[:40]
        lines.close()
    row.update(dynamo_counts())
    # The first step's output, compared after the timing (a copy: a
    # replayed CUDA graph writes its outputs again).
    output = None if training else result.detach().clone()
    for _ in range(WARM_STEPS):
        result = step()
    bench_models._sync(built.device)
    if cuda:
        row["peak_mib"] = (torch.cuda.max_memory_allocated() - before) / 2**20
    if tc_backend:
        for key in ("kernels", "ops_compiled", "ops_eager", "fallback_graphs",
                    "runtime_fallbacks", "compile_failures", "guard_reruns",
                    "shape_specializations", "library_convolutions",
                    "step_graph_captures", "step_graph_uncaptured"):
            row[f"tc_{key}"] = tc.counters[key]
    return row, {"step": step, "result": result, "output": output,
                 "times": [], "host": []}


def rel_error(out, ref, chunk: int = 1 << 26) -> float:
    """||out - ref|| / ||ref|| over ref's finite elements (inf when the
    non-finite elements differ), `chunk` elements at a time (MobileBERT's
    logits at batch 256 are 4G elements: whole, the float32 copies took
    90 GiB)."""
    import torch
    out, ref = out.reshape(-1), ref.reshape(-1)
    diff = norm = 0.0
    for start in range(0, ref.numel(), chunk):
        o = out[start:start + chunk].float()
        r = ref[start:start + chunk].float()
        finite = torch.isfinite(r)
        if not torch.equal(finite, torch.isfinite(o)):
            return math.inf
        zero = torch.zeros((), device=r.device)
        diff += float(torch.where(finite, o - r, zero).square().sum())
        norm += float(torch.where(finite, r, zero).square().sum())
    return math.sqrt(diff) / max(math.sqrt(norm), 1e-30)


def reference_output(name: str, base, built, cpu: bool):
    """The float32 model's output on the same (bf16-rounded) weights and
    inputs (CUDA), or float32 eager's (CPU, where the model is float32)."""
    import torch
    if cpu:
        with torch.no_grad():
            return zoo_models.output(name, base, built).float()
    ref_model = copy.deepcopy(base).float()
    ref_built = zoo_models.Built(ref_model, {
        k: v.float() if v.is_floating_point() else v
        for k, v in built.inputs.items()}, built.labels, {})
    with torch.no_grad():
        return zoo_models.output(name, ref_model, ref_built).float()


def train_agreement(name: str, backends: list[str], device) -> dict:
    """With dropout 0: each backend's first loss and gradients (autocast
    bf16) against float32 eager without autocast."""
    import torch
    # The timed backends' graphs and pools go first (DINOv2's float32
    # check ran out of memory beside them).
    torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    built = zoo_models.build(name, "train", device, torch.float32,
                             dropout=False)
    built.device_type = device.type
    built.device = device

    def grads(fn, model, amp: bool):
        model.zero_grad(set_to_none=True)
        torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = zoo_models.loss(name, fn, built)
        loss.backward()
        flat = torch.cat([p.grad.float().flatten() for p in model.parameters()
                          if p.grad is not None])
        return float(loss), flat

    ref_loss, ref_grads = grads(built.model, built.model, False)
    result = {}
    for backend in backends:
        torch._dynamo.reset()
        model = copy.deepcopy(built.model)
        fn = bench_models.compile_backend(backend, model)
        if backend == "tc-ro":
            # The second step replays what the first captured (tc's
            # step graphs): the gradients checked are the replay's.
            grads(fn, model, True)
        loss, flat = grads(fn, model, True)
        result[backend] = {
            "loss_error": abs(loss - ref_loss) / max(abs(ref_loss), 1e-30),
            "grad_error": (rel_error(flat, ref_grads)
                           if flat.numel() == ref_grads.numel() else math.inf)}
        del model, flat
    return result


def tc_functions() -> list:
    """The live compiled functions of tc (each a graph or a training
    segment's forward or backward)."""
    from tc.compiler.function import CompiledFunction
    return [o for o in gc.get_objects()
            if type(o) is CompiledFunction]  # (no isinstance: weak proxies)


def function_counts(function) -> dict:
    """A compiled function's CUDA calls, CUDA graph captures and replays so
    far: where the timed steps' `tc_functions` show captures, the buffers
    of that function's calls moved between steps."""
    return {"calls": function.cuda_calls, "captures": function.graph_captures,
            "replays": function.graph_replays}


def child(name: str, mode: str, backends: list[str], steps: int,
          small: bool, path: pathlib.Path, device_name: str) -> None:
    bench_models.fresh_process("tc-bench-zoo-")
    import torch
    import torch._dynamo
    device = torch.device(device_name)
    cuda = device.type == "cuda"
    training = mode == "train"
    report: dict = {"model": name, "suite": zoo_models.suite_of(name),
                    "mode": mode, "rows": []}
    dtype = torch.bfloat16 if cuda and not training else torch.float32
    try:
        built = zoo_models.build(name, mode if cuda else "cpu", device,
                                 dtype, small=small)
    except zoo_models.Skip as skip:
        report["skipped"] = str(skip)
        path.write_text(json.dumps(report))
        return
    built.device_type, built.device = device.type, device
    report["notes"] = built.notes
    base = built.model.train() if training else built.model.eval()
    path.write_text(json.dumps(report))
    states = {}
    for backend in backends:
        torch._dynamo.reset()
        try:
            row, states[backend] = prepare(name, backend, base, built,
                                           training, cuda)
        except Exception as error:
            if backend != "eager":
                raise
            # A model eager cannot run (an op without a kernel for the
            # dtype): no row of tc's to measure ("every model that eager
            # runs").
            report["eager_fails"] = f"{type(error).__name__}: {error}"[:300]
            path.write_text(json.dumps(report))
            return
        report["rows"].append(row)
        path.write_text(json.dumps(report))
        print(f"{name}/{mode}/{backend}: first step "
              f"{row['first_step_s']:.1f} s", flush=True)
    functions = (tc_functions() if any(b.startswith("tc") for b in states)
                 else [])
    before = [function_counts(f) for f in functions]
    replays = bench_models.time_in_rounds(states, steps, device,
                                          ROUND_WARM_STEPS)
    if functions:
        report["tc_functions"] = [
            {"inputs": f.imported.input_names[:2],
             **{k: v - b[k] for k, v in function_counts(f).items()}}
            for f, b in zip(functions, before)]
    for row in report["rows"]:
        state = states[row["backend"]]
        row["step_ms"] = statistics.median(state["times"])
        row["host_ms"] = statistics.median(state["host"])
        if row["backend"] in replays:
            row["tc_graph_replays_per_step"] = (replays[row["backend"]]
                                                / len(state["times"]))
        if training:
            row["loss"] = float(state["result"].detach())
            row["loss_finite"] = math.isfinite(row["loss"])
    path.write_text(json.dumps(report))
    outputs = {b: s["output"] for b, s in states.items()}
    del states
    gc.collect()
    # Agreement, after the timing (its compiles would count in the first
    # steps' caches otherwise).
    checked = [b for b in backends if b in ("eager", "tc", "tc-ro")]
    if training:
        check = train_agreement(name, checked, device)
        eager = check.get("eager", {"loss_error": 0.0, "grad_error": 0.0})
        for row in report["rows"]:
            got = check.get(row["backend"])
            if got is None:
                continue
            row.update(got)
            row["agrees"] = bool(
                row["loss_finite"]
                and got["loss_error"] <= AGREE_FACTOR * eager["loss_error"]
                + AGREE_FLOOR
                and got["grad_error"] <= AGREE_FACTOR * eager["grad_error"]
                + AGREE_FLOOR)
    else:
        ref = reference_output(name, base, built, not cuda)
        errors = {b: rel_error(out, ref) for b, out in outputs.items()}
        for row in report["rows"]:
            err = errors[row["backend"]]
            bound = (FP32_TOLERANCE if not cuda else
                     AGREE_FACTOR * errors.get("eager", 0.0) + AGREE_FLOOR)
            row["rel_error"], row["agrees"] = err, bool(err <= bound)
    path.write_text(json.dumps(report))
    print(f"{name}/{mode}: " + ", ".join(
        f"{r['backend']} {r['step_ms']:.2f} ms" for r in report["rows"]),
        flush=True)


# ----------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------

def summarize(report: dict, build: str) -> dict:
    """The results file's row for one model and mode."""
    rows = {r["backend"]: r for r in report.get("rows", [])}
    tc_row = rows.get("tc", {})
    out = {"model": report["model"], "suite": report.get("suite"),
           "mode": report["mode"], "build": report.get("build", build),
           "notes": report.get("notes", {}),
           "exit_status": report.get("exit_status", 0),
           "tc_ok": bool(tc_row.get("agrees")
                         and not tc_row.get("tc_runtime_fallbacks")
                         and not report.get("exit_status"))}
    for backend, row in rows.items():
        for key in ("step_ms", "host_ms", "first_step_s", "peak_mib",
                    "graphs", "graph_breaks", "rel_error", "loss_error",
                    "grad_error"):
            if key in row:
                out[f"{backend.replace('-', '_')}_{key}"] = row[key]
    if "step_ms" in tc_row:
        for backend, key in (("inductor", "vs_inductor"),
                             ("inductor-ro", "vs_inductor_ro"),
                             ("eager", "vs_eager")):
            if "step_ms" in rows.get(backend, {}):
                out[key] = rows[backend]["step_ms"] / tc_row["step_ms"]
        ind = rows.get("inductor", {})
        if "first_step_s" in ind:
            out["first_ratio"] = tc_row["first_step_s"] / ind["first_step_s"]
        if "peak_mib" in ind and "peak_mib" in tc_row:
            out["peak_ratio"] = tc_row["peak_mib"] / max(ind["peak_mib"], 1e-9)
    if "tc_graph_replays_per_step" in tc_row:
        out["tc_graph_replays_per_step"] = tc_row["tc_graph_replays_per_step"]
    # tc's reduce-overhead mode (training graphs in segments replay as step
    # graphs there), where it ran: against Inductor's two modes.
    ro_row = rows.get("tc-ro", {})
    if "step_ms" in ro_row:
        out["tc_ro_ok"] = bool(ro_row.get("agrees")
                               and not ro_row.get("tc_runtime_fallbacks"))
        for backend, key in (("inductor", "tc_ro_vs_inductor"),
                             ("inductor-ro", "tc_ro_vs_inductor_ro")):
            if "step_ms" in rows.get(backend, {}):
                out[key] = rows[backend]["step_ms"] / ro_row["step_ms"]
        for key in ("tc_graph_replays_per_step", "tc_step_graph_captures"):
            if key in ro_row:
                out[f"tc_ro_{key[3:]}"] = ro_row[key]
    out["runtime_fallbacks"] = tc_row.get("tc_runtime_fallbacks")
    out["eager_ops"] = tc_row.get("tc_ops_eager")
    out["library_calls"] = tc_row.get("tc_library_convolutions")
    out["tc_eager_reasons"] = tc_row.get("tc_eager_reasons", [])
    if report.get("error"):
        out["error"] = report["error"][-1500:]
    if report.get("eager_fails"):
        out["eager_fails"] = report["eager_fails"]
    return out


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and math.isfinite(v)]
    return (math.exp(sum(map(math.log, values)) / len(values))
            if values else None)


def table(rows: list[dict]) -> str:
    """Markdown, per mode, sorted worst tc/Inductor first."""
    out = []
    for mode in ("infer", "train"):
        these = sorted((r for r in rows if r["mode"] == mode),
                       key=lambda r: r.get("vs_inductor") or 0.0)
        # Out of time before any backend's timed steps (four compiles of
        # a large model): not a result of tc's, listed after the table.
        unmeasured = [r["model"] for r in these
                      if r.get("exit_status") == "timeout" and not any(
                          r.get(f"{b}_step_ms")
                          for b in ("eager", "inductor", "tc"))]
        eager_fails = [f"{r['model']} ({r['eager_fails']})" for r in these
                       if r.get("eager_fails")]
        these = [r for r in these if r["model"] not in unmeasured
                 and not r.get("eager_fails")]
        if not these:
            continue
        out += [f"\n### {mode}\n", "| model | eager ms | Inductor ms | "
                "Inductor r-o ms | tc ms | tc/Inductor | tc/Inductor r-o | "
                "tc r-o/Inductor r-o | first step ratio | peak ratio | "
                "tc ok | eager ops / fallbacks | note |", "|" + "---|" * 13]

        def f(r, key, spec=".2f"):
            return format(r[key], spec) if r.get(key) is not None else "-"
        for r in these:
            note = " ".join(str(part) for part in (
                r["notes"].get("layers", ""), r.get("note", "")) if part)
            if r.get("exit_status"):
                note = f"died ({r['exit_status']}) {note}"
            out.append(
                f"| {r['model']} | {f(r, 'eager_step_ms')} | "
                f"{f(r, 'inductor_step_ms')} | {f(r, 'inductor_ro_step_ms')}"
                f" | {f(r, 'tc_step_ms')} | {f(r, 'vs_inductor')}x | "
                f"{f(r, 'vs_inductor_ro')}x | "
                f"{f(r, 'tc_ro_vs_inductor_ro')}x | {f(r, 'first_ratio')} | "
                f"{f(r, 'peak_ratio')} | {'yes' if r['tc_ok'] else '**no**'}"
                f" | {r.get('eager_ops')} / {r.get('runtime_fallbacks')} | "
                f"{note} |")
        for key in ("vs_inductor", "vs_inductor_ro", "tc_ro_vs_inductor_ro",
                    "first_ratio"):
            g = geomean([r.get(key) for r in these])
            if g:
                out.append(f"\ngeomean {key} over "
                           f"{sum(1 for r in these if r.get(key))} models: "
                           f"{g:.2f}")
        if unmeasured:
            out.append("\nnot measured (the model's time limit ran out "
                       "before the timed steps): " + ", ".join(unmeasured))
        if eager_fails:
            out.append("\nnot a row (eager itself fails in this mode): "
                       + ", ".join(eager_fails))
    return "\n".join(out)


def plot(rows: list[dict], path: pathlib.Path, title: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = sorted((r for r in rows if r.get("vs_inductor")),
                  key=lambda r: r["vs_inductor"])
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(10, max(3, 0.25 * len(rows))))
    labels = [f"{r['model'].split('/')[-1][:32]} ({r['mode']})" for r in rows]
    ax.barh(range(len(rows)), [r["vs_inductor"] for r in rows])
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xlabel("tc speed / Inductor default speed (higher is better)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def merge(files: list[pathlib.Path], out: pathlib.Path, device: str) -> None:
    meta, rows = {}, {}
    for file in files:
        data = json.loads(file.read_text())
        meta = meta or data.get("meta", {})
        for row in data["rows"]:
            rows[(row["model"], row["mode"])] = row
    merged = list(rows.values())
    (out / f"zoo-{device}.json").write_text(json.dumps(
        {"meta": meta, "rows": merged}, indent=1))
    text = table(merged)
    (out / f"zoo-{device}.md").write_text(text + "\n")
    plot(merged, out / f"zoo-{device}.png",
         f"tc vs Inductor, {meta.get('device', device)}")
    print(text)


def reused_rows(paths: str | None, meta: dict) -> dict:
    """(model, mode) -> the raw per-backend report of earlier runs on the
    same device and torch (`paths`: comma-separated files; a later file's
    report of a model replaces an earlier one's), each row marked with its
    file."""
    if not paths:
        return {}
    found = {}
    for path in map(pathlib.Path, paths.split(",")):
        data = json.loads(path.read_text())
        old = data.get("meta", {})
        if (old.get("device"), old.get("torch")) != (meta["device"],
                                                      meta["torch"]):
            raise SystemExit(f"--reuse: {path} was measured on "
                             f"{old.get('device')} with torch "
                             f"{old.get('torch')}, not here")
        if not data.get("raw"):
            # (A merged file keeps the summary rows only.)
            raise SystemExit(f"--reuse: {path} has no per-backend rows: "
                             "pass the run's own file, not a merged one")
        for report in data["raw"]:
            report = copy.deepcopy(report)
            for row in report.get("rows", []):
                row.setdefault("reused_from", path.name)
            found[(report["model"], report["mode"])] = report
    return found


def rejoin(path: pathlib.Path, reuse_paths: str, out: pathlib.Path) -> None:
    """The rows of run `path` (eager and tc side by side) with the other
    backends' rows of the `--reuse` files, as `--reuse` gives them when
    the run is made: zoo-<device>-<mode>-rejoined.json in `out`."""
    data = json.loads(path.read_text())
    meta = data["meta"]
    reuse = reused_rows(reuse_paths, meta)
    raw, rows = [], []
    for report in data["raw"]:
        own = {r["backend"] for r in report.get("rows", [])}
        old = reuse.get((report["model"], report["mode"]), {})
        report = dict(report, rows=[
            r for r in old.get("rows", []) if r["backend"] not in own
            and not r["backend"].startswith("tc")] + report.get("rows", []))
        raw.append(report)
        rows.append(summarize(report, report["build"]))
    meta = dict(meta, rejoined=f"{path.name} with {reuse_paths}")
    mode = raw[0]["mode"] if raw else "train"
    (out / f"zoo-{'cpu' if 'CPU' in meta['device'] else 'cuda'}-{mode}"
     "-rejoined.json").write_text(json.dumps(
         {"meta": meta, "rows": rows, "raw": raw}, indent=1))
    print(table(rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--mode", default="both",
                        choices=("infer", "train", "both"))
    parser.add_argument("--suite", default="all",
                        choices=("timm", "hf", "all"))
    parser.add_argument("--models", default="",
                        help="comma-separated list names (default: the suite)")
    parser.add_argument("--shard", default="1/1", help="i/n: every n-th "
                        "(model, mode) from the i-th")
    parser.add_argument("--backends", default="",
                        help="default eager,inductor,inductor-ro,tc "
                        "(CPU: eager,inductor,tc)")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--small", action="store_true",
                        help="2 layers, small batches (a smoke test)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--reuse", default=None,
                        help="comma-separated results files")
    parser.add_argument("--rejoin", type=pathlib.Path, default=None,
                        help="a run's file, given the other backends' "
                        "rows of --reuse afterwards")
    parser.add_argument("--out", type=pathlib.Path,
                        default=HERE / "results")
    parser.add_argument("--merge", nargs="+", type=pathlib.Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=pathlib.Path, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.mode, opts.backends.split(","), opts.steps,
              opts.small, opts.json, opts.device)
        return 0
    opts.out.mkdir(parents=True, exist_ok=True)
    if opts.merge:
        merge(opts.merge, opts.out, opts.device)
        return 0
    if opts.rejoin:
        rejoin(opts.rejoin, opts.reuse, opts.out)
        return 0

    import torch
    cuda = opts.device == "cuda"
    backends = (opts.backends or ("eager,inductor,inductor-ro,tc" if cuda
                                  else "eager,inductor,tc")).split(",")
    build = git_build()
    meta = {"device": (torch.cuda.get_device_name() if cuda else
                       f"CPU, {os.cpu_count()} cores"),
            "torch": torch.__version__, "build": build,
            "steps": opts.steps, "small": opts.small}
    for package in ("transformers", "timm"):
        try:
            meta[package] = __import__(package).__version__
        except ImportError:
            pass
    reuse = reused_rows(opts.reuse, meta)
    names = (opts.models.split(",") if opts.models
             else zoo_models.names(opts.suite))
    modes = (["infer"] if not cuda else
             ["infer", "train"] if opts.mode == "both" else [opts.mode])
    work = [(n, m) for n in names for m in modes]
    index, count = map(int, opts.shard.split("/"))
    work = work[index - 1::count]
    tag = (f"zoo-{opts.device}-{opts.mode}-{index}of{count}"
           + ("-small" if opts.small else ""))
    raw, rows = [], []
    for name, mode in work:
        old = reuse.get((name, mode), {})
        if reuse and not old:
            print(f"{name} [{mode}]: not in {opts.reuse}, every backend "
                  "runs", file=sys.stderr, flush=True)
        kept = [r for r in old.get("rows", []) if r["backend"] != "tc"
                and r["backend"] in backends]
        run = [b for b in backends
               if b not in {r["backend"] for r in kept}]
        if "eager" not in run and "tc" in run:
            run.insert(0, "eager")      # agreement needs eager's error
            kept = [r for r in kept if r["backend"] != "eager"]
        print(f"{name} [{mode}] ...", file=sys.stderr, flush=True)
        path = pathlib.Path(tempfile.mkstemp(suffix=".json")[1])
        path.write_text(json.dumps({"model": name, "mode": mode,
                                    "rows": []}))
        cmd = [sys.executable, __file__, "--child", name, "--mode", mode,
               "--json", str(path), "--backends", ",".join(run),
               "--steps", str(opts.steps), "--device", opts.device]
        if opts.small:
            cmd.append("--small")
        report = bench_models.run_report(cmd, path, opts.timeout)
        if report.get("skipped"):
            print(f"{name}: skipped ({report['skipped']})", flush=True)
            continue
        report.setdefault("suite", zoo_models.suite_of(name))
        report["build"] = build
        report["rows"] = kept + report.get("rows", [])
        raw.append(report)
        rows.append(summarize(report, build))
        r = rows[-1]
        print(f"{name} [{mode}]: tc {r.get('tc_step_ms', '-')} ms, "
              f"x{r.get('vs_inductor', 0):.2f} Inductor, "
              f"x{r.get('vs_inductor_ro', 0) or 0:.2f} r-o, ok {r['tc_ok']}"
              f" [{report['wall_s']:.0f} s]", flush=True)
        if report.get("exit_status"):
            print(report.get("error", "")[-2000:], file=sys.stderr)
        (opts.out / f"{tag}.json").write_text(json.dumps(
            {"meta": meta, "rows": rows, "raw": raw}, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
