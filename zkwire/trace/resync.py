"""Frame boundaries in a ZooKeeper byte stream whose beginning was not seen (sans I/O, standard library).

A capture can start in the middle of a connection, or lose bytes in it; the bytes after that may start
inside a frame.  :class:`FrameTracker` follows where frames start while the stream is known (by reading
length prefixes alone) and says where the next one starts after a gap of known size, when the gap falls
inside the current frame.  When it does not, :func:`find_boundary` looks for the first offset from which
a chain of plausible frames runs: each length fits, each header names a known op (requests) or a valid
error code (replies), and the chain either ends exactly where the bytes end or runs for several frames.
"""

from __future__ import annotations

from ..constants import AUTH_XID, PING_XID, SET_WATCHES_XID, WATCH_XID, OpCode
from ..errors import ERROR_CLASSES
from ..protocol.framing import LENGTH, REPLY_HEADER, REQUEST_HEADER
from .streams import CONNECT_REQUEST_SIZES, CONNECT_RESPONSE_SIZES

__all__ = ["FrameTracker", "find_boundary", "SEARCH_WINDOW"]

#: Offsets tried before giving up on a buffer (a frame boundary comes at least every max frame).
SEARCH_WINDOW = 1 << 20
#: Complete plausible frames in a row that make an offset a boundary when the chain does not end exactly.
_CHAIN = 3

_OPS = frozenset(int(op) for op in OpCode) - {int(OpCode.NOTIFICATION), int(OpCode.ERROR)}
_ERRORS = frozenset(ERROR_CLASSES) | {0}
_SPECIAL_REQUEST_XIDS = {PING_XID: {int(OpCode.PING)}, AUTH_XID: {int(OpCode.AUTH)}}
_SPECIAL_REQUEST_XIDS[SET_WATCHES_XID] = {int(OpCode.SET_WATCHES), int(OpCode.SET_WATCHES2)}
_SPECIAL_REPLY_XIDS = frozenset({WATCH_XID, PING_XID, AUTH_XID, SET_WATCHES_XID})


class FrameTracker:
    """Where frames start in one direction, from the length prefixes alone.

    ``framed`` turns False for good when a length prefix is out of range (not a ZooKeeper stream from
    here on).  ``need`` is how many payload bytes of the current frame are still to come.
    """

    __slots__ = ("framed", "head", "max_frame", "need")

    def __init__(self, max_frame: int) -> None:
        self.framed = True
        self.head = b""
        self.need = 0
        self.max_frame = max_frame

    def feed(self, data: bytes) -> int | None:
        """The offset in ``data`` of the first frame that starts in it (None: none does, or not framed)."""
        first: int | None = None
        pos, end = 0, len(data)
        need, head = self.need, self.head
        while self.framed and pos < end:
            if need:
                step = min(need, end - pos)
                need -= step
                pos += step
                continue
            if not head and first is None:
                first = pos
            if not head and end - pos >= 4:
                n = LENGTH.unpack_from(data, pos)[0]
                pos += 4
            else:
                take = 4 - len(head)
                head += data[pos : pos + take]
                pos += min(take, end - pos)
                if len(head) < 4:
                    break
                n = LENGTH.unpack(head)[0]
                head = b""
            if not 0 <= n <= self.max_frame:
                self.framed = False
                break
            need = n
        self.need, self.head = need, head
        return first if self.framed else None

    def after_gap(self, gap: int) -> int | None:
        """``gap`` bytes went by unseen: how many of the bytes that follow still belong to the current
        frame (0: the next byte starts a frame), or None when the gap reaches past it."""
        if not self.framed or self.head or gap > self.need:
            return None
        return self.need - gap


def _plausible(direction: str, buf: bytes | bytearray, pos: int, n: int) -> bool | None:
    """Whether a frame of length ``n`` whose payload starts at ``pos`` has a header that makes sense
    (None: the header is not all there yet)."""
    if direction == "client":
        if n < 8:
            return False
        if pos + 8 > len(buf):
            return None
        xid, op = REQUEST_HEADER.unpack_from(buf, pos)
        if xid == 0:  # a ConnectRequest: protocolVersion 0
            return n in CONNECT_REQUEST_SIZES
        if op not in _OPS:
            return False
        special = _SPECIAL_REQUEST_XIDS.get(xid)
        return xid > 0 or (special is not None and op in special)
    if n < 16:
        return False
    if pos + 16 > len(buf):
        return None
    xid, zxid, err = REPLY_HEADER.unpack_from(buf, pos)
    if xid == 0:  # a ConnectResponse: protocolVersion 0, timeout, session id, password
        return n in CONNECT_RESPONSE_SIZES
    return err in _ERRORS and zxid >= -1 and (xid > 0 or xid in _SPECIAL_REPLY_XIDS)


def _chain(direction: str, buf: bytes | bytearray, start: int, max_frame: int) -> tuple[int, bool]:
    """Plausible complete frames in a row from ``start``, and whether the chain ends exactly at the end
    of ``buf`` (or with a plausible incomplete last frame)."""
    pos, count, end = start, 0, len(buf)
    while pos + 4 <= end:
        n = LENGTH.unpack_from(buf, pos)[0]
        if not 0 <= n <= max_frame:
            return count, False
        ok = _plausible(direction, buf, pos + 4, n)
        if ok is False:
            return count, False
        if pos + 4 + n > end:
            return count, ok is True
        pos += 4 + n
        count += 1
    return count, pos == end


def find_boundary(
    direction: str, buf: bytes | bytearray, *, max_frame: int, final: bool = False, start: int = 0
) -> int | None:
    """The first offset of ``buf`` (from ``start``) where a frame plausibly starts, or None if none is
    found yet (more bytes may settle it; with ``final`` there will be none, and one plausible frame
    suffices).  ``direction`` is "client" or "server"."""
    last = min(len(buf) - 4, start + SEARCH_WINDOW)
    for k in range(start, last + 1):
        count, exact = _chain(direction, buf, k, max_frame)
        if count >= _CHAIN or (count >= 1 and exact) or (final and (count >= 1 or exact)):
            return k
    return None
