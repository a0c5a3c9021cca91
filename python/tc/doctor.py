"""`python -m tc`: what this tc is and what it can compile here.

Prints tc's version and where it runs from, its native build
(tcBuildInfo), the torch it runs with (and whether that release is one tc
is tested with, `tc.compat`), the devices and the toolchains tc found for
them, the cache folder, the PyTorch interfaces tc uses that this torch
has, and what would run in eager instead of tc, with why. The exit status
is 0 when tc can compile for the CPU, 1 when it cannot.
"""

from __future__ import annotations

import os
import pathlib
import platform
import sys


def _native() -> tuple[dict[str, str] | None, str | None]:
    """(build info, None), or (None, why tc._tc does not load)."""
    if os.environ.get("TC_DISABLE_NATIVE", "") not in ("", "0"):
        return None, "disabled by TC_DISABLE_NATIVE"
    from tc import native
    try:
        return native.build_info(), None
    except ImportError as error:
        return None, str(error)


def _cuda_lines(fallbacks: list[str]) -> list[str]:
    import torch

    from tc.targets import rocm
    lines = []
    if not torch.cuda.is_available():
        lines.append("cuda: no device (torch.cuda.is_available() is False)")
        return lines
    for index in range(torch.cuda.device_count()):
        name = torch.cuda.get_device_name(index)
        major, minor = torch.cuda.get_device_capability(index)
        lines.append(f"cuda:{index}: {name}, capability {major}.{minor}")
    if rocm.is_rocm():
        root = rocm.toolkit()
        lines.append(f"rocm: HIP {torch.version.hip}; device libraries: "
                     f"{root or 'the ones tc was built with'}")
        return lines
    from tc.targets import cuda
    try:
        toolkit, libdevice, fmt = cuda.toolchain()
    except RuntimeError as error:
        lines.append(f"cuda toolchain: none ({error})")
        fallbacks.append(f"CUDA graphs run in eager: {error}")
        return lines
    how = ("cubin through ptxas" if fmt == "bin"
           else "PTX, compiled by the driver")
    lines.append(f"cuda toolchain: {toolkit} (libdevice {libdevice}; "
                 f"kernels as {how}); CUDA {torch.version.cuda}, cuDNN "
                 f"{'yes' if cuda.library_convolutions() else 'no'}")
    return lines


def _gemm_kernels() -> str:
    """OpenBLAS's kernels for tc's CPU GEMMs, and $OPENBLAS_CORETYPE where
    it chose them (on this project's AVX-512 machine a setting of Haswell
    halves the GEMMs' speed against OpenBLAS's own choice, SkylakeX)."""
    from tc import native
    try:
        kernels = native.load_extension("_tc").cpu_gemm_kernels()
    except (ImportError, AttributeError) as error:
        return f"? ({error})"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return kernels + (f" (OPENBLAS_CORETYPE={forced})" if forced else "")


def _library_gemms() -> str:
    """Which CPU GEMMs run on PyTorch's BLAS instead (tc.library.gemm)."""
    if os.environ.get("TC_CPU_GEMM") == "openblas":
        return " (all of them: TC_CPU_GEMM=openblas)"
    from tc.compiler.extension import load_runtime
    flops = getattr(load_runtime(), "LIBRARY_GEMM_FLOPS", None)
    return (f" (those below {flops:.0e} flops; larger ones on PyTorch's "
            "BLAS, as eager's)" if flops else "")


def report() -> tuple[list[str], bool]:
    """The report's lines, and whether tc compiles for the CPU here."""
    import tc
    lines = [f"tc {tc.__version__} from {pathlib.Path(tc.__file__).parent}",
             f"python {platform.python_version()} ({sys.executable})"]
    fallbacks: list[str] = []
    info, error = _native()
    if info is None:
        lines.append(f"native build: none ({error})")
        fallbacks.append("every graph runs in eager: tc's native compiler "
                         f"is not loaded ({error})")
    else:
        lines.append("native build: LLVM {llvm}, {linkage} linkage, "
                     "assertions {assertions}, GPU back ends: NVPTX {nvptx},"
                     " AMDGPU {amdgpu}; {compiler}".format(**info))
        lines.append(f"tc-opt: {tc.tc_opt_path()}")
    try:
        import torch
    except ImportError as error:
        lines.append(f"torch: none ({error})")
        fallbacks.append("tc needs PyTorch")
        return lines + _fallback_lines(fallbacks), False
    from tc import compat
    supported = compat.torch_supported()
    low, high = compat.SUPPORTED_TORCH
    lines.append(f"torch {torch.__version__} "
                 f"({pathlib.Path(torch.__file__).parent}); "
                 + ("within" if supported else "OUTSIDE")
                 + f" the releases tc is tested with, {low} to {high}")
    lines.append(f"cpu: {os.cpu_count()} cores, torch uses "
                 f"{torch.get_num_threads()} threads"
                 + (f", GEMMs on OpenBLAS's {_gemm_kernels()} kernels"
                    + _library_gemms() if info is not None else ""))
    lines += _cuda_lines(fallbacks)
    cache = tc.cache_dir()
    state = ("exists" if cache.is_dir() else "not created yet")
    lines.append(f"cache: {cache} ({state}; TC_CACHE_DIR moves it)")
    present = compat.features()
    lines.append("torch interfaces tc uses: " + ", ".join(
        f"{name} {'yes' if has else 'no'}" for name, has in present.items()))
    for name, has in present.items():
        if not has and (torch.cuda.is_available()
                        or not compat.FEATURES[name].gpu):
            fallbacks.append(f"{name} missing: {compat.FEATURES[name].without}")
    settings = sorted(key for key in os.environ if key.startswith("TC_"))
    if settings:
        lines.append("settings: " + " ".join(
            f"{key}={os.environ[key]}" for key in settings))
    return lines + _fallback_lines(fallbacks), info is not None


def _fallback_lines(fallbacks: list[str]) -> list[str]:
    if not fallbacks:
        return ["falls back: nothing found that would send graphs to eager "
                "(ops tc does not compile still run in eager, logged by "
                "TC_LOGS=fallbacks)"]
    return ["falls back:"] + [f"  - {line}" for line in fallbacks]


def main() -> int:
    lines, compiles = report()
    print("\n".join(lines))
    return 0 if compiles else 1
