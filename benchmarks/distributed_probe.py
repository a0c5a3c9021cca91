#!/usr/bin/env python3
"""One backend under DDP or FSDP2 in one process (world size 1): where a
training step's host time goes.

    python benchmarks/distributed_probe.py ddp gpt2 tc [--profile]
    TC_CUDA_GRAPHS=0 python benchmarks/distributed_probe.py fsdp llama tc

Builds the model of bench_distributed (`gpt2`, `llama`, `tiny`), wraps and
compiles it as that benchmark does, runs 10 warm-up steps and 30 timed
ones, and prints one JSON line: the first step, the wall time per step and
the host's time per step (both ms; a step whose host time equals its wall
time is bound by the host), and for tc the compiled functions with their
kernels, CUDA graph captures and replays. `--profile` adds cProfile's top
functions over 10 more steps. `--device cpu` runs on gloo.
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
        device = torch.device("cuda", 0)
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

    def step(ids):
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=autocast and cuda):
            loss = loss_of(model, ids)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    start = time.perf_counter()
    step(batches[0])
    sync()
    first = time.perf_counter() - start
    for ids in batches[1:10]:
        step(ids)
    sync()
    start, host = time.perf_counter(), 0.0
    for ids in batches[10:40]:
        began = time.perf_counter()
        step(ids)
        host += time.perf_counter() - began
    sync()
    wall = time.perf_counter() - start

    def compiled(o) -> bool:
        try:
            return type(o) is CompiledFunction
        except ReferenceError:  # a dead weak proxy among gc's objects
            return False
    functions = sorted(((f.num_kernels, f.graph_captures, f.graph_replays)
                        for f in gc.get_objects() if compiled(f)),
                       reverse=True)
    print(json.dumps({
        "run": [opts.strategy, opts.model, opts.backend],
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
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
