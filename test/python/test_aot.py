"""Ahead-of-time export (`tc.aot`) and its C++ runtime (`libtc_aot`).

Each test exports a model with `tc.aot.export`, writes random inputs and
eager PyTorch's outputs to files, and runs the C++ test program
`tc-aot-test` (test/AOT/tc-aot-test.cpp, linked against libtc_aot only),
which loads the folder, runs the graph twice and compares.
"""

import ctypes
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc
import tc.aot

pytestmark = pytest.mark.requires_native


def _raw(tensors):
    return b"".join(
        ctypes.string_at(t.contiguous().data_ptr(),
                         t.numel() * t.element_size()) for t in tensors)


def _run_cpp(folder, inputs, expected, rtol=1e-4, atol=1e-5):
    (folder / "inputs.bin").write_bytes(_raw(inputs))
    (folder / "expected.bin").write_bytes(_raw(expected))
    done = subprocess.run(
        [str(tc.build_dir() / "bin" / "tc-aot-test"), str(folder),
         str(folder / "inputs.bin"), str(folder / "expected.bin"),
         str(rtol), str(atol)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
    return done.stdout


def _export_and_check(model, inputs, tmp_path, **tolerances):
    model.eval()
    folder = tc.aot.export(model, inputs, tmp_path / "model.tc")
    with torch.no_grad():
        expected = model(*inputs)
    if isinstance(expected, torch.Tensor):
        expected = [expected]
    return _run_cpp(folder, inputs, expected, **tolerances)


class MLP(nn.Module):
    """Seed 004's 3-layer MLP."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(),
                                    nn.Linear(1024, 1024), nn.ReLU(),
                                    nn.Linear(1024, 10))

    def forward(self, x):
        return self.layers(x)


def test_mlp_runs_from_cpp(tmp_path):
    torch.manual_seed(0)
    out = _export_and_check(MLP(), (torch.randn(128, 1024),), tmp_path)
    assert "1280 elements" in out
    manifest = (tmp_path / "model.tc" / "model.manifest").read_text()
    assert manifest.count("argument weight") == 6
    assert "argument input x f32 128 1024" in manifest


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.gelu(self.conv2(x))
        return self.fc(x.flatten(1))


def test_convnet_runs_from_cpp(tmp_path):
    torch.manual_seed(0)
    model = ConvNet()
    # Non-trivial running statistics, so that eval()'s batch norm matters.
    model.bn1.running_mean.uniform_(-0.5, 0.5)
    model.bn1.running_var.uniform_(0.5, 2.0)
    _export_and_check(model, (torch.randn(2, 3, 16, 16),), tmp_path,
                      rtol=1e-4, atol=1e-4)


class TwoInTwoOut(nn.Module):
    """Several inputs and outputs, an integer output and a constant."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 5)
        self.register_buffer("shift", torch.linspace(-1, 1, 5))

    def forward(self, x, y):
        h = torch.softmax(self.proj(x) + self.shift, dim=-1) * y.sum()
        return h, h.argmax(dim=-1), torch.cumsum(y, 0).double()


def test_several_inputs_and_outputs(tmp_path):
    torch.manual_seed(0)
    _export_and_check(TwoInTwoOut(), (torch.randn(7, 6), torch.randn(3)),
                      tmp_path)


def test_cpp_runtime_needs_neither_python_nor_mlir():
    """The test program and libtc_aot link no Python, PyTorch or MLIR."""
    done = subprocess.run(["ldd", str(tc.build_dir() / "bin" / "tc-aot-test")],
                          capture_output=True, text=True)
    assert done.returncode == 0
    libraries = [line.split()[0] for line in done.stdout.splitlines()
                 if line.strip()]
    assert "libtc_aot.so" in libraries
    for library in libraries:
        for name in ("python", "torch", "MLIR", "LLVM"):
            assert name not in library, done.stdout


def test_unsupported_models_are_clear_errors(tmp_path):
    class Svd(nn.Module):
        def forward(self, x):
            return torch.linalg.svdvals(x)

    with pytest.raises(tc.aot.AOTError, match="could not compile"):
        tc.aot.export(Svd(), (torch.randn(4, 4),), tmp_path / "svd")

    class Training(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)

        def forward(self, x):
            return self.bn(x)

    with pytest.raises(tc.aot.AOTError, match="eval"):
        tc.aot.export(Training().train(), (torch.randn(3, 4),),
                      tmp_path / "bn")


def test_corrupt_folder_is_an_error(tmp_path):
    """A plan that does not match the manifest fails to load, with which
    file is wrong."""
    torch.manual_seed(0)
    model = TwoInTwoOut().eval()
    inputs = (torch.randn(7, 6), torch.randn(3))
    folder = tc.aot.export(model, inputs, tmp_path / "model.tc")
    manifest = folder / "model.manifest"
    manifest.write_text(manifest.read_text().replace("argument input y",
                                                     "argument inpt y"))
    (folder / "inputs.bin").write_bytes(_raw(inputs))
    (folder / "expected.bin").write_bytes(_raw(model(*inputs)))
    done = subprocess.run(
        [str(tc.build_dir() / "bin" / "tc-aot-test"), str(folder),
         str(folder / "inputs.bin"), str(folder / "expected.bin")],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "model.manifest:" in done.stderr and "malformed" in done.stderr
