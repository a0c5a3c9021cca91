"""Checked-in generated files must match what their generators produce."""

import filecmp
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "utils"))
import gen_aten_schemas  # noqa: E402


def _table_version() -> str:
    text = (ROOT / "lib/Dialect/FX/IR/ATenSchemas.inc").read_text()
    marker = 'TC_ATEN_TORCH_VERSION("'
    start = text.index(marker) + len(marker)
    return text[start:text.index('"', start)]


def test_aten_schema_table_is_fresh():
    installed = torch.__version__.split("+")[0]
    if installed != _table_version():
        pytest.skip(f"table is for torch {_table_version()}, "
                    f"installed is {installed}")
    result = subprocess.run(
        [sys.executable, str(ROOT / "utils/gen_aten_schemas.py"), "--check"],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_stale_table_is_detected(tmp_path):
    stale = tmp_path / "ATenSchemas.inc"
    stale.write_text(gen_aten_schemas.render().replace(
        'TC_ATEN_SCHEMA("aten::sin"', 'TC_ATEN_SCHEMA("aten::sine"'))
    result = subprocess.run(
        [sys.executable, str(ROOT / "utils/gen_aten_schemas.py"), "--check",
         "-o", str(stale)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "stale" in result.stderr


def test_table_maps_schema_types():
    assert gen_aten_schemas.arg_kind("Tensor") == ("T", False)
    assert gen_aten_schemas.arg_kind("Optional[Tensor]") == ("T?", True)
    assert gen_aten_schemas.arg_kind("List[Optional[Tensor]]") == ("T?[]", False)
    assert gen_aten_schemas.arg_kind("Optional[List[int]]") == ("i[]", True)
    assert gen_aten_schemas.arg_kind("Optional[ScalarType]") == ("dtype", True)
    assert gen_aten_schemas.arg_kind("Layout") == ("other", False)


def test_tc_op_schemas_match_the_cpp_table():
    """tc's own ops (torch.library, defined in Python) have their schemas in
    ATenSchemas.cpp's kTcSchemas too: the importer's and the verifier's."""
    import re
    from tc.rows import attention_op
    text = (ROOT / "lib/Dialect/FX/IR/ATenSchemas.cpp").read_text()
    text = re.sub(r'"\s*"', "", text)  # C++'s adjacent literals, joined
    args, rets = gen_aten_schemas.schema_fields(attention_op()._schema)
    assert f'{{"tc::attention",\n     "{args}",\n     "{rets}"}}' in text


@pytest.mark.parametrize("doc", ["FXDialect", "PrimDialect", "KernelDialect"])
def test_dialect_docs_are_fresh(doc):
    import tc
    generated = tc.build_dir() / "docs" / "Dialects" / f"{doc}.md"
    assert generated.exists(), "build the tc-doc target"
    assert filecmp.cmp(generated, ROOT / "docs" / "Dialects" / f"{doc}.md",
                       shallow=False), "run utils/update_docs.sh"
