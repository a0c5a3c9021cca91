#!/usr/bin/env python3
"""Lays the ranks' profiled steps side by side (the traces that
`distributed_probe.py --timeline DIR` writes):

    python3 benchmarks/timeline_report.py DIR/timeline-ddp-gpt2-tc-2gpu-rank*.json.gz

For each step, one line per rank, in ms from the step's earliest start
on any rank (CLOCK_MONOTONIC, so ranks on one host compare): where the
host finished forward, backward and the optimizer; when the GPU's last
kernel ended; the compute kernels' busy time; each NCCL kernel (start +
duration) and the time it overlapped compute; the largest gaps of the
compute streams with the host op running at the gap's start.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys


def load(path: str) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def merge(spans):
    out: list[list[float]] = []
    for s, t in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], t)
        else:
            out.append([s, t])
    return out


def rank_steps(data: dict) -> list[dict]:
    """Each step's host marks and GPU activity, in µs of CLOCK_MONOTONIC."""
    events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    steps = data["probe"]["steps"]
    starts = sorted((e["ts"], int(e["name"][len("probe.step"):]))
                    for e in events if e["name"].startswith("probe.step")
                    and e.get("cat") == "user_annotation")
    out = []
    kernels = [(e["ts"], e["ts"] + e["dur"], e["name"],
                e.get("args", {}).get("stream"))
               for e in events if e.get("cat") == "kernel"]
    host_ops = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                if e.get("cat") == "cpu_op"]
    for (ts, index), next_ts in zip(starts, [s for s, _ in starts[1:]]
                                    + [float("inf")]):
        mark = dict(steps[index][1:])
        offset = steps[index][0][1] / 1e3 - ts  # profiler µs -> monotonic µs
        mine = [(s + offset, t + offset, n, st) for s, t, n, st in kernels
                if ts <= s < next_ts]
        out.append({
            "start": steps[index][0][1] / 1e3,
            "host": {k: v / 1e3 for k, v in mark.items()},
            "kernels": mine,
            "host_ops": [(s + offset, t + offset, n) for s, t, n in host_ops
                         if ts <= s < next_ts],
        })
    return out


def report(paths: list[str], gaps: int) -> None:
    ranks = [rank_steps(load(p)) for p in paths]
    for index in range(min(len(r) for r in ranks)):
        origin = min(r[index]["start"] for r in ranks)
        print(f"== step {index}")
        for rank, steps in enumerate(ranks):
            step = steps[index]

            def ms(t):
                return (t - origin) / 1e3
            comm = [(s, t) for s, t, n, _ in step["kernels"]
                    if "nccl" in n.lower()]
            compute = merge((s, t) for s, t, n, _ in step["kernels"]
                            if "nccl" not in n.lower())
            busy = sum(t - s for s, t in compute)
            end = max((t for s, t, _, _ in step["kernels"]), default=origin)
            host = step["host"]
            print(f"  rank {rank}: start {ms(step['start']):6.2f}  host "
                  f"forward {ms(host['forward']):6.2f} backward "
                  f"{ms(host['backward']):6.2f} optimizer "
                  f"{ms(host['optimizer']):6.2f} | GPU end {ms(end):6.2f} "
                  f"compute busy {busy / 1e3:6.2f}")
            for s, t in comm:
                covered = sum(max(0.0, min(t, b) - max(s, a))
                              for a, b in compute)
                print(f"      nccl {ms(s):6.2f} + {(t - s) / 1e3:5.2f}"
                      f" (compute alongside {covered / 1e3:5.2f})")
            holes = sorted(((b[0] - a[1], a[1]) for a, b in
                            zip(compute, compute[1:])), reverse=True)[:gaps]
            for length, at in holes:
                running = [n for s, t, n in step["host_ops"] if s <= at < t]
                print(f"      gap {ms(at):6.2f} + {length / 1e3:5.2f}  host "
                      f"in: {' > '.join(running[-3:]) or '-'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--gaps", type=int, default=5)
    opts = parser.parse_args()
    report(sorted(opts.traces), opts.gaps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
