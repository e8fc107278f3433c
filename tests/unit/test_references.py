"""Every docstring and document that names a zkwire or zklock module or attribute names one that exists.

Read without a server: the docstrings of every module under ``zkwire/`` and ``zklock/`` (module, class
and function docstrings, attribute docstrings and ``#:`` comments, read with ``ast``), ``docs/**/*.rst``,
``README.md``, ``CONTRIBUTING.md``, ``protocol-notes/*.md``, ``bench/README.md`` and the Unreleased section of
``CHANGELOG.md``.  A reference is a Sphinx role (``:mod:``, ``:class:``, ``:func:``, ``:meth:``,
``:data:``, ``:attr:``, ``:exc:``, ``:obj:``), an autodoc directive, or a dotted name starting with
``zkwire.`` or ``zklock.``.  It resolves when the longest importable module prefix imports and ``getattr``
finds the rest; a name without a package prefix is looked up as Sphinx would (the enclosing class, the
module, the packages above it), then among the public names of ``zkwire`` and ``zklock``.  A path under
``zkwire/``, ``zklock/``, ``tests/``, ``bench/`` or ``examples/`` to a module file (``tests/helpers/ops.py``) or
to a folder, written with its trailing slash (``tests/server/ops/``), resolves when it exists.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("zkwire", "zklock")

_ROLE = re.compile(r":(?:py:)?(mod|class|func|meth|data|attr|exc|obj|const):`([^`]+)`")
_AUTODOC = re.compile(r"^\s*\.\. auto(?:module|class|function|exception|data|attribute|method)::\s*(\S+)", re.M)
_DOTTED = re.compile(r"(?<![\w./~-])((?:zkwire|zklock)(?:\.[A-Za-z_]\w*)+)")
_PATH = re.compile(r"(?<![\w./-])((?:zkwire|zklock|tests|bench|examples)/(?:[\w-]+/)*[\w-]+\.py)\b")
#: A folder, written with its trailing slash (``tests/server/ops/``).
_FOLDER = re.compile(r"(?<![\w./-])((?:zkwire|zklock|tests|bench|examples)/(?:[\w-]+/)+)(?![\w.-])")
_LOGGER_ROW = re.compile(r"^\s*\* - ``([\w.]+)``", re.M)

#: Module paths the changelog records as moved or removed (``zkwire.codec`` -> ``zkwire.protocol.codec``).
_FORMER_MODULES = {"zkwire.codec", "zkwire.session", "zkwire.tracer", "zkwire.cli", "zkwire.embedded"}

#: Known stale references, ``(file, target)``, left to the owners of files being edited elsewhere.  Each is an
#: error to fix in that file; the entry then goes (a test fails while an entry is no longer stale).
_KNOWN_STALE: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Reference:
    where: str  # "path:line"
    target: str  # the dotted name, as written (``~`` and ``()`` removed), a path to a module file or a folder
    scopes: tuple[str, ...]  # where a name without a package prefix is looked up, innermost first
    line: str  # the text around it, for the exemptions

    @property
    def is_path(self) -> bool:
        return self.target.endswith((".py", "/"))

    @property
    def file(self) -> str:
        return self.where.rpartition(":")[0]


def _logger_names() -> set[str]:
    return set(_LOGGER_ROW.findall((ROOT / "docs" / "logging.rst").read_text(encoding="utf-8")))


LOGGERS = _logger_names()


def _enclosing_scopes(qualname: str) -> tuple[str, ...]:
    """``a.b.C`` -> ``("a.b.C", "a.b", "a")``: the class or module, then the packages above it."""
    parts = qualname.split(".")
    return tuple(".".join(parts[:n]) for n in range(len(parts), 0, -1))


def _references_in_text(text: str, where: str, first_line: int, scopes: tuple[str, ...]) -> Iterator[Reference]:
    lines = text.splitlines()

    def at(offset: int) -> tuple[str, str]:
        index = text.count("\n", 0, offset)
        return f"{where}:{first_line + index}", lines[index] if index < len(lines) else ""

    roles: list[tuple[int, int]] = []
    for match in _ROLE.finditer(text):
        roles.append(match.span())
        target = " ".join(match[2].split())
        if "<" in target and target.endswith(">"):  # :func:`title <target>`
            target = target[target.rindex("<") + 1 : -1]
        target = target.lstrip("~!").removesuffix("()")
        loc, line = at(match.start())
        yield Reference(loc, target, scopes, line)
    for match in _AUTODOC.finditer(text):
        loc, line = at(match.start(1))
        yield Reference(loc, match[1], (), line)
    for match in _DOTTED.finditer(text):
        if any(start <= match.start() < end for start, end in roles):
            continue
        loc, line = at(match.start())
        yield Reference(loc, match[1], (), line)
    for match in (*_PATH.finditer(text), *_FOLDER.finditer(text)):
        loc, line = at(match.start())
        yield Reference(loc, match[1], (), line)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _docstring_references(path: Path) -> Iterator[Reference]:
    """References in the docstrings (and ``#:`` comments) of one module, each with its lookup scopes."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path))
    module = _module_name(path)
    where = str(path.relative_to(ROOT))
    classes: list[tuple[int, int, str]] = []  # (first line, last line, qualified name) of every class

    def strings(body: list[ast.stmt]) -> Iterator[ast.Constant]:
        """The docstring and the attribute docstrings of a body."""
        for index, statement in enumerate(body):
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
                and (index == 0 or isinstance(body[index - 1], ast.Assign | ast.AnnAssign))
            ):
                yield statement.value

    def visit(node: ast.AST, scope: str) -> Iterator[Reference]:
        """The references in the docstrings of ``node`` and below; ``scope`` is where names are looked up."""
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for constant in strings(node.body):
                yield from _references_in_text(str(constant.value), where, constant.lineno, _enclosing_scopes(scope))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                qualname = f"{scope}.{child.name}"
                classes.append((child.lineno, child.end_lineno or child.lineno, qualname))
                yield from visit(child, qualname)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                # A method's names are looked up in its class; a nested function's in its module.
                yield from visit(child, scope if isinstance(node, ast.ClassDef | ast.Module) else module)
            else:
                yield from visit(child, scope)

    yield from list(visit(tree, module))  # all of it first: the comments below need every class's lines

    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.string.startswith("#:"):
            line = token.start[0]
            inside = [c for c in classes if c[0] <= line <= c[1]]
            scope = max(inside, key=lambda c: c[0])[2] if inside else module
            yield from _references_in_text(token.string[2:], where, line, _enclosing_scopes(scope))


def _changelog_unreleased() -> str:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    start = text.index("## [Unreleased]")
    end = text.find("\n## [", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _document_references() -> Iterator[Reference]:
    documents = [
        *sorted((ROOT / "docs").rglob("*.rst")),
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *sorted((ROOT / "protocol-notes").glob("*.md")),
        ROOT / "bench" / "README.md",
    ]
    default_scopes = PACKAGES
    for path in documents:
        where = str(path.relative_to(ROOT))
        yield from _references_in_text(path.read_text(encoding="utf-8"), where, 1, default_scopes)
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = _changelog_unreleased()
    first_line = text[: text.index(unreleased)].count("\n") + 1
    yield from _references_in_text(unreleased, "CHANGELOG.md", first_line, default_scopes)


@functools.cache
def all_references() -> tuple[Reference, ...]:
    references = [r for path in _source_files() for r in _docstring_references(path)]
    return (*references, *_document_references())


def _import_longest_prefix(name: str) -> tuple[object, list[str]] | None:
    """The module named by the longest importable prefix of ``name``, and the rest of the name."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        module_name = ".".join(parts[:n])
        try:
            if importlib.util.find_spec(module_name) is None:
                continue
        except (ImportError, ValueError):
            continue
        return importlib.import_module(module_name), parts[n:]
    return None


def _has_attribute(owner: object, name: str) -> bool:
    """``getattr`` for modules and classes, plus what a class declares but does not hold: annotated
    fields without a default, ``__slots__`` and attributes its methods assign to ``self``."""
    if hasattr(owner, name):
        return True
    if not isinstance(owner, type):
        return False
    for cls in owner.__mro__:
        if name in getattr(cls, "__annotations__", {}) or name in getattr(cls, "__slots__", ()):
            return True
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{re.escape(name)}\s*(?::[^=\n]+)?=[^=]", source):
            return True
    return False


@functools.cache
def resolves(name: str) -> bool:
    found = _import_longest_prefix(name)
    if found is None:
        return False
    owner, rest = found
    for attribute in rest:
        if not _has_attribute(owner, attribute):
            return False
        owner = getattr(owner, attribute, None)
    return True


def _resolve(reference: Reference) -> bool:
    target = reference.target
    if reference.is_path:
        return (ROOT / target).is_dir() if target.endswith("/") else (ROOT / target).is_file()
    if target.startswith("."):  # relative: a sibling of the enclosing module, or anything ending so
        return any(resolves(scope + target) for scope in reference.scopes)
    if target.split(".")[0] in PACKAGES:
        return resolves(target)
    scopes = (*reference.scopes, *PACKAGES)
    if any(resolves(f"{scope}.{target}") for scope in scopes):
        return True
    # Not ours after all (``:mod:`logging```, ``:class:`trio.abc.Stream```): only check it imports.
    head = target.split(".")[0]
    return importlib.util.find_spec(head) is not None and resolves(target)


def _telemetry_names() -> frozenset[str]:
    """The OpenTelemetry adapter's metric and attribute names (``zkwire.lock.grants``...): names, not
    references."""
    try:
        from zkwire.observing import otel
    except ImportError:  # no opentelemetry-api: the names are not checked
        return frozenset()
    return otel.METRICS | otel.ATTRIBUTES


TELEMETRY_NAMES = _telemetry_names()


def _exempt(reference: Reference) -> bool:
    if reference.target in TELEMETRY_NAMES:
        return True
    if reference.target in LOGGERS and (reference.file == "docs/logging.rst" or "log" in reference.line.lower()):
        return True
    if reference.file == "CHANGELOG.md" and reference.target in _FORMER_MODULES:
        return True
    return (reference.file, reference.target) in _KNOWN_STALE


def test_references_are_found() -> None:
    """The scan sees the references it is meant to check (a broken scan would pass vacuously)."""
    references = all_references()
    files = {r.file for r in references}
    assert len(references) > 500
    assert {"README.md", "docs/logging.rst", "CHANGELOG.md", "zkwire/__init__.py", "zklock/__init__.py"} <= files
    targets = {r.target for r in references}
    assert {"zkwire.protocol", "zkwire.client.aio", "zklock.Mutex"} <= targets
    assert {"tests/server/ops/", "tests/server/quirks/", "tests/nemesis/checker/"} <= targets  # folders too


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("zkwire.client.api.Client.multi", True),
        ("zkwire.Client", True),
        ("zkwire.sansio.hosts.parse_host_port", True),
        ("zkwire.codec", False),
        ("zkwire.client.api.Client.no_such_method", False),
        ("zkwire.testing.base.ServerOptions.container_env", True),
    ],
)
def test_resolves(name: str, expected: bool) -> None:
    assert resolves(name) is expected


def test_relative_and_bare_names_resolve_in_their_scope() -> None:
    assert _resolve(Reference("x:1", ".netns", ("zkwire.testing", "zkwire"), ""))
    assert _resolve(Reference("x:1", "multi", ("zkwire.client.api.Client", "zkwire.client.api"), ""))
    assert _resolve(Reference("x:1", "Client", ("zkwire.client.connection",), ""))  # a public name
    assert not _resolve(Reference("x:1", "no_such_name", ("zkwire.client.api",), ""))


def test_every_reference_resolves() -> None:
    stale = sorted(f"{r.where}: {r.target}" for r in all_references() if not _exempt(r) and not _resolve(r))
    assert stale == []


def test_known_stale_entries_are_still_stale() -> None:
    """An entry of :data:`_KNOWN_STALE` whose reference was fixed is removed, so that it is guarded again."""
    references = all_references()
    fixed = sorted(
        entry for entry in _KNOWN_STALE if not any((r.file, r.target) == entry and not _resolve(r) for r in references)
    )
    assert fixed == []
