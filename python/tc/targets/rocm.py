"""Where tc's ROCm pipeline finds its tools, and the options it runs with.

A ROCm build of PyTorch (`torch.version.hip` is set) shows AMD GPUs as
`cuda` devices; tc then compiles their graphs with `tc-rocm-pipeline` to one
hsaco per graph and runs it through HIP's module API and rocBLAS. The
pipeline needs a ROCm root with the device libraries (`amdgcn/bitcode`) and
`llvm/bin/ld.lld`: `TC_ROCM_PATH`, `ROCM_PATH`, else `/opt/rocm` (ROCm's
installs have both); without one tc uses the root it was built with (the
Debian device libraries). `TC_ROCM_OPTIONS` adds or overrides options, as
`TC_CUDA_OPTIONS` does for CUDA.
"""

from __future__ import annotations

import os
import pathlib

import torch


def is_rocm() -> bool:
    """Whether this PyTorch drives AMD GPUs (HIP) behind `cuda` devices."""
    return getattr(torch.version, "hip", None) is not None


def toolkit() -> str:
    """The ROCm root to compile with; "" for the one tc was built with."""
    for root in (os.environ.get("TC_ROCM_PATH"), os.environ.get("ROCM_PATH"),
                 "/opt/rocm"):
        if root and (pathlib.Path(root) / "amdgcn" / "bitcode").is_dir():
            return root
    return ""


def chip(device: torch.device) -> str:
    """The gfx name of `device` ("gfx942" from "gfx942:sramecc+:xnack-")."""
    name = torch.cuda.get_device_properties(device).gcnArchName
    return name.split(":")[0]


def pipeline_options(device: torch.device) -> str:
    """tc-rocm-pipeline's options for `device`."""
    options = {"chip": chip(device)}
    root = toolkit()
    if root:
        options["toolkit"] = root
    for token in os.environ.get("TC_ROCM_OPTIONS", "").split():
        key, _, value = token.partition("=")
        options[key] = value
    return " ".join(f"{k}={v}" for k, v in options.items())
