"""A model tc compiles once for every batch size (docs/DynamicShapes.md):
linear layers (GEMMs with a bias), GeLU, layer norm, softmax and
elementwise math; and the same on [batch, tokens, features] inputs. The
dynamic-shape tests of the CPU and CUDA backends share them."""

import torch

#: Whether PyTorch's trace keeps the batch of a Linear on a 3-d input
#: symbolic: torch 2.11's specializes it (tc then compiles per shape).
SYMBOLIC_3D_LINEAR = tuple(
    int(part) for part in torch.__version__.split("+")[0].split(".")[:2]
) >= (2, 13)


class BatchModel(torch.nn.Module):
    def __init__(self, width: int = 8, hidden: int = 32):
        super().__init__()
        self.up = torch.nn.Linear(width, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.down = torch.nn.Linear(hidden, width)

    def forward(self, x):
        h = self.norm(torch.nn.functional.gelu(self.up(x)))
        h = torch.softmax(self.down(h) * 2, dim=-1)
        return h * torch.sigmoid(x) + x.sum(-1, keepdim=True)


class TokenMLP(torch.nn.Module):
    """Linear layers on a [batch, tokens, features] input (PyTorch
    decomposes each into a view merging batch and tokens, a 2-d GEMM and a
    view back), layer norm, GeLU, softmax."""

    def __init__(self, width: int = 16, hidden: int = 32):
        super().__init__()
        self.up = torch.nn.Linear(width, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.down = torch.nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.norm(self.up(x)))
        return torch.softmax(self.down(h), dim=-1) + x


class MaskedTokens(torch.nn.Module):
    """Token-wise layers on [batch, sequence, features] with a [batch,
    sequence] mask: a batch and a sequence length that both vary compile
    once, as rows (docs/DynamicShapes.md). Outputs keep the sequence, merge
    it with the batch (`view(-1, hidden)`), and slice the features."""

    def __init__(self, width: int = 8, hidden: int = 16):
        super().__init__()
        self.up = torch.nn.Linear(width, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.hidden = hidden

    def forward(self, x, mask):
        h = self.norm(torch.nn.functional.gelu(self.up(x)))
        h = h * mask[..., None] + torch.sigmoid(x).sum(-1, keepdim=True)
        return (torch.softmax(h, -1), h.view(-1, self.hidden).amax(-1),
                h[:, :, :4] * 2)


#: (batch, sequence length) pairs the sequence tests run: equal sizes
#: too, which a trace must not take for one symbol.
SEQUENCES = ((3, 5), (3, 7), (4, 4), (2, 9), (5, 3), (3, 17), (6, 33))


def masked_tokens_inputs(batch: int, length: int, device: str = "cpu"):
    x = torch.randn(batch, length, 8, device=device)
    mask = (torch.rand(batch, length, device=device) > 0.3).float()
    return x, mask
