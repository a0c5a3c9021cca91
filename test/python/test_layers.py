"""The Python package stays layered: no module imports, directly or
through others, a module that imports it (docs/Python.md). Imports inside
functions count: a lazy import is a cycle all the same."""

import ast
import pathlib

import tc

PACKAGE = pathlib.Path(tc.__file__).resolve().parent


def _modules() -> dict[str, pathlib.Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _imports(path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set:
    """The tc modules `path` imports (a name imported from a package is
    its submodule when there is one, else the package)."""
    def owner(name: str) -> str:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "tc":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else owner(node.module))
        elif isinstance(node, ast.Import):
            found |= {owner(a.name) for a in node.names
                      if a.name.split(".")[0] == "tc"}
    return found - {"tc"}


def _edges(modules: dict[str, pathlib.Path]) -> dict[str, set]:
    """Module -> what importing it runs first: its imports, and the
    packages above each (importing tc.a.b runs tc/a/__init__), except the
    module's own packages (a package's modules import their siblings)."""
    edges = {}
    for name, path in modules.items():
        out = set()
        for target in _imports(path, modules) - {name}:
            out.add(target)
            parts = target.split(".")
            for i in range(2, len(parts)):
                parent = ".".join(parts[:i])
                if parent in modules and not name.startswith(parent + "."):
                    out.add(parent)
        edges[name] = out - {name}
    return edges


def _cycles(edges: dict[str, set]) -> list[list[str]]:
    state, stack, cycles = {}, [], []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for target in sorted(edges.get(name, ())):
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name)
    return cycles


def test_no_import_cycles():
    modules = _modules()
    assert "tc.backend.partition" in modules and "tc.compiler.build" in \
        modules, "the package layout moved: update this test"
    cycles = _cycles(_edges(modules))
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}})
    assert not _cycles({"a": {"b"}, "b": {"c"}, "c": set()})
