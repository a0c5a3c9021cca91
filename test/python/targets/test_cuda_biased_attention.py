"""A training graph whose attention carries a learned bias of one image
(BEiT's relative positions) and keys of an odd count: PyTorch's
memory-efficient attention runs in eager between tc's segments, the bias
reaches it padded once (not once per image) and aligned, the query, key
and value reach it as parts of tc's one tensor, and the loss and every
gradient are eager's. Skipped without a CUDA device."""

import copy

import pytest
import torch
import torch.nn.functional as F

import tc

has_cuda = torch.cuda.is_available()
pytestmark = [pytest.mark.requires_native,
              pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]

WIDTH, HEADS, LENGTH, BATCH = 256, 4, 37, 16


class Biased(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.ModuleDict(dict(
                norm=torch.nn.LayerNorm(WIDTH),
                qkv=torch.nn.Linear(WIDTH, 3 * WIDTH),
                proj=torch.nn.Linear(WIDTH, WIDTH)))
            for _ in range(2))
        self.bias = torch.nn.ParameterList(
            torch.nn.Parameter(torch.randn(HEADS, LENGTH, LENGTH) / 4)
            for _ in range(2))
        self.head = torch.nn.Linear(WIDTH, 8)

    def forward(self, x):
        for layer, bias in zip(self.layers, self.bias):
            q, k, v = layer.qkv(layer.norm(x)).view(
                BATCH, LENGTH, 3, HEADS, -1).permute(2, 0, 3, 1, 4).unbind(0)
            a = F.scaled_dot_product_attention(q, k, v,
                                               attn_mask=bias.unsqueeze(0))
            x = x + layer.proj(a.transpose(1, 2).reshape(x.shape))
        return self.head(x).float().square().mean()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_biased_attention_trains_like_eager(fresh_tc, tc_logs, dtype):
    torch.manual_seed(0)
    model = Biased().cuda()
    reference = copy.deepcopy(model)
    x = torch.randn(BATCH, LENGTH, WIDTH, device="cuda")
    compiled = torch.compile(model, backend="tc")
    with torch.autocast("cuda", dtype=dtype):
        loss = compiled(x)
        expected = reference(x)
    loss.backward()
    expected.backward()
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    assert tc.counters["training_graphs"] == 1
    torch.testing.assert_close(loss, expected, rtol=2e-2, atol=1e-3)
    # Against float32's gradients: tc's no farther than twice eager's.
    exact = copy.deepcopy(reference).double()
    exact.zero_grad()
    exact(x.double()).backward()
    for (name, p), q, r in zip(model.named_parameters(),
                               reference.parameters(), exact.parameters()):
        ours = (p.grad.double() - r.grad).norm()
        theirs = (q.grad.double() - r.grad).norm()
        assert ours <= 2 * theirs + 1e-6 * r.grad.norm(), name
    eager = [r.getMessage() for r in tc_logs.records
             if r.getMessage().startswith("eager: ")]
    assert any("efficient_attention" in line for line in eager), eager
    assert sum("split in eager" in line for line in eager) == 2, eager
    # The bias's padding is tc's (only its views run in eager).
    assert not any("constant_pad_nd" in line for line in eager), eager
