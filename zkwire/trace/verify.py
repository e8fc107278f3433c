"""``--verify``: every record read twice, by the fast codec and by the construct schemas, and any
disagreement between the two descriptions of the protocol reported.

:class:`VerifyingBodies` is a :class:`~zkwire.trace.bodies.BodyDecoder` that returns (or raises) what the
fast codec gives and keeps what the construct schemas said when they said otherwise: one decoded and the
other refused, or both decoded to different values.  The decoder takes the note
(:meth:`VerifyingBodies.take`) into the frame's ``disagreement``.  The note names where the values part,
never the values (they may be secrets).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ProtocolError
from .bodies import SchemaBodies
from .fastbodies import FastBodies

__all__ = ["VerifyingBodies", "first_difference"]


def first_difference(a: Any, b: Any, where: str = "record") -> str | None:
    """Where two plain values first differ (``record.ops[1].request.path``), or None when they are equal."""
    if type(a) is not type(b):
        return f"{where} ({type(a).__name__} / {type(b).__name__})"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where} (keys)"
        for key in a:
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where} ({len(a)} / {len(b)} items)"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else where


class VerifyingBodies:
    """The fast codec's records, checked against the construct schemas' (``compiled``: their compiled form)."""

    __slots__ = ("_note", "fast", "schemas")
    headers_only = False

    def __init__(self, *, compiled: bool = False) -> None:
        self.fast = FastBodies()
        self.schemas = SchemaBodies(compiled=compiled)
        self._note: str | None = None

    def take(self) -> str | None:
        """The disagreement found since the last call (None: the two agreed)."""
        note, self._note = self._note, None
        return note

    def _both(self, what: str, fast: Callable[[], Any], schemas: Callable[[], Any]) -> Any:
        try:
            value = fast()
        except ProtocolError as e:
            try:
                schemas()
            except ProtocolError:
                raise e from None
            self._note = f"{what}: the fast codec refused it ({e}), the construct schemas decoded it"
            raise
        try:
            other = schemas()
        except ProtocolError:
            self._note = f"{what}: the fast codec decoded it, the construct schemas refused it"
            return value
        where = first_difference(value, other)
        if where is not None:
            self._note = f"{what}: the fast codec and the construct schemas read {where} differently"
        return value

    def connect_request(self, payload: bytes) -> Any:
        return self._both(
            "ConnectRequest",
            lambda: self.fast.connect_request(payload),
            lambda: self.schemas.connect_request(payload),
        )

    def connect_response(self, payload: bytes) -> Any:
        return self._both(
            "ConnectResponse",
            lambda: self.fast.connect_response(payload),
            lambda: self.schemas.connect_response(payload),
        )

    def request(self, payload: bytes) -> Any:
        return self._both("request", lambda: self.fast.request(payload), lambda: self.schemas.request(payload))

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        return self._both("reply", lambda: self.fast.reply(op, payload), lambda: self.schemas.reply(op, payload))

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        return self.fast.path(op, payload, record)
