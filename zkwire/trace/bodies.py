"""How the decoder reads the records of frames: the :class:`BodyDecoder` interface and its construct
implementation.

:class:`~zkwire.trace.decoder.ConversationDecoder` does the framing, the pairing of replies with
requests, the notes and the secrets itself; for the records in the frames it asks a body decoder, which
returns them as plain values (dicts, lists, bytes: see :func:`zkwire.trace.schema.to_plain`) and raises
:class:`~zkwire.errors.ProtocolError` for bytes that are not the record.  The readings:
:class:`~zkwire.trace.fastbodies.FastBodies` (the project's codec, the default),
:class:`~zkwire.trace.fastbodies.HeaderBodies` (header facts only, for the summary), :class:`SchemaBodies`
(the construct schemas of :mod:`zkwire.trace.schema`, a description independent of the codec) and
:class:`~zkwire.trace.verify.VerifyingBodies` (both, compared).
"""

from __future__ import annotations

from typing import Any, Protocol

from . import schema
from .notes import path_of

__all__ = ["BodyDecoder", "SchemaBodies"]


class BodyDecoder(Protocol):
    """The records of a conversation's frames as plain values; ``payload`` is a frame without its length
    prefix.  Each method raises :class:`~zkwire.errors.ProtocolError` when the payload does not decode.
    ``headers_only``: request records and most reply records are not read (None)."""

    headers_only: bool

    def connect_request(self, payload: bytes) -> Any:
        """The client's first frame (keys ``session_id``, ``last_zxid_seen``, ``passwd``...)."""

    def connect_response(self, payload: bytes) -> Any:
        """The server's first frame (keys ``timeout``, ``session_id``, ``read_only``, ``passwd``...)."""

    def request(self, payload: bytes) -> Any:
        """A later client frame's record, after its RequestHeader (None for ops without one)."""

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        """A later server frame's record answering ``op`` (a request of ``path``, when known), after its
        ReplyHeader (None for an error reply or an op whose reply is a bare header; the WatcherEvent for
        xid -1)."""

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        """The path a request names (its ``record`` is what :meth:`request` returned)."""


class SchemaBodies:
    """Records read with the construct schemas (``compiled``: their compiled form, faster)."""

    __slots__ = ("compiled",)
    headers_only = False

    def __init__(self, *, compiled: bool = False) -> None:
        self.compiled = compiled

    def connect_request(self, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_connect_request(payload, compiled=self.compiled))

    def connect_response(self, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_connect_response(payload, compiled=self.compiled))

    def request(self, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_request(payload, compiled=self.compiled)["body"])

    def reply(self, op: int | None, payload: bytes, path: str | None = None) -> Any:
        return schema.to_plain(schema.parse_reply(op, payload, compiled=self.compiled)["body"])

    def path(self, op: int, payload: bytes, record: Any) -> str | None:
        return path_of(record)
