"""How long an all-reduce of GPT-2's gradients takes on this machine's
GPUs: the communication DDP must hide behind the backward.

    torchrun --nproc-per-node 2 benchmarks/allreduce_probe.py

All-reduces one buffer of --mb megabytes (default 498: GPT-2 124M's fp32
gradients) and of DDP's 25 MB buckets, in fp32 and bf16, on NCCL (gloo
without GPUs), and prints the median time and the bus bandwidth of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist


def timed(fn, repeats: int, sync) -> float:
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=498.0)
    parser.add_argument("--bucket-mb", type=float, default=25.0)
    parser.add_argument("--repeats", type=int, default=10)
    opts = parser.parse_args()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) \
        if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for dtype in (torch.float32, torch.bfloat16):
        size = dtype.itemsize
        whole = torch.ones(int(opts.mb * 2**20 / size), dtype=dtype,
                           device=device)
        buckets = list(whole.split(int(opts.bucket_mb * 2**20 / size)))
        one = timed(lambda: dist.all_reduce(whole), opts.repeats, sync)
        many = timed(lambda: [dist.all_reduce(b) for b in buckets],
                     opts.repeats, sync)
        nbytes = whole.numel() * size
        # NCCL's bus bandwidth: what each link carries, 2 (n - 1) / n of
        # the buffer for a ring all-reduce.
        bus = nbytes * 2 * (world - 1) / world
        if rank == 0:
            print(f"{str(dtype):15s} {nbytes / 2**20:7.1f} MB: one call "
                  f"{one * 1e3:7.2f} ms ({bus / one / 1e9:6.1f} GB/s bus), "
                  f"{len(buckets)} buckets {many * 1e3:7.2f} ms "
                  f"({bus / many / 1e9:6.1f} GB/s)", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
