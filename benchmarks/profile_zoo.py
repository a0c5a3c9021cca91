#!/usr/bin/env python3
"""One model of bench_zoo.py, eager beside tc, and where tc's step goes.

Builds model NAME of the dashboard lists (zoo_models.py: random weights,
the config's dropout) for MODE (`infer`: bf16, `train`: an AdamW step under
bf16 autocast), optionally at another BATCH, and prints eager's and tc's
median steady step (CUDA events), tc's first step, its counters, the
reasons its `fallbacks` log gave, and the 14 ops of one tc step that take
the most GPU time (torch.profiler). A quick look at a row before and after
a change, without the Inductor compiles bench_zoo.py makes.

    python3 benchmarks/profile_zoo.py DistillGPT2 train 8
    python3 benchmarks/profile_zoo.py mobilevit_s infer
"""

import copy
import logging
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import bench_models  # noqa: E402
import tc  # noqa: E402
import zoo_models  # noqa: E402


def main() -> None:
    name, mode = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else None
    torch.backends.cuda.matmul.allow_tf32 = False
    device, train = torch.device("cuda"), mode == "train"
    if batch and name in zoo_models.TIMM:
        zoo_models.TIMM[name] = batch
    elif batch:
        cls, _, overrides = zoo_models.HF[name]
        zoo_models.HF[name] = (cls, batch, overrides)
    built = zoo_models.build(name, mode, device,
                             torch.float32 if train else torch.bfloat16)
    base = built.model.train() if train else built.model.eval()

    def make(fn, model):
        if train:
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                    foreach=True)

            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = zoo_models.loss(name, fn, built)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
        else:
            def step():
                with torch.no_grad():
                    zoo_models.output(name, fn, built)
        return step

    def median_ms(step, count: int = 6) -> float:
        """bench_models' CUDA-event timing of `count` steps, median."""
        state = {"step": step, "times": [], "host": []}
        bench_models.time_steps(state, count, device)
        return statistics.median(state["times"])

    eager = make(base, base)
    for _ in range(3):
        eager()
    print(f"== {name} {mode} notes={built.notes}")
    print(f"eager {median_ms(eager):.2f} ms")
    records: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage()[:240])

    model = copy.deepcopy(base)
    tc.reset_counters()
    tc.set_logs("fallbacks")
    logging.getLogger("tc.fallbacks").addHandler(Lines())
    step = make(torch.compile(model, backend="tc"), model)
    start = time.perf_counter()
    step()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    tc.set_logs()
    for _ in range(5):
        step()
    print(f"tc {median_ms(step):.2f} ms first {first:.1f} s")
    print("counters", {k: v for k, v in tc.counters.items() if v})
    for line in sorted(set(records))[:25]:
        print("  log:", line)
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_device_time_total",
                                    row_limit=14, max_name_column_width=60))


if __name__ == "__main__":
    main()
