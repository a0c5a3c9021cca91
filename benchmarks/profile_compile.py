#!/usr/bin/env python3
"""Where tc's first step of a real model goes (bench_models' rows).

Per model, in this process with fresh cache folders: one eager step (CUDA,
cuBLAS and cuDNN initialised, as in bench_models where eager runs first),
then tc's first step under cProfile with `TC_LOGS=compile_time`. Prints
the step's time, tc's compile_time lines and the functions with the most
cumulative and own time; appends all to compile-profile.txt in --out.

    python3 benchmarks/profile_compile.py --models gpt2-train,llama-train
    python3 benchmarks/profile_compile.py --no-cprofile   # times only
    python3 benchmarks/profile_compile.py --steady 5      # and the host's
                                         # time in 5 steady steps, by function
    python3 benchmarks/profile_compile.py --phases
        # tc's first step by phase, without cProfile: the ATen trace, the
        # native compiles, tc's backend in all, the compiled graphs' first
        # run; the rest is Dynamo's (and the step's own eager work)
    python3 benchmarks/profile_compile.py --floors --no-cprofile
        # first, the first steps of torch.compile's "eager" backend (Dynamo
        # alone: the floor of any backend's first step) and "aot_eager"
        # (Dynamo and AOTAutograd)

cProfile slows Python-heavy phases (by up to about 2x); native phases
(MLIR passes, LLVM, kernel loads) are timed by tc itself.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import logging
import os
import pathlib
import pstats
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402


def _replays() -> int:
    import tc.compiler
    return sum(int(getattr(native, "graph_replays", 0))
               for native in tc.compiler.build.cache.values())


def steady_profile(name: str, step, steps: int, top: int, out) -> None:
    """Host time of `steps` steady steps, by function (after 6 warm ones),
    and how many tc runs replayed a CUDA graph."""
    import torch
    import tc.compiler
    for _ in range(6):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    plain_ms = (time.perf_counter() - start) * 1e3 / steps
    replays = _replays()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    profiler.disable()
    profiled_ms = (time.perf_counter() - start) * 1e3 / steps
    print(f"-- {name}: steady step {plain_ms:.2f} ms ({profiled_ms:.2f} ms "
          f"under cProfile); tc runs that replayed a CUDA graph: "
          f"{(_replays() - replays) / steps:.1f} a step, "
          f"{len(tc.compiler.build.cache)} compiled graphs", file=out)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    body = text.getvalue()
    print(body[body.find("ncalls"):], file=out)


def profile_model(name: str, use_cprofile: bool, top: int, out,
                  steady: int = 0, floor_backends: bool = False) -> None:
    import torch
    import tc
    cache = tempfile.mkdtemp(prefix=f"tc-profile-compile-{name}-")
    os.environ["TC_CACHE_DIR"] = os.path.join(cache, "tc")
    os.environ["CUDA_CACHE_PATH"] = os.path.join(cache, "cuda")
    device = torch.device("cuda")
    base, inputs, training = bench_models.build(name, False, device)

    def stepper(fn, model):
        return bench_models.make_step(name, fn, model, inputs, training)

    eager_model = copy.deepcopy(base)
    start = time.perf_counter()
    stepper(eager_model, eager_model)()
    torch.cuda.synchronize()
    eager_s = time.perf_counter() - start
    del eager_model
    floors = []
    for backend in (("eager", "aot_eager") if floor_backends else ()):
        torch._dynamo.reset()
        model = copy.deepcopy(base)
        step = stepper(torch.compile(model, backend=backend), model)
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        floors.append(f"{backend} {time.perf_counter() - start:.2f} s")
        del step, model

    model = copy.deepcopy(base)
    torch._dynamo.reset()
    tc.reset_counters()
    step = stepper(torch.compile(model, backend="tc"), model)
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    handler = Keep(logging.INFO)
    tc.set_logs("compile_time")
    logging.getLogger("tc.compile_time").addHandler(handler)
    profiler = cProfile.Profile() if use_cprofile else None
    torch.cuda.synchronize()
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    step()
    torch.cuda.synchronize()
    if profiler:
        profiler.disable()
    first_s = time.perf_counter() - start
    logging.getLogger("tc.compile_time").removeHandler(handler)
    tc.set_logs()
    print(f"== {name}: eager first step {eager_s:.2f} s, tc first step "
          f"{first_s:.2f} s{' (under cProfile)' if profiler else ''}; "
          f"graphs {tc.counters['graphs_compiled']}, kernels "
          f"{tc.counters['kernels']}, training graphs "
          f"{tc.counters['training_graphs']}", file=out)
    if floors:
        print("  first steps of torch.compile's own backends: "
              + ", ".join(floors), file=out)
    for line in lines:
        print("  " + line, file=out)
    if profiler:
        for key in ("cumulative", "tottime"):
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats(key).print_stats(
                top)
            body = text.getvalue()
            print(f"-- by {key}:", file=out)
            print(body[body.find("ncalls"):], file=out)
    if steady:
        steady_profile(name, step, steady, top, out)
    out.flush()
    del step, model
    torch._dynamo.reset()


def phases(name: str, out) -> None:
    """tc's first step of model `name` by phase (after an eager step):
    the wall time of its ATen trace, native compiles, training segments,
    whole backend call and its compiled graphs' first runs."""
    import collections
    import functools
    import torch
    import tc
    import tc.backend
    import tc.compiler
    import tc.backend.segments
    import tc.backend.tracing
    spent: collections.Counter = collections.Counter()
    patched = []

    def time_it(module, attr, key):
        original = getattr(module, attr)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
        setattr(module, attr, timed)
        patched.append((module, attr, original))

    time_it(tc.backend.tracing, "trace_one_pass", "trace")
    time_it(tc.compiler, "compile_graph", "compile")
    time_it(tc.compiler, "compile_training", "compile")
    time_it(tc.backend.segments, "compile_segments", "segments")

    def backend(gm, example_inputs, **kwargs):
        start = time.perf_counter()
        compiled = tc.backend.tc_backend(gm, example_inputs, **kwargs)
        spent["backend"] += time.perf_counter() - start
        ran = []

        def run(*args):
            if ran:
                return compiled(*args)
            ran.append(True)
            start = time.perf_counter()
            result = compiled(*args)
            torch.cuda.synchronize()
            spent["first run"] += time.perf_counter() - start
            return result
        return run

    base, inputs, training = bench_models.build(name, False,
                                                torch.device("cuda"))
    try:
        eager_model = copy.deepcopy(base)
        bench_models.make_step(name, eager_model, eager_model, inputs,
                               training)()
        del eager_model
        torch._dynamo.reset()
        tc.reset_counters()
        step = bench_models.make_step(
            name, torch.compile(base, backend=backend), base, inputs,
            training)
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        total = time.perf_counter() - start
    finally:
        for module, attr, original in patched:
            setattr(module, attr, original)
    print(f"== {name}: tc first step {total:.2f} s: " + ", ".join(
        f"{key} {value:.2f} s" for key, value in spent.items())
        + f"; the rest (Dynamo, eager work) "
        f"{total - spent['backend'] - spent['first run']:.2f} s; graphs "
        f"written to ATen directly {tc.counters['aten_direct']} of "
        f"{tc.counters['aten_one_pass']} traced once", file=out)
    out.flush()
    del step, base
    torch._dynamo.reset()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(bench_models.MODELS))
    parser.add_argument("--no-cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--steady", type=int, default=0,
                        help="also profile the host in this many steady "
                        "steps")
    parser.add_argument("--phases", action="store_true",
                        help="only tc's first step by phase")
    parser.add_argument("--floors", action="store_true",
                        help="also time the first steps of the 'eager' "
                        "and 'aot_eager' backends")
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path(__file__).parent / "results")
    opts = parser.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    opts.out.mkdir(parents=True, exist_ok=True)
    with open(opts.out / "compile-profile.txt", "a") as out:
        for name in opts.models.split(","):
            if opts.phases:
                phases(name, out)
                continue
            profile_model(name, not opts.no_cprofile, opts.top, out,
                          opts.steady, opts.floors)
    print((opts.out / "compile-profile.txt").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
