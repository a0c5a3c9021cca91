#!/usr/bin/env python3
"""PyTorch's OpInfo database through `torch.compile(backend="tc")`.

Every OpInfo op's samples (the first --samples that eager runs: three of
its sample inputs, then its reference inputs, then the other samples) are
run in eager and through tc, on the CPU, for each dtype asked for; each
(op, dtype) is classified:

- `tc`: every sample matched eager and tc compiled all of it;
- `eager`: every sample matched eager, but some or all of it ran in eager
  PyTorch (an op or dtype tc does not compile: a logged fallback, a
  run-time fallback or a value guard's rerun);
- `wrong`: a sample's result differs from eager's (a bug in tc).
  "Matches" is element-wise: NaN where eager has NaN, infinities as
  eager's, other values within torch's default tolerances for the dtype
  (`torch.testing.assert_close`), or an op's looser ones in LOOSER, each
  with its reason. In bf16, f16 and f32, a result outside the tolerance
  that is at least as close as eager's to the op computed in float64 is
  not wrong (tc keeps some intermediates in f32 where eager rounds them;
  some of eager's f32 kernels are less accurate than tc's). The
  index of one of several equal elements (sort, topk, kthvalue, median,
  mode: PyTorch leaves it unspecified, eager's algorithm picks one) is not
  wrong when it points at an element holding eager's value. Random ops
  (eager's own results change with the seed; tc's numbers are not
  eager's) match when each result has eager's shape and dtype and passes
  a two-sample Kolmogorov-Smirnov test against eager's draw (at 16 values
  or more; a weak test on OpInfo's small samples);
- `error`: compiling or running raised where eager did not;
- `uninitialized`: the op returns uninitialized memory (`empty` and its
  variants); not compared;
- `no samples`: the op has no sample eager can run.

    python test/conformance/sweep.py                          # float32
    python test/conformance/sweep.py --dtypes float32,bfloat16,int64,bool
    python test/conformance/sweep.py --ops add,sin --dtypes float32
    python test/conformance/sweep.py --ops full --update    # re-check some

Writes conformance.json and Conformance.md to --out (docs/ by default).
`run_sweep` is what test/python/test_conformance.py calls on a subset.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import pathlib
import sys
import time
import warnings
from typing import Any

import torch

import tc

_ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Ops compared at tolerances looser than torch's defaults for the dtype
#: (`torch.testing.assert_close`'s), with the reason. Every other op is
#: held to the defaults.
LOOSER: dict[str, tuple[dict[Any, dict[str, float]], str]] = {
    "nn.functional.interpolate": (
        {torch.float32: dict(rtol=1e-4, atol=5e-4)},
        "PyTorch's decomposition computes the f32 source coordinates and "
        "weights in another order than eager's kernel: at 345x456 -> "
        "270x270 both are 4.3e-4 (bilinear) and 5.1e-4 (bicubic) from "
        "float64 and differ by up to 3.4e-4"),
    "addcdiv": (
        {torch.float16: dict(rtol=4e-3, atol=1e-5)},
        "Dynamo rewrites addcdiv with a `value` into div, mul and add (the "
        "graph tc receives), each rounded to f16 as eager would round them; "
        "eager's addcdiv kernel rounds once: the quotient's rounding times "
        "the value (3.14 in OpInfo's samples) is up to 3 ulp (without a "
        "value tc's result is eager's)"),
    "nn.functional.conv_transpose3d": (
        {torch.complex64: dict(rtol=1.3e-6, atol=1e-4),
         torch.float32: dict(rtol=1.3e-6, atol=3e-4)},
        "a complex convolution is three real ones (Gauss's trick, eager's "
        "composite code, which tc traces), whose differences cancel the "
        "real convolutions' sums: with 81-term sums of values near 500, "
        "tc's and eager's real convolutions (another summation order) "
        "leave 2 of 648 results, near 8, 3.3e-5 and 8.8e-6 from "
        "complex128. float32: on the CPU tc's library call is PyTorch's "
        "forward convolution of the zero-upsampled input (the "
        "decomposition of a transposed one), which sums 108 products of "
        "values up to 81 in another order than eager's deconvolution: "
        "outputs up to 890, 28 of 2744 results 1e-5 to 2e-4 from eager's "
        "(tc 2.3e-4 from float64, eager 9.9e-5: 2 ulp of the largest "
        "partial sums)"),
}


def tolerance(name: str, dtype: torch.dtype) -> dict[str, float]:
    """The rtol/atol op `name` (an OpInfo name, variant included) is
    compared at in `dtype`: LOOSER's for the name or a prefix of it, else
    {} (torch's defaults)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        looser = LOOSER.get(".".join(parts[:end]))
        if looser is not None:
            return looser[0].get(dtype, {})
    return {}


#: Ops whose results are uninitialized memory: nothing to compare.
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted",
                 "new_empty", "new_empty_strided"}


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _same(actual: Any, expected: Any, dtype: torch.dtype,
          name: str = "") -> str | None:
    """None when `actual` matches `expected` element-wise (NaN where eager
    has NaN, infinities of eager's sign, the rest within torch's default
    tolerances for the dtype or op `name`'s LOOSER ones), else why not."""
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True,
                                   **tolerance(name, dtype))
    except Exception as error:  # noqa: BLE001 - any mismatch is reported
        return str(error).strip().splitlines()[0][:200]
    return None


def _upcast(value: Any, dtype: torch.dtype) -> Any:
    """`value` with its `dtype` tensors in float64 (complex128 for
    complex64)."""
    wide = torch.complex128 if dtype.is_complex else torch.float64
    return torch.utils._pytree.tree_map(
        lambda v: v.to(wide) if isinstance(v, torch.Tensor)
        and v.dtype == dtype else v, value)


def _at_least_as_accurate(op, sample, actual: Any, expected: Any,
                          dtype: torch.dtype) -> bool:
    """For a mismatch in bf16, f16, f32 or complex64: whether tc's result
    is at least as close as eager's to the op computed in float64 (or
    complex128) on the same inputs
    (eager rounds some intermediates to the dtype that tc keeps in f32,
    e.g. the products of a cross product; eager's f32 polygamma of a
    negative argument is off by 2e-5 relative where tc's is by 4e-8;
    neither is "the" answer)."""
    if dtype not in (torch.bfloat16, torch.float16, torch.float32,
                     torch.complex64):
        return False
    try:
        torch.manual_seed(0)
        reference = op(*_upcast(_clone((sample.input, *sample.args)), dtype),
                       **_upcast(_clone(sample.kwargs), dtype))
    except Exception:  # noqa: BLE001 - no float64 kernel: cannot judge
        return False
    leaves = torch.utils._pytree.tree_leaves
    flat = list(zip(leaves(actual), leaves(expected), leaves(reference)))
    if not flat or len(flat) != len(leaves(reference)):
        return False
    for got, want, ref in flat:
        if not all(isinstance(t, torch.Tensor) for t in (got, want, ref)):
            return False
        if got.shape != want.shape or got.dtype != want.dtype:
            return False
        if not (want.is_floating_point() or want.is_complex()):
            if not torch.equal(got, want):
                return False
            continue
        wide = torch.complex128 if ref.is_complex() else torch.float64
        ref = ref.to(wide)
        tc_error = (got.to(wide) - ref).abs().nan_to_num(0).max()
        eager_error = (want.to(wide) - ref).abs().nan_to_num(0).max()
        # (Equal errors computed in float64 may differ in their last bits.)
        if tc_error > eager_error * (1 + 1e-9):
            return False
    return True


#: Ops returning (values, indices) where PyTorch leaves which of several
#: equal elements an index points at unspecified (tc picks the first, in
#: the stable order), with the position of `dim` in their arguments, its
#: default, and whether the dimension is reduced.
TIE_INDICES = {
    "sort": (0, -1, False), "argsort": (0, -1, False),
    "topk": (1, -1, False), "kthvalue": (1, -1, True),
    "median": (0, None, True), "nanmedian": (0, None, True),
    "mode": (0, -1, True),
}


def _valid_tie_indices(op, sample, actual: Any, expected: Any,
                       dtype: torch.dtype) -> bool:
    """For a mismatch of an op in TIE_INDICES: whether tc's values are
    eager's and each index points at an element holding its value (and,
    for a sort, the indices permute the dimension)."""
    if op.name not in TIE_INDICES or not isinstance(sample.input,
                                                    torch.Tensor):
        return False
    position, default, reduced = TIE_INDICES[op.name]
    args = list(sample.args)
    dim = sample.kwargs.get("dim", args[position] if len(args) > position
                            else default)
    if dim is None or not isinstance(dim, int):
        return False
    x = sample.input
    if op.name == "argsort":
        descending = sample.kwargs.get(
            "descending", args[1] if len(args) > 1 else False)
        indices = actual
        values = torch.sort(x, dim=dim, descending=descending,
                            stable=True).values
    else:
        if not (isinstance(actual, tuple) and len(actual) == 2):
            return False
        if _same(actual[0], expected[0], dtype, op.name) is not None:
            return False
        values, indices = expected[0], actual[1]
    if not isinstance(indices, torch.Tensor) or indices.dtype != torch.int64:
        return False
    if x.dim() == 0:
        return bool((indices == 0).all())
    keepdim = reduced and indices.dim() == x.dim()
    picked_at = indices.unsqueeze(dim) if reduced and not keepdim \
        else indices
    try:
        picked = x.gather(dim, picked_at)
    except RuntimeError:
        return False
    if reduced and not keepdim:
        picked = picked.squeeze(dim)
    if not torch.equal(picked.isnan(), values.isnan()) or not torch.equal(
            picked.nan_to_num(0), values.nan_to_num(0)):
        return False
    if op.name in ("sort", "argsort"):
        positions = torch.arange(x.shape[dim]).view(
            [-1 if d == dim % x.dim() else 1 for d in range(x.dim())])
        return torch.equal(indices.sort(dim=dim).values,
                           positions.expand_as(indices))
    if op.name == "topk":
        return all(len(set(row.tolist())) == len(row)
                   for row in indices.movedim(dim, -1).reshape(
                       -1, indices.shape[dim]))
    return True


class _FirstFallback(logging.Handler):
    """Keeps the first message of tc's `fallbacks` channel: why an op or
    graph was left to eager, for the report."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.message: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.message is None:
            self.message = record.getMessage().splitlines()[0][:160]


def _eager(op, sample, seed: int) -> Any:
    torch.manual_seed(seed)
    return op(*_clone((sample.input, *sample.args)),
              **_clone(sample.kwargs))


def _candidates(op, dtype: torch.dtype) -> list[Any]:
    """The op's samples to try, in order: its first three sample inputs,
    then its reference inputs (larger and odder cases: non-contiguous,
    extremal values, broadcasting), then the rest of its samples."""
    basic = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    extra: list[Any] = []
    if getattr(op, "reference_inputs_func", None) is not None:
        try:
            # reference_inputs yields the sample inputs first.
            extra = list(op.reference_inputs("cpu", dtype,
                                             requires_grad=False))
            extra = extra[len(basic):]
        except Exception:  # noqa: BLE001 - the samples alone, then
            extra = []
    return basic[:3] + extra + basic[3:]


#: The Kolmogorov-Smirnov coefficient for a false alarm rate of 1e-4 per
#: compared tensor: two draws of one distribution differ by more than
#: c * sqrt((n + m) / (n * m)) that rarely.
_KS_COEFFICIENT = 2.22


#: Random ops that draw one number per channel, not per element (feature
#: dropout): their values are not independent, so the test counts the
#: independent draws (batch x channels per call) and pools
#: `_CHANNEL_DRAWS` calls of each side.
_PER_CHANNEL_RANDOM = {"nn.functional.dropout2d", "nn.functional.dropout3d",
                       "nn.functional.feature_alpha_dropout.with_train"}
_CHANNEL_DRAWS = 32


def _same_distribution(actual: Any, expected: Any,
                       units: int | None = None) -> str | None:
    """For a random op: None when each of tc's result tensors has eager's
    shape and dtype and, where it has at least 16 real values, passes a
    two-sample Kolmogorov-Smirnov test against eager's draw; else why
    not. `units`: the independent draws behind each side's values (all
    values are, by default)."""
    leaves = torch.utils._pytree.tree_leaves
    got, want = leaves(actual), leaves(expected)
    if len(got) != len(want):
        return f"{len(got)} results where eager has {len(want)}"
    for a, b in zip(got, want):
        if not isinstance(b, torch.Tensor):
            continue
        if not isinstance(a, torch.Tensor) or a.shape != b.shape \
                or a.dtype != b.dtype:
            return "shape or dtype differs from eager's"
        if a.numel() < 16 or a.is_complex():
            continue
        x = a.detach().reshape(-1).double()
        y = b.detach().reshape(-1).double()
        if x.isnan().any() != y.isnan().any():
            return "NaN where eager has none, or the other way round"
        x, y = x[~x.isnan()].sort().values, y[~y.isnan()].sort().values
        if not len(x) or not len(y):
            continue
        points = torch.cat([x, y])
        gap = (torch.searchsorted(x, points, right=True) / len(x)
               - torch.searchsorted(y, points, right=True) / len(y))
        statistic = float(gap.abs().max())
        n, m = (units, units) if units else (len(x), len(y))
        bound = _KS_COEFFICIENT * ((n + m) / (n * m)) ** 0.5
        if statistic > bound:
            return (f"distribution differs from eager's (Kolmogorov-"
                    f"Smirnov {statistic:.3f} > {bound:.3f}, "
                    f"{len(x)} values)")
    return None


def _per_channel_distribution(op, name: str, sample, compiled, actual: Any,
                              expected: Any) -> str | None:
    """`_same_distribution` for an op of `_PER_CHANNEL_RANDOM`: both sides'
    draws pooled over `_CHANNEL_DRAWS` seeds, counted per channel."""
    args = (sample.input, *sample.args)
    draws_tc, draws_eager = [actual], [expected]
    for seed in range(1, _CHANNEL_DRAWS):
        torch.manual_seed(seed)
        draws_tc.append(compiled(*_clone(args), **_clone(sample.kwargs)))
        draws_eager.append(_eager(op, sample, seed))
    shape = sample.input.shape
    # (N, C, spatial...); dropout3d of a 4-d input is one unbatched
    # (C, D, H, W).
    lead = shape[:1] if (name.endswith("dropout3d")
                         and len(shape) == 4) else shape[:2]
    units = _CHANNEL_DRAWS * max(1, math.prod(lead))
    return _same_distribution(
        torch.cat([d.reshape(-1) for d in draws_tc]),
        torch.cat([d.reshape(-1) for d in draws_eager]), units)


def check_op(op, dtype: torch.dtype, samples: int) -> dict[str, Any]:
    """Classifies one OpInfo op at one dtype (see the module docstring)."""
    name = op.name + (f".{op.variant_test_name}"
                      if op.variant_test_name else "")
    try:
        inputs = _candidates(op, dtype)
    except Exception as error:  # noqa: BLE001
        return {"status": "no samples", "reason": f"sample_inputs: {error}"}
    runnable = []
    for sample in inputs:
        try:
            expected = _eager(op, sample, 0)
        except Exception:  # noqa: BLE001 - eager rejects it: not a case
            continue
        runnable.append((sample, expected))
        if len(runnable) == samples:
            break
    if not runnable:
        return {"status": "no samples", "reason": "eager runs no sample"}
    if op.name in UNINITIALIZED:
        return {"status": "uninitialized", "samples": len(runnable)}
    random = any(_same(_eager(op, sample, 1), expected, dtype, name)
                 is not None for sample, expected in runnable)

    status = "tc"
    reason = None
    fallbacks = logging.getLogger("tc.fallbacks")
    level = fallbacks.level
    for sample, expected in runnable:
        torch._dynamo.reset()
        tc.reset_counters()

        def fn(*args, **kwargs):
            return op(*args, **kwargs)

        compiled = torch.compile(fn, backend="tc", dynamic=False)
        first = _FirstFallback()
        fallbacks.addHandler(first)
        fallbacks.setLevel(logging.INFO)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.manual_seed(0)
                actual = compiled(*_clone((sample.input, *sample.args)),
                                  **_clone(sample.kwargs))
        except Exception as error:  # noqa: BLE001
            return {"status": "error", "samples": len(runnable),
                    "reason": f"{type(error).__name__}: "
                              f"{str(error).strip()[:200]}"}
        finally:
            fallbacks.removeHandler(first)
            fallbacks.setLevel(level)
        if random:
            if name in _PER_CHANNEL_RANDOM:
                mismatch = _per_channel_distribution(
                    op, name, sample, compiled, actual, expected)
            else:
                mismatch = _same_distribution(actual, expected)
            if mismatch is not None:
                return {"status": "wrong", "samples": len(runnable),
                        "random": True, "reason": mismatch,
                        "sample": repr(sample)[:300]}
            reason = reason or "random: eager's distribution"
            mismatch = None
        else:
            mismatch = _same(actual, expected, dtype, name)
        if mismatch is not None and _at_least_as_accurate(
                op, sample, actual, expected, dtype):
            mismatch = None
            reason = reason or ("differs from eager, but at least as close "
                                "to float64")
        if mismatch is not None and _valid_tie_indices(
                op, sample, actual, expected, dtype):
            mismatch = None
            reason = reason or ("indices among equal elements differ from "
                                "eager's, and point at equal elements")
        if mismatch is not None:
            return {"status": "wrong", "samples": len(runnable),
                    "reason": mismatch,
                    "sample": repr(sample)[:300]}
        counters = tc.counters
        all_tc = (counters["graphs_compiled"] > 0
                  and counters["ops_eager"] == 0
                  and counters["fallback_graphs"] == 0
                  and counters["runtime_fallbacks"] == 0
                  and counters["guard_reruns"] == 0)
        if not all_tc and status == "tc":
            status = "eager"
            reason = ("no graph reached tc" if counters["graphs_compiled"] == 0
                      and counters["fallback_graphs"] == 0 else
                      f"{counters['ops_eager']} ops, "
                      f"{counters['fallback_graphs']} graphs and "
                      f"{counters['runtime_fallbacks']} run-time "
                      f"fallbacks and {counters['guard_reruns']} guard "
                      "reruns in eager")
            if first.message:
                reason += f"; first: {first.message}"
    result = {"status": status, "samples": len(runnable)}
    if random:
        result["random"] = True
    if reason:
        result["reason"] = reason
    return result


def _call_without_reseeding(op, *args, **kwargs):
    return op(*args, **kwargs)


def _unwrap_reseeding() -> None:
    """OpInfo runs some ops through `wrapper_set_seed`, which re-seeds the
    random-number generator inside the op: a graph break that keeps the op
    from ever reaching a backend, and that makes random ops give the same
    numbers for any outer seed. The sweep seeds before each call itself,
    so the ops run bare: random ones are found as such (their results
    change with the seed) and their distributions compared, deterministic
    ones (attention without dropout)
    are compiled and compared."""
    for name, module in list(sys.modules.items()):
        if (name.startswith("torch.testing._internal") and module is not None
                and hasattr(module, "wrapper_set_seed")):
            module.wrapper_set_seed = _call_without_reseeding


def run_sweep(names: list[str] | None, dtypes: list[torch.dtype],
              samples: int, log=print) -> dict[str, dict[str, Any]]:
    """{op name: {dtype name: classification}} for the OpInfo ops named in
    `names` (all when None) that support each dtype on the CPU."""
    from torch.testing._internal.common_methods_invocations import op_db

    _unwrap_reseeding()

    results: dict[str, dict[str, Any]] = {}
    for op in op_db:
        name = op.name + (f".{op.variant_test_name}"
                          if op.variant_test_name else "")
        if names is not None and op.name not in names and name not in names:
            continue
        supported = op.supported_dtypes("cpu")
        for dtype in dtypes:
            if dtype not in supported:
                continue
            start = time.perf_counter()
            result = check_op(op, dtype, samples)
            result["seconds"] = round(time.perf_counter() - start, 2)
            results.setdefault(name, {})[str(dtype).replace("torch.", "")] \
                = result
            log(f"{name} {dtype}: {result['status']}"
                + (f" ({result['reason']})" if "reason" in result else ""))
    return results


def write_report(results: dict[str, dict[str, Any]], out: pathlib.Path,
                 command: str, update: bool = False) -> None:
    """Writes conformance.json and Conformance.md; with `update`, the
    results replace those of the same (op, dtype) in the existing report."""
    out.mkdir(parents=True, exist_ok=True)
    commands = [command]
    path = out / "conformance.json"
    if update and path.exists():
        old = json.loads(path.read_text())
        commands = old["commands"] + commands
        merged = old["results"]
        for name, per in results.items():
            merged.setdefault(name, {}).update(per)
        results = merged
    path.write_text(json.dumps(
        {"commands": commands, "torch": torch.__version__,
         "results": results}, indent=1, sort_keys=True) + "\n")
    dtypes = sorted({d for r in results.values() for d in r})
    statuses = ["tc", "eager", "wrong", "error", "uninitialized",
                "no samples"]
    lines = ["# OpInfo conformance of backend=\"tc\" (CPU)", "",
             "Generated by " + ", then ".join(f"`{c}`" for c in commands)
             + f" with torch {torch.__version__} "
             "(`test/conformance/sweep.py`; the statuses are explained "
             "there).", "",
             "| dtype | ops | " + " | ".join(statuses)
             + " | compiled by tc, of compared ops |",
             "| --- | --- | " + " | ".join("---" for _ in statuses)
             + " | --- |"]
    for dtype in dtypes:
        rows = [r[dtype] for r in results.values() if dtype in r]
        counts = {s: sum(1 for r in rows if r["status"] == s)
                  for s in statuses}
        compared = counts["tc"] + counts["eager"] + counts["wrong"] \
            + counts["error"]
        share = f"{100 * counts['tc'] / compared:.1f}%" if compared else "-"
        lines.append(f"| {dtype} | {len(rows)} | "
                     + " | ".join(str(counts[s]) for s in statuses)
                     + f" | {share} |")
    lines += ["", "Compared at torch's default tolerances per dtype "
              "(`torch.testing.assert_close`), except:", ""]
    lines += [f"- `{name}`: " + ", ".join(
        f"{str(d).replace('torch.', '')} rtol {t['rtol']:g} atol {t['atol']:g}"
        for d, t in tolerances.items()) + f". {why}"
        for name, (tolerances, why) in sorted(LOOSER.items())]
    for status in ("wrong", "error"):
        bad = [(name, dtype, r) for name, per in sorted(results.items())
               for dtype, r in per.items() if r["status"] == status]
        lines += ["", f"## {status} ({len(bad)})", ""]
        lines += [f"- `{name}` {dtype}: {r.get('reason', '')}"
                  for name, dtype, r in bad] or ["none"]
    lines += ["", "## Per op", "", "| op | " + " | ".join(dtypes) + " |",
              "| --- | " + " | ".join("---" for _ in dtypes) + " |"]
    for name, per in sorted(results.items()):
        lines.append(f"| `{name}` | " + " | ".join(
            (per[d]["status"] + (" (random)" if per[d].get("random") else "")
             if d in per else "") for d in dtypes) + " |")
    (out / "Conformance.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--ops", default=None,
                        help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--out", default=str(_ROOT / "docs"))
    parser.add_argument("--update", action="store_true",
                        help="merge into the report in --out")
    args = parser.parse_args()
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    names = args.ops.split(",") if args.ops else None
    results = run_sweep(names, dtypes, args.samples,
                        log=lambda s: print(s, flush=True))
    command = "python test/conformance/sweep.py " + " ".join(sys.argv[1:])
    write_report(results, pathlib.Path(args.out), command.strip(),
                 update=args.update)
    wrong = sum(1 for per in results.values() for r in per.values()
                if r["status"] == "wrong")
    print(f"wrote {args.out}/Conformance.md; {wrong} wrong results")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
