"""tc.compiler.pools: where tc's CUDA graphs allocate. The pool itself is
tested on the GPU (test_cuda.py: test_graph_outputs_come_from_tcs_pool and
the tests after it); here, what happens where a torch's allocator refuses
a pool, which must leave tc on PyTorch's shared cache with a log line, not
fail the graph's calls."""

import logging

import pytest
import torch

from tc import compat
from tc.compiler import pools


@pytest.fixture
def no_pools(monkeypatch):
    monkeypatch.setattr(pools, "_pools", {})


def _refuse(*args, **kwargs):
    raise RuntimeError("expandable_segments refuses pools here")


class _Pool:
    id = (0, 1)


@pytest.mark.parametrize("where", ["making", "allocating"])
def test_a_refused_pool_leaves_the_shared_cache_and_says_so(
        no_pools, monkeypatch, caplog, where):
    if where == "making":
        monkeypatch.setattr(compat, "get", lambda name: _refuse)
    else:
        monkeypatch.setattr(compat, "get", lambda name: _Pool)
        monkeypatch.setattr(torch.cuda, "use_mem_pool", _refuse)
    with caplog.at_level(logging.INFO, logger="tc.fallbacks"):
        assert pools._pool(3) is None
        assert pools._pool(3) is None  # asked once, remembered
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines
    assert "cuda:3: tc's graphs allocate from PyTorch's shared cache" \
        in lines[0] and "refuses pools here" in lines[0]
