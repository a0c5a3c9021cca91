"""The one list of ATen ops tc decomposes: tc-decompose's table
(include/tc/Conversion/FXToPrim/Decompositions.def), which tc.support
reads through tc._runtime and `tc-opt --tc-list-decompositions` prints."""

import pathlib
import re
import subprocess

import pytest

import tc
from tc import compiler
from tc.importer import RANDOM_OPS
from tc.support import SUPPORTED_OPS, VALUE_GUARDS, VIEW_OPS

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Ops the complex family (ComplexAndFFT.cpp) names that only complex
#: operands reach: PyTorch's conjugate and negative views, resolved on the
#: (real, imaginary) pairs before the table is consulted.
_COMPLEX_ONLY = {"aten::resolve_conj", "aten::resolve_neg"}

needs_native = pytest.mark.skipif(
    not compiler.decomposition_table(), reason="tc's native code not built")


@needs_native
def test_tc_opt_and_the_runtime_list_the_same_table():
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt not built")
    listed = subprocess.run([str(tc.tc_opt_path()),
                             "--tc-list-decompositions"], check=True,
                            capture_output=True, text=True).stdout
    rows = [line.split() for line in listed.splitlines()]
    table = compiler.decomposition_table()
    assert {row[0]: {"family": row[1], "symbolic": row[2:] == ["symbolic"]}
            for row in rows} == table
    assert len(rows) == len(table)  # no op listed twice
    assert SUPPORTED_OPS == set(table)


@needs_native
def test_every_op_the_decomposer_names_is_in_the_table():
    """A decomposition added to lib/Conversion/FXToPrim/ without its line in
    Decompositions.def would never run (tc-decompose refuses ops outside the
    table, and tc.support never offers them): this catches it."""
    named = set()
    for path in (ROOT / "lib/Conversion/FXToPrim").glob("*.cpp"):
        named |= set(re.findall(r'\btarget\s*==\s*"(aten::[\w.]+)"',
                                path.read_text()))
    assert named, "no `target == \"aten::...\"` found: the scan is stale"
    assert named - _COMPLEX_ONLY <= SUPPORTED_OPS, sorted(
        named - _COMPLEX_ONLY - SUPPORTED_OPS)


@needs_native
def test_python_properties_name_only_table_ops():
    """The lists Python keeps are properties of ops in the table, never
    ops of their own."""
    assert RANDOM_OPS <= SUPPORTED_OPS
    assert VIEW_OPS <= SUPPORTED_OPS
    assert set(VALUE_GUARDS) <= SUPPORTED_OPS


@needs_native
def test_each_op_is_given_to_the_family_that_decomposes_it():
    """Decompositions.def names each op's family, the file tc-decompose
    hands it to: every family has its file, and an op that one family file
    alone names (`target == "aten::..."`) belongs to that family. (Complex
    operands go to ComplexAndFFT.cpp first, whatever the family; a boolean
    mask's index_put goes to MasksAndSegments.cpp, which hands index
    tensors on to Indexing.cpp.)"""
    folder = ROOT / "lib/Conversion/FXToPrim"
    table = compiler.decomposition_table()
    families = {entry["family"] for entry in table.values()}
    assert all((folder / f"{family}.cpp").exists() for family in families)
    named_by: dict[str, set[str]] = {}
    for path in folder.glob("*.cpp"):
        if path.stem == "ComplexAndFFT":
            continue
        for op in re.findall(r'\btarget\s*==\s*"(aten::[\w.]+)"',
                             path.read_text()):
            named_by.setdefault(op, set()).add(path.stem)
    misplaced = {op: (table[op]["family"], files)
                 for op, files in named_by.items()
                 if len(files) == 1 and op in table
                 and table[op]["family"] not in files}
    assert not misplaced, misplaced
