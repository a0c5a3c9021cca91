"""What PyTorch copies and fills in eager around tc's graphs in one step of
a real model (bench_models' rows), by op and input shapes, and the step's
median time.

Copies between compiled graphs, autograd and eager ops are invisible in
tc's counters (they are PyTorch's own ops: `.contiguous()` of an input,
autograd's copy of a gradient into its parameter's layout) but cost device
time. This lists them from one profiled step:

    python3 benchmarks/profile_copies.py --models llama-train,gpt2-train
    python3 benchmarks/profile_copies.py --models gpt2-train \\
        --without-write-in-place        # the step before layouts.write_in_place
    python3 benchmarks/profile_copies.py --models gpt2-train --compare
                                        # both, one process, in turn

Appends to copies.txt in --out.
"""

from __future__ import annotations

import argparse
import collections
import copy
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402

#: The ops that copy or fill memory.
COPIES = ("aten::copy_", "aten::contiguous", "aten::clone", "aten::_to_copy",
          "aten::fill_", "aten::zero_")


def profile_model(name: str, backend: str, steps: int, out) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile
    device = torch.device("cuda")
    base, inputs, training = bench_models.build(name, False, device)
    model = copy.deepcopy(base)
    torch._dynamo.reset()
    fn = torch.compile(model, backend=backend)
    step = bench_models.make_step(name, fn, model, inputs, training)
    for _ in range(1 + bench_models.WARM_STEPS):
        step()
    times = []
    for _ in range(steps):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    counts = collections.Counter(
        (e.name, str(e.input_shapes)) for e in prof.events()
        if e.name in COPIES)
    print(f"== {name}/{backend}: median step {statistics.median(times):.2f}"
          f" ms over {steps}; copies and fills in one step:", file=out)
    for (op, shapes), count in counts.most_common():
        print(f"{count:5d} {op} {shapes}", file=out)
    copy_kernels = [e for e in prof.key_averages()
                    if e.key == "aten::copy_"]
    for e in copy_kernels:
        print(f"aten::copy_: {e.count} calls, "
              f"{e.self_device_time_total / 1e3:.3f} ms on the device",
              file=out)
    out.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="llama-train,gpt2-train,vit")
    parser.add_argument("--backend", default="tc")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--without-write-in-place", action="store_true",
                        help="outputs written contiguous, as before "
                        "tc.layouts.write_in_place")
    parser.add_argument("--compare", action="store_true",
                        help="each model with, then without "
                        "write_in_place, in this process")
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path(__file__).parent / "results")
    opts = parser.parse_args()
    from tc import layouts
    written = layouts.write_in_place

    def contiguous(sub):
        return sub, [None] * 1024
    variants = ([written, contiguous] if opts.compare else
                [contiguous] if opts.without_write_in_place else [written])
    opts.out.mkdir(parents=True, exist_ok=True)
    with open(opts.out / "copies.txt", "a") as out:
        for name in opts.models.split(","):
            for variant in variants:
                layouts.write_in_place = variant
                if variant is contiguous:
                    print("(without tc.layouts.write_in_place)", file=out)
                profile_model(name, opts.backend, opts.steps, out)
    print((opts.out / "copies.txt").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
