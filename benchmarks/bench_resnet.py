#!/usr/bin/env python3
"""ResNet-18 training step (seed 002): eager vs Inductor vs tc, one process.

Each backend trains its own copy of one ResNet-18 (test/python/resnet.py,
torchvision's layout) with SGD (lr 0.01) on one random batch: model and
cross-entropy in one compiled function, `loss.backward()`, `opt.step()`.
For each: the first step's time (Dynamo capture, the backend's cold compile
with fresh caches, the first run), the median of the later steps (CUDA
events on a GPU, wall time on the CPU; timed in rounds that take the
backends in turn, `--rounds` of `--steps` each), peak memory
(`torch.cuda.max_memory_allocated` over the first 1 + `--steps` steps on
a GPU, less what the other backends' models hold) and the first loss, which must
agree between backends (same weights, same batch). The floor is the step's
FLOPs (3x the forward's convolutions and linear layer) at the rate a large
matrix product reaches in this process. tc's row says whether tc compiled
the training graph itself (`tc.counters["training_graphs"]`) and how many
ops ran in eager. TF32 is off everywhere.

    python benchmarks/bench_resnet.py                      # GPU, batch 16, 224
    python benchmarks/bench_resnet.py --autocast bf16      # bf16 autocast
    python benchmarks/bench_resnet.py --device cpu --batch 2 --size 64 --steps 3
    python benchmarks/bench_resnet.py --backends tc --profile tc  # top kernels
    python benchmarks/bench_resnet.py --backends tc --host-profile tc

Prints a table and writes resnet-<device>[-bf16].json to --out.
"""

import argparse
import copy
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

# Fresh on-disk caches, so that the first step measures cold compiles.
_CACHE = tempfile.mkdtemp(prefix="tc-bench-resnet-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_CACHE, "inductor")
os.environ["TRITON_CACHE_DIR"] = os.path.join(_CACHE, "triton")
os.environ["TC_CACHE_DIR"] = os.path.join(_CACHE, "tc")
os.environ["CUDA_CACHE_PATH"] = os.path.join(_CACHE, "cuda")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

_ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT / "test" / "python"))
from resnet import ResNet18  # noqa: E402

import tc  # noqa: E402


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def step_flops(model: nn.Module, x: torch.Tensor) -> float:
    """FLOPs of a training step: 3x the forward's multiply-adds x 2 (the
    backward computes two products per forward product)."""
    macs = 0

    def count(module, inputs, output):
        nonlocal macs
        if isinstance(module, nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1]
            macs += (output.numel() * k * module.in_channels
                     // module.groups)
        elif isinstance(module, nn.Linear):
            macs += output.numel() * module.in_features

    hooks = [m.register_forward_hook(count) for m in model.modules()]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return 3 * 2 * macs


def matmul_rate(device, dtype) -> float:
    """FLOP/s of a large matrix product here (the achievable peak)."""
    n = 4096 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync(device)
    reps = 20 if device.type == "cuda" else 3
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(device)
    return 2 * n ** 3 * reps / (time.perf_counter() - start)


def run(name, base, x, y, args, device):
    # Peak memory is this backend's: what the earlier backends' models keep
    # allocated is subtracted, and the shared part (base model, batch) is
    # added back, as if it ran alone.
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    model = copy.deepcopy(base)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    autocast = args.autocast == "bf16"

    def loss_fn(x, y):
        return F.cross_entropy(model(x), y)

    if autocast:
        def loss_fn(x, y):  # noqa: F811
            with torch.autocast(device.type, dtype=torch.bfloat16):
                return F.cross_entropy(model(x), y)

    if name == "eager":
        fn = loss_fn
    else:
        torch._dynamo.reset()
        tc.reset_counters()
        fn = torch.compile(loss_fn, backend=name)

    def step():
        loss = fn(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    _sync(device)
    start = time.perf_counter()
    first_loss = step().item()
    first = time.perf_counter() - start
    for _ in range(args.steps):  # the peak of steady steps, too
        step()
    _sync(device)
    row = {"backend": name, "first_step_s": first, "first_loss": first_loss,
           "peak_mib": ((torch.cuda.max_memory_allocated() - before
                         + args.shared_bytes) / 2**20
                        if device.type == "cuda" else None),
           "times": [], "host": []}
    if name == "tc":
        row["tc_training_graphs"] = tc.counters["training_graphs"]
        row["tc_kernels"] = tc.counters["kernels"]
        row["tc_eager_ops"] = tc.counters["ops_eager"]
        row["tc_aot_autograd_graphs"] = tc.counters["aten_aot_autograd"]
        row["tc_runtime_fallbacks"] = tc.counters["runtime_fallbacks"]
    if args.profile and name in args.profile.split(","):
        _profile(name, step, device)
    if args.host_profile and name in args.host_profile.split(","):
        _host_profile(name, step, device)
    return row, step


def time_steps(row, step, steps, device):
    """Times `steps` steps into row["times"] (and the host's issue time into
    row["host"] on a GPU)."""
    for _ in range(steps):
        if device.type == "cuda":
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            issue = time.perf_counter()
            step()
            row["host"].append((time.perf_counter() - issue) * 1e3)
            end.record()
            torch.cuda.synchronize()
            row["times"].append(begin.elapsed_time(end))
        else:
            start = time.perf_counter()
            step()
            row["times"].append((time.perf_counter() - start) * 1e3)


def _profile(name, step, device):
    """Prints the 15 kernels (or CPU ops) that take the most time in one
    step."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        step()
        _sync(device)
    key = ("self_device_time_total" if device.type == "cuda"
           else "self_cpu_time_total")
    print(f"-- {name}: where one step goes")
    print(prof.key_averages().table(sort_by=key, row_limit=15,
                                    max_name_column_width=60))
    if device.type == "cuda":
        _print_families(prof)


def _host_profile(name, step, device):
    """Prints where the host's time goes in one step (Python's profiler:
    the backend's own code and the native calls it makes)."""
    import cProfile
    import pstats
    _sync(device)
    profiler = cProfile.Profile()
    profiler.enable()
    step()
    profiler.disable()
    _sync(device)
    print(f"-- {name}: the host's time in one step")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


def _kernel_family(kernel):
    """tc's kernels by what they fuse (`main_backward_fused_mul_reduce_5`
    is `fused_mul_reduce`), library kernels by their name's head."""
    import re
    match = re.match(r"(?:\w+?_)?(?:forward|backward)_(fused_\w+?)_\d+$",
                     kernel)
    if match:
        return "tc " + match.group(1)
    return "lib " + re.split(r"[<(]", kernel)[0][:48]


def _print_families(prof):
    """Device time by kernel family: where tc's own kernels lose time."""
    families = {}
    for event in prof.key_averages():
        us = event.self_device_time_total
        if us <= 0 or event.key.startswith(("Function", "Activity")):
            continue
        family = _kernel_family(event.key)
        total, count = families.get(family, (0.0, 0))
        families[family] = (total + us, count + event.count)
    tc_us = sum(t for f, (t, _) in families.items() if f.startswith("tc "))
    lib_us = sum(t for f, (t, _) in families.items() if f.startswith("lib "))
    print(f"device time: tc kernels {tc_us / 1e3:.2f} ms, library kernels "
          f"{lib_us / 1e3:.2f} ms")
    for family, (us, count) in sorted(families.items(),
                                      key=lambda kv: -kv[1][0])[:25]:
        print(f"  {us / 1e3:7.3f} ms  {count:4d}x  {family}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=10,
                        help="timed steps per backend in each round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--autocast", choices=["none", "bf16"],
                        default="none")
    parser.add_argument("--backends", default="eager,inductor,tc")
    parser.add_argument("--profile", default="",
                        help="backends to profile one step of (comma list)")
    parser.add_argument("--host-profile", default="",
                        help="backends to profile one step's host time of")
    parser.add_argument("--out", default=str(_ROOT / "benchmarks" /
                                             "results"))
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    torch.manual_seed(0)
    base = ResNet18().to(device)
    x = torch.randn(args.batch, 3, args.size, args.size, device=device)
    y = torch.randint(0, 1000, (args.batch,), device=device)
    flops = step_flops(base, x)
    rate = matmul_rate(device, torch.bfloat16 if args.autocast == "bf16"
                       else torch.float32)
    floor_ms = flops / rate * 1e3

    args.shared_bytes = (torch.cuda.memory_allocated()
                         if device.type == "cuda" else 0)
    rows, steps = [], []
    for name in args.backends.split(","):
        row, step = run(name, base, x, y, args, device)
        rows.append(row)
        steps.append(step)
    # Steps are timed in rounds that take the backends in turn, so that a
    # slow spell of the machine falls on all of them alike.
    for _ in range(args.rounds):
        for row, step in zip(rows, steps):
            time_steps(row, step, args.steps, device)
    for row in rows:
        times, host = row.pop("times"), row.pop("host")
        row["step_ms"] = statistics.median(times)
        # The host's time to issue a step's work (a GPU step slower than
        # its kernels is bound by this).
        row["host_ms"] = statistics.median(host) if host else None
        print(row, flush=True)

    by_name = {r["backend"]: r for r in rows}
    print(f"\nResNet-18 training step, batch {args.batch}, {args.size}x"
          f"{args.size}, SGD, {device}, autocast {args.autocast}; "
          f"{flops / 1e9:.1f} GFLOP a step, floor {floor_ms:.2f} ms at "
          f"{rate / 1e12:.1f} TFLOP/s (a large matmul here)")
    print("| backend | first step (s) | step (ms) | host ms | vs eager "
          "| vs inductor | peak MiB | first loss |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        vs = {k: (f"{by_name[k]['step_ms'] / r['step_ms']:.2f}x"
                  if k in by_name else "-") for k in ("eager", "inductor")}
        peak = f"{r['peak_mib']:.0f}" if r["peak_mib"] is not None else "-"
        host = f"{r['host_ms']:.2f}" if r["host_ms"] is not None else "-"
        print(f"| {r['backend']} | {r['first_step_s']:.2f} | "
              f"{r['step_ms']:.2f} | {host} | {vs['eager']} | "
              f"{vs['inductor']} | {peak} | {r['first_loss']:.5f} |")
    if "tc" in by_name:
        r = by_name["tc"]
        print(f"tc: {r['tc_training_graphs']} training graph(s) compiled by "
              f"tc, {r['tc_kernels']} kernels, {r['tc_eager_ops']} ops in "
              f"eager, {r['tc_aot_autograd_graphs']} graph(s) through "
              "AOTAutograd")
        import tc.compiler
        r["tc_graph_replays"] = sum(
            getattr(native, "graph_replays", 0)
            for native in tc.compiler.build.cache.values())
        steps = args.rounds * args.steps + args.steps + 1
        print(f"tc: {r['tc_graph_replays']} runs of a forward or backward "
              f"replayed a CUDA graph, in {steps} steps")
    losses = [r["first_loss"] for r in rows]
    spread = max(losses) - min(losses)
    print(f"first losses agree to {spread:.2e}")

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "-bf16" if args.autocast == "bf16" else ""
    path = out / f"resnet-{device.type}{suffix}.json"
    path.write_text(json.dumps({
        "batch": args.batch, "size": args.size, "steps": args.steps,
        "rounds": args.rounds,
        "autocast": args.autocast, "device": (
            torch.cuda.get_device_name() if device.type == "cuda"
            else "cpu"),
        "torch": torch.__version__, "gflop_per_step": flops / 1e9,
        "matmul_tflops": rate / 1e12, "floor_ms": floor_ms, "rows": rows},
        indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
