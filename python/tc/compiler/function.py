"""`CompiledFunction`: a compiled graph called on PyTorch's tensors, with
the buffers it runs in (arenas, CUDA-graph output pools)."""

from __future__ import annotations

import functools
import itertools
import operator
import threading
import weakref
from typing import Any, Sequence

import torch
import torch.fx

from tc import compat, logs
from tc.importer import ImportedGraph
from tc.compiler import extension, pools
from tc.compiler.pools import cuda_graphs_enabled


def _resolve_attr(root: torch.nn.Module, target: str) -> torch.Tensor:
    return functools.reduce(getattr, target.split("."), root)

#
# The CUDA runtime replays a graph's launch sequence as a CUDA graph once a
# call passes the same buffers as an earlier call (CUDAExecutable::run).
# By default everything tc allocates (the outputs, the arena, a random
# graph's seed) comes from PyTorch's caching allocator, as Inductor's
# buffers do, through a pool of tc's own on CUDA (tc.compiler.pools), and
# goes back to it when the caller drops it: a steady loop that the pool
# serves at the same addresses again replays, whatever else the process
# allocates in between, and nothing is held between calls (GPT-2's
# training step held 1.1 GB in a shared arena and output pools, and
# replayed nothing: its saved activations moved between steps).
# mode="reduce-overhead" asks for replay first (CompiledFunction.
# stage_inputs): the arena is then one block per device and stream, shared
# by every graph run on that stream (runs on one stream never overlap),
# each output comes from a small pool of the graph's own (_OutputPool), a
# tensor of which is handed out again once nothing else uses it, and
# inputs at new addresses are copied into buffers of the graph's own.
# TC_CUDA_GRAPHS=0 turns replay off.


_MAX_SHARED_ARENAS = 8
#: Staging buffers kept per input of a reduce-overhead graph (one per
#: shape; more than one only with the symbolic size).
_MAX_STAGED_SHAPES = 4
#: Seeds kept per graph with random ops (draw_seed): calls whose backward
#: has not run yet each hold one.
_MAX_SEEDS = 4
arenas: dict[tuple[int, int], torch.Tensor] = {}


# CPU graphs' arenas: one block per thread, kept between runs (a graph's
# arena is dead once its run returns, and a thread runs one graph at a
# time), grown to the largest arena up to _MAX_KEPT_CPU_ARENA. A fresh
# block of tens of MB per call is fresh pages from the kernel at every
# call: ResNet-50 in bf16 at batch 16 ran 8% slower on two cores. Larger
# arenas are allocated per call, as eager allocates its intermediates.
cpu_arenas = threading.local()
_MAX_KEPT_CPU_ARENA = 512 << 20


def _cpu_arena(nbytes: int) -> torch.Tensor:
    """A CPU graph's arena of `nbytes` for one run on this thread."""
    if nbytes > _MAX_KEPT_CPU_ARENA:
        return torch.empty(nbytes, dtype=torch.uint8)
    arena = getattr(cpu_arenas, "block", None)
    if arena is None or arena.numel() < nbytes:
        cpu_arenas.block = None
        del arena
        arena = torch.empty(nbytes, dtype=torch.uint8)
        cpu_arenas.block = arena
    return arena


# The CUDA devices whose primary context each thread has made current.
_cuda_threads = threading.local()


def _make_context_current(index: int | None) -> None:
    """Makes device `index`'s primary context (PyTorch's) current on this
    thread, once per thread and device. A thread whose first CUDA work is a
    tc graph has none: autograd's device thread running a compiled backward
    before any eager op there, on device 0, for which PyTorch's device
    guard makes no runtime call (a fresh thread names device 0 already);
    tc's driver calls then fail ("no current CUDA context"; found on 2 GPUs
    by test_functional_collectives_in_compiled_graph[cuda], rank 0). Asking
    whether the current stream captures is a runtime call that needs a
    context, so the runtime makes the device's primary context current,
    and one that is legal while a stream captures (a query of the stream
    would end a user's CUDA graph capture)."""
    if index is None:
        index = torch.cuda.current_device()
    devices = getattr(_cuda_threads, "devices", None)
    if devices is None:
        devices = _cuda_threads.devices = set()
    if index not in devices:
        torch.cuda.is_current_stream_capturing()
        devices.add(index)


def _shared_arena(index: int, stream: int, nbytes: int) -> torch.Tensor | None:
    """The arena block of device `index` and `stream`, at least `nbytes`
    long (grown, and then at a new address, when a graph needs more); None
    when too many streams have one already."""
    key = (index, stream)
    arena = arenas.get(key)
    if arena is None and len(arenas) >= _MAX_SHARED_ARENAS:
        return None
    if arena is None or arena.numel() < nbytes:
        # The old block goes back to the caching allocator first (in stream
        # order: the runs that used it are queued before any new user), so
        # that growing never holds both.
        arenas.pop(key, None)
        del arena
        arena = torch.empty(nbytes, dtype=torch.uint8,
                            device=torch.device("cuda", index))
        arenas[key] = arena
    return arena


def _storage_uses(tensor: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)


class _OutputPool:
    """Up to `capacity` tensors per output of a CUDA graph, each handed out
    again (as a new alias) once no tensor but the pool's own uses its
    memory: a steady loop gets each output at one of a few addresses. An
    output whose tensors are all held elsewhere gets a fresh one."""

    capacity = 2

    def __init__(self, specs: Sequence[tuple[torch.Size, torch.dtype, Any]],
                 device: torch.device):
        self.device = device
        # Per output: [(tensor, its storage's use count in the pool)].
        self.blocks: list[list[tuple[torch.Tensor, int]]] = [
            [] for _ in specs]

    def take(self, index: int, size: torch.Size,
             dtype: torch.dtype) -> torch.Tensor:
        blocks = self.blocks[index]
        for tensor, baseline in blocks:
            if tensor.shape == size and _storage_uses(tensor) == baseline:
                return tensor.detach()
        tensor = torch.empty(size, dtype=dtype, device=self.device)
        if len(blocks) == self.capacity:
            # A graph with the symbolic size: a free block of another size
            # makes room (its memory goes back to the allocator).
            for i, (held, baseline) in enumerate(blocks):
                if _storage_uses(held) == baseline:
                    del blocks[i]
                    break
        if len(blocks) < self.capacity:
            blocks.append((tensor, _storage_uses(tensor)))
            return tensor.detach()
        return tensor


class CompiledFunction:
    """A graph compiled by tc, callable with the graph's inputs."""

    def __init__(self, native: Any, imported: ImportedGraph,
                 gm: torch.fx.GraphModule,
                 device: torch.device = torch.device("cpu")):
        self.native = native
        self.device = device
        self.imported = imported
        self._root = gm
        self._attrs = list(imported.lifted_attrs)
        self._num_placeholders = (len(imported.input_names) - len(self._attrs)
                                  - (imported.seed_index is not None))
        self.arena_bytes = int(native.arena_bytes)
        # What the GPU kernels assume of each buffer (a CPU graph loaded
        # from the disk cache runs without tc._tc, and assumes nothing).
        self._alignment = (int(extension.load_native().gpu_buffer_alignment)
                           if device.type == "cuda" else 1)
        #: The arena grows by this many bytes per unit of the symbolic size.
        self.arena_bytes_per_symbol = int(
            getattr(native, "arena_bytes_per_symbol", 0))
        #: Whether the graph has the symbolic size (a `?` leading dimension
        #: of some inputs and outputs, docs/DynamicShapes.md).
        self.symbolic = any(-1 in shape for shape, _ in imported.input_specs)
        self.intermediate_bytes = int(native.intermediate_bytes)
        self.num_kernels = int(native.num_kernels)
        # What each call checks and allocates, computed once: calls are on
        # the host's critical path (a training step makes two per graph).
        self._input_checks = [(torch.Size(shape), dtype)
                              for shape, dtype in imported.input_specs]
        # Inputs whose leading dimension is the symbolic size.
        self._symbolic_inputs = [i for i, (shape, _) in enumerate(
            imported.input_specs) if shape and shape[0] == -1]
        # The inputs' and outputs' shapes at recent values of the size.
        self._at_symbols: dict[int, tuple[list, list]] = {}
        self._outputs = [(torch.Size(shape), dtype, alias)
                         for (shape, dtype), alias in zip(
                             imported.output_specs,
                             imported.outputs_alias_inputs)]
        #: Inputs the program writes (ImportedGraph.written_inputs): the
        #: caller's tensors themselves, or copied back after the call.
        self._written = set(imported.written_inputs)
        self._cuda = device.type == "cuda"
        self._index = device.index
        # Runs so far: the second is profiled under TC_LOGS=kernels (the
        # first pays for loading, allocating and planning).
        self._cpu_calls = 0
        self._cuda_calls = 0
        self._graphs = (self._cuda and torch.version.hip is None
                        and cuda_graphs_enabled())
        #: mode="reduce-overhead" only (stage_inputs): the outputs' pool;
        #: per input, the address of its first call, its staging buffer,
        #: whether an output aliases it.
        self._pool: _OutputPool | None = None
        self._staging: list[list[Any]] | None = None
        #: Per input, the address it is read at without a copy (its first
        #: call's; -1 before that) in reduce-overhead mode.
        self._staging_homes: list[int] = []
        self._input_permutations: list[tuple[int, ...] | None] | None = None
        #: Per input, a weak reference to the tensor the last call checked
        #: (_NOBODY: none) and its address then (-1: none).
        self._known_refs: list[weakref.ref] = (
            [_NOBODY] * len(self._input_checks))
        self._known_pointers: list[int] = [-1] * len(self._input_checks)
        self._output_inverses: list[tuple[int, ...] | None] | None = None
        #: The outputs read back early (read_flags_early), or None.
        self._early: list[int] | None = None
        #: CUDA: the seeds drawn so far, each redrawn in place once nothing
        #: else holds it (draw_seed), with its storage's use count then and
        #: the stream it was drawn on.
        self._seeds: list[tuple[torch.Tensor, int, int]] = []

    def read_flags_early(self, outputs: Sequence[int]) -> bool:
        """Makes calls return `outputs` (0-d booleans: flags that index
        checks set, `tc.backend.checks`) as Python bools, read back as soon
        as the last kernel taking each has run: the call returns while the
        rest of the graph runs, instead of the caller waiting for the whole
        graph to read them. True when it will (CUDA graphs)."""
        if (not self._cuda or self.native.target != "cuda"
                or not hasattr(self.native, "read_early") or not outputs
                or self._early is not None):
            return False
        for i in outputs:
            if not 0 <= i < len(self._outputs):
                return False
            size, dtype, alias = self._outputs[i]
            if alias is not None or dtype != torch.bool or len(size) != 0:
                return False
        # Arguments: every input (placeholders, lifted attributes, the
        # seed), then the outputs.
        first = len(self.imported.input_names)
        why = self.native.read_early([first + i for i in outputs])
        if why is not None:
            logs.channel_logger("fallbacks").info(
                "graph %s: its index checks' flags are read after the "
                "whole graph: %s", self.imported.name, why)
            return False
        self._early = list(outputs)
        return True

    def read_inputs_permuted(
            self, permutations: Sequence[tuple[int, ...] | None]) -> None:
        """Placeholder `i` of the compiled graph is the caller's input `i`
        permuted by `permutations[i]` (when not None): the graph was
        rewritten to take a dense permuted input (a transposed view) in its
        memory order and permute it back inside, where the permutation
        fuses into the kernels reading it, instead of a copy into a
        contiguous tensor before each call (layouts.read_in_place). An
        input whose permutation is not contiguous at run time is still
        copied."""
        self._input_permutations = list(permutations)

    def write_outputs_permuted(
            self, permutations: Sequence[tuple[int, ...] | None]) -> None:
        """Output `i` of the compiled graph is the caller's output `i`
        permuted by `permutations[i]` (when not None): the graph was
        rewritten to write an output that eager lays out permuted (a
        transposed weight, an attention input in [B, S, H, D] order) in
        that memory order, and the call returns the view with eager's
        strides (layouts.write_in_place)."""
        self._output_inverses = [
            None if p is None
            else tuple(sorted(range(len(p)), key=p.__getitem__))
            for p in permutations]

    def stage_inputs(self) -> None:
        """mode="reduce-overhead": an input at another address than in the
        function's first call is copied into a buffer of the function's
        own, so that the CUDA graph of the launch sequence replays whatever
        tensors the caller passes (a graph reading the first call's
        addresses, another the buffers); an input at its first
        address, such as a parameter, is read where it is. Inputs that
        outputs alias (written in place) are never staged. The outputs come
        from the graph's pool and the arena is the stream's shared block
        (see "Stable buffers" above). No effect off CUDA graphs."""
        if self._graphs:
            self._pool = _OutputPool(self._outputs, self.device)
            aliased = {alias for *_, alias in self._outputs
                       if alias is not None} | self._written
            self._staging = [[None, i in aliased]
                             for i in range(len(self._input_checks))]
            self._staging_homes = [-1] * len(self._input_checks)

    @property
    def graph_replays(self) -> int:
        """Calls that replayed a captured CUDA graph (0 off CUDA)."""
        return int(getattr(self.native, "graph_replays", 0))

    @property
    def cuda_calls(self) -> int:
        """Calls that ran on a CUDA device."""
        return self._cuda_calls

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured of the launch sequence (0 off CUDA)."""
        return int(getattr(self.native, "graph_captures", 0))

    @property
    def stage_ir(self) -> dict[str, str]:
        """IR of each compiler stage (when compiled with dump_stages)."""
        return dict(self.native.stage_ir)

    @property
    def ir(self) -> str:
        """The fx-dialect text that was compiled."""
        return self.imported.text

    def draw_seed(self) -> torch.Tensor | None:
        """A fresh seed for a graph with random ops (None for others), from
        PyTorch's default generator of the graph's device: `torch.manual_seed`
        makes the compiled graph's random numbers reproducible."""
        if self.imported.seed_index is None:
            return None
        if not self._cuda:
            return torch.randint(-2**63, 2**63 - 1, (), dtype=torch.int64,
                                 device=self.device)
        # On CUDA a seed nothing else holds any more (the backward that
        # read the previous call's is done) is drawn again in place, on
        # the stream it was drawn on (which orders the draw after every
        # read of it): a fresh 0-d tensor a call lands wherever the
        # allocator's small blocks stand, which cycled through four to six
        # addresses in a training loop, and the graph (and its backward,
        # which reads it) captured CUDA graphs instead of replaying.
        # Inside a caller's capture a seed is always new (its graph keeps
        # reading it).
        capturing = torch.cuda.is_current_stream_capturing()
        stream = _raw_stream(self._index)
        if not capturing:
            for seed, baseline, drawn_on in self._seeds:
                if drawn_on == stream and _storage_uses(seed) == baseline:
                    torch.randint(-2**63, 2**63 - 1, (), dtype=torch.int64,
                                  device=self.device, out=seed)
                    return seed.detach()
        with pools.allocating_in_pool(self._device_index()):
            seed = torch.randint(-2**63, 2**63 - 1, (), dtype=torch.int64,
                                 device=self.device)
        if capturing or len(self._seeds) >= _MAX_SEEDS:
            return seed
        self._seeds.append((seed, _storage_uses(seed), stream))
        return seed.detach()

    def __call__(self, *args: torch.Tensor,
                 seed: torch.Tensor | None = None) -> Any:
        if self._cuda:
            # What the call allocates (its seed, copies of its inputs, its
            # outputs and arena) comes from tc's own pool
            # (tc.compiler.pools).
            with pools.allocating_in_pool(self._device_index()):
                return self._call(args, seed)
        return self._call(args, seed)

    def _device_index(self) -> int:
        index = self._index
        return torch.cuda.current_device() if index is None else index

    def _call(self, args: Sequence[torch.Tensor],
              seed: torch.Tensor | None) -> Any:
        imported = self.imported
        if len(args) != self._num_placeholders:
            raise TypeError(f"tc graph takes {self._num_placeholders} "
                            f"inputs, got {len(args)}")
        given = list(args)
        if self._input_permutations is not None:
            given = [a if p is None else a.permute(p)
                     for a, p in zip(given, self._input_permutations)]
        if self._attrs:
            given += [_resolve_attr(self._root, t) for t in self._attrs]
        if imported.seed_index is not None:
            given.insert(imported.seed_index,
                         self.draw_seed() if seed is None else seed)
        device, cuda = self.device, self._cuda
        symbol = -1
        checks, outputs_specs = self._input_checks, self._outputs
        if self.symbolic:
            symbol, checks, outputs_specs = self._at_symbol(given)
        # Stable buffers in reduce-overhead mode only; inside the caller's
        # own capture (torch.cuda.graph) they stay unused: the capture's
        # pool provides the memory.
        stable = (self._staging is not None
                  and not torch.cuda.is_current_stream_capturing())
        write_back: list[tuple[torch.Tensor, torch.Tensor]] = []
        # An input that is the tensor a previous call checked, at the same
        # address (a parameter, a buffer: most of a model's inputs), is
        # taken as it is, and at its staging home (or where staging is off)
        # not staged: checked a tensor at a time, a decoder's ~200 inputs
        # took 0.25 ms a call; these tests run over the whole list at once.
        # (A tensor whose shape or dtype changed in place is a new graph
        # for Dynamo, whose guards check it before this call.)
        inputs = list(given)
        misses: Sequence[int] = range(len(given))
        pointers: list[int] = [0] * len(given)
        if not self.symbolic:
            try:
                pointers = list(map(_DATA_PTR, given))
            except (TypeError, AttributeError):
                pass  # not all tensors: each is checked below
            else:
                ok = map(operator.is_, map(_DEREF, self._known_refs), given)
                ok = map(operator.and_, ok,
                         map(operator.eq, pointers, self._known_pointers))
                if stable:
                    ok = map(operator.and_, ok, map(
                        operator.eq, pointers, self._staging_homes))
                misses = list(itertools.compress(
                    range(len(given)), map(operator.not_, ok)))
        for i in misses:
            tensor = given[i]
            size, dtype = checks[i]
            if (not self.symbolic and _DEREF(self._known_refs[i]) is tensor
                    and tensor.data_ptr() == self._known_pointers[i]):
                pointer = self._known_pointers[i]  # known, not at home
            else:
                if (not isinstance(tensor, torch.Tensor)
                        or tensor.dtype != dtype or tensor.shape != size
                        or tensor.device != device):
                    raise TypeError(
                        f"tc graph input #{i} ({imported.input_names[i]}) "
                        f"expects a {device} tensor of shape {tuple(size)} "
                        f"and dtype {dtype}, got {_describe(tensor)}")
                if not tensor.is_contiguous():
                    tensor = tensor.contiguous()
                pointer = tensor.data_ptr()
                if cuda and pointer % self._alignment:
                    # GPU kernels assume aligned buffers (vector accesses;
                    # the runtime refuses others): a view at an odd offset
                    # is copied.
                    tensor = tensor.clone()
                    pointer = tensor.data_ptr()
                elif not self.symbolic and given[i] is tensor:
                    self._known_refs[i] = weakref.ref(tensor)
                    self._known_pointers[i] = pointer
            if stable:
                tensor, pointer = self._stage(i, tensor, pointer)
            if i in self._written and tensor is not given[i]:
                # Written in a copy (not contiguous, not aligned): the
                # caller's tensor takes its new value after the call.
                write_back.append((given[i], tensor))
            inputs[i] = tensor
            pointers[i] = pointer

        pool = self._pool if stable else None
        outputs = []
        for i, (size, dtype, alias) in enumerate(outputs_specs):
            if alias is not None:
                outputs.append(given[alias])
                pointers.append(pointers[alias])
                continue
            out = (pool.take(i, size, dtype) if pool is not None
                   else torch.empty_strided(size, _contiguous_strides(size),
                                            dtype=dtype, device=device))
            outputs.append(out)
            pointers.append(out.data_ptr())
        if self._output_inverses is not None:
            outputs = [o if p is None else o.permute(p)
                       for o, p in zip(outputs, self._output_inverses)]
        if cuda:
            index = self._index
            if index is None or torch.cuda.current_device() == index:
                read = self._run_cuda(pointers, index, stable, symbol)
            else:
                with torch.cuda.device(device):
                    read = self._run_cuda(pointers, index, stable, symbol)
            if read is not None:
                for i, value in zip(self._early, read):
                    outputs[i] = bool(value)
        else:
            # The arena comes from PyTorch's allocator, like any
            # intermediate of an eager program, and is kept for the
            # thread's next run (_cpu_arena).
            nbytes = self.arena_bytes + self.arena_bytes_per_symbol * max(
                symbol, 0)
            arena = _cpu_arena(nbytes) if nbytes > 0 else None
            pointers.append(arena.data_ptr() if arena is not None else 0)
            self._cpu_calls += 1
            if self._cpu_calls == 2 and logs.enabled("kernels"):
                self._log_profile(self.native.run_profiled(
                    pointers, symbol=symbol if self.symbolic else -1))
            elif self.symbolic:
                self.native.run(pointers, symbol=symbol)
            else:
                self.native.run(pointers)
        for tensor, written in write_back:
            tensor.copy_(written)
        if imported.output_structure == "single":
            return outputs[0]
        if imported.output_structure == "list":
            return outputs
        return tuple(outputs)

    def _log_profile(self,
                     steps: list[tuple[str, float, int, int]]) -> None:
        """TC_LOGS=kernels: a warm run's steps, slowest first (the kernel's
        name says what it fused), with the bytes of their buffers and the
        bandwidth that makes, and on the CPU the process's page faults
        during each (first touches of fresh memory: a library call's new
        result, which the allocator decides). A CPU step's time is the
        host's wall clock, a CUDA step's the GPU's between events around
        it."""
        total = sum(step[1] for step in steps) or 1e-12
        counted = [step[3] for step in steps if step[3] >= 0]
        faulted = (f", {sum(counted)} page faults"
                   if counted and len(counted) == len(steps) else "")
        lines = [f"graph {self.imported.name} on {self.device}: "
                 f"{len(steps)} steps, {total * 1e3:.3f} ms{faulted}"]
        for name, seconds, nbytes, faults in sorted(steps,
                                                    key=lambda s: -s[1]):
            moved = (f"{nbytes / 1e6:9.3f} MB {nbytes / seconds / 1e9:7.2f} "
                     "GB/s" if nbytes >= 0 and seconds > 0 else
                     "        ? MB       ? GB/s")
            if faulted:
                moved += f" {faults:6d} faults"
            share = 100 * seconds / total
            lines.append(f"  {seconds * 1e3:9.3f} ms {share:5.1f}%  {moved}  "
                         f"{name}")
        logs.channel_logger("kernels").info("\n".join(lines))

    def _at_symbol(self, given: Sequence[Any]) -> tuple[int, list, list]:
        """The symbolic size's value in a call (the leading size of the
        first input that has it), and the inputs' and outputs' shapes at
        that value."""
        first = self._symbolic_inputs[0]
        tensor = given[first]
        if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            raise TypeError(f"tc graph input #{first} "
                            f"({self.imported.input_names[first]}) expects a "
                            f"tensor with a leading batch dimension, got "
                            f"{_describe(tensor)}")
        symbol = tensor.shape[0]
        shapes = self._at_symbols.get(symbol)
        if shapes is not None:
            return symbol, *shapes

        def at(size: torch.Size) -> torch.Size:
            return torch.Size((symbol, *size[1:])) if size and size[0] == -1 \
                else size
        checks = [(at(size), dtype) for size, dtype in self._input_checks]
        outputs = [(at(size), dtype, alias)
                   for size, dtype, alias in self._outputs]
        if len(self._at_symbols) >= 64:
            self._at_symbols.clear()
        self._at_symbols[symbol] = (checks, outputs)
        return symbol, checks, outputs

    def _stage(self, index: int, tensor: torch.Tensor,
               pointer: int) -> tuple[torch.Tensor, int]:
        """Input `index` as the kernels read it (see stage_inputs)."""
        entry = self._staging[index]
        buffers, aliased = entry
        home = self._staging_homes[index]
        if home == -1:
            home = self._staging_homes[index] = pointer
        if pointer == home or aliased:
            return tensor, pointer
        # A buffer per shape (a graph with the symbolic size sees several;
        # the most recent few are kept, each with its own CUDA graph).
        if buffers is None:
            buffers = entry[0] = {}
        buffer = buffers.pop(tensor.shape, None)
        if buffer is None:
            buffer = torch.empty_like(
                tensor, memory_format=torch.contiguous_format)
            while len(buffers) >= _MAX_STAGED_SHAPES:
                del buffers[next(iter(buffers))]
        buffers[tensor.shape] = buffer  # the most recent last
        buffer.copy_(tensor)
        return buffer, buffer.data_ptr()

    def _run_cuda(self, pointers: list[int], index: int | None,
                  stable: bool, symbol: int) -> list[int] | None:
        """Runs on the current stream of the current device (the graph's)
        with the arena appended to `pointers`: the stream's shared arena
        when `stable` (reduce-overhead, outside a caller's capture), else a
        block from PyTorch's caching allocator (tc's pool). `symbol`
        is the symbolic size's value (-1 without one). Returns the flags
        read early (read_flags_early), or None where none were read."""
        _make_context_current(index)
        stream = _raw_stream(index)
        arena = None
        nbytes = self.arena_bytes + self.arena_bytes_per_symbol * max(
            symbol, 0)
        if nbytes > 0:
            if stable:
                arena = _shared_arena(
                    torch.cuda.current_device() if index is None else index,
                    stream, nbytes)
            if arena is None:
                # From PyTorch's caching allocator (tc's pool), like any
                # intermediate of an eager program.
                arena = torch.empty_strided((nbytes,), (1,),
                                            dtype=torch.uint8,
                                            device=self.device)
        pointers.append(arena.data_ptr() if arena is not None else 0)
        self._cuda_calls += 1
        if (self._cuda_calls == 2 and logs.enabled("kernels")
                and self.native.target == "cuda"
                and not torch.cuda.is_current_stream_capturing()):
            self._log_profile(self.native.run_profiled(
                pointers, stream, symbol=symbol if self.symbolic else -1))
        elif self._early is not None:
            return self.native.run_reading(
                pointers, stream, symbol if self.symbolic else -1,
                len(self._early))
        elif self.symbolic:
            self.native.run(pointers, stream, symbol=symbol)
        else:
            self.native.run(pointers, stream)
        return None


class _Nobody:
    pass


#: A weak reference to nothing (no input known yet).
_NOBODY = weakref.ref(_Nobody())
_DATA_PTR = torch.Tensor.data_ptr
_DEREF = weakref.ref.__call__  # (operator.call is Python 3.11's)


@functools.lru_cache(maxsize=4096)
def _contiguous_strides(size: torch.Size) -> tuple[int, ...]:
    """The strides of a contiguous tensor of `size`: outputs are allocated
    with torch.empty_strided, whose call costs half of torch.empty's on
    the host (0.9 against 1.8 us on the CPU), which a training step pays
    for each of its hundreds of outputs."""
    strides, step = [], 1
    for extent in reversed(size):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _raw_stream(index: int | None) -> int:
    """The current CUDA stream of device `index`, as a pointer (what
    Inductor's generated code asks torch for on every call)."""
    get = compat.get("raw_cuda_stream")
    if get is not None:
        return get(torch.cuda.current_device() if index is None else index)
    return torch.cuda.current_stream(index).cuda_stream


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return (f"a {value.device.type} tensor of shape {tuple(value.shape)} "
                f"and dtype {value.dtype}")
    return type(value).__name__
