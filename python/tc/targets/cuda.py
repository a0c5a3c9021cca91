"""Where tc's CUDA pipeline finds its tools, and the options it runs with.

The pipeline needs CUDA's libdevice (the math library kernels link). By
default tc emits PTX, which the CUDA driver compiles in-process when it
loads the kernels (and caches on disk): on the H100 that is 0.01-0.09 s
faster per graph than starting `ptxas` (measured 2026-11-23, driver cache
off). `TC_CUDA_FORMAT=bin` emits a cubin with the toolkit's `ptxas`
instead. Both tools are looked for in, in order:

* `TC_CUDA_HOME`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda` (a toolkit:
  `bin/ptxas`, `nvvm/libdevice/libdevice.10.bc`);
* the Triton that ships with PyTorch (`triton/backends/nvidia/`), which
  bundles both;
* `TC_LIBDEVICE` (a libdevice.10.bc file) for PTX only.

MLIR's NVVM target wants them laid out as a toolkit; when they come from
elsewhere tc links them into one under its cache folder.
`TC_CUDA_OPTIONS` adds or overrides options of `tc-cuda-pipeline` (schedule
knobs such as `max-block-size=512 vector-width=2 replicate-trig=false`,
`format=isa`, or `expand-convolutions=true` for im2col convolutions instead
of cuDNN's).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import pathlib

import torch

import tc

_LIBDEVICE = pathlib.Path("nvvm") / "libdevice" / "libdevice.10.bc"


def _toolkit_candidates() -> list[pathlib.Path]:
    roots = [os.environ.get(v) for v in ("TC_CUDA_HOME", "CUDA_HOME",
                                         "CUDA_PATH")]
    roots.append("/usr/local/cuda")
    return [pathlib.Path(r) for r in roots if r]


def _triton_nvidia() -> pathlib.Path | None:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = pathlib.Path(location) / "backends" / "nvidia"
        if path.is_dir():
            return path
    return None


def _link_toolkit(ptxas: pathlib.Path | None,
                  libdevice: pathlib.Path) -> pathlib.Path:
    """A toolkit-shaped folder of links to `ptxas` and `libdevice`."""
    root = tc.cache_dir() / "cuda-toolkit"
    for target, link in ((ptxas, root / "bin" / "ptxas"),
                         (libdevice, root / _LIBDEVICE)):
        if target is None:
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            if link.resolve() == target.resolve():
                continue
            link.unlink()
        link.symlink_to(target)
    return root


def _format(forced: str, has_ptxas: bool) -> str:
    if forced == "bin" and not has_ptxas:
        logging.getLogger("tc").warning(
            "tc: TC_CUDA_FORMAT=bin needs ptxas, which was "
            "not found; emitting PTX")
        return "isa"
    return forced or "isa"


@functools.lru_cache(maxsize=None)
def toolchain() -> tuple[str, str, str]:
    """(toolkit folder, libdevice path, format "isa" (PTX) or "bin").

    Raises RuntimeError when no libdevice can be found.
    """
    forced = os.environ.get("TC_CUDA_FORMAT", "")
    for root in _toolkit_candidates():
        libdevice = root / _LIBDEVICE
        if libdevice.is_file():
            has_ptxas = (root / "bin" / "ptxas").is_file()
            fmt = _format(forced, has_ptxas)
            return str(root), str(libdevice), fmt
    triton = _triton_nvidia()
    if triton is not None:
        libdevice = triton / "lib" / "libdevice.10.bc"
        ptxas = triton / "bin" / "ptxas"
        if libdevice.is_file():
            has_ptxas = ptxas.is_file()
            root = _link_toolkit(ptxas if has_ptxas else None, libdevice)
            fmt = _format(forced, has_ptxas)
            return str(root), str(libdevice), fmt
    explicit = os.environ.get("TC_LIBDEVICE")
    if explicit and pathlib.Path(explicit).is_file():
        root = _link_toolkit(None, pathlib.Path(explicit))
        return str(root), explicit, "isa"
    raise RuntimeError(
        "CUDA's libdevice.10.bc was not found (set TC_CUDA_HOME to a CUDA "
        "toolkit or TC_LIBDEVICE to the file)")


def chip(device: torch.device) -> str:
    """The sm_XY name of `device`'s architecture."""
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def library_convolutions() -> bool:
    """Whether convolutions run on cuDNN (kernel.conv: grouped ones too)
    rather than as matrix products of windows: where PyTorch has cuDNN."""
    return torch.version.hip is None and torch.backends.cudnn.is_available()


def pipeline_options(device: torch.device) -> str:
    """tc-cuda-pipeline's options for `device`."""
    toolkit, libdevice, fmt = toolchain()
    options = {"chip": chip(device), "format": fmt, "toolkit": toolkit,
               "link": libdevice}
    # Convolutions run on cuDNN where PyTorch has it (kernel.conv), with
    # TF32 as PyTorch's own convolutions allow it; elsewhere they are
    # matrix products of windows.
    if library_convolutions():
        options["expand-convolutions"] = "false"
        # f16/bf16 ones channels-last, cuDNN's fast layout (also in the
        # training split, whose forward then saves channels-last
        # activations).
        options["channels-last"] = "half"
        options["allow-tf32"] = str(
            bool(torch.backends.cudnn.allow_tf32)).lower()
    # TC_CUDA_CHECKS=1: kernels check alignment and bounds, and name the
    # kernel, the argument and the index before they trap (debugging).
    if os.environ.get("TC_CUDA_CHECKS", "0") not in ("", "0"):
        options["checks"] = "true"
    for token in os.environ.get("TC_CUDA_OPTIONS", "").split():
        key, _, value = token.partition("=")
        options[key] = value
    return " ".join(f"{k}={v}" for k, v in options.items())
