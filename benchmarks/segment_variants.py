#!/usr/bin/env python3
"""Training (or inference) steps of bench_zoo.py's models through tc, in
one process, under variants of how training segments treat their inputs:
`as-is`; `no-read-in-place` (no input read in place); `any-attention`
(every eager attention's output read in place, not only the
memory-efficient one's); `all-inputs` (every dense permuted input);
`no-split` (query, key and value not split in eager). Prints each
variant's median steady step and host time (CUDA events, as
bench_models.py times them); with a row count, the as-is variant's
slowest kernels. A diagnostic: the variants of one process share its
warm-up, and host-bound rows vary by milliseconds between processes.

    python3 benchmarks/segment_variants.py vit_base_patch16_siglip_256 train as-is,no-read-in-place 40
"""

import copy
import operator
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch  # noqa: E402
import torch.fx  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import bench_models  # noqa: E402
import bench_zoo  # noqa: E402
import tc  # noqa: E402
import zoo_models  # noqa: E402
from tc import layouts  # noqa: E402
from tc.backend import segments  # noqa: E402

_ORIGINAL = (layouts.read_in_place, segments.eager_splits.rewrite,
             segments._attention_output_read_in_place)


def _any_attention(arg):
    return (isinstance(arg, torch.fx.Node) and arg.target is operator.getitem
            and arg.args[1] == 0 and isinstance(arg.args[0], torch.fx.Node)
            and arg.args[0].target in segments._EAGER_WITH_AUTOGRAD)


def _no_read(gm, only=None):
    return gm, [None] * sum(n.op == "placeholder" for n in gm.graph.nodes)


_VARIANTS = {
    "as-is": {},
    "no-read-in-place": {"read": _no_read},
    "any-attention": {"joined": _any_attention},
    "all-inputs": {"joined": lambda arg: True},
    "no-split": {"split": lambda *args: 0},
}


def _apply(variant: str) -> None:
    read, split, joined = _ORIGINAL
    change = _VARIANTS[variant]
    layouts.read_in_place = change.get("read", read)
    segments.eager_splits.rewrite = change.get("split", split)
    segments._attention_output_read_in_place = change.get("joined", joined)


def main() -> None:
    names, mode, variants = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    training = mode == "train"
    device = torch.device("cuda")
    for name in names.split(","):
        built = zoo_models.build(name, mode, device, torch.float32
                                 if training else torch.bfloat16)
        built.device_type, built.device = device.type, device
        base = built.model.train() if training else built.model.eval()
        for variant in variants.split(","):
            _apply(variant)
            torch._dynamo.reset()
            tc.reset_counters()
            model = copy.deepcopy(base)
            fn = bench_models.compile_backend("tc", model)
            step = bench_zoo.make_step(name, fn, model, built, training,
                                       cuda=True)
            for _ in range(6):
                step()
            torch.cuda.synchronize()
            state = {"step": step, "times": [], "host": []}
            bench_models.time_steps(state, 10, device)
            counts = {k: c for k, c in tc.counters.items()
                      if c and k in ("kernels", "ops_eager",
                                     "runtime_fallbacks")}
            print(f"== {name} {mode} {variant}: "
                  f"{statistics.median(state['times']):.2f} ms host "
                  f"{statistics.median(state['host']):.2f}", counts,
                  flush=True)
            if variant == "as-is" and rows:
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    step()
                    torch.cuda.synchronize()
                kernels = [e for e in prof.key_averages()
                           if e.self_device_time_total > 0]
                print("  kernels total",
                      sum(e.self_device_time_total for e in kernels) / 1e3)
                for e in sorted(kernels,
                                key=lambda e: -e.self_device_time_total
                                )[:rows]:
                    print(f"  {e.self_device_time_total / 1e3:8.3f} ms "
                          f"{e.count:4d}x  {e.key[:100]}")
        _apply("as-is")


if __name__ == "__main__":
    main()
