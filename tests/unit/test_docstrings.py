"""Every public callable of zkwire has a docstring, and every one that can fail says how ("Raises:")."""

from __future__ import annotations

import enum
import inspect
from collections.abc import Iterator

import zkwire

# Codec plumbing of the record classes (Stat.write...), not application API.
_CODEC_METHODS = {"write", "read"}


def _public_callables() -> Iterator[tuple[str, object]]:
    for name in zkwire.__all__:
        obj = getattr(zkwire, name)
        if inspect.ismodule(obj) or (isinstance(obj, type) and issubclass(obj, BaseException | enum.Enum)):
            continue
        if inspect.isclass(obj):
            yield f"zkwire.{name}", obj
            # with what the class inherits from zkwire's own bases (Client's from SessionHandle)
            own = [klass for klass in reversed(obj.__mro__) if klass.__module__.startswith("zkwire.")]
            for attr, member in {attr: m for klass in own for attr, m in vars(klass).items()}.items():
                if attr.startswith("_") or isinstance(member, property) or not callable(member):
                    continue
                if obj.__module__ == "zkwire.protocol.records" and attr in _CODEC_METHODS:
                    continue
                yield f"zkwire.{name}.{attr}", member
        elif callable(obj):
            yield f"zkwire.{name}", obj


def test_every_public_callable_has_a_docstring() -> None:
    missing = [name for name, obj in _public_callables() if not inspect.getdoc(obj)]
    assert missing == []


def test_every_awaitable_says_what_it_raises() -> None:
    def can_fail(obj: object) -> bool:
        return inspect.iscoroutinefunction(obj) or hasattr(obj, "__wrapped__")  # async def, asynccontextmanager

    missing = [
        name
        for name, obj in _public_callables()
        if can_fail(obj) and "Raises:" not in (doc := inspect.getdoc(obj) or "") and "never raises" not in doc
    ]
    assert missing == []
