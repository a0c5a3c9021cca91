"""PyTorch's fused CUDA attentions alone, in eager: their gradients
against float32 attention written out, at a BERT-base layer's size.

Query, key and value come from separate projections (each a `[B, S, H,
D]` buffer viewed `[B, H, S, D]`) or one packed projection; the fused
attention is called with a causal bias, with `is_causal`, or (cuDNN)
with `is_causal` and its output gradient laid out as its output. Prints
the output's and the three projection weights' gradients' relative
errors; bf16's rounding gives 0.005-0.007. (`cudnn-none` has no mask
against a causal reference: its 0.8-0.9 is the mask's absence.) Run on
a GPU machine:

    python3 benchmarks/check_attention_gradients.py
"""

from __future__ import annotations

import torch

aten = torch.ops.aten
B, S, H, D = 32, 512, 12, 64
E = H * D


class _LikeOutput(torch.autograd.Function):
    """Identity whose backward lays the gradient out as the output."""

    @staticmethod
    def forward(ctx, x):
        ctx.strides = x.stride()
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return torch.empty_strided(grad.shape, ctx.strides, dtype=grad.dtype,
                                   device=grad.device).copy_(grad)


def attention(how: str, q, k, v, mask, scale: float):
    bias = mask.to(q.dtype)[None, None].expand(B, H, S, S)
    if how == "reference":
        return torch.softmax(q @ k.transpose(-1, -2) * scale + mask, -1) @ v
    if how == "efficient-bias":
        return aten._scaled_dot_product_efficient_attention(
            q, k, v, bias, True, 0.0, False, scale=scale)[0]
    if how == "efficient-causal":
        return aten._scaled_dot_product_efficient_attention(
            q, k, v, None, True, 0.0, True, scale=scale)[0]
    if how == "cudnn-bias":
        return aten._scaled_dot_product_cudnn_attention(
            q, k, v, bias, True, 0.0, False, False, scale=scale)[0]
    if how == "cudnn-none":
        return aten._scaled_dot_product_cudnn_attention(
            q, k, v, None, True, 0.0, False, False, scale=scale)[0]
    if how == "cudnn-causal":
        return aten._scaled_dot_product_cudnn_attention(
            q, k, v, None, True, 0.0, True, False, scale=scale)[0]
    if how == "cudnn-causal-like-output":
        return _LikeOutput.apply(aten._scaled_dot_product_cudnn_attention(
            q, k, v, None, True, 0.0, True, False, scale=scale)[0])
    if how == "flash-causal":
        return aten._scaled_dot_product_flash_attention(
            q, k, v, 0.0, True, False, scale=scale)[0]
    raise ValueError(how)


def run(layout: str, how: str, dtype, x0, weights, grad, mask):
    ws = [w.detach().to(dtype).clone().requires_grad_() for w in weights]
    x = x0.to(dtype)
    if layout == "separate":
        q, k, v = [(x @ w.t()).view(B, S, H, D).transpose(1, 2) for w in ws]
    else:
        qkv = (x @ torch.cat(ws).t()).view(B, S, 3, H, D).permute(
            2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
    out = attention(how, q, k, v, mask, D ** -0.5)
    out = out.transpose(1, 2).reshape(B, S, E)
    (out.float() * grad).sum().backward()
    return out.float().detach(), [w.grad.float() for w in ws]


def main() -> None:
    torch.manual_seed(0)
    x0 = torch.randn(B, S, E, device="cuda")
    weights = [torch.randn(E, E, device="cuda") * E ** -0.5
               for _ in range(3)]
    grad = torch.randn(B, S, E, device="cuda")
    mask = torch.zeros(S, S, device="cuda").masked_fill(
        torch.ones(S, S, device="cuda", dtype=torch.bool).triu(1),
        float("-inf"))
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}"
          f", {torch.cuda.get_device_name()}")
    for layout in ("separate", "packed"):
        want, want_grads = run(layout, "reference", torch.float32, x0,
                               weights, grad, mask)
        for how in ("efficient-bias", "efficient-causal", "cudnn-bias",
                    "cudnn-none", "cudnn-causal", "cudnn-causal-like-output",
                    "flash-causal"):
            got, got_grads = run(layout, how, torch.bfloat16, x0, weights,
                                 grad, mask)
            errors = " ".join(
                f"{float((a - b).norm() / b.norm()):.3g}"
                for a, b in zip(got_grads, want_grads))
            print(f"{layout:8s} {how:25s} output "
                  f"{float((got - want).norm() / want.norm()):.3g}"
                  f"  dWq dWk dWv {errors}", flush=True)


if __name__ == "__main__":
    main()
