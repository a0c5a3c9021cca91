#!/usr/bin/env python3
"""Where tc's cold compile goes: Dynamo + AOTAutograd vs tc's own pipeline.

For each workload of bench_cpu.py (or bench_gpu.py with --cuda), times the
first call of torch.compile(backend="tc") and, inside it, tc's native
compile (import excluded: the fx-dialect text is already built) and the
first run.

    python benchmarks/compile_breakdown.py [--cuda] [--quick]
"""

import argparse
import os
import pathlib
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
    import tc.compiler

    native = tc.compiler._load_native()
    spent = {"native": 0.0}

    def timed(fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent["native"] += time.perf_counter() - t0
        return wrapper

    native.compile = timed(native.compile)
    native.compile_cuda = timed(native.compile_cuda)
    torch.set_grad_enabled(False)
    sync = torch.cuda.synchronize if opts.cuda else (lambda: None)
    print("| workload | first call s | tc native compile s | rest s |")
    print("|---|---|---|---|")
    for name, fn, args, _ in workloads(opts.quick):
        torch._dynamo.reset()
        tc.compiler.clear_cache()
        spent["native"] = 0.0
        compiled = torch.compile(fn, backend="tc")
        sync()
        t0 = time.perf_counter()
        compiled(*args)
        sync()
        first = time.perf_counter() - t0
        print(f"| {name} | {first:.3f} | {spent['native']:.3f} | "
              f"{first - spent['native']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
