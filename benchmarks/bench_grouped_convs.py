"""Networks of grouped and depthwise convolutions in bf16 inference, batch
32 at 224 x 224: MobileNetV2 and MobileNetV3-Small (depthwise), ResNeXt-50
32x4d (32 groups), built from torchvision with random weights.

    python3 benchmarks/bench_grouped_convs.py [--out FILE]

Eager, Inductor and tc on the same inputs in one process: the median of 10
calls by CUDA events after 5 warm ones, the first call, the relative L2
error against eager, and tc's counters (ops in eager, run-time fallbacks).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

MODELS = ("mobilenet_v2", "mobilenet_v3_small", "resnext50_32x4d")


def timed(fn, x) -> float:
    import torch
    for _ in range(5):
        fn(x)
    times = []
    for _ in range(10):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        fn(x)
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/"
                        "grouped-convs-cuda.json")
    opts = parser.parse_args()
    import torch
    import torchvision
    import tc
    torch.manual_seed(0)
    x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
    results = {"device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "rows": {}}
    for name in MODELS:
        model = getattr(torchvision.models, name)().cuda()
        model = model.to(torch.bfloat16).eval().requires_grad_(False)
        row = {}
        with torch.no_grad():
            expected = model(x).float()
            row["eager_ms"] = timed(model, x)
            for backend in ("inductor", "tc"):
                torch._dynamo.reset()
                tc.reset_counters()
                compiled = torch.compile(model, backend=backend)
                start = time.perf_counter()
                got = compiled(x)
                torch.cuda.synchronize()
                first = time.perf_counter() - start
                error = float((got.float() - expected).norm()
                              / expected.norm())
                row[backend] = {"ms": timed(compiled, x), "first_s": first,
                                "relative_error": error}
            row["tc"]["counters"] = {
                key: tc.counters[key] for key in (
                    "kernels", "ops_eager", "fallback_graphs",
                    "runtime_fallbacks")}
        results["rows"][name] = row
        print(f"{name}: eager {row['eager_ms']:.2f} ms, Inductor "
              f"{row['inductor']['ms']:.2f} ms, tc {row['tc']['ms']:.2f} ms "
              f"(error {row['tc']['relative_error']:.4f}, "
              f"{row['tc']['counters']})", flush=True)
    with open(opts.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
