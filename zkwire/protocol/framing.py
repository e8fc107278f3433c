"""Length-prefixed framing: a 4-byte big-endian payload length, then the payload; and the structs of
the length prefix and of the request and reply headers, which everything else imports from here.

:class:`FrameDecoder` accepts bytes in chunks of any size (one byte at a time works) and hands back
complete payloads.  A length below zero or above the maximum is a
:class:`~zkwire.errors.ProtocolError`; the same maximum is enforced on what we send
(:func:`frame`, raising :class:`~zkwire.errors.DataTooLargeError`).
"""

from __future__ import annotations

import struct

from ..constants import DEFAULT_MAX_FRAME
from ..errors import DataTooLargeError, ProtocolError
from .jute import INT

__all__ = [
    "FrameDecoder",
    "frame",
    "DEFAULT_MAX_FRAME",
    "LENGTH",
    "REQUEST_HEADER",
    "REQUEST_FRAME_HEAD",
    "REPLY_HEADER",
]

#: The length prefix of every frame (a jute int).
LENGTH = INT
#: RequestHeader: xid, op code.
REQUEST_HEADER = struct.Struct(">ii")
#: The start of a request frame: length prefix, then the RequestHeader.
REQUEST_FRAME_HEAD = struct.Struct(">iii")
#: ReplyHeader: xid, zxid, err (16 bytes).
REPLY_HEADER = struct.Struct(">iqi")

_LEN = LENGTH


class FrameDecoder:
    """Incremental frame splitter.

    ``feed(data)`` returns the payloads completed by ``data``, oldest first.  A bad length fails the
    stream for good, but the complete frames in front of it are still delivered: when ``data`` holds
    some, ``feed`` returns them and sets :attr:`error`; otherwise it raises the
    :class:`ProtocolError`.  Every later ``feed`` raises it.  A caller checks :attr:`error` after
    handling what ``feed`` returned.
    """

    __slots__ = ("_buf", "_failed", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self.max_frame = max_frame
        self._failed: ProtocolError | None = None

    @property
    def error(self) -> ProtocolError | None:
        """Why the stream failed (a bad length), or None while it is sound."""
        return self._failed

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        if buf:
            buf += data
            src: bytes | bytearray | memoryview = buf
        else:
            src = data
        frames: list[bytes] = []
        pos = 0
        end = len(src)
        while end - pos >= 4:
            n = _LEN.unpack_from(src, pos)[0]
            if n < 0 or n > self.max_frame:
                self._failed = ProtocolError(
                    f"frame length {n} outside 0..{self.max_frame}"
                    + (" (looks like text: not a ZooKeeper stream?)" if _looks_like_text(src, pos) else "")
                )
                if not frames:
                    raise self._failed
                buf.clear()
                return frames
            stop = pos + 4 + n
            if stop > end:
                break
            frames.append(bytes(src[pos + 4 : stop]))
            pos = stop
        if buf:
            del buf[:pos]
        elif pos < end:
            buf += src[pos:]
        return frames


def _looks_like_text(src: bytes | bytearray | memoryview, pos: int) -> bool:
    head = bytes(src[pos : pos + 4])
    return all(32 <= b < 127 for b in head)


def frame(payload: bytes | bytearray, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Prefix ``payload`` with its length; refuse payloads over ``max_frame``."""
    if len(payload) > max_frame:
        raise DataTooLargeError(f"frame of {len(payload)} bytes exceeds the maximum of {max_frame}")
    return _LEN.pack(len(payload)) + payload
