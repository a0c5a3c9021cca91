"""Device kernels of one profiled step, by kind and by name.

`summarize(prof)` takes a finished torch.profiler.profile and returns text:
the device time of each kind of kernel (matrix products, attention,
convolutions, the optimizer's foreach kernels, copies, tc's, Inductor's,
other) and the kernels taking the most time, with their launch counts, so
that two backends' steps can be set side by side kind by kind.
"""

from __future__ import annotations

import collections
import re

#: (kind, pattern on the kernel's name), first match wins.
KINDS = [
    ("tc", re.compile(r"^main_|^tc_")),
    ("inductor", re.compile(r"^triton_")),
    ("attention", re.compile(r"sdpa|flash|fmha|attention", re.I)),
    ("matmul", re.compile(r"nvjet|gemm|cutlass|xmma|sm90_|ampere_", re.I)),
    ("convolution", re.compile(r"convolution|cudnn|implicit|wgrad|dgrad",
                               re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply")),
    ("copy", re.compile(r"copy|elementwise_kernel|Memcpy|Memset", re.I)),
]

#: Device-side events that are not kernels: annotations (an optimizer's
#: step), the ops that launched kernels.
_NOT_KERNELS = re.compile(r"^\w+\.\w+#|^aten::|^Activity Buffer|^Compiled")


def _kind(name: str) -> str:
    for kind, pattern in KINDS:
        if pattern.search(name):
            return kind
    return "other"


def _device_us(event) -> float:
    for attr in ("device_time_total", "self_device_time_total",
                 "cuda_time_total"):
        value = getattr(event, attr, None)
        if value:
            return float(value)
    return 0.0


def summarize(prof, top: int = 50) -> str:
    """Per-kind totals and the `top` kernels of a profiled step."""
    kernels: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for event in prof.key_averages():
        if (str(getattr(event, "device_type", "")).endswith("CUDA")
                and not _NOT_KERNELS.search(event.key)):
            kernels[event.key][0] += _device_us(event)
            kernels[event.key][1] += event.count
    kinds: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for name, (us, count) in kernels.items():
        kinds[_kind(name)][0] += us
        kinds[_kind(name)][1] += count
    total = sum(us for us, _ in kernels.values())
    lines = [f"device time of kernels {total / 1e3:.3f} ms"]
    for kind, (us, count) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"  {kind:12s} {us / 1e3:8.3f} ms {count:5d} launches")
    lines.append("kernels, most time first:")
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1][0])[:top]
    for name, (us, count) in ranked:
        lines.append(f"  {us / 1e3:8.3f} ms {count:4d}x {_kind(name):11s} "
                     f"{name[:110]}")
    return "\n".join(lines)
