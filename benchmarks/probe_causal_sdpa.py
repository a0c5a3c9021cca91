#!/usr/bin/env python3
"""Does cuDNN's first causal attention cost GPT-2's first tc step?

bench_models runs eager's GPT-2 step (bf16, 16 x 256 tokens) first in the
process, with the attention mask transformers builds; tc hands PyTorch's
fused attention `is_causal=True` instead (tc.attention). This times, after
such an eager step, the first and second calls of the masked attention
and of the causal one at GPT-2's shapes ([16, 12, 256, 64], bf16): a first
causal call far slower than its second is a cuDNN graph built for it.

    python3 benchmarks/probe_causal_sdpa.py
"""
import time

import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    torch.manual_seed(0)
    cfg = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(cfg).cuda().to(torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (16, 256), device="cuda")
    with torch.no_grad():
        print(f"eager step (first): {timed(lambda: model(ids)):.3f} s")
        print(f"eager step (second): {timed(lambda: model(ids)):.3f} s")
        q, k, v = (torch.randn(16, 12, 256, 64, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        mask = torch.ones(256, 256, device="cuda", dtype=torch.bool).tril()
        for name, call in (
                ("masked", lambda: F.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask)),
                ("causal", lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True))):
            first, second = timed(call), timed(call)
            print(f"{name} attention: first call {first:.3f} s, "
                  f"second {second * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
