"""torch.export programs compiled by tc."""

import pytest
import torch

import tc

pytestmark = pytest.mark.requires_native


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.register_buffer("scale", torch.full((32,), 0.5))

    def forward(self, x, r):
        return self.norm(torch.relu(self.lin(x)) + r) * self.scale


def test_exported_program_matches_eager(fresh_tc):
    model = Block().eval()
    x, r = torch.randn(8, 16), torch.randn(8, 32)
    ep = torch.export.export(model, (x, r))
    run = tc.compile_exported(ep)
    with torch.no_grad():
        torch.testing.assert_close(run(x, r), model(x, r), rtol=1e-5,
                                   atol=1e-5)
        x2, r2 = torch.randn(8, 16), torch.randn(8, 32)
        torch.testing.assert_close(run(x2, r2), model(x2, r2), rtol=1e-5,
                                   atol=1e-5)
    assert tc.counters["subgraphs_compiled"] >= 1
    assert tc.counters["ops_compiled"] >= 5


def test_parameters_are_not_copied(fresh_tc):
    model = Block().eval()
    x, r = torch.randn(8, 16), torch.randn(8, 32)
    run = tc.compile_exported(torch.export.export(model, (x, r)))
    with torch.no_grad():
        model.lin.bias.add_(1.0)  # seen by the compiled program: no copy
        torch.testing.assert_close(run(x, r), model(x, r), rtol=1e-5,
                                   atol=1e-5)


def test_buffer_mutation_runs_eager_with_a_warning(fresh_tc, tc_logs):
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x):
            self.calls.add_(1)
            return torch.sin(x) + self.calls

    model = Counter()
    x = torch.randn(4)
    ep = torch.export.export(Counter(), (x,))
    run = tc.compile_exported(ep)
    torch.testing.assert_close(run(x), model(x))
    assert "mutate buffers" in tc_logs.text
