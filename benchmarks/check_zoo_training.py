#!/usr/bin/env python3
"""The dashboard models' training graphs through tc, for correctness only:
each model of bench_zoo.py's lists (`zoo_models.py`, two layers with
`--small`, float32, dropout 0) takes one backward in eager and one through
`torch.compile(backend="tc")`, in a process of its own; a row gives the
loss's and the gradients' relative errors against eager, tc's counters
(ops left to eager, graphs in eager, compile failures, run-time
fallbacks) and the `fallbacks` log's lines other than the fused
attention's. No timing: this finds graphs tc cannot compile or gets
wrong, on any machine (the CPU by default).

    python benchmarks/check_zoo_training.py --suite hf --small --out FILE
    python benchmarks/check_zoo_training.py --models T5Small,LayoutLMForMaskedLM

`--float64`: also each gradient's error against the model run in float64
(eager's float32 error is the yardstick: an ill-conditioned model gives
both large ones), and, for a TIMM model, eager's own channels-last error
(tc runs CPU convolutions channels-last, oneDNN's fast layout).
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import logging
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent


def _float64_errors(name: str, built, model, eager, tc_grads) -> dict:
    """Relative errors of eager's and tc's float32 gradients (and, for a
    TIMM model, eager's channels-last ones) against float64."""
    import torch

    import zoo_models

    def grads(m, inputs):
        m.zero_grad(set_to_none=True)
        run = copy.copy(built)
        run.inputs = inputs
        zoo_models.loss(name, m, run).backward()
        return torch.cat([p.grad.double().flatten() for p in m.parameters()
                          if p.grad is not None])

    def error(got, ref):
        return ((got.double() - ref).norm() / ref.norm()).item()

    wide = {k: v.double() if v.is_floating_point() else v
            for k, v in built.inputs.items()}
    ref = grads(copy.deepcopy(model).double(), wide)
    errors = {"eager": error(eager, ref), "tc": error(tc_grads, ref)}
    if name in zoo_models.TIMM:
        last = copy.deepcopy(model).to(memory_format=torch.channels_last)
        errors["eager_channels_last"] = error(grads(last, {
            "x": built.inputs["x"].to(memory_format=torch.channels_last)}),
            ref)
    return errors


def child(name: str, device: str, small: bool, float64: bool) -> dict:
    import torch

    import tc
    import zoo_models
    stream = io.StringIO()
    logging.getLogger("tc").addHandler(logging.StreamHandler(stream))
    tc.logs.set_logs("fallbacks")
    dev = torch.device(device)
    built = zoo_models.build(name, "train", dev, torch.float32,
                             dropout=False, small=small)
    built.device_type, built.device = dev.type, dev
    model = built.model.train()

    def grads(fn, m):
        m.zero_grad(set_to_none=True)
        loss = zoo_models.loss(name, fn, built)
        loss.backward()
        return float(loss.detach()), torch.cat(
            [p.grad.flatten() for p in m.parameters() if p.grad is not None])

    ref_loss, ref = grads(model, model)
    twin = copy.deepcopy(model)
    tc.reset_counters()
    loss, got = grads(torch.compile(twin, backend="tc"), twin)
    row = {"model": name,
           "loss_error": abs(loss - ref_loss) / max(abs(ref_loss), 1e-30),
           "grad_error": ((got - ref).norm() / ref.norm().clamp_min(1e-30)
                          ).item() if got.numel() == ref.numel()
           else float("inf"),
           "counters": {k: v for k, v in tc.counters.items() if v}}
    # The fused attention left to eager between segments is expected.
    if float64:
        row["float64_errors"] = _float64_errors(name, built, model, ref, got)
    row["fallbacks"] = sorted({
        line[:240] for line in stream.getvalue().splitlines()
        if line.startswith(("eager:", "tc:", "subgraph", "internal"))
        and "scaled_dot_product" not in line
        and "view op feeding only eager code" not in line})
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="hf", choices=("timm", "hf", "all"))
    parser.add_argument("--models", default="")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--float64", action="store_true")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    sys.path.insert(0, str(HERE))
    if opts.child:
        print(json.dumps(child(opts.child, opts.device, opts.small,
                               opts.float64)))
        return 0
    import torch

    import bench_zoo
    import zoo_models
    meta = {"device": opts.device, "torch": torch.__version__,
            "build": bench_zoo.git_build(), "small": opts.small,
            "float64": opts.float64}
    for package in ("transformers", "timm"):
        try:
            meta[package] = __import__(package).__version__
        except ImportError:
            pass
    names = (opts.models.split(",") if opts.models
             else [n for n in zoo_models.names(opts.suite) if "/" not in n])
    rows = []
    for name in names:
        cmd = [sys.executable, __file__, "--child", name, "--device",
               opts.device] + (["--small"] if opts.small else []) + (
                   ["--float64"] if opts.float64 else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=opts.timeout)
            lines = proc.stdout.strip().splitlines()
            row = (json.loads(lines[-1]) if proc.returncode == 0 and lines
                   else {"model": name, "exit_status": proc.returncode,
                         "error": proc.stderr[-1500:]})
        except subprocess.TimeoutExpired:
            row = {"model": name, "exit_status": "timeout"}
        rows.append(row)
        counters = row.get("counters", {})
        print(f"{name}: loss {row.get('loss_error', '-')}, grads "
              f"{row.get('grad_error', '-')}, eager ops "
              f"{counters.get('ops_eager', 0)}, compile failures "
              f"{counters.get('compile_failures', 0)}, exit "
              f"{row.get('exit_status', 0)}"
              + (f", against float64 {row['float64_errors']}"
                 if "float64_errors" in row else ""), flush=True)
        if opts.out:
            opts.out.write_text(json.dumps({"meta": meta, "rows": rows},
                                           indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
