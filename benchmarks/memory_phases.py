"""Where a training step's GPU memory goes, by phase, for one backend.

    python3 benchmarks/memory_phases.py gpt2-train tc [--out FILE]
        [--snapshot N]


Builds a model of bench_models.py (random weights, its sizes), trains it
for five steps with AdamW and prints, for the last two, the memory allocated
at the start of the step, after the forward, after the backward, after the
optimizer step and at the end, and the peak of each phase: MiB above what
was allocated before the model was copied (the same baseline as
bench_models.py's peak). For tc also: what its output pools and its shared
arena hold between calls, and how many calls replayed a CUDA graph. One
JSON line per run, appended to --out when given.

With `--snapshot N` the last step runs under PyTorch's allocator history
(`torch.cuda.memory._record_memory_history`), and the report adds what was
live at that step's peak: the N largest groups of blocks, each named by
the innermost tc frame that allocated it and the innermost frame of the
model's code (`peak_blocks`). An inference row (`gpt2`) runs its forward
under `no_grad` as its step.
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
    parser.add_argument("--snapshot", type=int, default=0, metavar="N",
                        help="report the N largest groups of blocks live "
                        "at the last step's peak")
    opts = parser.parse_args()

    import torch
    import bench_models
    import tc
    import tc.compiler

    torch.backends.cuda.matmul.allow_tf32 = False
    base, inputs, training = bench_models.build(opts.model, False,
                                                torch.device("cuda"))
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
    peak_blocks = None
    for step in range(opts.steps):
        snapshot = opts.snapshot and step == opts.steps - 1
        if snapshot:
            torch.cuda.synchronize()
            torch.cuda.memory._record_memory_history(max_entries=1_000_000)
            at_start = torch.cuda.memory_allocated()
        start, _ = mark()
        if not training:
            with torch.no_grad():
                out = fn(*inputs)
            after_forward, peak_forward = mark()
            del out
            rows.append(dict(start=start, after_forward=after_forward,
                             peak_forward=peak_forward, end=mark()[0]))
        else:
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
                             after_step=after_step, peak_step=peak_step,
                             end=end))
        if snapshot:
            trace = torch.cuda.memory._snapshot()["device_traces"]
            torch.cuda.memory._record_memory_history(enabled=None)
            peak_blocks = blocks_at_peak(
                trace[torch.cuda.current_device()], at_start - before,
                opts.snapshot)
    pooled = sum(t.numel() * t.element_size() for f in functions
                 if f._pool is not None for blocks in f._pool.blocks
                 for t, _ in blocks)
    report = {
        "model": opts.model, "backend": opts.backend,
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "mib": rows[-2:],
        "tc_pooled_mib": pooled // MiB,
        "tc_shared_arena_mib": sum(
            a.numel() for a in tc.compiler.function.arenas.values()) // MiB,
        "tc_graphs": len(functions),
        "tc_replays": sum(f.graph_replays for f in functions),
        "tc_ops_eager": tc.counters["ops_eager"],
        "tc_runtime_fallbacks": tc.counters["runtime_fallbacks"],
    }
    if peak_blocks is not None:
        report["peak_blocks"] = peak_blocks
    line = json.dumps(report)
    print(line, flush=True)
    if opts.out:
        with open(opts.out, "a") as f:
            f.write(line + "\n")
    return 0


def _origin(frames: list[dict]) -> str:
    """The innermost frame of tc's Python package and the innermost frame
    of the model's code (neither torch's nor tc's), as "a <- b"."""
    def where(frame):
        return (f"{frame['filename'].rsplit('/', 2)[-1]}:{frame['line']} "
                f"{frame['name']}")
    ours = next((f for f in frames if "/tc/" in f["filename"]), None)
    model = next((f for f in frames if f["filename"].endswith(".py")
                  and "/torch/" not in f["filename"]
                  and "/tc/" not in f["filename"]), None)
    return " <- ".join(where(f) for f in (ours, model) if f) or "?"


def blocks_at_peak(trace: list[dict], start: int, count: int) -> dict:
    """Replays the allocator's history of one step: the MiB allocated at
    its peak above the baseline (`start`: what was allocated above it when
    the history began), and the `count` largest groups of blocks live then
    that the step allocated, by origin; where in the step the peak falls
    (a fraction of its allocator events) and the MiB allocated at 20
    points of the step."""
    live: dict[int, dict] = {}
    total = peak = start
    at_peak: list[dict] = []
    peak_at, totals = 0, []
    for index, event in enumerate(trace):
        action = event["action"]
        if action == "alloc":
            live[event["addr"]] = event
            total += event["size"]
            if total > peak:
                peak, at_peak, peak_at = total, list(live.values()), index
        elif action == "free_requested":
            total -= event["size"]
            live.pop(event["addr"], None)
        totals.append(total)
    step = max(len(totals) // 20, 1)
    groups: dict[str, list[int]] = {}
    for event in at_peak:
        group = groups.setdefault(_origin(event.get("frames", [])), [0, 0])
        group[0] += event["size"]
        group[1] += 1
    largest = sorted(groups.items(), key=lambda kv: -kv[1][0])[:count]
    return {"peak_mib": peak // MiB,
            "peak_at": round(peak_at / max(len(trace), 1), 3),
            "timeline_mib": [t // MiB for t in totals[::step]],
            "allocated_before_mib": start // MiB,
            "step_blocks_mib": sum(e["size"] for e in at_peak) // MiB,
            "groups": [{"mib": round(size / MiB, 1), "blocks": n,
                        "origin": origin}
                       for origin, (size, n) in largest]}


if __name__ == "__main__":
    sys.exit(main())
