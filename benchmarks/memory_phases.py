"""Where a training step's GPU memory goes, by phase, for one backend.

    python3 benchmarks/memory_phases.py gpt2-train tc [--out FILE]

Builds a model of bench_models.py (random weights, its sizes), trains it
for five steps with AdamW and prints, for the last two, the memory allocated
at the start of the step, after the forward, after the backward, after the
optimizer step and at the end, and the peak of each phase: MiB above what
was allocated before the model was copied (the same baseline as
bench_models.py's peak). For tc also: what its output pools and its shared
arena hold between calls, and how many calls replayed a CUDA graph. One
JSON line per run, appended to --out when given.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MiB = 2 ** 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("backend", choices=("eager", "inductor", "tc"))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", help="a JSON-lines file to append to")
    opts = parser.parse_args()

    import torch
    import bench_models
    import tc
    import tc.compiler

    torch.backends.cuda.matmul.allow_tf32 = False
    base, inputs, training = bench_models.build(opts.model, False,
                                                torch.device("cuda"))
    if not training:
        raise SystemExit(f"{opts.model} is not a training row")
    functions = []
    init = tc.compiler.CompiledFunction.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        functions.append(self)
    tc.compiler.CompiledFunction.__init__ = record

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    model = copy.deepcopy(base)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    fn = model if opts.backend == "eager" else torch.compile(
        model, backend=opts.backend)

    def mark() -> tuple[int, int]:
        torch.cuda.synchronize()
        now, peak = torch.cuda.memory_allocated(), \
            torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        return (now - before) // MiB, (peak - before) // MiB

    rows = []
    for _ in range(opts.steps):
        start, _ = mark()
        loss = bench_models.loss_of(opts.model, fn, inputs)
        after_forward, peak_forward = mark()
        loss.backward()
        after_backward, peak_backward = mark()
        opt.step()
        after_step, peak_step = mark()
        opt.zero_grad(set_to_none=True)
        del loss
        end, _ = mark()
        rows.append(dict(start=start, after_forward=after_forward,
                         peak_forward=peak_forward,
                         after_backward=after_backward,
                         peak_backward=peak_backward,
                         after_step=after_step, peak_step=peak_step, end=end))
    pooled = sum(t.numel() * t.element_size() for f in functions
                 if f._pool is not None for blocks in f._pool.blocks
                 for t, _ in blocks)
    report = {
        "model": opts.model, "backend": opts.backend,
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "mib": rows[-2:],
        "tc_pooled_mib": pooled // MiB,
        "tc_shared_arena_mib": sum(
            a.numel() for a in tc.compiler._arenas.values()) // MiB,
        "tc_graphs": len(functions),
        "tc_replays": sum(f.graph_replays for f in functions),
        "tc_ops_eager": tc.counters["ops_eager"],
        "tc_runtime_fallbacks": tc.counters["runtime_fallbacks"],
    }
    line = json.dumps(report)
    print(line, flush=True)
    if opts.out:
        with open(opts.out, "a") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
