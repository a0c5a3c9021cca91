"""Shared pytest set-up for tc's Python suites.

Tests that need tc's native extension (`tc._tc`) carry the
`requires_native` marker and are skipped when it is not built (with
TC_TEST_NEEDS_NATIVE=1, as in the wheel check, the run stops instead).
"""

import logging
import os
import pathlib
import sys

import pytest

# Tests in the subfolders (which mirror python/tc's packages) import the
# shared helpers beside this file: batch_model, resnet, distributed_worker.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# Shared assertions (batch_model.assert_compiled_once_symbolic) report the
# values they compared, as a test module's own asserts do.
pytest.register_assert_rewrite("batch_model")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_native: needs the tc._tc native extension")
    config.addinivalue_line(
        "markers", "runtime_fallback: the test makes a compiled graph fail "
        "at run time on purpose")


@pytest.fixture(autouse=True)
def no_runtime_fallback(request, monkeypatch):
    """Fails any test in which a graph tc compiled raised when it ran and
    eager did the work (tc.backend.common.runtime_fallback), unless the test is
    marked `runtime_fallback`: a test that passes on eager's results is
    not a test of tc."""
    import tc.backend

    seen = []
    record = tc.backend.common.runtime_fallback

    def recording(what, error):
        seen.append(f"{what}: {type(error).__name__}: {error}")
        record(what, error)

    monkeypatch.setattr(tc.backend.common, "runtime_fallback", recording)
    yield
    if "runtime_fallback" not in request.keywords:
        assert not seen, f"tc's compiled code fell back to eager: {seen}"


def pytest_collection_modifyitems(config, items):
    import tc.compiler

    if tc.compiler.native_available():
        return
    reason = f"tc native extension unavailable: {tc.compiler.native_error()}"
    if os.environ.get("TC_TEST_NEEDS_NATIVE", "") == "1":
        # A run that tests an installed tc (utils/test.sh's wheel check):
        # skipping would pass while eager did the work.
        pytest.exit(reason, returncode=1)
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "requires_native" in item.keywords:
            item.add_marker(skip)


class _ListHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)

    @property
    def text(self):
        return "\n".join(r.getMessage() for r in self.records)


@pytest.fixture
def tc_logs():
    """Captures tc's log records with every channel enabled."""
    import tc

    handler = _ListHandler()
    logger = logging.getLogger("tc")
    tc.set_logs("all")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        tc.set_logs()


@pytest.fixture
def compiled_functions():
    """A function listing the live `tc.compiler.function.CompiledFunction`
    objects (the tests that inspect one compiled graph's state)."""
    import gc

    from tc.compiler.function import CompiledFunction

    def find():
        found = []
        for obj in gc.get_objects():
            try:
                if isinstance(obj, CompiledFunction):
                    found.append(obj)
            except ReferenceError:  # a dead weak proxy
                continue
        return found
    return find


@pytest.fixture
def fresh_tc(monkeypatch, tmp_path):
    """Zeroed counters, an empty Dynamo cache and a private cache dir."""
    import torch._dynamo

    import tc
    import tc.compiler

    monkeypatch.setenv("TC_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    tc.compiler.clear_cache()
    tc.reset_counters()
    yield tmp_path / "cache"
    torch._dynamo.reset()
