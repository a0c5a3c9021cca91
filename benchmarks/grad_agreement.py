#!/usr/bin/env python3
"""How far each backend's gradients of one training step are from an fp32
reference, per parameter (bench_models' training rows).

A training row's last loss after dozens of AdamW steps compounds every
rounding difference; this checks the gradients of the first step instead.
For each backend (eager and the compilers under `torch.autocast(bf16)`, as
in bench_models), on the same weights and batch: the relative L2 error of
every parameter's gradient against eager without autocast (fp32), and the
median and largest over parameters. A compiler whose gradients are as
close to fp32 as eager's bf16 ones rounds differently; one much farther is
wrong somewhere (the worst parameters are listed).

    python3 benchmarks/grad_agreement.py --models resnet50-train
"""

from __future__ import annotations

import argparse
import copy
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_models  # noqa: E402


def gradients(name, model, fn, inputs, autocast: bool):
    import torch
    import torch.nn.functional as F
    model.zero_grad(set_to_none=True)
    if autocast:
        loss = bench_models.loss_of(name, fn, inputs)
    elif name.startswith("resnet"):
        x, y = inputs
        loss = F.cross_entropy(fn(x), y)
    else:
        (ids,) = inputs
        loss = fn(input_ids=ids, labels=ids).loss
    loss.backward()
    return loss.item(), {n: p.grad.detach().float().clone()
                         for n, p in model.named_parameters()
                         if p.grad is not None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50-train")
    parser.add_argument("--backends", default="eager,inductor,tc")
    opts = parser.parse_args()
    import torch
    import tc
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    for name in opts.models.split(","):
        base, inputs, training = bench_models.build(name, False, device)
        assert training, f"{name} is not a training row"
        ref_loss, reference = gradients(name, base, base, inputs, False)
        print(f"== {name}: fp32 loss {ref_loss:.5f}, "
              f"{len(reference)} parameters")
        for backend in opts.backends.split(","):
            torch._dynamo.reset()
            tc.reset_counters()
            model = copy.deepcopy(base)
            fn = model if backend == "eager" else torch.compile(
                model, backend=backend)
            loss, grads = gradients(name, model, fn, inputs, True)
            errors = {}
            for key, ref in reference.items():
                got = grads.get(key)
                errors[key] = (float("inf") if got is None else float(
                    (got - ref).norm() / ref.norm().clamp_min(1e-30)))
            worst = sorted(errors.items(), key=lambda kv: -kv[1])[:4]
            print(f"{backend:9s} loss {loss:.5f}  gradient error vs fp32: "
                  f"median {statistics.median(errors.values()):.2e}, "
                  f"max {max(errors.values()):.2e}; worst: " + ", ".join(
                      f"{k} {v:.2e}" for k, v in worst), flush=True)
            if backend == "tc":
                # What ran in eager instead (attention calls are PyTorch's
                # by design); a run-time fallback would make this eager's.
                print(f"tc: {tc.counters['ops_eager']} ATen ops in eager, "
                      f"{tc.counters['runtime_fallbacks']} run-time "
                      "fallbacks", flush=True)
            del fn, model
    return 0


if __name__ == "__main__":
    sys.exit(main())
