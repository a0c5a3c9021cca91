"""A compiled graph's inputs: a tensor the last call checked, passed again
at the same address (a parameter), is taken without its checks; anything
else is checked (shape, dtype, device) as on the first call."""

import pytest
import torch

import tc

pytestmark = pytest.mark.requires_native


def test_known_inputs_read_their_current_values(fresh_tc):
    """Parameters updated in place, replaced by new tensors, and inputs
    at new addresses: every call computes eager's result."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 4)).eval()
    compiled = torch.compile(model, backend="tc")
    x = torch.randn(8, 16)
    with torch.no_grad():
        for step in range(6):
            if step == 1:
                model[0].weight.mul_(-0.5)  # same tensor, same address
            if step == 2:
                model[2].weight = torch.nn.Parameter(torch.randn(4, 16))
            if step == 3:
                x = torch.randn(8, 16)
            if step == 4:
                # Same tensor, another address (its storage replaced).
                model[0].bias.data = torch.randn(16)
            if step == 5:
                x = torch.randn(16, 8).t()  # not contiguous
            torch.testing.assert_close(compiled(x), model(x))
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0


def test_other_tensors_are_checked(fresh_tc, compiled_functions):
    """A tensor of another shape or dtype in a slot a known tensor held is
    refused, as on the first call."""
    weight = torch.randn(4, 4)

    def f(x, w):
        return torch.sin(x @ w) + 1

    x = torch.randn(3, 4)
    torch.compile(f, backend="tc")(x, weight)
    functions = [fn for fn in compiled_functions()
                 if fn._num_placeholders == 2]
    assert functions, "no compiled function found"
    compiled = functions[-1]

    def fn(*args):
        out = compiled(*args)
        return out[0] if isinstance(out, (tuple, list)) else out

    torch.testing.assert_close(fn(x, weight), f(x, weight))
    torch.testing.assert_close(fn(x, weight), f(x, weight))  # known now
    with pytest.raises(TypeError, match="expects a cpu tensor of shape"):
        fn(x, torch.randn(4, 5))
    with pytest.raises(TypeError, match="dtype torch.float32"):
        fn(x, weight.double())
    other = weight.clone()
    torch.testing.assert_close(fn(x, other), f(x, other))
