"""Length-prefixed framing: a 4-byte big-endian payload length, then the payload; and the structs of
the length prefix and of the request and reply headers, which everything else imports from here.

:class:`FrameDecoder` accepts bytes in chunks of any size (one byte at a time works) and hands back
complete payloads.  A length below zero or above the maximum is a
:class:`~zkwire.errors.ProtocolError`, unless the decoder is told to skip oversize frames (the
client's sessions do): then such a frame is reported as an :class:`OversizeFrame`.  The same maximum
is enforced on what we send (:func:`frame`, raising :class:`~zkwire.errors.DataTooLargeError`).

A frame of at least :data:`LARGE_FRAME` bytes is gathered in one buffer of its own (a driver can read
the socket straight into it: :meth:`FrameDecoder.receive_buffer`), sized from its length prefix but
allocated only as the frame's bytes come.  The rule:

* a frame of up to :data:`FIRST_CAPACITY` (1 MiB) bytes -- every frame the default ``max_frame``
  allows -- gets a buffer of its whole size as soon as its length prefix is in;
* a longer one starts with a buffer of :data:`FIRST_CAPACITY` bytes (or as long as what has already
  arrived, if more); each time that is full and more comes, its bytes move to a buffer twice as long
  (or as long as what has arrived, if more) -- or of the frame's whole length, once a third of the
  frame has arrived (also when its first buffer is made).

A large frame in progress thus holds a buffer of at most the larger of :data:`FIRST_CAPACITY` and
three times what has arrived of it (a reused one may be longer, up to :data:`SPARE_LIMIT`, but costs
nothing new): a length prefix alone costs at most 1 MiB whatever it announces (a hostile or broken
server's ``2**28`` bytes included), and a frame of ``n`` bytes that does arrive is copied again fewer
than ``4n/3`` bytes in all (the price of not trusting its length prefix).  :func:`_capacity` is the rule.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ..constants import DEFAULT_MAX_FRAME
from ..errors import DataTooLargeError, ProtocolError
from .jute import INT

__all__ = [
    "FrameDecoder",
    "OversizeFrame",
    "OVERSIZE_HEAD",
    "LARGE_FRAME",
    "FIRST_CAPACITY",
    "READ_SIZE",
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


class OversizeFrame(NamedTuple):
    """A frame longer than the decoder's maximum: its payload length and its first :data:`OVERSIZE_HEAD`
    bytes (a reply's header).  The rest of its payload is skipped, never held in memory."""

    length: int
    head: bytes


#: How much of an oversize frame's payload :class:`FrameDecoder` keeps (a ReplyHeader).
OVERSIZE_HEAD = REPLY_HEADER.size
#: Frames at least this long are read into one buffer sized from their length prefix (see
#: :meth:`FrameDecoder.receive_buffer`) instead of being reassembled from chunks.
LARGE_FRAME = 32 * 1024
#: The size of a large frame's first buffer: a frame up to this long gets a buffer of its size at once,
#: a longer one starts with this much, and its buffer grows as its bytes come (see the module's docstring).
FIRST_CAPACITY = 1024 * 1024
#: The size of one read a driver does when no large frame is in progress.
READ_SIZE = 65536
#: The buffers of finished large frames up to this size are kept for the next ones (see
#: :class:`_SpareBuffers`).
SPARE_LIMIT = 2 * 1024 * 1024


class _SpareBuffers:
    """The buffers of large frames already handled (or outgrown), kept for the next large frames of any decoder in the
    process (at most :attr:`count`, each at most :data:`SPARE_LIMIT` bytes).

    A new megabyte buffer per reply costs more than reading into it: the allocator hands fresh pages
    back to the system between replies, and each of the ~250 pages is faulted in (and zero-filled)
    again.  A buffer is kept only when nothing still looks at it (no view of it is alive).
    """

    count = 2

    def __init__(self) -> None:
        self._free: list[bytearray] = []

    def take(self, n: int) -> bytearray:
        """A buffer of at least ``n`` bytes (its contents are not cleared)."""
        free = self._free
        try:
            for i in range(len(free) - 1, -1, -1):
                if len(free[i]) >= n:
                    buf = free.pop(i)
                    if len(buf) >= n:  # another thread's decoder may have taken that one meanwhile
                        return buf
                    break
        except IndexError:  # the list shrank meanwhile (another thread)
            pass
        return bytearray(n)

    def give(self, buf: bytearray) -> None:
        if len(buf) > SPARE_LIMIT or len(self._free) >= self.count:
            return
        try:
            # Resizing a bytearray that a view still exports fails: the cheapest test that no view of
            # it is left (one byte off the end and back; neither moves the buffer).
            del buf[-1]
        except BufferError:
            return
        buf.append(0)
        self._free.append(buf)


_spares = _SpareBuffers()


class FrameDecoder:
    """Incremental frame splitter.

    ``feed(data)`` returns the payloads completed by ``data``, oldest first.  A frame of at least
    :data:`LARGE_FRAME` bytes is copied into a buffer of its own, sized from its length prefix up to
    :data:`FIRST_CAPACITY` and grown as its bytes come (see the module's docstring; one reused from an
    earlier large frame when there is one); a driver can also read the socket straight into that
    buffer (:meth:`receive_buffer`, then :meth:`received`).  Such a
    payload comes as a read-only view of that buffer (not copied again); the others as bytes.  The
    view is valid until the next call to the decoder: its buffer is then reused for a later large
    frame, so a caller copies what it keeps (the session core does).

    With ``skip_oversize``, a frame longer than ``max_frame`` is not read: ``feed`` hands back an
    :class:`OversizeFrame` (its length and header) in its place as soon as the header has come, and
    drops the rest of its bytes as they arrive; the frames after it are delivered as usual.

    A negative length, one that reads as text, or (without ``skip_oversize``) one over ``max_frame``
    fails the stream for good, but the complete frames
    in front of it are still delivered: when ``data`` holds some, ``feed`` returns them and sets
    :attr:`error`; otherwise it raises the :class:`ProtocolError`.  Every later ``feed`` raises it.  A
    caller checks :attr:`error` after handling what ``feed`` returned.
    """

    __slots__ = (
        "_buf",
        "_filled",
        "_handed",
        "_large",
        "_large_size",
        "_scratch",
        "_skip",
        "error",
        "max_frame",
        "skip_oversize",
    )

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, *, skip_oversize: bool = False) -> None:
        self._buf = bytearray()
        self.max_frame = max_frame
        self.skip_oversize = skip_oversize
        #: Why the stream failed (a bad length), or None while it is sound (a plain attribute: the
        #: session core reads it after every read).
        self.error: ProtocolError | None = None
        #: The payload buffer of the large frame in progress (None between frames); it may be shorter
        #: than the frame (it grows as the bytes come) or longer (a reused one); the frame's size is
        #: ``_large_size``, the bytes in the buffer so far ``_filled``.
        self._large: bytearray | None = None
        self._large_size = 0
        self._filled = 0
        #: The buffer of the large frame handed out last, given back at the next call.
        self._handed: bytearray | None = None
        #: Bytes of an oversize frame still to drop.
        self._skip = 0
        self._scratch: bytearray | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buf) + (4 + self._filled if self._large is not None else 0)

    def receive_buffer(self) -> memoryview | None:
        """Where the next bytes read should go while a large frame is in progress (the unfilled rest of
        its buffer: the rest of the frame, unless the frame is longer than its buffer has grown so far)
        or an oversize one is being skipped (a scratch buffer no larger than
        what is left of it); None otherwise (read up to :data:`READ_SIZE` bytes and :meth:`feed` them).
        Bytes read into the view are handed over with :meth:`received`."""
        if self._handed is not None:
            self._give_back()
        large = self._large
        if large is not None:
            if self._filled == len(large):
                large = self._grow(self._filled + 1)
            return memoryview(large)[self._filled : self._large_size]
        if self._skip:
            scratch = self._scratch
            if scratch is None:
                scratch = self._scratch = bytearray(READ_SIZE)
            return memoryview(scratch)[: min(self._skip, READ_SIZE)]
        return None

    def received(self, n: int) -> list[bytes | memoryview | OversizeFrame]:
        """``n`` bytes were read into the view :meth:`receive_buffer` returned: the frames completed."""
        large = self._large
        if large is not None:
            self._filled += n
            if self._filled < self._large_size:
                return []
            self._large = None
            self._filled = 0
            self._handed = large
            return [memoryview(large)[: self._large_size].toreadonly()]
        self._skip -= n
        return []

    def _grow(self, need: int) -> bytearray:
        """Move the large frame in progress to a longer buffer, of at least ``need`` bytes (what will have
        arrived of it); the old buffer goes to the spares."""
        old = self._large
        assert old is not None
        large = self._large = _spares.take(_capacity(self._large_size, need, len(old)))
        with memoryview(large) as into, memoryview(old) as view:
            into[: self._filled] = view[: self._filled]
        _spares.give(old)
        return large

    def _give_back(self) -> None:
        """The large frame handed out last has been handled: its buffer may serve the next one."""
        assert self._handed is not None
        _spares.give(self._handed)
        self._handed = None

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | memoryview | OversizeFrame]:
        if self.error is not None:
            raise self.error
        if self._handed is not None:
            self._give_back()
        buf = self._buf
        if not buf and self._large is None and not self._skip and len(data) >= 4:
            # The common case, one whole frame in one read (a reply to a lone request): no loop.
            n = _LEN.unpack_from(data)[0]
            if n + 4 == len(data) and 0 <= n <= self.max_frame:
                return [bytes(data[4:])]
        frames: list[bytes | memoryview | OversizeFrame] = []
        if self._large is not None or self._skip:
            data = self._continue(data, frames)
            if not data:
                return frames
        if buf:
            buf += data
            src: bytes | bytearray | memoryview = buf
        else:
            src = data
        pos = 0
        end = len(src)
        max_frame = self.max_frame
        while end - pos >= 4:
            n = _LEN.unpack_from(src, pos)[0]
            stop = pos + 4 + n
            if stop <= end and 0 <= n <= max_frame:
                frames.append(bytes(src[pos + 4 : stop]))
                pos = stop
                continue
            if n < 0 or (n > max_frame and (not self.skip_oversize or _looks_like_text(src, pos))):
                self.error = ProtocolError(
                    f"frame length {n} outside 0..{max_frame}"
                    + (" (looks like text: not a ZooKeeper stream?)" if _looks_like_text(src, pos) else "")
                )
                if not frames:
                    raise self.error
                buf.clear()
                return frames
            if n > max_frame:
                if end - pos < 4 + OVERSIZE_HEAD:
                    break  # wait for the header
                head = pos + 4 + OVERSIZE_HEAD
                frames.append(OversizeFrame(n, bytes(src[pos + 4 : head])))
                skip = n - OVERSIZE_HEAD
                if end - head >= skip:
                    pos = head + skip
                    continue
                self._skip = skip - (end - head)
                pos = end
                break
            if n >= LARGE_FRAME:
                # A large frame, incomplete: move what has come into a buffer of its own.
                have = end - pos - 4
                large = self._large = _spares.take(_capacity(n, have))
                self._large_size = n
                with memoryview(large) as into, memoryview(src) as view:
                    into[:have] = view[pos + 4 : end]
                self._filled = have
                pos = end
            break
        if buf:
            del buf[:pos]
        elif pos < end:
            buf += src[pos:]
        return frames

    def _continue(
        self, data: bytes | bytearray | memoryview, frames: list[bytes | memoryview | OversizeFrame]
    ) -> bytes | bytearray | memoryview:
        """Feed ``data`` to the large or oversize frame in progress; return what is left of it."""
        large = self._large
        if large is not None:
            filled = self._filled
            take = min(self._large_size - filled, len(data))
            if filled + take > len(large):
                large = self._grow(filled + take)
            with memoryview(large) as into, memoryview(data) as view:
                into[filled : filled + take] = view[:take]
            frames.extend(self.received(take))
        else:
            take = min(self._skip, len(data))
            self._skip -= take
        return memoryview(data)[take:] if take < len(data) else b""


def _capacity(size: int, arrived: int, replaced: int = 0) -> int:
    """How long a buffer a large frame of ``size`` bytes gets once ``arrived`` bytes of it have come, in
    place of a full one of ``replaced`` bytes (0: its first), by the rule of the module's docstring."""
    if size <= max(FIRST_CAPACITY, 3 * arrived):
        return size
    return max(FIRST_CAPACITY, arrived, 2 * replaced)


def _looks_like_text(src: bytes | bytearray | memoryview, pos: int) -> bool:
    head = bytes(src[pos : pos + 4])
    return all(32 <= b < 127 for b in head)


def frame(payload: bytes | bytearray, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Prefix ``payload`` with its length; refuse payloads over ``max_frame``."""
    if len(payload) > max_frame:
        raise DataTooLargeError(f"frame of {len(payload)} bytes exceeds the maximum of {max_frame}")
    return _LEN.pack(len(payload)) + payload
