"""Compiling a graph's parts at once.

A graph tc compiles in parts (the subgraphs between eager ops, a training
graph's segments between attentions) has a few distinct parts and many
repeats: a transformer's layers. The native compiler releases the GIL, so
the distinct parts compile in worker threads together; the repeats then
come from the structural cache (runtime::structuralText), one after the
other. Parts are grouped by a signature of their FX graphs (ops, argument
structure, shapes, dtypes and strides), which only orders the work: the
cache decides what is compiled.

Only for GPU graphs on a host with cores to spare: the CPU machine's
compiles already use its cores (LLVM per kernel), and a 2-core CI machine
gains nothing.
"""

from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Callable, Sequence

import torch
import torch.fx

#: At most this many parts compile at once.
MAX_WORKERS = 8


def _describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), str(value.dtype), tuple(value.stride()))
    if isinstance(value, (tuple, list)):
        return tuple(_describe(v) for v in value)
    return None


def signature(gm: torch.fx.GraphModule) -> tuple:
    """What two parts that compile alike share: each node's op, target,
    arguments (other nodes by position) and value's shape, dtype and
    strides."""
    position: dict[torch.fx.Node, int] = {}
    items = []
    for i, node in enumerate(gm.graph.nodes):
        position[node] = i
        args = torch.fx.node.map_arg(
            (node.args, node.kwargs), lambda n: ("%", position[n]))
        items.append((node.op, str(node.target) if node.op != "placeholder"
                      else "", repr(args) if node.op != "placeholder" else "",
                      _describe(node.meta.get("val"))))
    return tuple(items)


def device_of(gm: torch.fx.GraphModule) -> torch.device:
    """The graph's device; the CPU (one part at a time) for a graph that
    mixes devices."""
    from tc import compiler
    try:
        return compiler.graph_device(gm)
    except Exception:  # Unsupported: each part says so when compiled
        return torch.device("cpu")


def workers(device: torch.device, parts: int) -> int:
    """How many parts compile at once on `device` (1: one after the
    other)."""
    if device.type != "cuda" or parts < 2:
        return 1
    return max(1, min(MAX_WORKERS, (os.cpu_count() or 1) // 2, parts))


def compile_all(parts: Sequence[torch.fx.GraphModule],
                compile_one: Callable[[int], Any],
                device: torch.device) -> list[Any]:
    """`compile_one(i)` for each part, in order of results: the first part
    of each signature in worker threads, the others after them (from the
    cache). An exception in `compile_one` propagates as it would serially
    (callers catch their own)."""
    count = workers(device, len(parts))
    if count == 1:
        return [compile_one(i) for i in range(len(parts))]
    from tc import compiler
    compiler._load_native()  # once, before the threads
    seen: set[tuple] = set()
    first, repeats = [], []
    for i, part in enumerate(parts):
        key = signature(part)
        (repeats if key in seen else first).append(i)
        seen.add(key)
    index = (device.index if device.index is not None
             else torch.cuda.current_device())

    def run(i: int) -> Any:
        torch.cuda.set_device(index)  # the kernels load into its context
        return compile_one(i)

    results: list[Any] = [None] * len(parts)
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        for i, result in zip(first, pool.map(run, first)):
            results[i] = result
    for i in repeats:
        results[i] = compile_one(i)
    return results
