"""Which parameters' gradients a training step through tc gets wrong.

One dashboard model (`zoo_models`), dropout 0: the loss and gradients of
eager and of tc under bf16 autocast against float32 eager without
autocast, the whole gradient's relative error and the parameters with the
largest absolute errors (a share of the whole gradient's norm; a
parameter whose true gradient is near zero, such as an attention key's
bias, has a large relative error in every backend). A parameter with a
gradient in one run and None in the other is listed as such. Where
`bench_zoo.py`'s training agreement fails, this names the layers.

    python benchmarks/zoo_grad_errors.py RobertaForCausalLM --layers 2
    python benchmarks/zoo_grad_errors.py LayoutLMForMaskedLM --small

`--causal-masks` keeps a training graph's constant causal masks instead
of giving them to its attentions as `is_causal` (the rewrite that exposed
the attention-gradient layout in `tc.backend.segments._call_attention`).
"""

from __future__ import annotations

import argparse
import copy
import gc
import math
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import zoo_models  # noqa: E402


def gradients(name: str, fn, model, built, amp: bool) -> tuple[float, dict]:
    import torch
    model.zero_grad(set_to_none=True)
    torch.compiler.cudagraph_mark_step_begin()
    with torch.autocast(built.device.type, dtype=torch.bfloat16,
                        enabled=amp):
        loss = zoo_models.loss(name, fn, built)
    loss.backward()
    return float(loss.detach()), {n: None if p.grad is None else p.grad.float().clone()
                         for n, p in model.named_parameters()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--layers", type=int, default=0,
                        help="this many layers (default: the model's)")
    parser.add_argument("--small", action="store_true",
                        help="bench_zoo's --small: 2 layers, a small batch")
    parser.add_argument("--causal-masks", action="store_true")
    parser.add_argument("--top", type=int, default=6)
    opts = parser.parse_args()
    import torch
    import torch._dynamo
    import tc
    if opts.layers:
        fit = zoo_models._fit

        def fewer_layers(cls, cfg, limit, notes):
            zoo_models._set_layers(cfg, zoo_models._layer_key(cfg)
                                   or "num_hidden_layers", opts.layers)
            return fit(cls, cfg, limit, notes)
        zoo_models._fit = fewer_layers
    if opts.causal_masks:
        from tc import attention
        attention.causal_masks_as_flags = lambda gm: 0
    device = torch.device(opts.device)
    built = zoo_models.build(opts.model, "train", device, torch.float32,
                             dropout=False, small=opts.small)
    built.device_type, built.device = device.type, device
    ref_loss, ref = gradients(opts.model, built.model, built.model, built,
                              False)
    norm = math.sqrt(sum(float(g.norm()) ** 2 for g in ref.values()
                         if g is not None))
    print(f"{opts.model}: {built.notes}, float32 loss {ref_loss:.6f}")
    for backend in ("eager", "tc"):
        torch._dynamo.reset()
        model = copy.deepcopy(built.model)
        fn = model if backend == "eager" else torch.compile(model,
                                                            backend="tc")
        loss, got = gradients(opts.model, fn, model, built, True)
        rows, total = [], 0.0
        for name, want in ref.items():
            have = got[name]
            if (have is None) != (want is None):
                rows.append((math.inf, math.inf, name,
                             "None in " + (backend if have is None
                                           else "float32 eager")))
                continue
            if have is None:
                continue
            error = float((have - want).norm())
            total += error * error
            rows.append((error / norm, error / max(float(want.norm()), 1e-30),
                         name, ""))
        rows.sort(reverse=True)
        print(f"{backend}: loss {loss:.6f}, gradient error "
              f"{math.sqrt(total) / norm:.4g}")
        for share, relative, name, note in rows[:opts.top]:
            print(f"  {share:.4g} of the norm ({relative:.4g} of its own) "
                  f"{name} {note}")
        if backend == "tc":
            print("  counters", {k: v for k, v in tc.counters.items() if v})
        del model, fn
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
