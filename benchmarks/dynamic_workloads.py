"""Real models over changing sequence lengths with `dynamic=True`
(`bench_dynamic.py --workloads`, issue 66): compiles, first calls and
steady calls of eager, Inductor and tc in one process.

Workloads (random weights from the models' configs, seeded):

    bert        BERT-base inference, lengths 64 96 128 192 256 384 512
    gpt2        GPT-2 (124M) inference, the same lengths
    prefill     the Llama-style decoder of bench_decode.py (1B on CUDA, a
                small one on the CPU), a prompt's forward at odd lengths
                101 257 511 999 1531 2001
    gpt2-train  a GPT-2 training step (forward, backward, AdamW) at
                128 192 256 384 (dropout off: the backends' losses are
                compared)

bf16 on CUDA (autocast for training), float32 on the CPU. Each backend
compiles once with `dynamic=True` and sees the lengths in turn: `first`
is the sum of each length's first call (what a server sees when a new
length arrives); `steady` the sum over lengths of the median per-call
time of `rounds` rounds of `calls` calls. `dynamo_graphs` counts
Dynamo's compiled graphs; `tc_compiles` counts tc's (each per-shape
compile is one: `graphs_compiled`), so `tc_compiles_per_graph` is 1.0
where one compile of each graph served every length. Agreement: each
length's output (inference: the last hidden state or logits; training:
the first step's loss) within the dtype's tolerance of eager's.
"""

from __future__ import annotations

import copy
import statistics
import time
from typing import Any, Callable

import torch

LENGTHS = {"bert": (64, 96, 128, 192, 256, 384, 512),
           "gpt2": (64, 96, 128, 192, 256, 384, 512),
           "prefill": (101, 257, 511, 999, 1531, 2001),
           "gpt2-train": (128, 192, 256, 384)}
WORKLOADS = tuple(LENGTHS)


def build(name: str, device: torch.device, small: bool, batch: int):
    """(model, inputs(length, batch), training) for workload `name`."""
    torch.manual_seed(0)
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    gen = torch.Generator().manual_seed(1)
    if name in ("bert", "gpt2", "gpt2-train"):
        import transformers
        if name == "bert":
            cfg = transformers.BertConfig(num_hidden_layers=2 if small
                                          else 12)
            model = transformers.BertModel(cfg)
        else:
            cfg = transformers.GPT2Config(n_layer=2 if small else 12,
                                          resid_pdrop=0.0, embd_pdrop=0.0,
                                          attn_pdrop=0.0)
            model = transformers.GPT2LMHeadModel(cfg)
        training = name.endswith("train")
        model = model.to(device) if training else \
            model.eval().to(device, dtype)

        def inputs(length: int, batch: int):
            ids = torch.randint(0, cfg.vocab_size, (batch, length),
                                generator=gen)
            return (ids.to(device),)
        return model, inputs, training
    if name == "prefill":
        import bench_decode as bd
        c = bd.SIZES["1b"] if cuda and not small else bd.Config(
            256, 2, 8, 2, 512, 1000)
        cache = max(LENGTHS["prefill"])
        # (The cache holds the batch's rows: built for the batch run.)
        model = bd.Decoder(c, batch, cache, dtype).to(device, dtype).eval()

        def inputs(length: int, batch: int):
            toks = torch.randint(0, c.vocab, (batch, length), generator=gen)
            return toks.to(device), torch.arange(length, device=device)
        return model, inputs, False
    raise SystemExit(f"unknown workload {name!r}; one of "
                     f"{', '.join(WORKLOADS)}")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _step(fn: Callable, model, training: bool, device: torch.device
          ) -> Callable[..., Any]:
    """One call: inference under no_grad (the output), or a training step
    (its loss)."""
    if not training:
        def infer(*args):
            with torch.no_grad():
                out = fn(*args)
            for field in ("logits", "last_hidden_state"):
                out = getattr(out, field, out)
            return out
        return infer
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train(ids):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=device.type == "cuda"):
            loss = fn(ids, labels=ids).loss
        loss.backward()
        opt.step()
        return loss.detach()
    return train


def _dynamo_graphs() -> int:
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def run(name: str, backends: list[str], device: torch.device, batch: int,
        calls: int, rounds: int, small: bool,
        lengths: tuple[int, ...] | None = None) -> dict:
    """One row of the results: each backend's compiles, first and steady
    totals and agreement over the workload's lengths."""
    import tc
    base, inputs, training = build(name, device, small, batch)
    lengths = lengths or LENGTHS[name]
    args = {n: inputs(n, batch) for n in lengths}
    row: dict = {"model": name, "batch": batch, "lengths": list(lengths),
                 "dtype": "bf16" if device.type == "cuda" else "f32"}
    reference: dict[int, torch.Tensor] = {}
    for backend in backends:
        torch._dynamo.reset()
        tc.reset_counters()
        model = copy.deepcopy(base)
        fn = model if backend == "eager" else torch.compile(
            model, backend=backend.removesuffix("-static"),
            dynamic=not backend.endswith("-static"))
        step = _step(fn, model, training, device)
        graphs = _dynamo_graphs()
        first, outs = [], {}
        for n in lengths:
            _sync(device)
            start = time.perf_counter()
            outs[n] = step(*args[n])
            _sync(device)
            first.append(time.perf_counter() - start)
        steady = []
        for n in lengths:
            times = []
            for _ in range(rounds):
                _sync(device)
                start = time.perf_counter()
                for _ in range(calls):
                    step(*args[n])
                _sync(device)
                times.append((time.perf_counter() - start) / calls)
            steady.append(statistics.median(times))
        key = backend.replace("-", "_")
        row[f"{key}_first_s"] = first
        row[f"{key}_first_total_s"] = sum(first)
        row[f"{key}_steady_ms"] = [t * 1e3 for t in steady]
        row[f"{key}_steady_total_ms"] = sum(steady) * 1e3
        if backend != "eager":
            row[f"{key}_dynamo_graphs"] = _dynamo_graphs() - graphs
        if backend.startswith("tc"):
            row[f"{key}_counters"] = {k: v for k, v in tc.counters.items()
                                      if v}
            row[f"{key}_compiles"] = tc.counters["graphs_compiled"]
            row[f"{key}_compiles_per_graph"] = row[f"{key}_compiles"] / max(
                row[f"{key}_dynamo_graphs"], 1)
        if backend == "eager":
            reference = {n: o.float() for n, o in outs.items()}
        elif reference:
            errors = [((outs[n].float() - reference[n]).norm()
                       / reference[n].norm().clamp_min(1e-30)).item()
                      for n in lengths]
            row[f"{key}_errors"] = errors
            bound = 2e-2 if row["dtype"] == "bf16" else 1e-3
            row[f"{key}_ok"] = max(errors) < bound
        print(f"{name} {backend}: first {sum(first):.1f} s, steady "
              f"{sum(steady) * 1e3:.2f} ms", flush=True)
        del fn, model, step
    if "tc_steady_total_ms" in row and "inductor_steady_total_ms" in row:
        row["steady_vs_inductor"] = (row["inductor_steady_total_ms"]
                                     / row["tc_steady_total_ms"])
        row["first_total_ratio"] = (row["tc_first_total_s"]
                                    / row["inductor_first_total_s"])
    if "tc_steady_total_ms" in row and "tc_static_steady_total_ms" in row:
        row["dynamic_vs_static"] = (row["tc_static_steady_total_ms"]
                                    / row["tc_steady_total_ms"])
    return row
