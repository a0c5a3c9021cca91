#!/usr/bin/env python3
"""One backend under DDP or FSDP2 in one process (world size 1): where a
training step's host time goes.

    python benchmarks/distributed_probe.py ddp gpt2 tc [--profile]
    TC_CUDA_GRAPHS=0 python benchmarks/distributed_probe.py fsdp llama tc
    python -m torch.distributed.run --nproc-per-node 2 \
        benchmarks/distributed_probe.py ddp gpt2 tc --timeline DIR

Builds the model of bench_distributed (`gpt2`, `llama`, `tiny`), wraps and
compiles it as that benchmark does, runs 10 warm-up steps and 30 timed
ones, and prints one JSON line: the first step, the wall time per step and
the host's time per step (both ms; a step whose host time equals its wall
time is bound by the host), and for tc the compiled functions with their
kernels, CUDA graph captures and replays. `--profile` adds cProfile's top
functions over 10 more steps. `--device cpu` runs on gloo. Under
torch.distributed.run each rank takes the GPU of its LOCAL_RANK;
`--timeline DIR` records 3 more steps with torch.profiler and writes each
rank's trace (DIR/timeline-<run>-rank<r>.json.gz) with the host's step,
forward, backward and optimizer marks in CLOCK_MONOTONIC nanoseconds, so
that ranks can be laid side by side (benchmarks/timeline_report.py).
`--no-gc` turns Python's garbage collector off for the timed steps (a
diagnostic: does a rank's collection stall the other?).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pathlib
import pstats
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("strategy", choices=("ddp", "fsdp"))
    parser.add_argument("model", choices=("gpt2", "llama", "tiny"))
    parser.add_argument("backend")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--timeline", type=pathlib.Path)
    parser.add_argument("--no-gc", action="store_true")
    opts = parser.parse_args()
    for var, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29517"),
                       ("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):
        os.environ.setdefault(var, value)
    import torch
    import torch.distributed as dist
    import bench_distributed as bench
    import tc
    from tc.compiler import CompiledFunction

    cuda = opts.device == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    module, vocab, (batch, length), blocks, loss_of, autocast = bench.build(
        opts.model, opts.small)
    model = bench.wrap(opts.strategy, opts.backend, module, blocks, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    data = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, vocab, (batch, length),
                             generator=data).to(device) for _ in range(50)]

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def step(ids, mark=None):
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=autocast and cuda):
            with torch.profiler.record_function("probe.forward"):
                loss = loss_of(model, ids)
        if mark is not None:
            mark.append(("forward", time.monotonic_ns()))
        with torch.profiler.record_function("probe.backward"):
            loss.backward()
        if mark is not None:
            mark.append(("backward", time.monotonic_ns()))
        with torch.profiler.record_function("probe.optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        if mark is not None:
            mark.append(("optimizer", time.monotonic_ns()))

    start = time.perf_counter()
    step(batches[0])
    sync()
    first = time.perf_counter() - start
    for ids in batches[1:10]:
        step(ids)
    sync()
    if opts.no_gc:
        gc.collect()
        gc.disable()
    start, host = time.perf_counter(), 0.0
    for ids in batches[10:40]:
        began = time.perf_counter()
        step(ids)
        host += time.perf_counter() - began
    sync()
    wall = time.perf_counter() - start
    if opts.no_gc:
        gc.enable()

    def compiled(o) -> bool:
        try:
            return type(o) is CompiledFunction
        except ReferenceError:  # a dead weak proxy among gc's objects
            return False
    functions = sorted(((f.num_kernels, f.graph_captures, f.graph_replays)
                        for f in gc.get_objects() if compiled(f)),
                       reverse=True)
    rank, world = dist.get_rank(), dist.get_world_size()
    print(json.dumps({
        "run": [opts.strategy, opts.model, opts.backend],
        "rank": rank, "world": world, "no_gc": opts.no_gc,
        "cuda_graphs": os.environ.get("TC_CUDA_GRAPHS", "1"),
        "first_step_s": round(first, 1), "step_ms": round(wall / 30 * 1e3, 2),
        "host_ms": round(host / 30 * 1e3, 2),
        "functions": len(functions),
        "captures": sum(f[1] for f in functions),
        "replays": sum(f[2] for f in functions),
        "kernels_captures_replays": functions,
        "counters": {k: tc.counters[k] for k in (
            "graphs_compiled", "training_graphs", "ops_eager",
            "runtime_fallbacks")}}), flush=True)
    if opts.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for ids in batches[40:50]:
            step(ids)
        sync()
        profiler.disable()
        for order in ("tottime", "cumtime"):
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats(order) \
                .print_stats(30)
            print(text.getvalue())
    if opts.timeline:
        timeline(opts, rank, world, step, batches[40:43], sync)
    dist.destroy_process_group()
    return 0


def timeline(opts, rank, world, step, batches, sync) -> None:
    """Three steps under torch.profiler; the trace and the host's marks
    (each step's start and its phases' ends, CLOCK_MONOTONIC ns, and the
    profiler's time of a mark made at the same moment) to one file."""
    import gzip
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, record_function
    opts.timeline.mkdir(parents=True, exist_ok=True)
    name = f"{opts.strategy}-{opts.model}-{opts.backend}-{world}gpu"
    steps = []
    dist.barrier()
    sync()
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        for i, ids in enumerate(batches):
            mark = [("start", time.monotonic_ns())]
            with record_function(f"probe.step{i}"):
                step(ids, mark)
            steps.append(mark)
        sync()
    trace = opts.timeline / f"timeline-{name}-rank{rank}.json"
    prof.export_chrome_trace(str(trace))
    data = json.loads(trace.read_text())
    trace.unlink()
    data["probe"] = {"rank": rank, "world": world, "steps": steps}
    with gzip.open(str(trace) + ".gz", "wt") as out:
        json.dump(data, out)


if __name__ == "__main__":
    sys.exit(main())
