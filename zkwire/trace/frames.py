"""What the tracer's decoder produces: :class:`DecodedFrame`, its directions and kinds.

Decoding (:mod:`~zkwire.trace.decoder`), rendering (:mod:`~zkwire.trace.render`), the filters and the
statistics all speak of frames in these terms; the kinds and directions are ``Literal`` types, so a
misspelt one is a type error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["CLIENT", "SERVER", "Direction", "FrameKind", "DecodedFrame", "format_zxid"]

#: Which side sent a frame.
Direction = Literal["client", "server"]
CLIENT: Final = "client"
SERVER: Final = "server"

#: What a frame is: the connect handshake (``connect`` from the client, ``connect_response``), a
#: ``request`` and its ``reply``, an ``auth`` packet or its answer, a ``ping`` either way, a watch
#: ``event``, a ``four_letter`` word or its text answer, a ``malformed`` frame, or bytes ``skipped``
#: without decoding.
FrameKind = Literal[
    "connect",
    "connect_response",
    "request",
    "reply",
    "auth",
    "ping",
    "event",
    "four_letter",
    "malformed",
    "skipped",
]


@dataclass(slots=True)
class DecodedFrame:
    """One frame (or one four-letter-word exchange) from one direction of a conversation.

    ``record`` is the decoded body as plain values (dicts, lists, bytes; see
    :func:`zkwire.trace.schema.to_plain`), or None when there is none.  ``payload`` is the frame without
    its length prefix; ``offset`` is where the frame (its length prefix) starts in that direction's
    byte stream.  ``secret_spans`` are (start, end) ranges of ``payload`` holding a password or
    auth credential, which :func:`~zkwire.trace.render.format_frame` and
    :func:`~zkwire.trace.render.frame_to_json` mask.

    ``config`` is set for the frames of a dynamic reconfiguration: a reconfig request's ``joining``,
    ``leaving`` and ``members`` lists and ``from_config`` version (see
    :func:`zkwire.trace.notes.reconfig_request`), or, for a reconfig reply or a getData reply of
    ``/zookeeper/config`` whose data is a configuration, its ``version`` and member ids (see
    :func:`zkwire.trace.notes.config_reply`); None otherwise.

    ``disagreement`` (with ``--verify`` only) says where the fast codec and the construct schemas read the
    frame's record differently; None when they agree.

    A frame is a value: nothing changes it once it is made (:func:`dataclasses.replace` makes a changed
    copy).  It is not frozen all the same, because a frozen dataclass of this many fields takes several
    times longer to make, and the tracer makes one for every frame of a capture.
    """

    direction: Direction
    kind: FrameKind
    index: int
    offset: int
    size: int
    payload: bytes
    xid: int | None = None
    op: int | None = None
    op_name: str | None = None
    path: str | None = None
    err: int | None = None
    err_name: str | None = None
    zxid: int | None = None
    record: Any = None
    error: str | None = None
    note: str | None = None
    time: float | None = None
    latency: float | None = None
    secret_spans: tuple[tuple[int, int], ...] = ()
    config: Any = None
    disagreement: str | None = None


def format_zxid(zxid: int) -> str:
    """A zxid as the tracer writes it everywhere: hexadecimal (``0x1f``); -1 (none) stays -1."""
    return f"0x{zxid & 0xFFFFFFFFFFFFFFFF:x}" if zxid >= 0 else str(zxid)
