"""What a training graph's forward saves for its backward (tc-partition,
compile_training): values kept by reference where the forward returns
them anyway."""

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from tc.compiler import training
from tc.decompositions import forward_decompositions

pytestmark = pytest.mark.requires_native


def _lm_head(h, w, labels):
    """A language model's head under bf16 autocast: the bf16 logits
    [B, S, V] (the product's [B * S, V] rows, reshaped) are returned, and
    the float32 loss reads them (the backward's cheapest cut: the bf16
    product)."""
    logits = F.linear(h, w)
    loss = F.cross_entropy(logits.float().view(-1, w.shape[0]),
                           labels.view(-1))
    return loss, logits


def test_returned_logits_are_saved_by_reference():
    """The backward reads the product the logits reshape: it is given the
    returned logits, not a second copy the forward writes; the gradients
    are eager's."""
    torch.manual_seed(0)
    h = torch.randn(2, 8, 16, dtype=torch.bfloat16)
    w = (torch.randn(40, 16) * 0.1).to(torch.bfloat16)
    labels = torch.randint(0, 40, (2, 8))
    gm = make_fx(_lm_head, decomposition_table=forward_decompositions())(
        h, w, labels)
    functions = training.compile_training(gm, [True, True, False])
    assert ("output", 1) in functions.saved, functions.saved
    assert functions.saved_bytes["extra"] < 2 * 8 * 40 * 2, (
        functions.saved_bytes)

    results = functions.forward(h, w, labels)
    loss, logits = results[:functions.num_outputs]
    extras = results[functions.num_outputs:]
    sources = {"input": [h, w, labels], "output": [loss, logits],
               "extra": extras}
    saved = [sources[kind][n] for kind, n in functions.saved]
    grad_loss = torch.tensor(1.0)
    grad_logits = torch.randn(2, 8, 40, dtype=torch.bfloat16)
    grads = functions.backward(*saved, grad_loss, grad_logits)

    hh, ww = h.clone().requires_grad_(), w.clone().requires_grad_()
    want_loss, want_logits = _lm_head(hh, ww, labels)
    want = torch.autograd.grad((want_loss, want_logits), (hh, ww),
                               (grad_loss, grad_logits))
    torch.testing.assert_close(loss, want_loss, rtol=1.6e-2, atol=1e-3)
    torch.testing.assert_close(logits, want_logits)
    for got, exp in zip(grads, want):
        torch.testing.assert_close(got, exp)
