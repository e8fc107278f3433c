"""The import graph points down: protocol <- sansio <- client, and the tools (trace, shell, testing)
import the layers, never the reverse.  The SASL mechanisms (``zkwire.sasl``) sit beside the protocol:
the session core drives them, and they import neither the core nor the trio layer.  Imports are read
with ``ast`` from every module file (also those under ``if TYPE_CHECKING:``), so a module nobody
imports yet is checked too."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import zkwire

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("zkwire.trace", "zkwire.shell", "zkwire.testing", "zkwire.observing")
#: Each layer and the packages it must not import.
FORBIDDEN = {
    "zkwire.protocol": ("zkwire.sansio", "zkwire.sasl", "zkwire.client", *TOOLS),
    "zkwire.sasl": ("zkwire.protocol", "zkwire.sansio", "zkwire.client", *TOOLS),
    "zkwire.sansio": ("zkwire.client", *TOOLS),
    "zkwire.client": TOOLS,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package: str) -> list[tuple[str, Path]]:
    return sorted((_module_name(p), p) for p in (ROOT / package.replace(".", "/")).rglob("*.py"))


def _import_nodes(module: str, path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of the file -- at the top, in a function, under ``if TYPE_CHECKING:`` --
    with the absolute name of what a ``from`` import imports from ("" for a plain import)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield node, ""
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                yield node, ".".join([*base, *([node.module] if node.module else [])])
            else:
                yield node, node.module or ""


def _imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file; ``from pkg import name`` yields
    ``pkg.name`` as well as ``pkg`` (the name may be a submodule)."""
    for node, target in _import_nodes(module, path):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        else:
            yield node.lineno, target
            for alias in node.names:
                yield node.lineno, f"{target}.{alias.name}"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_module_names_resolve() -> None:
    imports = dict.fromkeys(
        target for _, target in _imports("zkwire.protocol.codec", ROOT / "zkwire/protocol/codec.py")
    )
    assert "zkwire.constants" in imports and "zkwire.protocol.optable" in imports


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_upward_import(layer: str) -> None:
    upward = [
        f"{module}:{line} imports {target}"
        for module, path in _modules(layer)
        for line, target in _imports(module, path)
        if any(_within(target, banned) for banned in FORBIDDEN[layer])
    ]
    assert upward == []


def test_protocol_uses_the_standard_library_only() -> None:
    foreign = [
        f"{module}:{line} imports {target}"
        for module, path in _modules("zkwire.protocol")
        for line, target in _imports(module, path)
        if target.partition(".")[0] not in (*sys.stdlib_module_names, "zkwire", "__future__")
    ]
    assert foreign == []


@pytest.mark.parametrize("layer", ["zkwire.protocol", "zkwire.sansio"])
def test_importing_a_lower_layer_loads_no_trio(layer: str) -> None:
    names = [module for module, _ in _modules(layer)]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('trio', 'outcome', 'sniffio')"
        " or m.startswith('zkwire.client')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("first", [module for module, _ in _modules("zkwire.protocol")])
def test_protocol_modules_import_in_any_order(first: str) -> None:
    # The op table names the multi records, which look their sub-operations up in subops, below both.
    code = (
        f"import importlib; importlib.import_module({first!r})\n"
        "from zkwire.protocol.multi import MultiOp, MultiRequest\n"
        "from zkwire.protocol.records import DeleteRequest\n"
        "from zkwire.protocol.jute import Reader\n"
        "out = bytearray(); MultiRequest((MultiOp(2, DeleteRequest('/a', -1)),)).write(out)\n"
        "assert MultiRequest.read(Reader(bytes(out))).ops[0].op == 2\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60, check=True)


def _import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Each module of ``packages`` -> the modules of ``packages`` it imports.  ``from pkg import name``
    imports the submodule ``pkg.name`` when there is one, else ``pkg`` itself (its ``__init__``); a
    package a module sits in is not counted (Python initialises it first, whoever imports what)."""
    files = {module: path for package in packages for module, path in _modules(package)}
    graph: dict[str, set[str]] = {module: set() for module in files}
    for module, path in files.items():
        for node, target in _import_nodes(module, path):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                names = [f"{target}.{a.name}" if f"{target}.{a.name}" in files else target for a in node.names]
            graph[module].update(name for name in names if name in files and name != module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative), each
    sorted, and every module that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    """No module of zkwire or zklock imports, even inside a function or under ``if TYPE_CHECKING:``, a
    module that imports it back, directly or through others: a cycle means two modules that cannot be
    read, changed or loaded one without the other."""
    graph = _import_graph(("zkwire", "zklock"))
    assert graph["zkwire.client.api"] >= {"zkwire.client.handle", "zkwire.client.nodes"}  # the graph is read
    assert "zkwire.protocol.optable" in graph["zkwire.protocol.codec"]
    assert _cycles(graph) == []


#: Modules of zkwire's tools that are public for other command lines (zklock's among them): the API
#: reference's command-line toolkit page documents them.
PUBLIC_TOOL_MODULES = {"zkwire.shell.runtime", "zkwire.shell.security", "zkwire.terminal"}
#: Public packages beside zkwire's ``__all__`` whose own ``__all__`` zklock may import (the API
#: reference documents them: api/observing).
PUBLIC_PACKAGES = {"zkwire.observing"}


@pytest.mark.parametrize("module", sorted(PUBLIC_TOOL_MODULES))
def test_public_tool_modules_are_documented(module: str) -> None:
    """A module zklock may import beside zkwire's ``__all__`` is one the API reference documents, all of
    its ``__all__``, and its names are ``__all__``'s."""
    page = (ROOT / "docs/api/cli.rst").read_text(encoding="utf-8")
    assert f".. automodule:: {module}\n   :members:\n" in page
    assert "api/cli" in (ROOT / "docs/index.rst").read_text(encoding="utf-8")
    loaded = importlib.import_module(module)
    exported = set(loaded.__all__)
    defined = {name for name, value in vars(loaded).items() if getattr(value, "__module__", module) == module}
    assert exported and exported <= set(vars(loaded))
    public = {name for name in defined if not name.startswith("_") and callable(vars(loaded)[name])}
    assert public <= exported, public - exported


def test_zklock_uses_public_zkwire_names_only() -> None:
    """zklock imports names of zkwire's ``__all__`` and the public tool modules, nothing else."""
    public = set(zkwire.__all__)
    private = []
    for module, path in _modules("zklock"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level and _within(node.module or "", "zkwire"):
                if node.module in PUBLIC_TOOL_MODULES:
                    continue
                if node.module in PUBLIC_PACKAGES:
                    exported = set(importlib.import_module(node.module).__all__)
                    private += [
                        f"{module}:{node.lineno} imports {node.module}.{a.name}"
                        for a in node.names
                        if a.name not in exported
                    ]
                    continue
                if node.module != "zkwire":
                    private.append(f"{module}:{node.lineno} imports from {node.module}")
                else:
                    private += [
                        f"{module}:{node.lineno} imports zkwire.{a.name}" for a in node.names if a.name not in public
                    ]
            elif isinstance(node, ast.Import):
                private += [
                    f"{module}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if _within(a.name, "zkwire.") and a.name not in PUBLIC_TOOL_MODULES
                ]
    assert private == []
