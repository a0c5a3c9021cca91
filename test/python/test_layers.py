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


def _private_uses(path: pathlib.Path, name: str,
                  modules: dict[str, pathlib.Path]) -> list[str]:
    """Private names (`_x`) of other tc modules that `path` uses: imported
    (`from tc.m import _x`) or read through a module (`m._x`)."""
    tree = ast.parse(path.read_text())
    aliases: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "tc":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in modules:
                    aliases[alias.asname or alias.name] = full
                elif alias.name.startswith("_") and \
                        not alias.name.startswith("__"):
                    found.append(f"line {node.lineno}: {full}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tc":
                    aliases[alias.asname or "tc"] = (
                        alias.name if alias.asname else "tc")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            continue
        base, chain = node.value, []
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and base.id in aliases:
            owner = ".".join([aliases[base.id], *reversed(chain)])
            if owner in modules and owner != name:
                found.append(f"line {node.lineno}: {owner}.{node.attr}")
    return found


def test_no_private_name_crosses_modules():
    """A name one module uses from another is public (docs/Python.md):
    `_x` stays inside its module."""
    modules = _modules()
    found = {name: uses for name, path in modules.items()
             if (uses := _private_uses(path, name, modules))}
    assert not found, found


def test_the_check_finds_a_private_use(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import tc.backend.common\n"
                      "from tc.logs import _handler\n"
                      "tc.backend.common._fallbacks.info('x')\n")
    uses = _private_uses(module, "tc.m", _modules())
    assert uses == ["line 2: tc.logs._handler",
                    "line 3: tc.backend.common._fallbacks"], uses
