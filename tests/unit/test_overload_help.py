"""help() on an overloaded public function shows each overload's signature, not only the implementation's
(whose return type is the union of them all)."""

from __future__ import annotations

import inspect
import pydoc
import typing
from collections.abc import Callable, Iterator

import zklock
import zkwire


def _overloaded() -> Iterator[tuple[str, Callable[..., object]]]:
    for package in (zkwire, zklock):
        for name in package.__all__:
            obj = getattr(package, name)
            members = vars(obj).items() if inspect.isclass(obj) else [(name, obj)]
            for attr, member in members:
                if inspect.isfunction(member) and typing.get_overloads(member):
                    yield f"{package.__name__}.{name}.{attr}", member


OVERLOADED = dict(_overloaded())


def _help(fn: object) -> str:
    return pydoc.render_doc(fn, renderer=pydoc.plaintext)


def test_the_overloaded_ops_are_found() -> None:
    ops = {name.rsplit(".", 1)[1] for name in OVERLOADED}
    assert ops >= {"exists", "get_data", "get_children", "get_children_with_stat", "pipeline"}


def test_help_shows_each_overload() -> None:
    text = _help(zkwire.Client.get_data)
    assert "get_data(path: str, *, watch: Literal[False] = False) -> tuple[bytes, Stat]" in text
    assert "get_data(path: str, *, watch: Literal[True]) -> tuple[bytes, Stat, Watch]" in text
    for name, fn in OVERLOADED.items():
        text = _help(fn)
        for overload in typing.get_overloads(fn):
            signature = inspect.signature(overload)
            parameters = list(signature.parameters.values())[1:]  # without self
            arguments = str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))
            shown = f"{fn.__name__}{arguments} -> {signature.return_annotation}".replace("'", "")
            assert shown in text, (name, shown, text)


def test_the_docstring_keeps_its_sections() -> None:
    doc = inspect.getdoc(zkwire.Client.get_data) or ""
    assert doc.startswith("The node's data")
    assert doc.index("Overloads") < doc.index("Raises:")
