"""A decode step on the GPU (benchmarks/bench_decode.py's decoder, two
small layers, bf16 and fp16): the KV caches updated in place by tc's
kernels, the whole step one graph of tc's (nothing in eager), the caches
and logits eager's, steps replayed from a CUDA graph. Skipped without a
CUDA device."""

import pathlib
import sys

import pytest
import torch

import tc

has_cuda = torch.cuda.is_available()
pytestmark = [pytest.mark.requires_native,
              pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]

sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "benchmarks"))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("batch", [1, 3])
def test_decode_steps_match_eager(dtype, batch):
    import bench_decode as bd
    config = bd.Config(dim=512, layers=2, heads=8, kv_heads=2, hidden=1376,
                       vocab=1000)
    torch.manual_seed(0)
    ref = bd.Decoder(config, batch, 96, dtype).cuda().to(dtype).eval()
    mine = bd.Decoder(config, batch, 96, dtype).cuda().to(dtype).eval()
    mine.load_state_dict(ref.state_dict())
    compiled = torch.compile(mine, backend="tc", fullgraph=True)
    tokens = torch.randint(0, config.vocab, (batch, 1), device="cuda")
    tc.reset_counters()
    with torch.no_grad():
        for step in range(6):
            pos = torch.tensor([7 + step], device="cuda")
            want = ref(tokens, pos)
            got = compiled(tokens, pos)
            torch.testing.assert_close(got.float(), want.float(),
                                       atol=5e-2, rtol=5e-2)
            for a, b in zip(mine.buffers(), ref.buffers()):
                torch.testing.assert_close(a, b, atol=1e-2, rtol=1e-2)
            tokens = want[:, -1:].argmax(-1)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["subgraphs_compiled"] == 1
    assert tc.counters["runtime_fallbacks"] == 0
