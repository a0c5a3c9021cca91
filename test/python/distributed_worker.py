"""What test_distributed.py runs in each rank's process (spawned, gloo on
the CPU or NCCL on GPUs): a small transformer trained under DDP or FSDP2,
in eager and with backend="tc", from the same weights on the same batches.

Each scenario returns, on every rank, a dict the test compares: losses,
final weights, tc's counters and what the scenario recorded.
"""

from __future__ import annotations

import io
import os
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

VOCAB, WIDTH, LAYERS, HEADS = 96, 128, 4, 4
BATCH, LENGTH = 4, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.up, self.down = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(
            4 * WIDTH, WIDTH)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, HEADS, -1).permute(
            2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, WIDTH))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def _batches(rank: int, steps: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(100 + rank)
    return [torch.randint(0, VOCAB, (BATCH, LENGTH), generator=generator)
            for _ in range(steps)]


def _loss(logits, ids):
    return F.cross_entropy(logits.flatten(0, 1)[:-1].float(),
                           ids.flatten()[1:])


def _full(param) -> torch.Tensor:
    """A parameter's whole value (FSDP2's are sharded DTensors)."""
    full = getattr(param, "full_tensor", None)
    return (full() if full is not None else param).detach().cpu().clone()


def _train(strategy: str, backend: str, steps: int, rank: int,
           device: torch.device, record: dict) -> dict:
    import tc
    torch.manual_seed(0)
    module = TinyLM().to(device)
    if strategy.startswith("ddp"):
        from torch.nn.parallel import DistributedDataParallel as DDP
        # Buckets of about a layer (DDP's first bucket holds 1 MiB):
        # DDPOptimizer splits the graph into pieces.
        kwargs = {"bucket_cap_mb": 1, "device_ids": (
            [device.index] if device.type == "cuda" else None)}
        if backend == "eager":
            model = DDP(module, **kwargs)
        elif strategy == "ddp-inner":  # DDP around the compiled module
            model = DDP(torch.compile(module, backend=backend), **kwargs)
        else:
            model = torch.compile(DDP(module, **kwargs), backend=backend)
        _record_hooks(model if backend == "eager" or strategy == "ddp-inner"
                      else model._orig_mod, module, record)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        # The mesh names the device: by default FSDP2 takes the GPU when
        # there is one, even for a CPU model.
        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        for layer in module.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(module, mesh=mesh)
        if backend != "eager":
            for layer in module.layers:
                layer.compile(backend=backend)
        model = module
    # SGD with momentum: weights follow the gradients linearly (Adam's
    # update divides by them: a gradient near 0 flips an update at fp32's
    # rounding), so eager's weights are tc's at fp32 tolerance.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                                foreach=True)
    tc.reset_counters()
    losses, strides = [], None
    for ids in _batches(rank, steps):
        ids = ids.to(device)
        logits = model(ids)
        strides = logits.stride()
        loss = _loss(logits, ids)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return {"losses": losses, "strides": strides,
            "weights": {n: _full(p) for n, p in module.named_parameters()},
            "counters": dict(tc.counters)}


def _record_hooks(ddp, module, record: dict) -> None:
    """Records, in order, each DDP bucket's all-reduce and the moment the
    embedding's gradient (the last one backward makes) is ready: buckets
    reduced before it overlap the rest of the backward."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import (
        allreduce_hook)
    events = record.setdefault("events", [])

    def hook(state, bucket):
        events.append("bucket")
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(dist.group.WORLD, hook)
    module.embed.weight.register_hook(
        lambda grad: events.append("embedding") or grad)


def _plant_compile_failure(rank: int) -> None:
    """Rank 1's tc fails to compile its training graphs (a planted
    difference: what a full disk or a bug on one host would do)."""
    if rank != 1:
        return
    from tc import compiler
    from tc.compiler import CompileError

    def fail(*args, **kwargs):
        raise CompileError("planted failure on rank 1")

    compiler.compile_training = fail
    compiler.compile_graph = fail
    compiler.start_training = fail
    compiler.start_graph = fail


def scenario(name: str, rank: int, world: int, device: str) -> dict:
    device = torch.device(device, rank if device == "cuda" else None) \
        if device == "cuda" else torch.device("cpu")
    steps = int(os.environ.get("TC_TEST_STEPS", "10"))
    if name == "planted":
        _plant_compile_failure(rank)
        strategy = "ddp"
    else:
        strategy = name
    eager_record: dict = {}
    eager = _train(strategy, "eager", steps, rank, device, eager_record)
    torch._dynamo.reset()
    record: dict = {}
    compiled = _train(strategy, "tc", steps, rank, device, record)
    return {"eager": eager, "tc": compiled, "events": record.get("events"),
            "eager_events": eager_record.get("events")}


def functional_collectives(rank: int, world: int, device: str) -> dict:
    """A row-parallel layer (a matrix product per rank, summed by
    `all_reduce`) inside the compiled graph, trained: the collective stays
    PyTorch's, tc compiles the rest. Rank 1's compiled pieces fail at run
    time on the first call (planted): they rerun in eager, the collective
    does not."""
    import torch.distributed._functional_collectives as funcol

    import tc
    torch.manual_seed(rank)
    place = torch.device("cuda", rank) if device == "cuda" else None
    w = torch.randn(32, 16).to(place).requires_grad_()
    x = torch.randn(8, 32).to(place)

    def f(x, w):
        h = torch.tanh(x @ w)
        total = funcol.all_reduce(h, "sum", dist.group.WORLD)
        scale = torch.sigmoid(x).sum(1, keepdim=True)
        return (total * scale).relu().sum()

    if rank == 1:
        from tc import backend
        original = backend.partition.Guarded.__call__

        def fail_once(self, *args):
            if not getattr(self, "planted", False):
                self.planted = True
                self.compiled = _raise
            return original(self, *args)

        backend.partition.Guarded.__call__ = fail_once
    # The code of each graph partitioned around its collectives.
    from tc import backend
    codes = []
    partition = backend.partition.partition_and_compile

    def recording(gm, settings):
        compiled = partition(gm, settings)
        codes.append(getattr(compiled, "code", ""))
        return compiled

    backend.partition.partition_and_compile = recording
    tc.reset_counters()
    results = []
    for _ in range(3):
        loss = torch.compile(f, backend="tc")(x, w)
        (grad,) = torch.autograd.grad(loss, w)
        expected_loss = f(x, w)
        (expected,) = torch.autograd.grad(expected_loss, w)
        results.append((loss.item(), expected_loss.item(), grad.cpu(),
                        expected.cpu()))
    return {"results": results, "counters": dict(tc.counters),
            "codes": codes}


def _raise(*args):
    raise RuntimeError("planted run-time failure")


def main(rank: int, world: int, port: int, device: str, what: str,
         queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    try:
        if device == "cuda":
            torch.cuda.set_device(rank)
        dist.init_process_group("nccl" if device == "cuda" else "gloo",
                                rank=rank, world_size=world)
        if what == "funcol":
            result = functional_collectives(rank, world, device)
        else:
            result = scenario(what, rank, world, device)
        # As bytes: a tensor put on the queue is shared through the
        # process, which exits before the test reads it.
        buffer = io.BytesIO()
        torch.save(result, buffer)
        queue.put((rank, buffer.getvalue()))
        dist.destroy_process_group()
    except BaseException:
        queue.put((rank, {"error": traceback.format_exc()}))
