#!/usr/bin/env python3
"""Models of bench_zoo.py in bf16 inference, eager beside Inductor and tc:
each backend's median steady step (CUDA events, as bench_models.py times
them) and, for Inductor and tc, the GPU kernels of one step by their total
time (torch.profiler). Where a row's gap to Inductor is, kernel kind by
kernel kind, without bench_zoo.py's reduce-overhead compile.

    python3 benchmarks/profile_zoo_kernels.py deit_base_distilled_patch16_224,beit_base_patch16_224
    python3 benchmarks/profile_zoo_kernels.py DistillGPT2 train --rows 80

With `train`: bench_zoo.py's training step (AdamW under bf16 autocast,
the config's dropout) instead of bf16 inference. `--rows N`: the N
slowest kernels of each backend (18 by default). `--backends eager,tc`:
fewer backends (Inductor's training compile takes a minute);
`inductor-ro` and `tc-ro` are their reduce-overhead modes.
"""

import copy
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import bench_models  # noqa: E402
import bench_zoo  # noqa: E402
import tc  # noqa: E402
import zoo_models  # noqa: E402


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device("cuda")
    args = sys.argv[2:]
    rows = 18
    if "--rows" in args:
        at = args.index("--rows")
        rows = int(args[at + 1])
        del args[at:at + 2]
    backends = ("eager", "inductor", "tc")
    if "--backends" in args:
        at = args.index("--backends")
        backends = tuple(args[at + 1].split(","))
        del args[at:at + 2]
    training = args == ["train"]
    mode = "train" if training else "infer"
    for name in sys.argv[1].split(","):
        built = zoo_models.build(name, mode, device, torch.float32
                                 if training else torch.bfloat16)
        built.device_type, built.device = device.type, device
        base = built.model.train() if training else built.model.eval()
        times = {}
        for backend in backends:
            torch._dynamo.reset()
            tc.reset_counters()
            model = copy.deepcopy(base)
            fn = bench_models.compile_backend(backend, model)
            step = bench_zoo.make_step(name, fn, model, built, training,
                                       cuda=True)
            start = time.perf_counter()
            step()
            torch.cuda.synchronize()
            first = time.perf_counter() - start
            for _ in range(8):
                step()
            state = {"step": step, "times": [], "host": []}
            bench_models.time_steps(state, 10, device)
            times[backend] = statistics.median(state["times"])
            print(f"== {name} {backend} {times[backend]:.3f} ms, host "
                  f"{statistics.median(state['host']):.3f} ms, first "
                  f"{first:.1f} s", flush=True)
            if backend == "eager":
                continue
            if backend.startswith("tc"):
                print("counters", {k: v for k, v in tc.counters.items()
                                   if v})
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            kernels = [e for e in prof.key_averages()
                       if e.self_device_time_total > 0]
            total = sum(e.self_device_time_total for e in kernels)
            print(f"  kernels total {total / 1e3:.3f} ms")
            for e in sorted(kernels, key=lambda e: -e.self_device_time_total
                            )[:rows]:
                print(f"  {e.self_device_time_total / 1e3:8.3f} ms "
                      f"{e.count:4d}x  {e.key[:110]}")
        if "inductor" in times and "tc" in times:
            print(f"## {name} tc/inductor "
                  f"{times['inductor'] / times['tc']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
