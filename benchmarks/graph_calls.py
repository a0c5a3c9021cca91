#!/usr/bin/env python3
"""Whether tc's programs replay their CUDA graphs in a bench_zoo.py row:
runs the row's child (its backends in rounds, as the table times them)
and logs every call of a tc program with what the runtime did (C: it
captured a CUDA graph, R: replayed one, D: launched the kernels
directly), the host's time for it, and the buffer addresses it ran on.
Prints per program its calls as a string (`DDDCRRRR...`) and the
buffers that moved (input names, `out<i>`, `arena`); the log goes to
OUT.calls.json.

    python3 benchmarks/graph_calls.py GPT2ForSequenceClassification train eager,tc /tmp/g2.json
"""

import collections
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402
import bench_zoo  # noqa: E402
from tc.compiler import function  # noqa: E402


def main() -> None:
    name, mode, backends, out = sys.argv[1:5]
    out = pathlib.Path(out)
    log: dict[int, dict] = {}
    run_cuda = function.CompiledFunction._run_cuda

    def logged(self, pointers, index, stable, symbol):
        native = self.native
        captures, replays = native.graph_captures, native.graph_replays
        start = time.perf_counter()
        result = run_cuda(self, pointers, index, stable, symbol)
        seconds = time.perf_counter() - start
        kind = ("C" if native.graph_captures > captures else
                "R" if native.graph_replays > replays else "D")
        entry = log.setdefault(id(native), {
            "inputs": list(self.imported.input_names),
            "outputs": len(self._outputs), "calls": []})
        entry["calls"].append([kind, round(seconds * 1e6, 1),
                               list(pointers)])
        return result

    function.CompiledFunction._run_cuda = logged
    timed = bench_models.time_in_rounds

    def rounds(*args, **kwargs):
        replays = timed(*args, **kwargs)
        out.with_suffix(".calls.json").write_text(json.dumps(
            list(log.values())))
        report(list(log.values()))
        return replays

    bench_models.time_in_rounds = rounds
    bench_zoo.child(name, mode, backends.split(","), 12, False, out, "cuda")


def report(programs: list[dict]) -> None:
    kinds = collections.Counter()
    host = collections.defaultdict(float)
    for program in programs:
        calls = program["calls"]
        names = program["inputs"]
        moved = []
        for i in range(len(calls[0][2])):
            if len({call[2][i] for call in calls[2:]}) > 1:
                moved.append(names[i] if i < len(names) else
                             f"out{i - len(names)}"
                             if i < len(names) + program["outputs"]
                             else "arena")
        print("".join(call[0] for call in calls), " ".join(moved))
        for kind, seconds, _ in calls:
            kinds[kind] += 1
            host[kind] += seconds
    print(" ".join(f"{kind}: {count} calls, {host[kind] / count:.1f} us"
                   for kind, count in sorted(kinds.items())))


if __name__ == "__main__":
    main()
