"""The Python examples of the documentation, and what a fragment runs with.

Examples are taken from the pages under ``docs/``, from README.md and from the docstrings of the modules
in ``DOCSTRING_MODULES``.  Three kinds (:attr:`Example.kind`): a complete program (it calls ``trio.run``
or ``asyncio.run``), a test module for an application's suite (``def test_``), and a fragment: lines of
an async function with ``zk`` (a client), ``stream`` (a sessions stream), ``lock`` (a mutex) and the
stand-ins of :data:`PRELUDE` (``serve``, ``work``, ``apply``...) in scope.  :func:`fragment_module` is
that function, as source: ``tests/tools/test_docs_examples.py`` runs it, ``tests/unit/test_typing_docs.py``
type-checks it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]
DOCSTRING_MODULES = [
    "zkwire.client.nodes",
    "zkwire.client.retry",
    "zkwire.client.continuity",
    "zkwire.client.nodewatch",
    "zkwire.client.treecache",
    "zkwire.client.aio",
    "zkwire.client.api",
    "zkwire.client.handle",
    "zklock.recipe",
    "zklock.lease",
]

#: What a fragment finds besides its arguments: the packages and typed stand-ins for the application.
PRELUDE = """\
import trio

import zklock
import zkwire

DEFAULT = b""


def apply(*args: object) -> None:
    pass


def rebalance(*args: object) -> None:
    pass


async def serve(*args: object) -> None:
    await trio.sleep(0.01)


work = do_the_job = serve
"""
_FRAGMENT_HEAD = (
    "async def __example(zk: zkwire.Client, stream: zkwire.Sessions, lock: zklock.Mutex) -> None:\n"
    "    async def __body() -> None:\n"
)
_FRAGMENT_TAIL = "\n    await __body()\n"
#: The line of a fragment's module where the fragment's own first line is.
FRAGMENT_FIRST_LINE = PRELUDE.count("\n") + _FRAGMENT_HEAD.count("\n") + 1


@dataclass(frozen=True)
class Example:
    """One example: ``where`` names it (the test id), ``line`` is where its code starts in ``file``
    (None for a docstring's)."""

    where: str
    code: str
    file: Path | None = None
    line: int | None = None

    @property
    def kind(self) -> Literal["test", "program", "fragment"]:
        if "def test_" in self.code:
            return "test"
        if "trio.run(" in self.code or "asyncio.run(" in self.code:
            return "program"
        return "fragment"

    def locate(self, line: int) -> str:
        """Where line ``line`` of the code (from 1) is, for a message."""
        if self.file is not None and self.line is not None:
            return f"{self.file.relative_to(ROOT)}:{self.line + line - 1}"
        return f"{self.where}, line {line}"


def fragment_module(code: str) -> str:
    """A module defining ``__example(zk, stream, lock)``, the fragment's body, after :data:`PRELUDE`."""
    return PRELUDE + _FRAGMENT_HEAD + textwrap.indent(code, "        ") + _FRAGMENT_TAIL


def _rst_blocks(path: Path) -> Iterator[Example]:
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in (".. code-block:: python", ".. code-block:: python3"):
            start = i + 1
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                i += 1
            first = next(n for n in range(start, i + 1) if n == i or lines[n].strip())
            code = textwrap.dedent("\n".join(lines[start:i])).strip("\n")
            yield Example(f"{path.relative_to(ROOT)}:{start}", code, path, first + 1)
        else:
            i += 1


def _markdown_blocks(path: Path) -> Iterator[Example]:
    text = path.read_text()
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        line = text[: m.start()].count("\n") + 1
        yield Example(f"{path.relative_to(ROOT)}:{line}", m.group(1), path, line + 1)


def _literal_blocks(doc: str) -> Iterator[str]:
    """The ``::`` literal blocks of a docstring."""
    lines = inspect.cleandoc(doc).splitlines()
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith("::"):
            i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            code = textwrap.dedent("\n".join(block)).strip("\n")
            if code:
                yield code
        else:
            i += 1


def _docstrings(module: types.ModuleType) -> Iterator[tuple[str, str]]:
    if module.__doc__:
        yield module.__name__, module.__doc__
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            if obj.__doc__:
                yield f"{module.__name__}.{name}", obj.__doc__
            for attr, member in vars(obj).items():
                doc = getattr(member, "__doc__", None)
                if callable(member) and doc:
                    yield f"{module.__name__}.{name}.{attr}", doc
        elif inspect.isfunction(obj) and obj.__doc__:
            yield f"{module.__name__}.{name}", obj.__doc__


def examples() -> list[Example]:
    """Every Python example of the documentation (blocks that do not parse as Python are left out)."""
    found: list[Example] = []
    for page in sorted((ROOT / "docs").rglob("*.rst")):
        found.extend(_rst_blocks(page))
    found.extend(_markdown_blocks(ROOT / "README.md"))
    for name in DOCSTRING_MODULES:
        module = importlib.import_module(name)
        for where, doc in _docstrings(module):
            for n, code in enumerate(_literal_blocks(doc)):
                found.append(Example(f"{where} (example {n + 1})", code))
    return [example for example in found if _is_python(example.code)]


def _is_python(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        try:  # a fragment with top-level await
            compile(code, "<example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError:
            return False
    return True
