"""GPT-2's LM head, 4096 tokens x 768 -> 50257 in bf16, alone: a GEMM whose
result rows (50257 x 2 bytes) are no multiple of 16 bytes.

    python3 benchmarks/bench_lm_head.py [--out FILE]

Eager, Inductor and tc on the same inputs, the median of 10 calls by CUDA
events after 3 warm ones; tc pads the product (tc-align-half-products).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys


def timed(fn, *args) -> float:
    import torch
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(10):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="a JSON file to write")
    opts = parser.parse_args()
    import torch
    import tc

    x = torch.randn(4096, 768, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(50257, 768, device="cuda", dtype=torch.bfloat16) * 0.02

    def head(x, w):
        return x @ w.t()
    expected = head(x, w)
    report = {"device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "eager_ms": timed(head, x, w)}
    for backend in ("inductor", "tc"):
        torch._dynamo.reset()
        tc.reset_counters()
        compiled = torch.compile(head, backend=backend)
        torch.testing.assert_close(compiled(x, w), expected,
                                   atol=2e-2, rtol=2e-2)
        report[f"{backend}_ms"] = timed(compiled, x, w)
    report["tc_ops_eager"] = tc.counters["ops_eager"]
    report["tc_runtime_fallbacks"] = tc.counters["runtime_fallbacks"]
    print(json.dumps(report))
    if opts.out:
        with open(opts.out, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
