#!/usr/bin/env python3
"""BERT-base's first call through tc on the CPU, and tc backend's part of it.

BERT-base (12 layers, 768 wide, random weights) in inference on 8 x 128
tokens, fp32, compiled with backend="tc" in this process (a fresh
TC_CACHE_DIR is the caller's): prints one JSON line with the first call's
seconds and those spent in tc's backend (`tc.backend.pipeline.to_aten`:
the ATen trace, the rewrites, the native compile). Needs transformers.

    TC_CACHE_DIR=$(mktemp -d) python3 benchmarks/first_call_bert_cpu.py LABEL
"""
import sys, time, torch, transformers, json
cfg = transformers.BertConfig()
model = transformers.BertModel(cfg).eval()
x = torch.randint(0, 30000, (8, 128))
import tc.backend.pipeline as p
orig = p.to_aten
spent = []
def wrapped(*a, **k):
    t = time.perf_counter()
    try: return orig(*a, **k)
    finally: spent.append(time.perf_counter() - t)
p.to_aten = wrapped
with torch.no_grad():
    model(x)
    t = time.perf_counter()
    torch.compile(model, backend="tc")(x)
    first = time.perf_counter() - t
print(json.dumps({"tree": sys.argv[1] if len(sys.argv) > 1 else "", "first_call_s": round(first, 3), "backend_s": round(sum(spent), 3)}))
