"""max-autotune's choice (tc.compiler.autotune._Autotuned), on the CPU with
planted timings: the GPU tests (test_cuda.py's max-autotune ones) time
real schedules; these check the rule that picks among them."""

import json

import pytest
import torch

import tc
from tc.compiler import autotune


class _Function:
    """A CompiledFunction stand-in: runs its candidate's `native`."""

    def __init__(self, variant, native):
        self.variant, self.native = variant, native
        self.device = torch.device("cpu")

    def draw_seed(self):
        return None

    def stage_inputs(self):
        pass

    def __call__(self, *args, **kwargs):
        return self.native(*args)


def _tuned(tmp_path, monkeypatch, candidates, milliseconds):
    """An _Autotuned over `candidates` (variant -> function of the input)
    whose timings are `milliseconds` (variant -> ms), after its first
    call; and that call's result."""
    natives = {variant: (variant, fn) for variant, fn in candidates.items()}
    monkeypatch.setattr(
        autotune, "_time",
        lambda function, inputs, extra, device:
        milliseconds[function.variant] / 1e3)
    tuned = autotune._Autotuned(natives, tmp_path / "record.json",
                                lambda native: _Function(*native))
    tc.reset_counters()
    x = torch.randn(64)
    return tuned, tuned(x), x


def _double(x):
    return x * 2


def test_the_fastest_candidate_that_agrees_is_chosen(tmp_path, monkeypatch):
    tuned, out, x = _tuned(
        tmp_path, monkeypatch,
        {"": _double, "vector-width=2": _double,
         "max-block-size=1024": lambda x: x * 2 + 1},
        {"": 1.0, "vector-width=2": 0.8, "max-block-size=1024": 0.1})
    # The wrong candidate is the fastest, and is not used.
    assert tuned.choice == "vector-width=2"
    torch.testing.assert_close(out, x * 2)
    assert tc.counters["autotuned_graphs"] == 1
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["choice"] == "vector-width=2"
    assert set(record["milliseconds"]) == {"default", "vector-width=2"}


def test_a_gain_within_noise_keeps_the_default(tmp_path, monkeypatch):
    gain = autotune._Autotuned.MIN_GAIN / 2
    tuned, _, _ = _tuned(tmp_path, monkeypatch,
                         {"": _double, "vector-width=2": _double},
                         {"": 1.0, "vector-width=2": 1.0 - gain})
    assert tuned.choice == ""


def test_a_failing_candidate_is_skipped(tmp_path, monkeypatch):
    def broken(x):
        raise RuntimeError("planted")

    tuned, out, x = _tuned(tmp_path, monkeypatch,
                           {"": _double, "vector-width=2": broken},
                           {"": 1.0, "vector-width=2": 0.1})
    assert tuned.choice == ""
    torch.testing.assert_close(out, x * 2)


@pytest.mark.parametrize("variant", ["", "vector-width=2"])
def test_one_candidate_is_not_timed(tmp_path, monkeypatch, variant):
    def never(*args):
        raise AssertionError("timed")

    monkeypatch.setattr(autotune, "_time", never)
    tuned = autotune._Autotuned({variant: (variant, _double)},
                                tmp_path / "record.json",
                                lambda native: _Function(*native))
    x = torch.randn(8)
    torch.testing.assert_close(tuned(x), x * 2)
    assert tuned.choice == variant
    assert not (tmp_path / "record.json").exists()
