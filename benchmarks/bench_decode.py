"""Token-by-token LLM decode: eager, Inductor and tc in one process.

A gpt-fast-style decoder of the project's own (random weights, bf16): a
static KV cache updated in place (`k_cache[:, :, pos] = k`), rotary
embeddings, grouped-query attention through `scaled_dot_product_attention`
with a boolean mask row, RMSNorm, a SiLU-gated MLP. One decode step (a token
per sequence at position `pos`, a device tensor) is compiled per backend with
`fullgraph=True`: eager, Inductor's `reduce-overhead` mode (the gpt-fast
recipe), tc (CUDA graphs by default) and tc's `reduce-overhead` mode.

Per model, batch and cache length, in one process (each backend its own
copy of the weights and caches, fed the same tokens):

- decode tokens/s (batch / the median step time over `--steps` steps at
  advancing positions, CUDA graphs replayed, no host sync between steps);
- the fraction of the HBM limit: the bytes a step must read (weights, and
  the cache up to the positions decoded) over the device's measured copy
  bandwidth (a large device-to-device copy, read + write bytes);
- first step (compile included), peak memory;
- agreement: the first step's logits against eager's at bf16 tolerance,
  and greedy decoding from the same prompt for `--steps` tokens: how many
  tokens match eager's before the first difference, and whether eager's
  top two logits there lie within bf16 rounding of each other (a tie);
- prefill: the prompt's forward (one compile per prompt length) in ms;
- tc's counters: graphs compiled, ops left to eager.

With `--quant int8`, the decoders' linear layers are weight-only int8
(gpt-fast's and torchao's idiom: int8 weights and a scale per output
channel, `linear(x, w.to(x.dtype)) * scales`); rows are named
`1b-int8`, and the HBM limit counts the int8 bytes.

With `--hf llama,qwen2`, Hugging Face's `LlamaForCausalLM` and
`Qwen2ForCausalLM` (the 1B shapes, random weights) generate greedily with
`cache_implementation="static"`, the forward compiled by generate's own
`compile_config` per backend (its default mode, reduce-overhead, for
Inductor and tc alike): tokens/s in bf16 (two lengths differenced:
the decode steps alone) and the greedy tokens against eager's in float32.

    python benchmarks/bench_decode.py --sizes 1b --batches 1 --caches 1024
    (or utils/gpu/run.sh decode, with $TC_DECODE_ARGS)

Results: `decode-cuda.json` in --out (rows of `model`, `batch`, `cache`,
`eager_tok_s`, `inductor_tok_s` (Inductor's best mode measured, named in
`inductor_mode`), `tc_tok_s`, `tc_vs_inductor`, `tc_frac_of_limit`,
`tc_ok`, per-backend first step, peak memory and prefill figures).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class Config:
    dim: int
    layers: int
    heads: int
    kv_heads: int
    hidden: int
    vocab: int
    rope_base: float = 10000.0
    eps: float = 1e-5


#: Llama-3.2-1B-like and Llama-3-8B-like shapes (the issue's 1B: hidden
#: 2048, 16 layers, 32 heads, 8 KV heads, MLP 5632, vocab 32000).
SIZES = {
    "1b": Config(2048, 16, 32, 8, 5632, 32000),
    "8b": Config(4096, 32, 32, 8, 14336, 128256, rope_base=500000.0),
    "tiny": Config(256, 2, 8, 2, 512, 1000),
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rotate(x, freqs):
    # x: [B, T, H, D]; freqs: [T, D / 2, 2] (cos, sin).
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    f = freqs.view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack([xs[..., 0] * f[..., 0] - xs[..., 1] * f[..., 1],
                       xs[..., 1] * f[..., 0] + xs[..., 0] * f[..., 1]], -1)
    return out.flatten(3).type_as(x)


class Attention(nn.Module):
    def __init__(self, c: Config, batch: int, cache: int, dtype):
        super().__init__()
        self.c = c
        self.head_dim = c.dim // c.heads
        total = (c.heads + 2 * c.kv_heads) * self.head_dim
        self.wqkv = nn.Linear(c.dim, total, bias=False)
        self.wo = nn.Linear(c.dim, c.dim, bias=False)
        shape = (batch, c.kv_heads, cache, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype))

    def forward(self, x, freqs, mask, pos):
        b, t, _ = x.shape
        c, d = self.c, self.head_dim
        q, k, v = self.wqkv(x).split(
            [c.heads * d, c.kv_heads * d, c.kv_heads * d], dim=-1)
        q = rotate(q.view(b, t, c.heads, d), freqs).transpose(1, 2)
        k = rotate(k.view(b, t, c.kv_heads, d), freqs).transpose(1, 2)
        v = v.view(b, t, c.kv_heads, d).transpose(1, 2)
        self.k_cache[:, :, pos] = k
        self.v_cache[:, :, pos] = v
        rep = c.heads // c.kv_heads
        keys = self.k_cache.repeat_interleave(rep, dim=1)
        values = self.v_cache.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, c.dim))


class Block(nn.Module):
    def __init__(self, c: Config, batch: int, cache: int, dtype):
        super().__init__()
        self.attn = Attention(c, batch, cache, dtype)
        self.w1 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w3 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w2 = nn.Linear(c.hidden, c.dim, bias=False)
        self.norm1 = RMSNorm(c.dim, c.eps)
        self.norm2 = RMSNorm(c.dim, c.eps)

    def forward(self, x, freqs, mask, pos):
        h = x + self.attn(self.norm1(x), freqs, mask, pos)
        n = self.norm2(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


class Decoder(nn.Module):
    def __init__(self, c: Config, batch: int, cache: int, dtype):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.dim)
        self.blocks = nn.ModuleList(Block(c, batch, cache, dtype)
                                    for _ in range(c.layers))
        self.norm = RMSNorm(c.dim, c.eps)
        self.out = nn.Linear(c.dim, c.vocab, bias=False)
        d = c.dim // c.heads
        inv = 1.0 / c.rope_base ** (torch.arange(0, d, 2).float() / d)
        angles = torch.outer(torch.arange(cache).float(), inv)
        self.register_buffer("freqs", torch.stack(
            [angles.cos(), angles.sin()], -1), persistent=False)
        self.register_buffer("causal", torch.ones(
            cache, cache, dtype=torch.bool).tril(), persistent=False)

    def forward(self, tokens, pos):
        # tokens: [B, T]; pos: [T] positions (a device tensor).
        mask = self.causal[None, None, pos]
        freqs = self.freqs[pos]
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, freqs, mask, pos)
        return self.out(self.norm(x))


class Int8Linear(nn.Module):
    """A linear layer's weight-only int8 form (gpt-fast's and torchao's
    idiom): int8 weights with one scale per output channel, dequantized in
    the forward (`linear(x, w.to(x.dtype)) * scales`)."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach().float()
        scales = w.abs().amax(dim=1).clamp(min=1e-8) / 127
        self.register_buffer("weight", torch.round(w / scales[:, None]).clamp(
            -128, 127).to(torch.int8))
        self.register_buffer("scales", scales.to(linear.weight.dtype))

    def forward(self, x):
        return F.linear(x, self.weight.to(x.dtype)) * self.scales


def quantize_int8(model: nn.Module) -> nn.Module:
    """Every linear layer of `model` (the output projection too) as
    Int8Linear, in place."""
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, Int8Linear(child))
        else:
            quantize_int8(child)
    return model


def weight_bytes(model: nn.Module) -> int:
    """The bytes of the weights a step reads: parameters, and int8
    weights and their scales."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    for name, b in model.named_buffers():
        if name.endswith((".weight", ".scales")):
            total += b.numel() * b.element_size()
    return total


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device, fn, repeat: int) -> float:
    """Milliseconds per call of `fn` over `repeat` calls (no sync between
    calls)."""
    sync(device)
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync(device)
    return (time.perf_counter() - t0) * 1e3 / repeat


def copy_bandwidth(device) -> float:
    """Bytes per second of a device-to-device copy of 1 GiB (64 MiB on the
    CPU), read and written."""
    n = (1 << 29) if device.type == "cuda" else (1 << 25)
    src = torch.empty(n, dtype=torch.float16, device=device)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    ms = timed(device, lambda: dst.copy_(src), 20)
    del src, dst
    return 2 * n * 2 / (ms / 1e3)


def compile_backend(backend: str, model):
    if backend == "eager":
        return model
    if backend == "inductor-ro":
        return torch.compile(model, mode="reduce-overhead", fullgraph=True)
    if backend == "tc-ro":
        return torch.compile(model, backend="tc", mode="reduce-overhead",
                             fullgraph=True)
    return torch.compile(model, backend=backend, fullgraph=True)


def tc_counters() -> dict:
    try:
        import tc
    except ImportError:
        return {}
    return dict(tc.counters)


def run_one(c: Config, name: str, batch: int, cache: int, backends, steps: int,
            prompts, bandwidth: float, device, quant: str = "") -> dict:
    dtype = torch.bfloat16
    torch.manual_seed(0)

    def build() -> nn.Module:
        model = Decoder(c, batch, cache, dtype).to(device=device, dtype=dtype)
        return quantize_int8(model) if quant == "int8" else model

    base = build()
    base.eval()
    params = sum(p.numel() for p in base.parameters()) + sum(
        b.numel() for n, b in base.named_buffers() if n.endswith(".weight"))
    row: dict = {"model": f"{name}-{quant}" if quant else name,
                 "batch": batch, "cache": cache, "params": params}
    weights = weight_bytes(base)
    prompt_len = 16
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, c.vocab, (batch, prompt_len),
                           generator=gen).to(device)
    head = c.dim // c.heads
    kv_bytes_per_pos = 2 * c.layers * batch * c.kv_heads * head * 2
    decoded: dict[str, list[list[int]]] = {}
    first_logits: dict[str, torch.Tensor] = {}
    top2: list[torch.Tensor] = []
    for backend in backends:
        torch._dynamo.reset()
        model = build()
        model.load_state_dict(base.state_dict(), strict=False)
        model.eval()
        before = tc_counters()
        fn = compile_backend(backend, model)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        with torch.no_grad():
            # The prompt through the eager model (the caches then hold it),
            # then the compiled decode step from the last prompt token.
            model(prompt[:, :-1], torch.arange(prompt_len - 1, device=device))
            tok = prompt[:, -1:].contiguous()
            pos = torch.tensor([prompt_len - 1], device=device)
            sync(device)
            t0 = time.perf_counter()
            torch.compiler.cudagraph_mark_step_begin()
            logits = fn(tok, pos)
            sync(device)
            first = time.perf_counter() - t0
            first_logits[backend] = logits[:, -1].float().clone()
            seqs = []
            for step in range(steps):
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                if backend == "eager":
                    top2.append(logits[:, -1].float().topk(2, -1).values)
                seqs.append(nxt)
                pos = pos + 1
                torch.compiler.cudagraph_mark_step_begin()
                logits = fn(nxt, pos)
            decoded[backend] = torch.cat(seqs, 1).tolist()
            # Timing: the same number of steps again from the same
            # position (the caches are overwritten as decoding would).
            p = torch.tensor([prompt_len - 1], device=device)

            def step():
                torch.compiler.cudagraph_mark_step_begin()
                fn(tok, p)
                p.add_(1)

            times = []
            for _ in range(3):
                p.fill_(prompt_len - 1)
                times.append(timed(device, step, steps))
        step_ms = sorted(times)[1]
        after = tc_counters()
        key = backend.replace("-", "_")
        row[f"{key}_step_ms"] = step_ms
        row[f"{key}_tok_s"] = batch * 1e3 / step_ms
        row[f"{key}_first_step_s"] = first
        if device.type == "cuda":
            row[f"{key}_peak_mib"] = (torch.cuda.max_memory_allocated(device)
                                      / 2**20)
        if backend.startswith("tc"):
            row[f"{key}_counters"] = {
                k: after.get(k, 0) - before.get(k, 0) for k in after
                if after.get(k, 0) != before.get(k, 0)}
        # Prefill: one compile per prompt length.
        for length in prompts:
            if length > cache:
                continue
            torch._dynamo.reset()
            pf = compile_backend(backend, model)
            toks = torch.randint(0, c.vocab, (batch, length),
                                 generator=gen).to(device)
            at = torch.arange(length, device=device)

            def prefill():
                torch.compiler.cudagraph_mark_step_begin()
                pf(toks, at)

            with torch.no_grad():
                for _ in range(3):
                    prefill()
                row[f"{key}_prefill_{length}_ms"] = timed(device, prefill, 5)
        del fn, model
        if device.type == "cuda":
            torch.cuda.empty_cache()
        print(f"{name} b{batch} c{cache} {backend}: {step_ms:.3f} ms/step, "
              f"{row[f'{key}_tok_s']:.0f} tok/s, first {first:.1f} s",
              flush=True)
    # What a step must read: the weights and the cache up to the positions
    # decoded (on average over the timed steps).
    mid = prompt_len + steps / 2
    must = weights + kv_bytes_per_pos * mid
    limit = batch * bandwidth / must
    row["limit_tok_s"] = limit
    row["bandwidth_gb_s"] = bandwidth / 1e9
    _inductor_columns(row)
    eager = first_logits.get("eager")
    for backend in backends:
        key = backend.replace("-", "_")
        row[f"{key}_frac_of_limit"] = row[f"{key}_tok_s"] / limit
        if eager is None or backend == "eager":
            continue
        err = ((first_logits[backend] - eager).norm() /
               eager.norm().clamp_min(1e-30)).item()
        row[f"{key}_logit_error"] = err
        ok_logits = err < 2e-2
        # Greedy tokens: matched until the first difference; a difference
        # at an eager near-tie (top two within bf16 rounding) is allowed.
        matched, tie = steps, False
        for s in range(steps):
            mine = [seq[s] for seq in decoded[backend]]
            ref = [seq[s] for seq in decoded["eager"]]
            if mine != ref:
                matched = s
                gaps = (top2[s][:, 0] - top2[s][:, 1]).abs()
                scale = top2[s][:, 0].abs().clamp_min(1.0)
                tie = bool((gaps <= 2 ** -7 * scale).any())
                break
        row[f"{key}_tokens_matched"] = matched
        row[f"{key}_ok"] = bool(ok_logits and (matched == steps or tie))
    return row


def _inductor_columns(row: dict) -> None:
    """The issue's columns: `inductor_tok_s` is Inductor's best mode
    measured (reduce-overhead where it ran), named in `inductor_mode`."""
    for mode, key in (("reduce-overhead", "inductor_ro"),
                      ("default", "inductor")):
        if f"{key}_tok_s" in row:
            row["inductor_tok_s"] = row[f"{key}_tok_s"]
            row["inductor_mode"] = mode
            if "tc_tok_s" in row:
                row["tc_vs_inductor"] = row["tc_tok_s"] / row["inductor_tok_s"]
            return


#: Hugging Face families for `generate` with a static cache (the 1B
#: decoder's shapes; Qwen2 adds biases to the query, key and value).
HF_FAMILIES = ("llama", "qwen2")


def hf_model(family: str, dtype, device, small: bool = False):
    import transformers
    kw = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16,
              num_attention_heads=32, num_key_value_heads=8,
              vocab_size=32000, max_position_embeddings=4096)
    if small:
        kw.update(hidden_size=256, intermediate_size=512,
                  num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2, vocab_size=1000)
    config = (transformers.LlamaConfig(**kw) if family == "llama"
              else transformers.Qwen2Config(**kw))
    cls = (transformers.LlamaForCausalLM if family == "llama"
           else transformers.Qwen2ForCausalLM)
    torch.manual_seed(0)
    return cls(config).to(device=device, dtype=dtype).eval()


def hf_generate(model, backend: str, ids, new_tokens: int):
    """Greedy `generate` with a static cache, the forward compiled by
    `backend` (generate's own compile, as its docs recommend)."""
    from transformers.generation.configuration_utils import CompileConfig
    if backend == "eager":
        model.generation_config.disable_compile = True
    else:
        model.generation_config.disable_compile = False
        # generate's default mode, reduce-overhead, for both: its inputs
        # are new tensors each step.
        name = "inductor" if backend.startswith("inductor") else "tc"
        config = CompileConfig(backend=name, fullgraph=True)
        config._compile_all_devices = True
        model.generation_config.compile_config = config
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, do_sample=False,
                              cache_implementation="static")


def run_hf(family: str, backends, new_tokens: int, device,
           small: bool = False) -> dict:
    """tokens/s of greedy generation (bf16; the decode steps alone: two
    lengths of `generate`, differenced) and agreement of the greedy tokens
    with eager's in float32."""
    row: dict = {"model": f"hf-{family}", "batch": 1, "cache": "static"}
    gen = torch.Generator().manual_seed(2)
    vocab = 1000 if small else 32000
    ids = torch.randint(0, vocab, (1, 32), generator=gen).to(device)
    reference = None
    for backend in backends:
        key = backend.replace("-", "_")
        torch._dynamo.reset()
        # Agreement in float32 (bf16 greedy tokens part at the first tie).
        model = hf_model(family, torch.float32, device, small)
        t0 = time.perf_counter()
        tokens = hf_generate(model, backend, ids, 16)[0, 32:].tolist()
        row[f"{key}_first_generate_s"] = time.perf_counter() - t0
        if backend == "eager":
            reference = tokens
        elif reference is not None:
            row[f"{key}_tokens_matched"] = next(
                (i for i, (a, b) in enumerate(zip(tokens, reference))
                 if a != b), len(reference))
            row[f"{key}_ok"] = tokens == reference
        del model
        torch._dynamo.reset()
        before = tc_counters()  # the bf16 graphs' alone
        model = hf_model(family, torch.bfloat16, device, small)
        # A cache per length (static: sized by the length): each compiles
        # once before the timing.
        hf_generate(model, backend, ids, 8)
        hf_generate(model, backend, ids, 8 + new_tokens)
        short = timed(device, lambda: hf_generate(model, backend, ids, 8), 2)
        long = timed(device, lambda: hf_generate(
            model, backend, ids, 8 + new_tokens), 2)
        row[f"{key}_tok_s"] = new_tokens * 1e3 / max(long - short, 1e-9)
        if backend.startswith("tc"):
            after = tc_counters()
            row[f"{key}_counters"] = {
                k: after.get(k, 0) - before.get(k, 0) for k in after
                if after.get(k, 0) != before.get(k, 0)}
        print(f"hf-{family} {backend}: {row[f'{key}_tok_s']:.0f} tok/s",
              flush=True)
        del model
    _inductor_columns(row)
    return row


def write_results(folder: str, name: str, rows: list, device) -> None:
    """`rows` with the run's meta (build, torch, device, command) as
    `folder/name`."""
    build = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True).stdout.strip()
    meta = {"build": build, "torch": torch.__version__,
            "device": (torch.cuda.get_device_name(device)
                       if device.type == "cuda" else "cpu"),
            "command": " ".join(sys.argv)}
    out = pathlib.Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps({"meta": meta, "rows": rows},
                                       indent=1, default=str))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1b")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--caches", default="1024")
    ap.add_argument("--backends", default="eager,inductor-ro,tc,tc-ro")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--prompts", default="128,512,2048",
                    help="prefill lengths (empty: none)")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--tag", default="")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--hf", default="",
                    help="Hugging Face families to generate with "
                         f"({','.join(HF_FAMILIES)}; empty: none)")
    ap.add_argument("--hf-tokens", type=int, default=64)
    ap.add_argument("--quant", default="", choices=("", "int8"),
                    help="int8: the decoders' linear layers weight-only "
                         "int8 (per-channel scales)")
    ap.add_argument("--small", action="store_true",
                    help="Hugging Face models of 2 small layers (a smoke "
                         "test)")
    opts = ap.parse_args()
    device = torch.device(opts.device)
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    bandwidth = copy_bandwidth(device)
    backends = opts.backends.split(",")
    prompts = [int(p) for p in opts.prompts.split(",") if p]
    rows = []
    for size in filter(None, opts.sizes.split(",")):
        for batch in map(int, opts.batches.split(",")):
            for cache in map(int, opts.caches.split(",")):
                try:
                    rows.append(run_one(SIZES[size], size, batch, cache,
                                        backends, opts.steps, prompts,
                                        bandwidth, device, opts.quant))
                except Exception as error:  # a failure costs one row
                    rows.append({"model": size, "batch": batch,
                                 "cache": cache,
                                 "error": f"{type(error).__name__}: {error}"})
                    print(rows[-1], flush=True)
                torch._dynamo.reset()
    for family in filter(None, opts.hf.split(",")):
        try:
            rows.append(run_hf(family, backends, opts.hf_tokens, device,
                               opts.small))
        except Exception as error:
            rows.append({"model": f"hf-{family}",
                         "error": f"{type(error).__name__}: {error}"})
            print(rows[-1], flush=True)
    write_results(opts.out, f"decode-{device.type}"
                  f"{'-' + opts.tag if opts.tag else ''}.json", rows, device)
    for r in rows:
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                          for k, v in r.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
