"""Jute primitives: the fast, struct-based reader and writer every record is built from.

Encoding (big-endian throughout): ``int`` 4 bytes, ``long`` 8, ``bool`` 1 (any non-zero byte reads as
true), ``ustring`` and ``buffer`` an int length then that many bytes, ``vector`` an int count then the
items.  A length or count of -1 means *null*, which is distinct from empty; any other negative length is
rejected with :class:`~zkwire.errors.ProtocolError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from ..errors import InvalidArgumentError, ProtocolError

__all__ = [
    "Reader",
    "INT",
    "LONG",
    "write_int",
    "write_long",
    "write_bool",
    "write_ustring",
    "write_buffer",
    "write_string_vector",
    "NULL_LENGTH",
    "repeated_heads",
]

T = TypeVar("T")

INT = struct.Struct(">i")
LONG = struct.Struct(">q")
_BOOL = struct.Struct(">?")
_TWO_INTS = struct.Struct(">ii")
#: Vectors of at least this many strings take the one-decode path of :meth:`Reader.string_vector`.
_FAST_VECTOR = 32
NULL_LENGTH = b"\xff\xff\xff\xff"
_FIRST = itemgetter(0)
_AFTER_FIRST = itemgetter(slice(1, None))
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


class Reader:
    """Reads jute values from ``buf[pos:end]``; every read checks bounds first.

    Running past ``end`` or meeting a negative length other than -1 raises
    :class:`~zkwire.errors.ProtocolError`, never ``IndexError`` or ``struct.error``.
    """

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if p + n > self.end:
            raise ProtocolError(f"truncated record: need {n} bytes for {what} at offset {p}, have {self.end - p}")
        self.pos = p + n
        return p

    def int32(self) -> int:
        return INT.unpack_from(self.buf, self._need(4, "int"))[0]  # type: ignore[no-any-return]

    def int64(self) -> int:
        return LONG.unpack_from(self.buf, self._need(8, "long"))[0]  # type: ignore[no-any-return]

    def boolean(self) -> bool:
        return self.buf[self._need(1, "bool")] != 0

    def _length(self, what: str) -> int:
        n = self.int32()
        if n < -1:
            raise ProtocolError(f"negative length {n} for {what}")
        return n

    def buffer(self) -> bytes | None:
        n = self._length("buffer")
        if n == -1:
            return None
        p = self._need(n, "buffer")
        return bytes(self.buf[p : p + n])

    def ustring(self) -> str | None:
        n = self._length("ustring")
        if n == -1:
            return None
        p = self._need(n, "ustring")
        try:
            return str(self.buf[p : p + n], "utf-8")
        except UnicodeDecodeError:
            return _decode_surrogate_pairs(bytes(self.buf[p : p + n]))

    def vector(self, item: Callable[[Reader], T]) -> list[T] | None:
        n = self._length("vector")
        if n == -1:
            return None
        return [item(self) for _ in range(n)]

    def string_vector(self) -> list[str | None] | None:
        """A vector of ustrings (children lists can hold 100,000 names).

        A long vector is decoded as Latin-1 once and cut at C speed (:meth:`_ascii_string_vector`: by
        stride when every name has one length, else by one split), every cut checked against the length
        prefixes; a vector that fails a check (names of 256 bytes or more, nulls, non-ASCII text, where
        Latin-1 and UTF-8 differ) is read again name by name.
        """
        n = self._length("vector")
        if n == -1:
            return None
        start = self.pos
        if n >= _FAST_VECTOR:
            out = self._ascii_string_vector(n)
            if out is not None:
                return out
            self.pos = start
        return self._utf8_string_vector(n)

    def _ascii_string_vector(self, n: int) -> list[str | None] | None:
        """The names of an ASCII vector whose names are all 1 to 255 bytes long, or None.

        Such a vector is ``00 00 00 <len> <name>`` repeated, and a name holds no NUL byte (ZooKeeper
        refuses one in a path), so splitting the Latin-1 text on three NULs cuts it into ``<len><name>``
        pieces at C speed.  The split is then checked in full: the first piece is empty and every
        piece's length character equals the length of its name, which is exactly the jute encoding, so
        a vector that passes is the one the careful loop would have read.  Anything else (a longer or
        empty name, a null, a truncated vector, non-ASCII text) returns None for the careful loop.
        """
        buf, pos = self.buf, self.pos
        stop = min(self.end, pos + n * (4 + 255))  # no longer name fits this path
        with memoryview(buf) as view:  # no copy before the decode (a large frame is a view already)
            text = str(view[pos:stop], "latin-1")
            uniform = _uniform_names(text, n)
            if uniform is not None:
                self.pos = pos + n * (4 + len(uniform[0]))
                return uniform  # type: ignore[return-value]
            if stop - pos >= 4 and not 0x20 <= view[pos + 3] < 0x7F:  # a first length byte not printable
                found = _printable_names(bytes(view[pos:stop]), n)
                if found is not None:
                    self.pos = pos + found[1]
                    return found[0]  # type: ignore[return-value]
        pieces = text.split("\x00\x00\x00", n)
        if len(pieces) != n + 1 or pieces[0]:
            return None
        last = pieces.pop()
        del pieces[0]
        try:
            names: list[str] = list(map(_AFTER_FIRST, pieces))
            if bytes(map(ord, map(_FIRST, pieces))) != bytes(map(len, names)):
                return None
            k = ord(last[0])
        except (IndexError, ValueError):  # an empty piece, or a name of 256 bytes or more
            return None
        if k == 0 or k + 1 > len(last):
            return None
        names.append(last[1 : 1 + k])
        consumed = len(text) - len(last) + 1 + k
        if not text[:consumed].isascii():
            return None
        self.pos = pos + consumed
        return names  # type: ignore[return-value]  # list is invariant; no None here

    def _utf8_string_vector(self, n: int) -> list[str | None]:
        buf, pos, end = self.buf, self.pos, self.end
        unpack = INT.unpack_from
        out: list[str | None] = []
        append = out.append
        for _ in range(n):
            if pos + 4 > end:
                self.pos = pos
                self._need(4, "int")  # raises with the usual message
            (k,) = unpack(buf, pos)
            pos += 4
            if k < 0:
                if k != -1:
                    raise ProtocolError(f"negative length {k} for ustring")
                append(None)
                continue
            stop = pos + k
            if stop > end:
                self.pos = pos
                self._need(k, "ustring")
            try:
                append(str(buf[pos:stop], "utf-8"))
            except UnicodeDecodeError:
                append(_decode_surrogate_pairs(bytes(buf[pos:stop])))
            pos = stop
        self.pos = pos
        return out

    def string_pairs(self, n: int, *, lead_int: bool = False) -> list[tuple[Any, ...]]:
        """``n`` entries of two ustrings (``lead_int``: an int32 before them), as tuples: the layout of
        ACL entries and ClientInfo, read in one loop (a getACL or whoAmI reply can hold 10,000s).

        Many entries of ASCII text are cut from one decode (:meth:`_ascii_string_pairs`); any other
        vector is read entry by entry, and an entry that is not plain (a null or non-UTF-8 string, or
        one that runs short) is read again with :meth:`int32` and :meth:`ustring`, which raise the usual
        errors.
        """
        if n >= _FAST_VECTOR:
            pairs = self._ascii_string_pairs(n, lead_int)
            if pairs is not None:
                return pairs
        buf, pos, end = self.buf, self.pos, self.end
        unpack = INT.unpack_from
        out: list[tuple[Any, ...]] = []
        append = out.append
        for _ in range(n):
            start = pos
            try:
                if lead_int:
                    lead = unpack(buf, pos)[0]
                    pos += 4
                k = unpack(buf, pos)[0]
                pos += 4
                if not 0 <= k <= end - pos:
                    raise ValueError
                first = str(buf[pos : pos + k], "utf-8")
                pos += k
                k = unpack(buf, pos)[0]
                pos += 4
                if not 0 <= k <= end - pos:
                    raise ValueError
                second = str(buf[pos : pos + k], "utf-8")
                pos += k
            except (ValueError, struct.error):  # UnicodeDecodeError is a ValueError
                self.pos = start
                lead = self.int32() if lead_int else 0
                first, second = self.ustring(), self.ustring()  # type: ignore[assignment]
                pos = self.pos
            if pos > end:
                self.pos = start
                self._need(pos - start, "vector item")
            append((lead, first, second) if lead_int else (first, second))
        self.pos = pos
        return out

    def _ascii_string_pairs(self, n: int, lead_int: bool) -> list[tuple[Any, ...]] | None:
        """:meth:`string_pairs`' entries when every byte they take is ASCII (their lengths and numbers
        below 128, no null), or None.

        The rest of the buffer is decoded as Latin-1 once, and each string is a slice of that text
        (the plain version decodes each string from a slice of the bytes: two objects made for each);
        the bytes the entries took are then checked to be ASCII, where Latin-1 and UTF-8 agree.
        """
        buf, start = self.buf, self.pos
        size = self.end - start
        with memoryview(buf) as view:
            text = str(view[start : self.end], "latin-1")
        one, two = INT.unpack_from, _TWO_INTS.unpack_from
        out: list[tuple[Any, ...]] = []
        append = out.append
        at = 0  # where the next entry starts, in text (buf[start + at])
        try:
            for _ in range(n):
                if lead_int:
                    lead, k = two(buf, start + at)
                    a = at + 8
                else:
                    (k,) = one(buf, start + at)
                    a = at + 4
                b = a + k
                (k2,) = one(buf, start + b)
                c = b + 4
                at = c + k2
                if k < 0 or k2 < 0 or at > size:
                    return None
                append((lead, text[a:b], text[c:at]) if lead_int else (text[a:b], text[c:at]))
        except struct.error:
            return None
        if not text[:at].isascii():
            return None
        self.pos = start + at
        return out

    def expect_end(self, what: str) -> None:
        if self.pos != self.end:
            raise ProtocolError(f"{self.end - self.pos} unexpected trailing bytes after {what}")


def _uniform_names(text: str, n: int) -> list[str] | None:
    """The names of a vector (as Latin-1 text) whose ``n`` names all have the first name's length, or None.

    Sequential nodes of one prefix (lock queues, job queues) have names of one length.  The length
    prefixes then sit at fixed strides, which four stepped slices check at once; one split on the
    prefix itself then yields the names with no further copy.
    """
    if len(text) < 4 or not text.startswith("\x00\x00\x00"):
        return None
    k = ord(text[3])
    stride = 4 + k
    size = n * stride
    if k == 0 or size > len(text):
        return None
    region = text[:size]
    zeros = "\x00" * n
    if region[0::stride] != zeros or region[1::stride] != zeros or region[2::stride] != zeros:
        return None
    if region[3::stride] != text[3] * n or not region.isascii():
        return None
    names = region.split(text[:4])
    if len(names) != n + 1:  # a name held the prefix itself (only a name with NULs can)
        return None
    del names[0]
    return names


def repeated_heads(buf: bytes, pos: int, count: int, stride: int, head: int) -> int:
    """How many of the ``count`` entries of ``stride`` bytes from ``buf[pos]`` on, in a row, start with
    the ``head`` bytes the first one starts with (1 at least): a run of a multi's results of one kind.

    Each of the head's bytes is compared down a stepped slice at once, over a window that doubles while
    the run fills it (so that short runs cost little); the plain version compares entry by entry.
    """
    first = buf[pos : pos + head]
    if count < 2 or buf[pos + stride : pos + stride + head] != first:
        return 1 if count else 0
    run, window = 0, 16
    while run < count:
        want = min(window, count - run)
        start = pos + run * stride
        region = buf[start : start + want * stride]
        found = want
        for j in range(head):
            column = region[j::stride]
            found = min(found, len(column) - len(column.lstrip(first[j : j + 1])))
        run += found
        if found < want:
            break
        window *= 2
    return run


#: Each byte that is printable ASCII kept, every other byte made NUL (:func:`_printable_names`).
_PRINTABLE_OR_NUL = bytes(b if 0x20 <= b < 0x7F else 0 for b in range(256))
_PRINTABLE = bytes(range(0x20, 0x7F))


def _printable_names(region: bytes, n: int) -> tuple[list[str], int] | None:
    """The ``n`` names a vector starts ``region`` with, and the bytes they take, when every name is
    printable ASCII and no length byte is (names of up to 31 bytes, as children's names mostly are, or
    of 127 to 255); None otherwise.

    With every byte that is not printable ASCII made NUL, such a vector reads ``NUL NUL NUL NUL <name>``
    repeated, so one split on four NULs cuts out the names themselves (the plain version, the split on
    three NULs of :meth:`Reader._ascii_string_vector`, cuts ``<len><name>`` pieces and then each name
    from its piece).  The cut is then checked in full: the names hold no NUL (none of their bytes was
    changed), and the bytes that were changed are, in order, ``00 00 00 <len>`` for each name in turn:
    the jute encoding, so a vector that passes is the one the careful loop would have read.
    """
    text = region.translate(_PRINTABLE_OR_NUL).decode("ascii")
    names = text.split("\x00\x00\x00\x00", n)
    if len(names) != n + 1 or names[0]:
        return None
    last = names.pop()  # the last name and the bytes after the vector
    del names[0]
    at = len(text) - len(last) - 4  # where the last name's length prefix starts
    k = region[at + 3]
    if len(last) < k:
        return None
    names.append(last[:k])
    consumed = at + 4 + k
    try:
        lengths = bytes(map(len, names))
    except ValueError:  # a piece of 256 bytes or more: not a name of this vector
        return None
    if text.count("\x00", 0, consumed) != 4 * n:
        return None
    prefixes = bytearray(4 * n)
    prefixes[3::4] = lengths
    if region[:consumed].translate(None, _PRINTABLE) != prefixes:
        return None
    return names, consumed


def _decode_surrogate_pairs(raw: bytes) -> str:
    """Decode a string from a Java server, which encodes each UTF-16 unit on its own.

    A character outside the BMP arrives as two 3-byte surrogate encodings instead of one 4-byte
    sequence.  Paired surrogates are joined; anything else that is not UTF-8 raises ProtocolError.
    """
    try:
        return raw.decode("utf-8", "surrogatepass").encode("utf-16-be", "surrogatepass").decode("utf-16-be")
    except UnicodeError as e:
        raise ProtocolError(f"ustring is not valid UTF-8: {e}") from None


def _range_error(what: str, value: object) -> InvalidArgumentError:
    return InvalidArgumentError(f"{what} out of range: {value!r}")


def write_int(out: bytearray, value: int) -> None:
    if not _INT_MIN <= value <= _INT_MAX:
        raise _range_error("int32", value)
    out += INT.pack(value)


def write_long(out: bytearray, value: int) -> None:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise _range_error("int64", value)
    out += LONG.pack(value)


def write_bool(out: bytearray, value: bool) -> None:
    out += _BOOL.pack(bool(value))


def write_buffer(out: bytearray, value: bytes | bytearray | memoryview | None) -> None:
    if value is None:
        out += NULL_LENGTH
        return
    out += INT.pack(len(value))
    out += value


def write_ustring(out: bytearray, value: str | None) -> None:
    if value is None:
        out += NULL_LENGTH
        return
    try:
        b = value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(f"string is not encodable as UTF-8: {e}") from None
    out += INT.pack(len(b))
    out += b


def write_string_vector(out: bytearray, values: Sequence[str | None] | None) -> None:
    if values is None:
        out += NULL_LENGTH
        return
    out += INT.pack(len(values))
    for v in values:
        write_ustring(out, v)
