"""The import graph points down: protocol <- sansio <- client, and the tools (trace, shell, testing)
import the layers, never the reverse.  Imports are read with ``ast`` from every module file (also those
under ``if TYPE_CHECKING:``), so a module nobody imports yet is checked too."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import zkwire

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("zkwire.trace", "zkwire.shell", "zkwire.testing")
#: Each layer and the packages it must not import.
FORBIDDEN = {
    "zkwire.protocol": ("zkwire.sansio", "zkwire.client", *TOOLS),
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


def _imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file; ``from pkg import name`` yields
    ``pkg.name`` as well as ``pkg`` (the name may be a submodule)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
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


#: Modules of zkwire's tools that are public for other command lines (zklock's among them).
PUBLIC_TOOL_MODULES = {"zkwire.shell.runtime", "zkwire.terminal"}


def test_zklock_uses_public_zkwire_names_only() -> None:
    """zklock imports names of zkwire's ``__all__`` and the public tool modules, nothing else."""
    public = set(zkwire.__all__)
    private = []
    for module, path in _modules("zklock"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level and _within(node.module or "", "zkwire"):
                if node.module in PUBLIC_TOOL_MODULES:
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
