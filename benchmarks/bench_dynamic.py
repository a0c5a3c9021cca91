#!/usr/bin/env python3
"""dynamic=True across sequence lengths and batch sizes: compiles and
per-call times of tc against eager PyTorch and Inductor, in one process.

By default (`--workloads`), real models over changing sequence lengths:
BERT-base and GPT-2 inference, a decoder's prefill at odd prompt lengths
and a GPT-2 training step (`dynamic_workloads.py` says what each measures),
one row per workload in `dynamic-<device>.json`: tc's compiles per Dynamo
graph, the first calls' and the steady calls' totals against Inductor's
(`steady_vs_inductor`, `first_total_ratio`), agreement with eager
(`tc_ok`), and the raw figures. `--backends` adds `tc-static` (a compile
per length: what the lengths cost tc when each is a constant).

    python benchmarks/bench_dynamic.py [--device cuda|cpu]
        [--workloads bert,gpt2,prefill,gpt2-train] [--batch 16]
        [--lengths 64,128] [--backends eager,inductor,tc,tc-static]

With `--models` (or `--models all`), five small models run inference (fp32, TF32 off) over a sequence of sizes (3, 5,
7, 9, 17, 33, 128, 1000 by default): seed 004's MLP, a block of Linear,
GeLU, LayerNorm, Linear and softmax, that block on [batch, 16, 256] inputs
(`tokens`), and on [4, length, 256] inputs (`sequence`: the size is the
sequence length), and a transformer block (causal attention and an MLP)
on [4, length, 256] inputs (`attention`). For each backend the script
reports

* `first calls`: the summed wall time of each size's first call (what a
  server sees when a new batch size arrives: tracing, compiling, running),
  and how many graphs the backend compiled (tc: `graphs_compiled`;
  Inductor: Dynamo's unique graphs);
* per batch size, the steady time per call (median of interleaved rounds
  of N calls and one synchronize), its ratio to eager and to Inductor, and
  the floor (the bytes the model must move at the copy bandwidth measured
  here, or its GEMMs' FLOPs at the device's fp32 peak, whichever is
  longer).

`tc static` compiles each size separately (dynamic=False with a larger
recompile limit): what tc's kernels cost when the batch is a constant.

    python benchmarks/bench_dynamic.py --models all [--device cuda|cpu]
        [--batches 3,5,...] [--calls 200] [--rounds 5] [--out DIR]

(written to `dynamic-batches-<device>.json`).
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

import torch
import torch._dynamo

sys.path.insert(0, str(pathlib.Path(__file__).parent))
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "test"
                       / "python"))
from batch_model import AttentionBlock  # noqa: E402
from bench_cpu import SimpleModel  # noqa: E402
import dynamic_workloads  # noqa: E402


class Block(torch.nn.Module):
    """Linear, GeLU, LayerNorm, Linear, softmax (a transformer MLP's ops)."""

    def __init__(self, width=256, hidden=1024):
        super().__init__()
        self.up = torch.nn.Linear(width, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.down = torch.nn.Linear(hidden, width)

    def forward(self, x):
        h = self.norm(torch.nn.functional.gelu(self.up(x)))
        return torch.softmax(self.down(h), dim=-1)


class TokenBlock(Block):
    """Block on [batch, 16 tokens, 256] inputs: each Linear is a view
    merging batch and tokens, a GEMM and a view back in PyTorch's ATen."""


class Attention(AttentionBlock):
    """The tests' pre-norm transformer block (causal attention with 4
    heads, then an MLP) at width 256, on [4, length, 256] inputs.
    Attention is not row-wise: tc compiles the rest once on rows and runs
    attention in eager between (docs/DynamicShapes.md)."""

    def __init__(self):
        super().__init__(width=256, heads=4)

    @staticmethod
    def extra_flops(shape):
        """Attention's two products (causal: half of each counted)."""
        batch, length, width = shape
        return 2 * batch * length * length * width


# name: (model, an input's shape; None is the size that varies)
MODELS = {"mlp": (SimpleModel, (None, 1024)), "block": (Block, (None, 256)),
          "tokens": (TokenBlock, (None, 16, 256)),
          "sequence": (TokenBlock, (4, None, 256)),
          "attention": (Attention, (4, None, 256))}


def input_shape(shape, size):
    return [size if d is None else d for d in shape]

BACKENDS = {
    "eager": None,
    "inductor": dict(backend="inductor", dynamic=True),
    "tc": dict(backend="tc", dynamic=True),
    "tc static": dict(backend="tc", dynamic=False),
}


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def per_call_s(fn, inputs, device) -> float:
    synchronize(device)
    start = time.perf_counter()
    for x in inputs:
        fn(x)
    synchronize(device)
    return (time.perf_counter() - start) / len(inputs)


def floor_s(model, batch, shape, device, bandwidth):
    """The model's weights, input and output at `bandwidth`, or its GEMMs'
    FLOPs at the fp32 peak."""
    weights = sum(p.numel() for p in model.parameters()) * 4
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    rows = 1
    for size in input_shape(shape, batch)[:-1]:
        rows *= size
    flops = sum(2 * rows * m.in_features * m.out_features for m in linears)
    if hasattr(model, "extra_flops"):
        flops += model.extra_flops(input_shape(shape, batch))
    io = rows * (shape[-1] + linears[-1].out_features) * 4
    peak = 67e12 if device.type == "cuda" else None  # H100/H200 fp32
    times = [(weights + io) / bandwidth] if bandwidth else []
    if peak:
        times.append(flops / peak)
    return max(times) if times else None


def copy_bandwidth(device):
    if device.type != "cuda":
        return None
    x = torch.empty(1 << 28, dtype=torch.float32, device=device).fill_(1.0)
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        y.copy_(x)
    torch.cuda.synchronize()
    return 2 * x.numel() * 4 * 10 / (time.perf_counter() - start)


def run_model(name, device, batches, calls, rounds, bandwidth):
    import tc
    import tc.compiler

    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make().to(device).eval()
    results = {"model": name, "batches": batches, "backends": {}}
    compiled = {}
    for backend, options in BACKENDS.items():
        torch._dynamo.reset()
        tc.compiler.clear_cache()
        tc.reset_counters()
        torch._dynamo.utils.counters.clear()
        fn = model if options is None else torch.compile(model, **options)
        firsts, checked = [], True
        with torch.no_grad():
            for batch in batches:
                x = torch.randn(input_shape(shape, batch), device=device)
                synchronize(device)
                start = time.perf_counter()
                out = fn(x)
                synchronize(device)
                firsts.append(time.perf_counter() - start)
                checked &= torch.allclose(out, model(x), rtol=1e-3,
                                          atol=1e-4)
        stats = torch._dynamo.utils.counters["stats"]
        entry = {"first_calls_s": sum(firsts), "first_call_s": firsts,
                 "matches_eager": bool(checked)}
        if backend.startswith("tc"):
            entry["graphs_compiled"] = tc.counters["graphs_compiled"]
            entry["symbolic_graphs"] = tc.counters["symbolic_graphs"]
            entry["ops_eager"] = tc.counters["ops_eager"]
        elif options is not None:
            entry["graphs_compiled"] = stats.get("unique_graphs", 0)
        results["backends"][backend] = entry
        compiled[backend] = fn
    per_batch = {}
    with torch.no_grad():
        for batch in batches:
            inputs = [torch.randn(input_shape(shape, batch), device=device)
                      for _ in range(min(calls, 32))]
            inputs = (inputs * (calls // len(inputs) + 1))[:calls]
            times = {b: [] for b in compiled}
            for fn in compiled.values():  # warm every size's code paths
                for x in inputs[:3]:
                    fn(x)
            for _ in range(rounds):
                for backend, fn in compiled.items():
                    times[backend].append(per_call_s(fn, inputs, device))
            row = {b: statistics.median(t) for b, t in times.items()}
            row["floor"] = floor_s(model, batch, shape, device, bandwidth)
            per_batch[batch] = row
    results["per_batch_s"] = per_batch
    return results


def print_results(results, device):
    backends = list(BACKENDS)
    print(f"\n## {results['model']} ({device.type}), sizes "
          f"{', '.join(map(str, results['batches']))}\n")
    print("| backend | graphs compiled | first calls, summed (s) | "
          "matches eager |")
    print("|---|---|---|---|")
    for backend in backends:
        e = results["backends"][backend]
        print(f"| {backend} | {e.get('graphs_compiled', '-')} | "
              f"{e['first_calls_s']:.3f} | {e['matches_eager']} |")
    print("\n| size | eager ms | inductor ms | tc ms | tc static ms | "
          "tc/eager | tc/inductor | tc/tc static | floor ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for batch, row in results["per_batch_s"].items():
        floor = f"{row['floor'] * 1e3:.4f}" if row["floor"] else "-"
        print(f"| {batch} | {row['eager'] * 1e3:.4f} | "
              f"{row['inductor'] * 1e3:.4f} | {row['tc'] * 1e3:.4f} | "
              f"{row['tc static'] * 1e3:.4f} | "
              f"{row['tc'] / row['eager']:.2f} | "
              f"{row['tc'] / row['inductor']:.2f} | "
              f"{row['tc'] / row['tc static']:.2f} | {floor} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    parser.add_argument("--batches", default="3,5,7,9,17,33,128,1000")
    parser.add_argument("--models", default=None,
                        help="the small models above over batch sizes "
                        f"({','.join(MODELS)}; all: 'all')")
    parser.add_argument("--workloads", default=None,
                        help="real models over sequence lengths "
                        "(dynamic_workloads.py: "
                        f"{','.join(dynamic_workloads.WORKLOADS)}); the "
                        "default without --models")
    parser.add_argument("--backends", default="eager,inductor,tc",
                        help="--workloads' backends")
    parser.add_argument("--batch", type=int, default=None,
                        help="--workloads' batch (16 on CUDA, 2 on the CPU)")
    parser.add_argument("--lengths", default=None,
                        help="--workloads' lengths (default: each's own)")
    parser.add_argument("--small", action="store_true",
                        help="--workloads with 2-layer models (a smoke test)")
    parser.add_argument("--calls", type=int, default=None,
                        help="calls a round (200; --workloads: 3 on the "
                        "CPU, 10 on CUDA)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds (5; --workloads: 3)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch._dynamo.config.cache_size_limit = 64  # tc static: every size
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = 64
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if args.models is None:
        return run_workloads(args, device)
    batches = [int(b) for b in args.batches.split(",")]
    bandwidth = copy_bandwidth(device)
    if bandwidth:
        print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    all_results = []
    for name in (MODELS if args.models == "all" else args.models.split(",")):
        results = run_model(name, device, batches, args.calls or 200,
                            args.rounds or 5, bandwidth)
        print_results(results, device)
        all_results.append(results)
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"dynamic-batches-{device.type}.json").write_text(
            json.dumps(all_results, indent=1, default=str))
    return 0


def run_workloads(args, device) -> int:
    """--workloads: one row per workload in dynamic-<device>.json."""
    batch = args.batch or (16 if device.type == "cuda" else 2)
    lengths = (tuple(int(n) for n in args.lengths.split(","))
               if args.lengths else None)
    rows = []
    names = (args.workloads or ",".join(dynamic_workloads.WORKLOADS))
    for name in names.split(","):
        try:
            rows.append(dynamic_workloads.run(
                name, args.backends.split(","), device, batch,
                args.calls or (10 if device.type == "cuda" else 3),
                args.rounds or 3, args.small, lengths))
        except Exception as error:  # a failure costs one row
            rows.append({"model": name,
                         "error": f"{type(error).__name__}: {error}"})
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                          for k, v in rows[-1].items()
                          if not isinstance(v, (list, dict))}), flush=True)
    from bench_decode import write_results
    write_results(args.out or "benchmarks/results",
                  f"dynamic-{device.type}.json", rows, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
