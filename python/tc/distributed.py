"""tc under torch.distributed (DDP, FSDP2, functional collectives).

The communication engine stays PyTorch's: tc never compiles a collective.
Collectives in a graph (`torch.ops._c10d_functional.*`, which Dynamo traces
from `torch.distributed._functional_collectives` and FSDP2's traceable
path) are ops tc leaves to eager, so its partitioner compiles what runs
between them. Two things follow from running on several ranks:

* **Same decisions on every rank.** A graph one rank cannot compile (an
  error in tc, a full disk) must not run in tc's code on the others: the
  ranks would compute with different kernels, and a graph that decided
  differently around its collectives could pair them wrongly. `agree` makes
  each compile decision a collective one: the graph is compiled only if it
  compiled on every rank, otherwise every rank runs it in eager (and the
  log says so).
* **No collective twice.** A compiled piece that fails at run time reruns
  in eager, which must not issue its collectives again: collectives stay
  outside the pieces tc compiles, and `has_collectives` keeps graphs with
  collectives from paths that rerun a whole graph.

`schedule_collectives` orders a graph for overlap: each collective is
issued as soon as its input exists and waited for just before its result
is first read, so the compute between (compiled by tc) runs while the
collective is in flight on its communication stream.

Agreement uses a gloo group of its own (created on the first compile, when
every rank compiles the same graph), never the model's process group, with
a timeout ($TC_DISTRIBUTED_TIMEOUT_S, default 300 s): should ranks compile
different graphs (different shapes per rank, which Dynamo compiles per
rank), the mismatch is detected by a fingerprint of the graph, logged, and
each rank decides alone from then on. `TC_DISTRIBUTED_AGREE=0` turns the
votes off (jobs whose ranks compile different graphs by design, such as
pipeline stages).
"""

from __future__ import annotations

import datetime
import logging
import os
import zlib
from typing import Any

import torch
import torch.fx

logger = logging.getLogger("tc")
_fallbacks = logging.getLogger("tc.fallbacks")

#: Namespaces of PyTorch's collective ops (functional and in-place).
COLLECTIVE_NAMESPACES = ("_c10d_functional", "c10d_functional", "c10d",
                         "_c10d_functional_autograd")
#: The op that waits for a functional collective's result.
_WAITS = ("wait_tensor",)

_group: Any = None
_alone = False  # agreement failed once: each rank decides alone


def is_collective(node: torch.fx.Node) -> bool:
    """Whether `node` calls a collective (or waits for one)."""
    target = node.target
    if node.op != "call_function" or not isinstance(
            target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return False
    return target.namespace in COLLECTIVE_NAMESPACES


def _is_wait(node: torch.fx.Node) -> bool:
    return is_collective(node) and node.target.__name__.split(".")[0] in _WAITS


def has_collectives(graph: torch.fx.Graph) -> bool:
    return any(is_collective(n) for n in graph.nodes)


def schedule_collectives(graph: torch.fx.Graph) -> int:
    """Issues each collective right after its last input and waits for it
    right before its first reader; returns how many nodes moved."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    moved = 0
    for node in list(graph.nodes):
        # Only functional collectives move: an in-place one (c10d's) is
        # ordered by the mutations around it.
        if (not is_collective(node) or _is_wait(node)
                or node.target.namespace != "_c10d_functional"):
            continue
        inputs = [a for a in node.all_input_nodes]
        anchor = max(inputs, key=lambda n: order[n]) if inputs else None
        if anchor is None or anchor.next is node:
            continue
        while anchor.next.op == "placeholder":
            anchor = anchor.next
        anchor.append(node)
        moved += 1
    # Moving waits keeps the order of everything else: one numbering.
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in reversed(list(graph.nodes)):
        if (not _is_wait(node) or not node.users
                or node.target.namespace != "_c10d_functional"):
            continue
        first = min(node.users, key=lambda n: order[n])
        if first.prev is not node:
            first.prepend(node)
            moved += 1
    graph.lint()
    return moved


def world() -> int:
    """Processes in torch.distributed's default group (1 without one)."""
    dist = torch.distributed
    if not dist.is_available() or not dist.is_initialized():
        return 1
    return dist.get_world_size()


def fingerprint(gm: torch.fx.GraphModule, inputs: Any = ()) -> int:
    """A number equal on ranks that compile the same graph for the same
    input shapes (not Python's `hash`, which differs between processes)."""
    ops = [n.target if isinstance(n.target, str) else
           f"{getattr(n.target, '__module__', '')}."
           f"{getattr(n.target, '__qualname__', type(n.target).__name__)}"
           if not isinstance(n.target, torch._ops.OpOverload)
           else str(n.target) for n in gm.graph.nodes
           if n.op in ("call_function", "call_method")]
    shapes = [tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]
    return zlib.crc32(repr((ops, shapes)).encode()) & 0x3FFFFFFF


def agree(ok: bool, what: str, key: int = 0) -> bool:
    """True when every rank's `ok` is: a compile decision the ranks make
    together. One process (or no process group): `ok`. `key` is the
    graph's `fingerprint`; ranks that disagree on it compiled different
    graphs, and then each decides alone from then on."""
    global _group, _alone
    if _alone or world() == 1 or os.environ.get(
            "TC_DISTRIBUTED_AGREE", "1") == "0":
        return ok
    dist = torch.distributed
    try:
        if _group is None:
            seconds = float(os.environ.get("TC_DISTRIBUTED_TIMEOUT_S", 300))
            _group = dist.new_group(
                backend="gloo", timeout=datetime.timedelta(seconds=seconds))
        # Compiles run under Dynamo's fake mode: the vote is a real tensor.
        from torch.utils._python_dispatch import _disable_current_modes
        with _disable_current_modes():
            votes = torch.tensor([int(ok), key, -key], dtype=torch.int64)
            dist.all_reduce(votes, op=dist.ReduceOp.MIN, group=_group)
            votes = votes.tolist()
    except Exception as error:  # a rank never came: never hang the user
        _alone = True
        logger.warning("tc: ranks could not agree on compiling %s (%s: %s); "
                       "each rank decides alone from now on", what,
                       type(error).__name__, str(error).splitlines()[0])
        return ok
    if votes[1] != -votes[2]:
        _alone = True
        logger.warning("tc: ranks compiled different graphs (%s); each rank "
                       "decides alone from now on", what)
        return ok
    agreed = bool(votes[0])
    if ok and not agreed:
        torch_rank = dist.get_rank()
        _fallbacks.info("%s runs in eager on every rank: another rank could "
                        "not compile it (rank %d could)", what, torch_rank)
    return agreed


def reset() -> None:
    """Forgets the agreement group (after `destroy_process_group`)."""
    global _group, _alone
    _group, _alone = None, False
