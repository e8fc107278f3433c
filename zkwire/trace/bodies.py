"""How the decoder reads the records of frames: the :class:`BodyDecoder` interface and its construct
implementation.

:class:`~zkwire.trace.decoder.ConversationDecoder` does the framing, the pairing of replies with
requests, the notes and the secrets itself; for the records in the frames it asks a body decoder, which
returns them as plain values (dicts, lists, bytes: see :func:`zkwire.trace.schema.to_plain`) and raises
:class:`~zkwire.errors.ProtocolError` for bytes that are not the record.  :class:`SchemaBodies` reads
them with the construct schemas of :mod:`zkwire.trace.schema`, a description independent of the
project's codec; a faster reading can take its place behind the same interface.
"""

from __future__ import annotations

from typing import Any, Protocol

from . import schema

__all__ = ["BodyDecoder", "SchemaBodies"]


class BodyDecoder(Protocol):
    """The records of a conversation's frames as plain values; ``payload`` is a frame without its length
    prefix.  Each method raises :class:`~zkwire.errors.ProtocolError` when the payload does not decode."""

    def connect_request(self, payload: bytes) -> Any:
        """The client's first frame (keys ``session_id``, ``last_zxid_seen``, ``passwd``...)."""

    def connect_response(self, payload: bytes) -> Any:
        """The server's first frame (keys ``timeout``, ``session_id``, ``read_only``, ``passwd``...)."""

    def request(self, payload: bytes) -> Any:
        """A later client frame's record, after its RequestHeader (None for ops without one)."""

    def reply(self, op: int | None, payload: bytes) -> Any:
        """A later server frame's record answering ``op``, after its ReplyHeader (None for an error
        reply or an op whose reply is a bare header; the WatcherEvent for xid -1)."""


class SchemaBodies:
    """Records read with the construct schemas (``compiled``: their compiled form, faster)."""

    __slots__ = ("compiled",)

    def __init__(self, *, compiled: bool = False) -> None:
        self.compiled = compiled

    def connect_request(self, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_connect_request(payload, compiled=self.compiled))

    def connect_response(self, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_connect_response(payload, compiled=self.compiled))

    def request(self, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_request(payload, compiled=self.compiled)["body"])

    def reply(self, op: int | None, payload: bytes) -> Any:
        return schema.to_plain(schema.parse_reply(op, payload, compiled=self.compiled)["body"])
