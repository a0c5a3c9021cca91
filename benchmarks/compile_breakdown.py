#!/usr/bin/env python3
"""Where tc's cold compile goes, phase by phase.

For each workload of bench_cpu.py (or bench_gpu.py with --cuda), times the
first call of torch.compile(backend="tc") and, inside it:

* dynamo: the first call of the same function under backend="eager"
  (Dynamo's capture and guards, which every backend pays), minus its
  steady call;
* aten: tracing Dynamo's graph to ATen (AOTAutograd, or tc's own inference
  trace), that is the backend's time outside tc's ATen-graph compiler;
* partition: tc's ATen-graph compiler minus tc.compiler.compile_graph
  (support checks and partitioning);
* import: compile_graph minus the native compile (writing the fx dialect);
* native: the native compile (passes, code generation, module load);
* run: the rest of the first call: the first run, which on a GPU loads
  the kernels (the driver compiles PTX then, unless its cache has them:
  CUDA_CACHE_DISABLE=1 makes every load cold, as in a fresh process).

    python benchmarks/compile_breakdown.py [--cuda] [--quick]
"""

import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TC_CACHE_DIR", tempfile.mkdtemp(prefix="tc-breakdown-"))

import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda", action="store_true")
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    if opts.cuda:
        from bench_gpu import workloads
    else:
        from bench_cpu import workloads
    import tc.backend
    import tc.backend.pipeline
    import tc.compiler

    native = tc.compiler.extension.load_native()
    spent: dict[str, float] = {}

    def timed(owner, attr, key):
        fn = getattr(owner, attr)

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0.0) + time.perf_counter() - t0
        setattr(owner, attr, wrapper)

    timed(native, "compile", "native")
    timed(native, "compile_cuda", "native")
    timed(tc.backend.pipeline, "_compile_aten_runner", "aten_compiler")
    timed(tc.compiler, "compile_graph", "compile_graph")
    timed(tc.backend.pipeline, "to_aten", "backend")

    torch.set_grad_enabled(False)
    sync = torch.cuda.synchronize if opts.cuda else (lambda: None)

    def first_and_steady(backend, fn, args):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=backend)
        sync()
        t0 = time.perf_counter()
        compiled(*args)
        sync()
        first = time.perf_counter() - t0
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            compiled(*args)
            sync()
            times.append(time.perf_counter() - t0)
        return first, statistics.median(times)

    settings = " ".join(f"{k}={os.environ[k]}" for k in (
        "CUDA_CACHE_DISABLE", "TC_CUDA_FORMAT", "TC_CUDA_OPTIONS")
        if k in os.environ)
    if settings:
        print(f"with {settings}:\n")
    print("| workload | tc first call s | dynamo | aten | partition | "
          "import | native | run |")
    print("|---|---|---|---|---|---|---|---|")
    for name, fn, args, _ in workloads(opts.quick):
        # Dynamo alone, twice: the second one finds its caches warm, as
        # tc's will.
        for _ in range(2):
            first, steady = first_and_steady("eager", fn, args)
        dynamo = first - steady
        tc.compiler.clear_cache()
        spent.clear()
        first, steady = first_and_steady("tc", fn, args)
        compile_s = first - steady
        backend = spent.get("backend", 0.0)
        aten = backend - spent.get("aten_compiler", 0.0)
        partition = spent.get("aten_compiler", 0.0) - spent.get(
            "compile_graph", 0.0)
        imported = spent.get("compile_graph", 0.0) - spent.get("native", 0.0)
        run = compile_s - dynamo - backend
        print(f"| {name} | {first:.3f} | {dynamo:.3f} | {aten:.3f} | "
              f"{partition:.3f} | {imported:.3f} | "
              f"{spent.get('native', 0.0):.3f} | {run:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
