"""IR text to a native program: the target's pipeline, the in-memory
cache, and the CPU disk cache (`tc.cache_dir()/cpu`)."""

from __future__ import annotations

import atexit
import concurrent.futures
import functools
import hashlib
import os
import pathlib
import platform
import shutil
import subprocess
import time
from typing import Any, Callable

import torch
import torch.fx

import tc
from tc import logs
from tc.importer import Unsupported
from tc.compiler import function
from tc.compiler.extension import (CompileError, dump_ir, load_native,
                                   load_runtime, native_error)
from tc.native import extension_path


# Native compiled graphs by (IR text, dump_stages); failures by IR text.
cache: dict[tuple[str, bool], Any] = {}
_failures: dict[str, str] = {}
# CPU graphs by their structure (`_tc.graph_structure`: the text without
# value names and locations) and options: a model's identical layers (a
# training graph's segments between its attentions) compile once, as the
# GPU's disk cache has them load once. CPU programs keep no state between
# calls (each call passes its buffers and arena), so graphs share one.
_by_structure: dict[tuple[str, str], Any] = {}
# CPU graphs this process loaded from the disk cache (without the
# compiler, so without their structure yet): (text, options, graph).
_loaded_unkeyed: list[tuple[str, str, Any]] = []
# Compiles `start_module` started in worker threads, by structure (see
# there), and the threads.
_inflight: dict[tuple, concurrent.futures.Future] = {}
_workers: dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def clear_cache() -> None:
    """Drops the in-memory cache of compiled graphs, the GPU arenas and
    this thread's CPU arena."""
    cache.clear()
    function.cpu_arenas.block = None
    _failures.clear()
    _by_structure.clear()
    _loaded_unkeyed.clear()
    _inflight.clear()
    function.arenas.clear()


# Free native objects before the interpreter tears the extension down.
atexit.register(clear_cache)


def target_pipeline(device: torch.device, text: str,
                    variant: str = "") -> tuple[str, str, str]:
    """(platform, tc-opt pipeline flag, pipeline options) for `device`;
    the options end with `variant` (a GPU schedule candidate's, see
    tc.autotune; tc.debug.bisect's limit on the optional passes)."""
    if device.type == "cuda":
        from tc.targets import cuda, rocm
        platform = "rocm" if rocm.is_rocm() else "cuda"
        try:
            options = (rocm.pipeline_options(device) if platform == "rocm"
                       else cuda.pipeline_options(device))
        except RuntimeError as error:
            raise CompileError(str(error), text, dump_ir(text)) from None
        if variant:
            options = f"{options} {variant}"
        return platform, f'--tc-{platform}-pipeline="{options}"', options
    if device.type != "cpu":
        raise Unsupported(f"tc does not compile for {device.type} devices")
    # TC_CPU_OPTIONS: tc-cpu-pipeline's options, such as
    # "expand-convolutions=true" (convolutions as tc's window copies and a
    # matrix product). By default they are library calls into PyTorch's
    # kernels (tc.library, which tc._tc sets when it loads), channels-last
    # with the ops between them (oneDNN's fast layout; the weights are read
    # as they are): "channels-last=off" keeps PyTorch's layout.
    options = os.environ.get("TC_CPU_OPTIONS", "").strip()
    if "channels-last=" not in options:
        options = f"channels-last=all {options}".strip()
    # f16/bf16 convolutions run in their type: oneDNN's bf16 kernels take
    # a half to a third of its f32 ones' time on CPUs with bf16
    # instructions ("half-convolutions=false" widens them to f32).
    if "half-convolutions=" not in options:
        options = f"half-convolutions=true {options}".strip()
    if "expand-convolutions=" not in options:
        options = f"expand-convolutions=false {options}".strip()
    # TC_CPU_CHECKS=1: every kernel checks its accesses' bounds and that it
    # writes no NaN; a violation raises after the run, naming the kernel,
    # the argument and the element (tc-add-kernel-checks; debugging).
    if os.environ.get("TC_CPU_CHECKS", "0") not in ("", "0") and \
            "checks=" not in options:
        options = f"{options} checks=true"
    if variant:
        options = f"{options} {variant}"
    flag = f'--tc-cpu-pipeline="{options}"' if options else "--tc-cpu-pipeline"
    return "cpu", flag, options


def split_options(options: str) -> str:
    """The options of tc-split-training-pipeline that a target pipeline's
    `options` imply: whether convolutions are expanded before autodiff,
    which run channels-last (before the partition), and the decomposition's
    test options (a planted wrong rewrite or crash reaches training graphs
    too)."""
    return " ".join(token for token in options.split()
                    if token.startswith(("expand-convolutions=",
                                         "channels-last=",
                                         "miscompile-for-testing=",
                                         "crash-for-testing=")))

#
# A CPU graph's entry is `tc.cache_dir()/cpu/<key>`: `<key>.plan` (the host
# program), `<key>.<i>.o` (the kernels, compiled in parallel parts) and
# `<key>.so` (the parts linked into a shared library, in the background,
# after a cold compile). The key is computed here, so that a warm process
# finds its entries without loading tc._tc (MLIR and LLVM: tens of
# milliseconds): tc._runtime, which links the host program's interpreter
# alone, loads `<key>.so` and runs the plan. An entry without its `.so`
# (no C compiler driver to link it, or a link still running) loads through
# tc._tc's JIT instead.


#: Bump when the key changes meaning (the plan's own version is checked
#: when it loads).
_CPU_KEY_FORMAT = "tc-cpu-key-1"
_links: list[subprocess.Popen] = []


@functools.lru_cache(maxsize=None)
def _host_cpu() -> str:
    """What tc's CPU code depends on in this host: the architecture, the
    CPU model and its feature flags (LLVM compiles for the host's CPU)."""
    parts = [platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8",
                  errors="replace") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break  # the first processor's lines
                name = line.split(":", 1)[0].strip()
                if name in ("vendor_id", "cpu family", "model", "model name",
                            "flags", "CPU implementer", "CPU part",
                            "Features", "isa"):
                    parts.append(line.strip())
    except OSError:
        # platform.processor() runs `uname -p`: only where /proc is absent.
        parts.append(platform.processor())
    return "\n".join(parts)


@functools.lru_cache(maxsize=None)
def _build_identity() -> str:
    """tc's build, as the cache sees it: its extensions' paths, sizes and
    modification times, read once per process (the build it loads: a
    rebuild on disk while a process runs would otherwise have the old code
    write entries under the new build's keys, and read the new build's
    entries, whose kernels it does not know)."""
    parts = []
    for name in ("_tc", "_runtime"):
        path = extension_path(name)
        if path is not None:
            stat = path.stat()
            parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


def _cpu_cache_entry(text: str, options: str) -> pathlib.Path:
    """The disk cache entry of the CPU graph `text` compiled with
    `options`, keyed on both, tc's build and the host CPU."""
    key = hashlib.sha256()
    for part in (_CPU_KEY_FORMAT, _build_identity(), _host_cpu(),
                 os.environ.get("TC_VECTOR_WIDTH", ""), options, text):
        data = part.encode()
        key.update(len(data).to_bytes(8, "little"))
        key.update(data)
    return tc.cache_dir() / "cpu" / key.hexdigest()


def _load_cached_cpu(entry: pathlib.Path) -> Any | None:
    """The CPU graph of a complete cache entry, run by tc._runtime; None
    when the entry (or its `.so`) is absent or unusable."""
    if not entry.with_suffix(".so").is_file():
        return None
    runtime = load_runtime()
    return runtime.load_cpu(str(entry)) if runtime is not None else None


def find_linker() -> str | None:
    """A C compiler driver to link shared libraries with ($CC, cc, clang
    or gcc), or None."""
    for candidate in (os.environ.get("CC"), "cc", "clang", "gcc"):
        if candidate and shutil.which(candidate):
            return candidate
    return None


def _link_cache_entry(entry: pathlib.Path) -> None:
    """Links a fresh entry's objects into `<entry>.so`, in a background
    process (best effort: without it, warm starts load tc._tc)."""
    global _links
    _links = [link for link in _links if link.poll() is None]
    objects = []
    while (obj := entry.parent / f"{entry.name}.{len(objects)}.o").is_file():
        objects.append(str(obj))
    linker = find_linker()
    if not objects or linker is None:
        return
    # Through a temporary name and a rename: a reader never sees half a
    # library.
    tmp = f"{entry}.so.tmp{os.getpid()}"
    script = '"$0" -shared -o "$1" "${@:3}" -lm && mv -f "$1" "$2"'
    try:
        _links.append(subprocess.Popen(
            ["bash", "-c", script, linker, tmp, f"{entry}.so", *objects],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
    except OSError:
        pass


def wait_for_cache_links(timeout: float = 30.0) -> None:
    """Waits for the background links of this process's cache entries (at
    exit too, so that the next process finds them)."""
    deadline = time.monotonic() + timeout
    for link in _links:
        try:
            link.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


atexit.register(wait_for_cache_links)


def _worker_count(device: torch.device) -> int:
    """How many native compiles run at once for `device`: on a CUDA host
    up to 8, half its cores (the compiler's own threads use the rest); two
    on the CPU, whose compiles use every core already (a training graph's
    forward and backward)."""
    if device.type == "cuda" and torch.version.hip is None:
        return max(2, min(8, (os.cpu_count() or 2) // 2))
    return 2


def start_module(text: str, device: torch.device,
                 dump_stages: bool) -> Callable[[], Any]:
    """Starts `compile_module(text, device, dump_stages)` in a worker
    thread (the native compiler releases the GIL) and returns what waits
    for it: its result, or its error. A graph compiled in parts (the
    subgraphs between eager ops, a training graph's segments and their
    forward and backward halves) starts every part first and waits after,
    so that its distinct parts compile at once. A part whose structure
    (`_tc.graph_structure`) is already compiling is not started again: its
    wait waits for that one and then compiles, from the in-process or disk
    cache that one filled (a transformer's repeated layers)."""

    def serial() -> Any:
        return compile_module(text, device, dump_stages)

    native = load_native()
    if native is None or device.type not in ("cpu", "cuda"):
        return serial
    platform, _, options = target_pipeline(device, text)
    dump = dump_stages or logs.enabled("output_code")
    if (text, dump, options, str(device)) in cache:
        return serial
    structure = (native.graph_structure(text), options, str(device), dump)
    first = _inflight.get(structure)
    if first is not None:
        def after_first() -> Any:
            concurrent.futures.wait([first])
            return serial()
        return after_first
    index = None
    if device.type == "cuda":
        index = (device.index if device.index is not None
                 else torch.cuda.current_device())

    def run() -> Any:
        if index is not None:
            # The kernels load into the graph's device's context, which
            # the worker makes current.
            torch.cuda.set_device(index)
        return serial()

    count = _worker_count(device)
    pool = _workers.get(count)
    if pool is None:
        pool = _workers[count] = concurrent.futures.ThreadPoolExecutor(
            count, thread_name_prefix="tc-compile")
    future = pool.submit(run)
    _inflight[structure] = future
    return future.result


def compile_module(text: str, device: torch.device,
                   dump_stages: bool, variant: str = "") -> Any:
    """The native executable of the module `text` (fx or prim dialect) for
    `device` (with a GPU schedule `variant`, see target_pipeline), from the
    in-process cache when compiled before."""
    platform, pipeline, options = target_pipeline(device, text, variant)
    dump_stages = dump_stages or logs.enabled("output_code")
    # A GPU graph's kernels load into its device's context: one entry per
    # device.
    key = (text, dump_stages, options, str(device))
    compiled = cache.get(key)
    if compiled is not None:
        return compiled
    start = time.perf_counter()
    entry = _cpu_cache_entry(text, options) if platform == "cpu" else None
    if entry is not None and not dump_stages:
        # A warm start: the graph's kernels and host program from the disk
        # cache, run without loading the compiler.
        compiled = _load_cached_cpu(entry)
        if compiled is not None:
            _loaded_unkeyed.append((text, options, compiled))
            return _compiled(key, compiled, platform, start)
    native = load_native()
    if native is None:
        raise CompileError(native_error() or "tc native extension not built",
                           text, dump_ir(text), native_missing=True,
                           pipeline=pipeline)
    failure_key = (text, options)
    if failure_key in _failures:
        raise CompileError(_failures[failure_key], text, dump_ir(text),
                           pipeline=pipeline)
    structure = None
    if platform == "cpu" and not dump_stages:
        while _loaded_unkeyed:
            other, other_options, loaded = _loaded_unkeyed.pop()
            _by_structure.setdefault(
                (native.graph_structure(other), other_options), loaded)
        structure = (native.graph_structure(text), options)
        shared = _by_structure.get(structure)
        if shared is not None:
            cache[key] = shared
            if logs.enabled("compile_time"):
                logs.channel_logger("compile_time").info(
                    "cpu graph shares the compile of an identical one "
                    "(%.3f s)", time.perf_counter() - start)
            return shared
    try:
        # Host programs and kernel binaries persist across processes too
        # (library planning and loading run again).
        gpu_cache = str(tc.cache_dir() / platform)
        if platform == "cuda":
            # The kernels load while compiling, into the context of the
            # current device: the graph's.
            index = device.index
            if index is None or torch.cuda.current_device() == index:
                compiled = native.compile_cuda(text, options, dump_stages,
                                               gpu_cache)
            else:
                with torch.cuda.device(device):
                    compiled = native.compile_cuda(text, options,
                                                   dump_stages, gpu_cache)
        elif platform == "rocm":
            compiled = native.compile_rocm(text, options, dump_stages,
                                           gpu_cache)
        else:
            # Compiled graphs persist in the cache folder across processes.
            compiled = native.compile(text, dump_stages, str(entry or ""),
                                      options)
    except RuntimeError as error:
        _failures[failure_key] = str(error)
        raise CompileError(str(error), text, dump_ir(text),
                           pipeline=pipeline) from None
    if entry is not None and not compiled.from_cache:
        _link_cache_entry(entry)
    if structure is not None:
        _by_structure[structure] = compiled
    return _compiled(key, compiled, platform, start)


def _compiled(key: tuple, compiled: Any, platform: str,
              start: float) -> Any:
    """Keeps a freshly compiled (or loaded) graph in the in-process cache,
    counts and logs it."""
    cache[key] = compiled
    if compiled.from_cache:
        tc.counters["disk_cache_hits"] += 1
    if logs.enabled("compile_time"):
        phases = dict(compiled.compile_seconds)
        logs.channel_logger("compile_time").info(
            "%s graph compiled in %.3f s%s", platform,
            time.perf_counter() - start,
            "".join(f", {name} {seconds:.3f} s"
                    for name, seconds in phases.items()))

    if logs.enabled("output_code"):
        out = logs.channel_logger("output_code")
        for stage, stage_text in dict(compiled.stage_ir).items():
            out.info("stage %s:\n%s", stage, stage_text)
    if logs.enabled("memory"):
        logs.channel_logger("memory").info(
            "arena peak %d bytes vs %d bytes of intermediates "
            "(%d kernels)", compiled.arena_bytes,
            compiled.intermediate_bytes, compiled.num_kernels)
    return compiled
