"""The CPU rows of benchmarks/bench_models.py (`--device cpu`).

Sized for a 2-core machine (issue 32), in float32 (CPU users' dtype:
eager's bf16 kernels need AMX or AVX512-BF16 to pay off) but for one bf16
row, random weights, seeded:

    resnet18     ResNet-18 inference, batch 8, 224 x 224
    resnet50     ResNet-50 inference, batch 4, 224 x 224
    resnet50-bf16  ResNet-50 inference in bf16, batch 16, 224 x 224
                 (for CPUs with bf16 instructions; compared at bf16's
                 tolerance)
    bert         BERT-base width (768), 4 layers, inference, 4 x 128 tokens
    gpt2         GPT-2 small (124M) inference, 2 x 128 tokens
    gpt2-train   a small GPT-2 (4 layers, 256 wide, vocab 8000) training
                 step, 8 x 128 tokens, SGD
    mlp-train    MLP 512-1024-512-10 with GELU and LayerNorm, training
                 step, batch 256, SGD
"""

from __future__ import annotations

MODELS = ("resnet18", "resnet50", "resnet50-bf16", "bert", "gpt2",
          "gpt2-train", "mlp-train")

#: The rows in bf16 (compared at bf16's tolerance, not float32's).
BF16 = ("resnet50-bf16",)


class MLP:
    """512-1024-512-10 with GELU and LayerNorm (built lazily: torch is
    imported in the child)."""

    @staticmethod
    def make():
        import torch.nn as nn
        return nn.Sequential(
            nn.Linear(512, 1024), nn.GELU(), nn.LayerNorm(1024),
            nn.Linear(1024, 512), nn.GELU(), nn.LayerNorm(512),
            nn.Linear(512, 10))


def build(name: str, small: bool, device):
    """(model, inputs, training) for CPU model `name`, seeded."""
    import torch
    torch.manual_seed(0)
    if name in ("resnet18", "resnet50"):
        import torchvision.models as tv
        model = getattr(tv, name)().eval().to(device)
        b = 2 if small else (8 if name == "resnet18" else 4)
        return model, (torch.randn(b, 3, 224, 224, device=device),), False
    if name == "resnet50-bf16":
        import torchvision.models as tv
        model = tv.resnet50().eval().to(device, torch.bfloat16)
        b = 2 if small else 16
        return model, (torch.randn(b, 3, 224, 224, device=device,
                                   dtype=torch.bfloat16),), False
    if name == "bert":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(num_hidden_layers=2 if small else 4)
        model = BertModel(cfg).eval().to(device)
        b, s = (2, 32) if small else (4, 128)
        ids = torch.randint(0, cfg.vocab_size, (b, s), device=device)
        return model, (ids,), False
    if name in ("gpt2", "gpt2-train"):
        from transformers import GPT2Config, GPT2LMHeadModel
        train = name.endswith("train")
        if train:
            cfg = GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=8000,
                             resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
            b, s = (2, 32) if small else (8, 128)
        else:
            cfg = GPT2Config(n_layer=2 if small else 12, resid_pdrop=0.0,
                             embd_pdrop=0.0, attn_pdrop=0.0)
            b, s = (1, 32) if small else (2, 128)
        model = GPT2LMHeadModel(cfg).to(device)
        if not train:
            model = model.eval()
        ids = torch.randint(0, cfg.vocab_size, (b, s), device=device)
        return model, (ids,), train
    if name == "mlp-train":
        model = MLP.make().to(device)
        x = torch.randn(256, 512, device=device)
        y = torch.randint(0, 10, (256,), device=device)
        return model, (x, y), True
    raise SystemExit(f"unknown CPU model {name!r}; one of {', '.join(MODELS)}")


def loss_of(name: str, model, inputs):
    """The training loss of CPU model `name` (float32, no autocast)."""
    import torch.nn.functional as F
    if name == "mlp-train":
        x, y = inputs
        return F.cross_entropy(model(x), y)
    (ids,) = inputs
    return model(input_ids=ids, labels=ids).loss


def optimizer(model):
    """The CPU rows' optimizer: plain SGD (issue 32's steps)."""
    import torch
    return torch.optim.SGD(model.parameters(), lr=1e-3)


def warm_inference_pair(name: str):
    """CPU model `name` (seed 0, eval mode), its inputs, and Inductor's and
    tc's compiled copies, each called 3 times; call under no_grad."""
    import torch
    torch.manual_seed(0)
    model, inputs, _ = build(name, False, torch.device("cpu"))
    model.eval()
    compiled = {"inductor": torch.compile(model),
                "tc": torch.compile(model, backend="tc")}
    for fn in compiled.values():
        for _ in range(3):
            fn(*inputs)
    return model, inputs, compiled
