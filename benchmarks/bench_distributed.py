#!/usr/bin/env python3
"""Distributed training with tc: DDP and FSDP2, 1 and 2 GPUs, eager vs
Inductor vs tc.

    ddp   GPT-2 (124M), `torch.compile(DDP(model))` (Dynamo's DDPOptimizer
          splits the graph at the gradient buckets), 8 x 512 tokens per
          GPU, autocast(bf16), AdamW (foreach)
    fsdp  the Llama-style decoder of bench_models (hidden 1024, 8 layers,
          16 heads, 4 KV heads, vocab 32000), `fully_shard` per decoder
          layer and the root, bf16 parameters and fp32 gradient reduction
          (MixedPrecisionPolicy), each layer compiled; 4 x 1024 tokens per
          GPU, AdamW

Each (strategy, GPU count) runs under `torch.distributed.run` in processes
of its own, NCCL on GPUs (gloo on the CPU); there, each backend in turn
trains its copy of the same seeded model on the same per-rank batches for
`--steps` steps: first the cold first step and the warm-up of each backend
in turn, then the timed steps in `--rounds` rounds with every backend's
share of a round in turn (so that a drift of the machine falls on all of
them alike). Per backend: tokens/s over the steps after `--warmup`
(wall clock, all ranks' tokens), the median step (CUDA events), the first
step (capture and cold compile, fresh caches), peak memory, the loss of
every step (averaged over ranks) and its largest relative difference from
eager's, and tc's counters (run-time fallbacks must be 0). With 2 GPUs, one
step per backend runs under the profiler: `overlap` is the fraction of the
NCCL kernels' time during which a compute kernel ran too, and its top
kernels go to distributed-profile-<strategy>-<GPUs>.txt in --out.

`--solo` (with 2 or more GPUs) also gives each backend a one-GPU baseline
inside the same job: every rank trains one more copy of the model wrapped
the same way but on a process group of its own rank alone (no
communication), and each round runs the backend's multi-GPU steps and
then these solo steps. The row's `scaling_interleaved` is tokens/s on all
GPUs over one GPU's solo tokens/s, both measured in the same processes,
minutes apart at most: separate one-GPU and two-GPU jobs on a host-bound
step moved by up to 20% between jobs (two runs on one 2 x H200 machine:
one-GPU tc steps of 31.8 and 38.0 ms).

    python benchmarks/bench_distributed.py                     # 2 GPUs
    python benchmarks/bench_distributed.py --strategies ddp --gpus 2
    python benchmarks/bench_distributed.py --device cpu --model tiny  # gloo

Writes distributed-<device>.json to --out and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

STRATEGIES = ("ddp", "fsdp")
#: Relative difference of a step's loss from eager's that still agrees
#: (bf16 training; see bench_models.LOSS_TOLERANCE).
LOSS_TOLERANCE = 2e-2


# ----------------------------------------------------------------------------
# Models (worker processes)
# ----------------------------------------------------------------------------

def _tiny(vocab: int = 512, width: int = 128, layers: int = 4):
    """A small pre-norm transformer for CPU runs (no `transformers`)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.up, self.down = (nn.Linear(width, 4 * width),
                                  nn.Linear(4 * width, width))

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, 4, -1).permute(
                2, 0, 3, 1, 4).unbind(0)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, width))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.layers = nn.ModuleList(Block() for _ in range(layers))
            self.head = nn.Linear(width, vocab)

        def forward(self, ids):
            x = self.embed(ids)
            for layer in self.layers:
                x = layer(x)
            return F.cross_entropy(self.head(x).flatten(0, 1)[:-1],
                                   ids.flatten()[1:])

    return TinyLM(), vocab


def build(model: str, small: bool):
    """(module, vocabulary, (batch, length), blocks(module), loss(fn, ids),
    autocast): the seeded model, on the CPU."""
    import torch
    torch.manual_seed(0)
    if model == "tiny":
        module, vocab = _tiny()
        return module, vocab, (4, 64), lambda m: m.layers, \
            lambda fn, ids: fn(ids), False
    if model == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=2 if small else 12, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0)
        return GPT2LMHeadModel(cfg), cfg.vocab_size, \
            (2, 128) if small else (8, 512), lambda m: m.transformer.h, \
            lambda fn, ids: fn(input_ids=ids, labels=ids).loss, True
    if model == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816,
                          num_hidden_layers=2 if small else 8,
                          num_attention_heads=16, num_key_value_heads=4,
                          vocab_size=32000, max_position_embeddings=2048)
        return LlamaForCausalLM(cfg), cfg.vocab_size, \
            (2, 256) if small else (4, 1024), lambda m: m.model.layers, \
            lambda fn, ids: fn(input_ids=ids, labels=ids).loss, False
    raise SystemExit(f"unknown model {model!r}")


def wrap(strategy: str, backend: str, module, blocks, device, group=None):
    """`module` under DDP or FSDP2 (on process group `group`, default the
    world), compiled with `backend` as users do: the DDP module whole,
    FSDP2's blocks one by one."""
    import torch
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp = DDP(module.to(device), process_group=group,
                  device_ids=[device.index] if device.type == "cuda" else None)
        return ddp if backend == "eager" else torch.compile(ddp,
                                                            backend=backend)
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    module.to(device)
    policy = MixedPrecisionPolicy(
        param_dtype=torch.bfloat16 if device.type == "cuda" else None,
        reduce_dtype=torch.float32)
    mesh = (DeviceMesh.from_group(group, device.type) if group is not None
            else init_device_mesh(device.type, (dist.get_world_size(),)))
    for block in blocks(module):
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(module, mesh=mesh, mp_policy=policy)
    if backend != "eager":
        for block in blocks(module):
            block.compile(backend=backend)
    return module


def _overlap(prof) -> dict:
    """How much of the NCCL kernels' time a compute kernel overlapped."""
    from torch.autograd import DeviceType
    kernels = [(e.time_range.start, e.time_range.end, e.name)
               for e in prof.events() if e.device_type == DeviceType.CUDA
               and e.time_range.end > e.time_range.start]
    comm = [(s, t) for s, t, n in kernels if "nccl" in n.lower()]
    compute = sorted((s, t) for s, t, n in kernels
                     if "nccl" not in n.lower())
    merged: list[list[float]] = []
    for s, t in compute:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], t)
        else:
            merged.append([s, t])
    total = sum(t - s for s, t in comm)
    covered = sum(max(0.0, min(t, b) - max(s, a))
                  for s, t in comm for a, b in merged)
    return {"nccl_us": total, "overlap": covered / total if total else None,
            "nccl_kernels": len(comm)}


class Trainer:
    """One backend's copy of the model, its optimizer and its record."""

    def __init__(self, opts, backend: str, rank: int, device, group=None):
        import torch
        module, vocab, (batch, length), blocks, loss_of, autocast = build(
            opts.model, opts.small)
        self.device, self.backend = device, backend
        self.tokens = batch * length
        self.model = wrap(opts.strategy, backend, module, blocks, device,
                          group)
        self.solo = group is not None
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4,
                                     foreach=True)
        self.loss_of, self.autocast = loss_of, autocast
        data = torch.Generator().manual_seed(1000 + rank)
        self.batches = [torch.randint(0, vocab, (batch, length),
                                      generator=data)
                        for _ in range(opts.steps)]
        self.losses: list = []
        self.events: list = []
        self.elapsed = 0.0
        self.row: dict = {"backend": backend}

    def step(self, timed: bool = False):
        import torch
        device = self.device
        ids = self.batches[len(self.losses)]
        if timed and device.type == "cuda":
            begin, end = (torch.cuda.Event(enable_timing=True)
                          for _ in range(2))
            begin.record()
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=self.autocast and device.type == "cuda"):
            loss = self.loss_of(self.model,
                                ids.to(device, non_blocking=True))
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.losses.append(loss.detach())
        if timed and device.type == "cuda":
            end.record()
            self.events.append((begin, end))


def _sync(device) -> None:
    import torch
    import torch.distributed as dist
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()


def start_backend(opts, backend: str, rank: int, device,
                  group=None) -> Trainer:
    """The backend's trainer after its first step (timed: capture and cold
    compile) and the warm-up steps; its peak memory is what it allocated
    beyond what was allocated before it (the other backends' models)."""
    import time
    import torch
    if device.type == "cuda":
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    trainer = Trainer(opts, backend, rank, device, group)
    _sync(device)
    start = time.perf_counter()
    trainer.step()
    _sync(device)
    trainer.row["first_step_s"] = time.perf_counter() - start
    while len(trainer.losses) < opts.warmup:
        trainer.step()
    _sync(device)
    if device.type == "cuda":
        trainer.row["peak_mib"] = (torch.cuda.max_memory_allocated()
                                   - base) / 2**20
    return trainer


def timed_rounds(opts, trainers: list[Trainer], device) -> None:
    """The timed steps in `--rounds` rounds, each backend's share of a
    round run in turn: a drift of the machine (clocks, the host's other
    work) falls on every backend alike instead of on whichever ran last."""
    import time
    rounds = max(1, min(opts.rounds, opts.steps - opts.warmup))
    for r in range(rounds):
        for trainer in trainers:
            stop = opts.warmup + (opts.steps - opts.warmup) * (r + 1) \
                // rounds
            _sync(device)
            start = time.perf_counter()
            while len(trainer.losses) < stop:
                trainer.step(timed=True)
            _sync(device)
            trainer.elapsed += time.perf_counter() - start


def finish_backend(opts, trainer: Trainer, rank: int, world: int,
                   device) -> dict:
    import torch
    import torch.distributed as dist
    import tc
    row = trainer.row
    timed = opts.steps - opts.warmup
    row["tokens_per_s"] = (1 if trainer.solo else world) * trainer.tokens \
        * timed / trainer.elapsed
    row["step_ms"] = (statistics.median(b.elapsed_time(e)
                                        for b, e in trainer.events)
                      if trainer.events else 1e3 * trainer.elapsed / timed)
    mean = torch.stack(trainer.losses).float()
    dist.all_reduce(mean)
    row["losses"] = (mean / world).tolist()
    if trainer.solo:
        return row
    if opts.profile and world > 1 and device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile
        trainer.losses.pop()  # the last batch once more
        with profile(activities=[ProfilerActivity.CPU,
                                 ProfilerActivity.CUDA]) as prof:
            trainer.step()
            torch.cuda.synchronize()
        row.update(_overlap(prof))
        if rank == 0:  # where each backend's step goes, kernel by kernel
            with open(opts.out / f"distributed-profile-{opts.strategy}-"
                      f"{world}.txt", "a") as f:
                f.write(f"== {trainer.backend}\n" + prof.key_averages().table(
                    sort_by="self_device_time_total", row_limit=30,
                    max_name_column_width=70) + "\n")
    if trainer.backend == "tc":
        for key in ("graphs_compiled", "training_graphs", "kernels",
                    "ops_compiled", "ops_eager", "fallback_graphs",
                    "runtime_fallbacks"):
            row[f"tc_{key}"] = tc.counters[key]
    return row


def worker(opts) -> None:
    cache = tempfile.mkdtemp(prefix="tc-bench-distributed-")
    for var, sub in (("TORCHINDUCTOR_CACHE_DIR", "inductor"),
                     ("TRITON_CACHE_DIR", "triton"), ("TC_CACHE_DIR", "tc"),
                     ("CUDA_CACHE_PATH", "cuda")):
        os.environ[var] = os.path.join(cache, sub)
    import torch
    import torch.distributed as dist
    import tc
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if opts.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    # Every backend's model stays alive until the end (the timed rounds
    # alternate between them): each keeps its compiled code apart.
    torch._dynamo.reset()
    torch._dynamo.config.cache_size_limit = max(
        torch._dynamo.config.cache_size_limit, 64)
    tc.reset_counters()
    report = {"strategy": opts.strategy, "model": opts.model,
              "world": world, "rows": []}
    backends = opts.backends.split(",")
    # One-GPU baselines in this job (--solo): a process group per rank.
    groups = [dist.new_group([r]) for r in range(world)] \
        if opts.solo and world > 1 else []
    trainers, solos = [], {}
    for backend in backends:
        trainers.append(start_backend(opts, backend, rank, device))
        if rank == 0:
            print(f"{opts.strategy}/{world}/{backend}: first step "
                  f"{trainers[-1].row['first_step_s']:.1f} s", flush=True)
        if groups:
            solos[backend] = start_backend(opts, backend, rank, device,
                                           groups[rank])
    timed_rounds(opts, [t for trainer in trainers for t in
                        (trainer, solos.get(trainer.backend)) if t], device)
    solo_rows = {b: finish_backend(opts, t, rank, world, device)
                 for b, t in solos.items()}
    for trainer in trainers:
        row = finish_backend(opts, trainer, rank, world, device)
        solo = solo_rows.get(trainer.backend)
        if solo and rank == 0:
            reference = solo_rows.get(backends[0], solo)["losses"]
            row["solo_tokens_per_s"] = solo["tokens_per_s"]
            row["solo_step_ms"] = solo["step_ms"]
            row["solo_loss_error"] = max(abs(a - b) / abs(b) for a, b in
                                         zip(solo["losses"], reference))
            row["scaling_interleaved"] = (row["tokens_per_s"]
                                          / solo["tokens_per_s"])
            for key in ("runtime_fallbacks", "ops_eager"):
                if f"tc_{key}" in solo:
                    row[f"solo_tc_{key}"] = solo[f"tc_{key}"]
        if rank == 0:
            reference = report["rows"][0]["losses"] if report["rows"] \
                else row["losses"]
            row["loss_error"] = max(abs(a - b) / abs(b) for a, b in
                                    zip(row["losses"], reference))
            row["agrees"] = row["loss_error"] <= LOSS_TOLERANCE
            report["rows"].append(row)
            opts.json.write_text(json.dumps(report))
            print(f"{opts.strategy}/{world}/{trainer.backend}: "
                  f"{row['tokens_per_s']:.0f} tokens/s, step "
                  f"{row['step_ms']:.2f} ms, first {row['first_step_s']:.1f}"
                  f" s, loss error {row['loss_error']:.2e}"
                  + (f"; solo one GPU {row['solo_tokens_per_s']:.0f} tokens/s"
                     f" (step {row['solo_step_ms']:.2f} ms), scaling "
                     f"{row['scaling_interleaved']:.3f}x"
                     if "scaling_interleaved" in row else ""), flush=True)
    dist.destroy_process_group()


# ----------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------

def launch(opts, strategy: str, gpus: int) -> dict:
    """One (strategy, world size) under torch.distributed.run."""
    path = pathlib.Path(tempfile.mkstemp(suffix=".json")[1])
    path.write_text(json.dumps({"strategy": strategy, "world": gpus,
                                "rows": []}))
    model = opts.model or {"ddp": "gpt2", "fsdp": "llama"}[strategy]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={gpus}", __file__, "--worker",
           "--strategy", strategy, "--model", model, "--json", str(path),
           "--device", opts.device, "--backends", opts.backends,
           "--out", str(opts.out),
           "--steps", str(opts.steps), "--warmup", str(opts.warmup),
           "--rounds", str(opts.rounds)]
    cmd += ["--small"] if opts.small else []
    cmd += ["--solo"] if opts.solo and gpus > 1 else []
    cmd += [] if opts.profile else ["--no-profile"]
    from bench_models import run_report
    return run_report(cmd, path, opts.timeout)


def table(reports: list[dict]) -> str:
    lines = ["| strategy | GPUs | backend | tokens/s | step ms | first step s"
             " | peak MiB | loss error | overlap | tc eager ops / rt "
             "fallbacks |", "|" + "---|" * 10]
    for r in reports:
        for row in r["rows"]:
            overlap = row.get("overlap")
            lines.append(
                f"| {r['strategy']} | {r['world']} | {row['backend']} | "
                f"{row['tokens_per_s']:.0f} | {row['step_ms']:.2f} | "
                f"{row['first_step_s']:.1f} | {row.get('peak_mib', 0):.0f} | "
                f"{row['loss_error']:.1e} | "
                f"{'-' if overlap is None else f'{overlap:.2f}'} | "
                + (f"{row['tc_ops_eager']} / {row['tc_runtime_fallbacks']}"
                   if row["backend"] == "tc" else "-") + " |")
    return "\n".join(lines)


def scaling(reports: list[dict]) -> dict:
    """tokens/s on the most GPUs over one GPU, and tc over Inductor."""
    out: dict = {}
    for strategy in STRATEGIES:
        rows = {(r["world"], row["backend"]): row["tokens_per_s"]
                for r in reports if r["strategy"] == strategy
                for row in r["rows"]}
        worlds = sorted({w for w, _ in rows})
        for backend in {b for _, b in rows}:
            if len(worlds) > 1 and (worlds[0], backend) in rows \
                    and (worlds[-1], backend) in rows:
                out[f"{strategy}/{backend}/scaling"] = (
                    rows[(worlds[-1], backend)] / rows[(worlds[0], backend)])
        for r in reports:
            for row in r["rows"]:
                if r["strategy"] == strategy and "scaling_interleaved" in row:
                    out[f"{strategy}/{row['backend']}/scaling_interleaved"] \
                        = row["scaling_interleaved"]
        for world in worlds:
            if (world, "tc") in rows and (world, "inductor") in rows:
                out[f"{strategy}/{world}/tc_over_inductor"] = (
                    rows[(world, "tc")] / rows[(world, "inductor")])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--gpus", default="1,2",
                        help="process counts (GPUs; CPU processes with "
                        "--device cpu)")
    parser.add_argument("--backends", default="eager,inductor,tc")
    parser.add_argument("--model", default="",
                        help="gpt2, llama or tiny (default: gpt2 for ddp, "
                        "llama for fsdp)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5,
                        help="the timed steps in this many rounds, the "
                        "backends in turn in each")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--solo", action="store_true",
                        help="with several GPUs, also a one-GPU baseline per "
                        "backend in the same job, interleaved")
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--out", type=pathlib.Path,
                        default=pathlib.Path(__file__).parent / "results")
    parser.add_argument("--worker", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--strategy", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=pathlib.Path, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        worker(opts)
        return 0

    import torch
    opts.out.mkdir(parents=True, exist_ok=True)
    meta = {"device": (torch.cuda.get_device_name() if opts.device == "cuda"
                       else "cpu"), "torch": torch.__version__,
            "steps": opts.steps, "warmup": opts.warmup, "small": opts.small}
    reports = []
    name = f"distributed-{opts.device}{'-small' if opts.small else ''}.json"
    for strategy in opts.strategies.split(","):
        for gpus in (int(g) for g in opts.gpus.split(",")):
            print(f"{strategy} on {gpus} ...", file=sys.stderr, flush=True)
            report = launch(opts, strategy, gpus)
            reports.append(report)
            if report["exit_status"]:
                print(f"{strategy}/{gpus}: exit {report['exit_status']}\n"
                      f"{report.get('error', '')}", file=sys.stderr)
            (opts.out / name).write_text(json.dumps(
                {"meta": meta, "reports": reports,
                 "summary": scaling(reports)}, indent=2))
    print(table(reports))
    print(json.dumps(scaling(reports), indent=2))
    bad = [r for r in reports if r["exit_status"]
           or not all(row["agrees"] and row.get("tc_runtime_fallbacks", 0) == 0
                      and row.get("solo_tc_runtime_fallbacks", 0) == 0
                      and row.get("solo_loss_error", 0) <= LOSS_TOLERANCE
                      for row in r["rows"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
