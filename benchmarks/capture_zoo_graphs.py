#!/usr/bin/env python3
"""The graph tc would compile for a bench_zoo.py model, saved as text
without compiling it: the first module's fx-dialect text (`m1.mlir`),
traced on this machine's CPU at the model's GPU batch in bf16 (`infer`),
or at the CPU suite's batch in float32 (`cpu`). Feed them to two builds'
`tc-opt --tc-cuda-pipeline=...` (or `--tc-cpu-pipeline`) and diff the
`kernel.launch` lines to see which kernels a compiler change touches, on
a machine without a GPU.

    python3 benchmarks/capture_zoo_graphs.py tf_efficientnet_b0 OUT_DIR
    python3 benchmarks/capture_zoo_graphs.py BertForMaskedLM OUT_DIR cpu
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import torch  # noqa: E402

import zoo_models  # noqa: E402
from tc.compiler import build  # noqa: E402


class _Captured(BaseException):
    """Stops the trace once the first module's text is saved (a
    BaseException: tc's backend does not take it for a compile error and
    run the graph in eager)."""


def main() -> int:
    name, out = sys.argv[1], pathlib.Path(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "infer"
    out.mkdir(parents=True, exist_ok=True)
    count = 0

    def capture(text, device, dump_stages, variant=""):
        nonlocal count
        count += 1
        (out / f"m{count}.mlir").write_text(text)
        raise _Captured

    build.compile_module = capture
    cpu = torch.device("cpu")
    built = zoo_models.build(name, mode, cpu, torch.float32 if mode == "cpu"
                             else torch.bfloat16)
    built.device_type, built.device = "cpu", cpu
    fn = torch.compile(built.model.eval(), backend="tc")
    try:
        with torch.no_grad():
            zoo_models.output(name, fn, built)
    except _Captured:
        pass
    print(f"{name}: {count} module(s) in {out}")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
