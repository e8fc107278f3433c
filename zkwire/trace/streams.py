"""One direction of a traced connection as the decoder follows it: its buffered bytes, where it is
(handshake, frames, or past a length it cannot frame), how its bytes are read (ZooKeeper frames, a
four-letter word, or the text answer to one), and the frames it numbers in turn.  The helpers the two
sides share are here too."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar, Literal

from ..protocol import fourletter
from .frames import DecodedFrame, Direction, FrameKind

__all__ = [
    "FOUR_LETTER_WORDS",
    "TELNET_CLOSE",
    "MID_CONVERSATION",
    "CONNECT_REQUEST_SIZES",
    "CONNECT_RESPONSE_SIZES",
    "Mode",
    "State",
    "Side",
    "SideFrames",
    "is_four_letter",
    "looks_like_text",
    "starts_mid_conversation",
    "with_note",
    "elapsed",
]

#: Commands the 3.8 server recognises as the first four bytes of a connection.
FOUR_LETTER_WORDS = frozenset(word.encode("ascii") for word in fourletter.FOUR_LETTER_WORDS)
TELNET_CLOSE = b"\xff\xf4\xff\xfd"

MID_CONVERSATION = "no connect handshake: the capture starts mid-conversation"
#: The sizes of a ConnectRequest and a ConnectResponse: their fixed fields, the 16-byte session password
#: every server hands out and every client sends back, and the read-only flag (3.4 on) or not.
CONNECT_REQUEST_SIZES = frozenset({44, 45})
CONNECT_RESPONSE_SIZES = frozenset({36, 37})

#: How one side's bytes are read: ZooKeeper frames, a four-letter word, or the server's text answer to one.
Mode = Literal["zk", "4lw", "text"]
#: Where one side is: before its connect record, in its frames, or past a length it cannot frame.
State = Literal["handshake", "frames", "broken"]

_BYTE_VALUE = re.compile(r"byte 0x[0-9a-fA-F]+")


class Side:
    """One direction's bytes and place; it numbers the frames it completes."""

    __slots__ = ("buf", "direction", "eof", "index", "mode", "offset", "skipped", "started", "state", "unsure")

    def __init__(self, direction: Direction) -> None:
        self.direction: Direction = direction
        self.buf = bytearray()
        self.offset = 0  # stream offset of buf[0]
        self.index = 0
        self.mode: Mode | None = None
        self.state: State = "handshake"
        self.skipped = 0
        self.started = False
        self.eof = False
        #: A frame of this direction did not decode: the frames after it may be misframed.
        self.unsure = False

    def frame(self, kind: FrameKind, payload: bytes, offset: int, now: float | None, **fields: Any) -> DecodedFrame:
        """The next frame of this direction."""
        frame = DecodedFrame(
            direction=self.direction,
            kind=kind,
            index=self.index,
            offset=offset,
            size=len(payload),
            payload=payload,
            time=now,
            **fields,
        )
        self.index += 1
        return frame

    def malformed(self, payload: bytes, offset: int, error: str, now: float | None, **fields: Any) -> DecodedFrame:
        """The next frame of this direction, one that does not decode.

        Its bytes are all masked as secret: a frame that does not decode may be read as the wrong side, or
        framed by a corrupted length, so where its secrets are is not known (``--reveal-secrets`` shows it).
        """
        fields["secret_spans"] = ((0, len(payload)),) if payload else ()
        self.unsure = True
        error = _BYTE_VALUE.sub("a byte", error)  # a decoding error may quote a byte of the secret
        return self.frame("malformed", payload, offset, now, error=error, **fields)


class SideFrames:
    """What reads one side's frames: its connect record first (unless the capture starts
    mid-conversation: then every frame is a message), then its messages."""

    __slots__ = ()
    #: The size of the side's message header (a connect record is at least as long).
    header_size: ClassVar[int]

    def frame(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """One complete frame of ``side``."""
        if side.state == "handshake":
            side.state = "frames"
            if not starts_mid_conversation(payload, self.header_size):
                return self.connect(side, payload, offset, now)
            return with_note(self.message(side, payload, offset, now), MID_CONVERSATION)
        return self.message(side, payload, offset, now)

    def connect(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """The side's connect record."""
        raise NotImplementedError

    def message(self, side: Side, payload: bytes, offset: int, now: float | None) -> DecodedFrame:
        """A frame after the handshake."""
        raise NotImplementedError


def is_four_letter(head: bytes) -> bool:
    return head in FOUR_LETTER_WORDS or head == TELNET_CLOSE


def looks_like_text(head: bytes) -> bool:
    return all(32 <= b < 127 or b in (9, 10, 13) for b in head)


def starts_mid_conversation(payload: bytes, header_size: int) -> bool:
    # The connect records open with protocolVersion 0; later frames open with an xid, which is never 0.
    return len(payload) >= header_size and payload[:4] != b"\x00\x00\x00\x00"


def with_note(frame: DecodedFrame, note: str) -> DecodedFrame:
    return dataclasses.replace(frame, note=note if frame.note is None else f"{note}; {frame.note}")


def elapsed(sent: float | None, now: float | None) -> float | None:
    return None if sent is None or now is None else now - sent
