"""A model tc compiles once for every batch size (docs/DynamicShapes.md):
linear layers (GEMMs with a bias), GeLU, layer norm, softmax and
elementwise math; and the same on [batch, tokens, features] inputs. The
dynamic-shape tests of the CPU and CUDA backends share them."""

import torch

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


class AttentionBlock(torch.nn.Module):
    """A pre-norm transformer block on [batch, sequence, features]: its
    attention (causal, scaled dot products over the sequence) is not
    row-wise, the rest is; with the batch and the length varying, tc
    compiles the rest once on rows and runs the attention in eager
    between (docs/DynamicShapes.md)."""

    def __init__(self, width: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2)
                   for t in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(torch.nn.functional.gelu(
            self.up(self.norm2(x))))


class TokenEncoder(torch.nn.Module):
    """An encoder's front as language models have it: token ids `[B, S]`
    looked up in a table, positions from a buffer's slice (`[:, :S]`) and
    from an input `[S]` (a prompt's positions), a layer norm, then
    AttentionBlock. The ids are rows (every element one); the positions
    are sizes of the rows but not rows: their lookups run in eager between
    the parts tc compiles once (docs/DynamicShapes.md)."""

    def __init__(self, vocab: int = 50, width: int = 32, table: int = 64):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.places = torch.nn.Embedding(table, width)
        self.turns = torch.nn.Embedding(table, width)
        self.register_buffer("position_ids",
                             torch.arange(table).expand(1, -1))
        self.norm = torch.nn.LayerNorm(width)
        self.block = AttentionBlock(width)

    def forward(self, ids, positions):
        length = ids.shape[1]
        h = self.tokens(ids) + self.places(self.position_ids[:, :length])
        h = self.norm(h + self.turns(positions))
        return self.block(h)


def assert_compiled_once_symbolic(counters) -> None:
    """tc's counters after a dynamic-shape test: one compile, with the
    symbolic size, none per shape, nothing left to eager."""
    assert counters["symbolic_graphs"] == 1
    assert counters["graphs_compiled"] == 1
    assert counters["shape_specializations"] == 0
    assert counters["ops_eager"] == 0
    assert counters["fallback_graphs"] == 0


#: (batch, sequence length) pairs the sequence tests run: equal sizes
#: too, which a trace must not take for one symbol.
SEQUENCES = ((3, 5), (3, 7), (4, 4), (2, 9), (5, 3), (3, 17), (6, 33))


def masked_tokens_inputs(batch: int, length: int, device: str = "cpu"):
    x = torch.randn(batch, length, 8, device=device)
    mask = (torch.rand(batch, length, device=device) > 0.3).float()
    return x, mask
