"""Overloads shown by ``help()``: pydoc shows an overloaded function's implementation, whose return type
is the union of all its overloads; :func:`document_overloads` adds each overload's signature to the
docstring, at import time.  (Sphinx shows the overloads itself: ``docs/conf.py`` leaves the block out.)
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import TypeVar

__all__ = ["HEADING", "document_overloads"]

F = TypeVar("F", bound=Callable[..., object])

#: The line that opens the block of overloads in a docstring.
HEADING = "Overloads (the result's type follows the arguments)::"


def document_overloads(func: F) -> F:
    """Decorate the implementation of an overloaded function (below its ``@overload`` forms) to list the
    forms in its docstring, before its "Raises:" section if it has one.  Returns ``func`` itself."""
    forms = [_form(func.__name__, overload) for overload in typing.get_overloads(func)]
    if not forms:
        raise TypeError(f"{func.__qualname__} has no overloads (decorate the implementation, below them)")
    doc = inspect.cleandoc(func.__doc__ or "")
    block = "\n".join([HEADING, "", *(f"    {form}" for form in forms), "", ""])
    at = doc.find("\nRaises:")
    doc = f"{doc}\n\n{block}" if at < 0 else f"{doc[: at + 1]}{block}{doc[at + 1 :]}"
    func.__doc__ = doc.rstrip() + "\n"
    return func


def _form(name: str, overload: Callable[..., object]) -> str:
    """``name(path: str, *, watch: Literal[True]) -> tuple[...]``: without ``self``, the annotations as
    written (they are strings under ``from __future__ import annotations``)."""
    signature = inspect.signature(overload)
    parameters = list(signature.parameters.values())
    if parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    shown = signature.replace(
        parameters=[p.replace(annotation=_Written(p.annotation)) for p in parameters],
        return_annotation=_Written(signature.return_annotation),
    )
    return f"{name}{shown}"


class _Written:
    """An annotation shown as written: a string without its quotes, anything else as inspect shows it."""

    def __init__(self, annotation: object) -> None:
        self.text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    def __repr__(self) -> str:
        return self.text
