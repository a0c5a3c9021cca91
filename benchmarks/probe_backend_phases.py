#!/usr/bin/env python3
"""Where tc's backend spends a model's first step, by function (wall time,
no cProfile): the backend entry, its pipeline's steps, tracing, the error
checks, partitioning, importing and the native compiles. One process per
model, after an eager step (as bench_models runs them).

    python3 benchmarks/probe_backend_phases.py --models gpt2,resnet50
"""

from __future__ import annotations

import argparse
import collections
import copy
import functools
import gc
import importlib
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402

#: (module, function) pairs timed; nested ones count inside their callers.
_TIMED = [
    ("tc.backend", "tc_backend"),
    ("tc.backend.tracing", "trace_one_pass"),
    ("tc.direct", "direct_aten"),
    ("tc.direct", "_trace_node"),
    ("tc.backend.checks", "hoist_error_checks"),
    ("tc.backend.views", "compile_with_output_views"),
    ("tc.backend.partition", "partition_and_compile"),
    ("tc.backend.partition", "compile_subgraph"),
    ("tc.backend.segments", "compile_segments"),
    ("tc.compiler", "compile_graph"),
    ("tc.compiler", "compile_training"),
    ("tc.compiler.build", "compile_module"),
    ("tc.importer", "import_graph"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--after", default="eager",
                        help="backends whose first steps come before tc's "
                        "(bench_models runs eager, then inductor)")
    opts = parser.parse_args()
    # Fresh caches, as bench_models' processes have: every compile is real.
    cache = tempfile.mkdtemp(prefix="tc-probe-phases-")
    for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TC_CACHE_DIR",
                "CUDA_CACHE_PATH"):
        os.environ[var] = os.path.join(cache, var.lower())
    import torch
    import tc  # noqa: F401
    spent: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    for module_name, attr in _TIMED:
        module = importlib.import_module(module_name)
        original = getattr(module, attr)
        key = f"{module_name}.{attr}"

        def timed(*args, _original=original, _key=key, **kwargs):
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_key] += time.perf_counter() - start
                calls[_key] += 1
        setattr(module, attr, functools.wraps(original)(timed))
    # Time the garbage collector takes during tc's first step.
    collecting: dict = {"start": 0.0, "spent": 0.0, "runs": 0}

    def on_gc(phase, info):
        if phase == "start":
            collecting["start"] = time.perf_counter()
        else:
            collecting["spent"] += time.perf_counter() - collecting["start"]
            collecting["runs"] += 1
    gc.callbacks.append(on_gc)
    # _trace_node by the node's target: which ops make_fx traces alone.
    import tc.direct
    traced_by: collections.Counter = collections.Counter()
    trace_node = tc.direct._trace_node

    def by_target(b, node):
        start = time.perf_counter()
        try:
            return trace_node(b, node)
        finally:
            traced_by[str(node.target)[:60]] += time.perf_counter() - start
    tc.direct._trace_node = by_target
    device = torch.device(opts.device)
    for name in opts.models.split(","):
        spent.clear()
        calls.clear()
        base, inputs, training = bench_models.build(name, False, device)
        eager = copy.deepcopy(base)
        bench_models.make_step(name, eager, eager, inputs, training)()
        del eager
        for other in opts.after.split(","):
            if other and other != "eager":
                copied = copy.deepcopy(base)
                bench_models.make_step(
                    name, torch.compile(copied, backend=other), copied,
                    inputs, training)()
                del copied
        torch._dynamo.reset()
        traced_by.clear()
        gc.collect()  # as bench_models does before each first step
        collecting.update(spent=0.0, runs=0)
        import tc.backend
        step = bench_models.make_step(
            name, torch.compile(base, backend=tc.backend.tc_backend), base,
            inputs, training)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        total = time.perf_counter() - start
        print(f"== {name}: first step {total:.3f} s (after "
              f"{opts.after}; gc {collecting['spent'] * 1e3:.0f} ms in "
              f"{collecting['runs']} runs)")
        for key, seconds in spent.most_common():
            print(f"  {seconds * 1e3:9.1f} ms {calls[key]:4d} calls  {key}")
        for target, seconds in traced_by.most_common(6):
            print(f"  {seconds * 1e3:9.1f} ms  traced alone: {target}")
        try:  # Dynamo's own phases (a private table; absent on some torch)
            print(torch._dynamo.utils.compile_times(repr="str"))
        except Exception as error:  # noqa: BLE001
            print(f"  (no Dynamo compile times: {error})")
        sys.stdout.flush()
        del step, base
        torch._dynamo.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
