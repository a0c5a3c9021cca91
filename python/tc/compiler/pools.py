"""tc's own CUDA memory pool: where a compiled graph's CUDA allocations go.

The CUDA runtime replays a graph's launch sequence as a CUDA graph once a
call passes the buffers of an earlier call (function.py's "Stable
buffers"). By default those buffers (outputs, arenas, and in a graph run
in segments the eager ops' results between them) come from PyTorch's
caching allocator, which serves the same addresses again only while
nothing else in the process allocates in between the same way. Anything
else that does (an optimizer, a data loader's copies, another model, an
evaluation step) moves them, and every call after such a move runs its
launches one by one until the graph is captured again: a training step of
GPT-2 (sequence classification, bf16 autocast, AdamW, an H200) beside
eager and Inductor in one process took 28.7 ms with 9.5 replays a step,
18.8 ms with 25.7 when tc's allocations came from a pool of their own.

So while a CUDA graph of tc runs, its thread allocates from a
`torch.cuda.MemPool` of tc's own per device (Inductor's CUDA graph trees
keep a private pool for the same reason), where only tc's graphs allocate
and free and the addresses follow their own steady pattern. A block freed
there is kept for tc's next allocation; PyTorch's allocations outside use
it only when they would otherwise run out of memory (`use_on_oom`), and
the pool's allocations free the rest of the cache first, as any
allocation does. The tensors are ordinary PyTorch tensors: the caller
frees them as any other.

No pool inside the caller's own capture (torch.cuda.graph: its pool
serves), without CUDA graphs (TC_CUDA_GRAPHS=0: nothing to keep stable),
on a torch without `torch.cuda.MemPool` (compat's "cuda_mem_pool"), or
where the allocator refuses one (some releases refuse an allocation in a
pool under `expandable_segments`: a first allocation is tried when the
pool is made); tc then says so on the `fallbacks` channel and allocates
from the shared cache as before.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import torch

from tc import compat, logs

#: Per device index: tc's pool, or None where making one failed.
_pools: dict[int, Any] = {}
_lock = threading.Lock()


class _Thread(threading.local):
    #: The device whose pool this thread allocates from (-1: none).
    inside = -1


_thread = _Thread()


def _pool(index: int) -> Any:
    pool = _pools.get(index, False)
    if pool is not False:
        return pool
    with _lock:
        if index not in _pools:
            make = compat.get("cuda_mem_pool")
            try:
                pool = make()
                # An allocation in it (some releases refuse pools under
                # expandable_segments at the first allocation).
                with torch.cuda.use_mem_pool(pool, device=index):
                    torch.empty(1, device=torch.device("cuda", index))
                _pools[index] = pool
            except Exception as error:  # the allocator refuses pools
                _pools[index] = None
                logs.channel_logger("fallbacks").info(
                    "cuda:%d: tc's graphs allocate from PyTorch's shared "
                    "cache (no pool of their own: %s)", index, error)
        return _pools[index]


class allocating_in_pool:
    """`with allocating_in_pool(index):` routes this thread's CUDA
    allocations on device `index` to tc's pool (see the module's
    docstring); nested uses, uses inside a capture and uses where tc
    keeps no pool do nothing."""

    __slots__ = ("index", "context")

    def __init__(self, index: int):
        self.index = index
        self.context = None

    def __enter__(self) -> None:
        if _thread.inside >= 0 or not _enabled():
            return
        if torch.cuda.is_current_stream_capturing():
            return
        pool = _pool(self.index)
        if pool is None:
            return
        context = torch.cuda.use_mem_pool(pool, device=self.index)
        try:
            context.__enter__()
        except Exception as error:  # an allocator setting refuses pools
            _pools[self.index] = None
            logs.channel_logger("fallbacks").info(
                "cuda:%d: tc's graphs allocate from PyTorch's shared cache "
                "(its pool refused: %s)", self.index, error)
            return
        self.context = context
        _thread.inside = self.index

    def __exit__(self, *exc: Any) -> None:
        context = self.context
        if context is None:
            return
        self.context = None
        _thread.inside = -1
        context.__exit__(None, None, None)


def cuda_graphs_enabled() -> bool:
    """Whether CUDA graphs replay launch sequences (TC_CUDA_GRAPHS != 0;
    the runtime reads the same variable)."""
    return os.environ.get("TC_CUDA_GRAPHS", "1") != "0"


def _enabled() -> bool:
    return (cuda_graphs_enabled()
            and compat.get("cuda_mem_pool") is not None)
