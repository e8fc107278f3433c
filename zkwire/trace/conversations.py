"""Captured TCP segments to decoded ZooKeeper frames, connection by connection (sans I/O).

:class:`CaptureDecoder` takes the :class:`~zkwire.trace.capture.TcpSegment` s of a capture file or a
live interface in capture order, reassembles each connection's two byte streams
(:class:`~zkwire.trace.capture.TcpReassembler`: reordering, retransmissions, gaps), decodes them with a
:class:`~zkwire.trace.decoder.ConversationDecoder` per connection and returns
:class:`CaptureEvent` s, both directions merged in capture-time order, each with its capture time.

Which side is the server: the ports given; else a well-known ZooKeeper port (2181, 2281), or the side
that answered a ConnectRequest (its port then counts as a server port for connections caught later
without their handshake).  Connections that show none of this are not ZooKeeper's and are counted in
:attr:`CaptureDecoder.ignored`, not decoded.

Where bytes are missing (a capture that starts mid-connection, a lost packet, a short snap length),
decoding resumes at the next frame boundary (:mod:`zkwire.trace.resync`) and a note says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from ..constants import DEFAULT_MAX_FRAME
from .capture import StreamData, StreamEnd, TcpReassembler, TcpSegment
from .decoder import FOUR_LETTER_WORDS, ConversationDecoder
from .frames import CLIENT, SERVER, DecodedFrame, Direction
from .resync import SEARCH_WINDOW, find_boundary
from .streams import CONNECT_REQUEST_SIZES

__all__ = ["CaptureEvent", "CaptureDecoder", "Endpoint", "WELL_KNOWN_PORTS", "format_endpoint"]

Endpoint = tuple[str, int]
WELL_KNOWN_PORTS = frozenset({2181, 2281})
#: Bytes of a connection held while deciding whether it is ZooKeeper's.
_UNDECIDED_LIMIT = 1 << 16


def _other(direction: Direction) -> Direction:
    return SERVER if direction == CLIENT else CLIENT


def format_endpoint(ep: Endpoint) -> str:
    host, port = ep
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


#: What a :class:`CaptureEvent` reports.
CaptureEventKind = Literal["open", "frame", "note", "close"]


@dataclass(slots=True)
class CaptureEvent:
    """What one connection did at capture time ``ts``: ``kind`` is "open" (first seen), "frame" (a
    decoded ``frame``), "note" (``note`` says what: bytes missing, a resynchronisation) or "close".

    A value, like :class:`~zkwire.trace.frames.DecodedFrame` (and, like it, not frozen: one is made for
    every frame of a capture)."""

    ts: float
    conn: int
    client: Endpoint
    server: Endpoint
    kind: CaptureEventKind
    frame: DecodedFrame | None = None
    note: str | None = None


def _is_connect_request(head: bytes) -> bool:
    if len(head) < 8:
        return False
    n = int.from_bytes(head[:4], "big", signed=True)
    return n in CONNECT_REQUEST_SIZES and head[4:8] == b"\x00\x00\x00\x00"


@dataclass
class _Follow:
    """Framing of one direction: "framed" (decoding; where its frames start is the decoder's to say),
    "skip" (``skip_left`` bytes to the next frame), "search" (looking for a boundary in ``search``)."""

    state: str = "framed"
    skip_left: int = 0
    skipped: int = 0
    search: bytearray = field(default_factory=bytearray)
    ended: bool = False


@dataclass
class _Conversation:
    id: int
    client: Endpoint
    server: Endpoint
    decoder: ConversationDecoder
    follow: dict[str, _Follow]
    flipped: bool = False
    zk: bool | None = None
    held: list[StreamData | StreamEnd] = field(default_factory=list)
    held_bytes: int = 0
    heads: dict[str, bytes] = field(default_factory=dict)  # first bytes of each direction (from its start)
    announced: bool = False


class CaptureDecoder:
    """Segments in, :class:`CaptureEvent` s out; see the module docstring.

    ``server_ports``: the server's ports (only connections to them are decoded); empty: detected.
    ``reading``, ``compiled`` and ``only_ops``: how records are read (see :class:`ConversationDecoder`).
    """

    def __init__(
        self,
        server_ports: Iterable[int] = (),
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        compiled: bool = False,
        reading: str = "fast",
        only_ops: frozenset[int] | None = None,
    ) -> None:
        self.server_ports = frozenset(server_ports)
        self.max_frame = max_frame
        self.compiled = compiled
        self.reading = reading
        self.only_ops = only_ops
        self.reassembler = TcpReassembler(self.server_ports or None)
        #: Ports found to be servers' (they answered a ConnectRequest).
        self.learned_ports: set[int] = set()
        #: Connections seen that were not ZooKeeper's (not decoded).
        self.ignored = 0
        self._conversations: dict[tuple[Endpoint, Endpoint], _Conversation] = {}
        self._ids = itertools.count(1)
        self._last_ts = 0.0  # the capture time of the last segment

    # ------------------------------------------------------------------ public

    def add(self, seg: TcpSegment) -> list[CaptureEvent]:
        self._last_ts = seg.ts
        out: list[CaptureEvent] = []
        for ev in self.reassembler.add(seg):
            self._event(ev, out)
        return out

    def add_all(self, segments: Iterable[TcpSegment]) -> Iterable[CaptureEvent]:
        """Every event of ``segments``, then of :meth:`finish`."""
        for seg in segments:
            yield from self.add(seg)
        yield from self.finish()

    def finish(self) -> list[CaptureEvent]:
        """End of the capture: held bytes are delivered, connections still open are closed."""
        out: list[CaptureEvent] = []
        for ev in self.reassembler.finish():
            self._event(ev, out)
        for key, conv in list(self._conversations.items()):
            if conv.zk is None:
                self._decide(conv, final=True, out=out)
            if conv.zk:
                ts = self._last_ts
                for direction in (CLIENT, SERVER):
                    self._end(conv, direction, ts, out)
                out.append(self._make(conv, ts, "close", note="still open at the end of the capture"))
            del self._conversations[key]
        return out

    # ------------------------------------------------------------------ routing

    def _event(self, ev: StreamData | StreamEnd, out: list[CaptureEvent]) -> None:
        conv = self._conversations.get(ev.conn)
        if conv is not None and conv.announced and type(ev) is StreamData and not ev.gap and self._plain(conv, ev, out):
            return
        if conv is None:
            conv = self._new(ev.conn)
        if conv.zk is False:
            if isinstance(ev, StreamEnd):
                self._forget_if_done(ev)
            return
        if conv.zk is None:
            conv.held.append(ev)
            if isinstance(ev, StreamData):
                conv.held_bytes += len(ev.data)
                if ev.direction not in conv.heads:
                    conv.heads[ev.direction] = ev.data[:8] if ev.gap <= 0 else b""
                elif ev.gap == 0 and len(conv.heads[ev.direction]) < 8:
                    conv.heads[ev.direction] += ev.data[: 8 - len(conv.heads[ev.direction])]
            self._decide(conv, final=isinstance(ev, StreamEnd) and ev.reset, out=out)
            return
        self._route(conv, ev, out)

    def _plain(self, conv: _Conversation, ev: StreamData, out: list[CaptureEvent]) -> bool:
        """Does what :meth:`_route` and :meth:`_data` would do with ``ev`` in the plain case, else returns
        False (and does nothing).

        The plain case: a ZooKeeper conversation already announced, data with no gap before it, into a
        direction being decoded (framed, not ended); then all there is to do is to feed the decoder.
        Nearly every segment of a capture is this case."""
        direction = _other(ev.direction) if conv.flipped else ev.direction
        f = conv.follow[direction]
        if f.state != "framed" or f.ended:
            return False
        self._frames(conv, conv.decoder.feed(direction, ev.data, ev.ts), ev.ts, out)
        return True

    def _forget_if_done(self, ev: StreamEnd) -> None:
        conv = self._conversations.get(ev.conn)
        if conv is None:
            return
        conv.follow[ev.direction].ended = True
        if ev.reset or all(f.ended for f in conv.follow.values()):
            del self._conversations[ev.conn]

    def _new(self, key: tuple[Endpoint, Endpoint]) -> _Conversation:
        client, server = key
        conv = _Conversation(
            id=0,
            client=client,
            server=server,
            decoder=ConversationDecoder(
                max_frame=self.max_frame, compiled=self.compiled, reading=self.reading, only_ops=self.only_ops
            ),
            follow={CLIENT: _Follow(), SERVER: _Follow()},
        )
        if self.server_ports:
            conv.zk = server[1] in self.server_ports or client[1] in self.server_ports
            conv.flipped = server[1] not in self.server_ports
        else:
            known = WELL_KNOWN_PORTS | self.learned_ports
            if server[1] in known or client[1] in known:
                conv.zk = True
                conv.flipped = server[1] not in known
        if conv.zk is False:
            self.ignored += 1
        self._conversations[key] = conv
        if conv.zk:
            self._opened(conv)
        return conv

    def _opened(self, conv: _Conversation) -> None:
        conv.id = next(self._ids)
        if conv.flipped:
            conv.client, conv.server = conv.server, conv.client

    def _decide(self, conv: _Conversation, *, final: bool, out: list[CaptureEvent]) -> None:
        """Whether an undecided connection is ZooKeeper's: one side opened with a ConnectRequest (or a
        four-letter word) -- that side is the client."""
        for direction, head in conv.heads.items():
            if _is_connect_request(head) or (len(head) >= 4 and head[:4] in FOUR_LETTER_WORDS):
                conv.zk = True
                conv.flipped = direction == SERVER
                server_port = conv.client[1] if conv.flipped else conv.server[1]
                if _is_connect_request(head):
                    self.learned_ports.add(server_port)
                break
        else:
            settled = all(len(conv.heads.get(d, b"\0" * 8)) >= 8 or conv.heads.get(d) == b"" for d in (CLIENT, SERVER))
            if not (final or settled or conv.held_bytes > _UNDECIDED_LIMIT):
                return
            conv.zk = False
        held, conv.held = conv.held, []
        conv.held_bytes = 0
        if not conv.zk:
            self.ignored += 1
            for ev in held:
                if isinstance(ev, StreamEnd):
                    self._forget_if_done(ev)
            return
        self._opened(conv)
        for ev in held:
            self._route(conv, ev, out)

    def _make(self, conv: _Conversation, ts: float, kind: CaptureEventKind, **fields: object) -> CaptureEvent:
        return CaptureEvent(ts, conv.id, conv.client, conv.server, kind, **fields)  # type: ignore[arg-type]

    def _route(self, conv: _Conversation, ev: StreamData | StreamEnd, out: list[CaptureEvent]) -> None:
        if not conv.announced:
            conv.announced = True
            mid = " (already open when the capture began)" if isinstance(ev, StreamData) and ev.gap < 0 else ""
            note = f"open: client {format_endpoint(conv.client)} -> server {format_endpoint(conv.server)}{mid}"
            out.append(self._make(conv, ev.ts, "open", note=note))
        direction = _other(ev.direction) if conv.flipped else ev.direction
        if isinstance(ev, StreamData):
            self._data(conv, direction, ev.data, ev.gap, ev.ts, out)
            return
        if ev.reset:
            for d in (CLIENT, SERVER):
                self._end(conv, d, ev.ts, out)
        else:
            self._end(conv, direction, ev.ts, out)
        if all(f.ended for f in conv.follow.values()):
            out.append(self._make(conv, ev.ts, "close", note="reset" if ev.reset else "closed"))
            self._conversations.pop(ev.conn, None)

    # ------------------------------------------------------------------ framing

    def _frames(self, conv: _Conversation, frames: list[DecodedFrame], ts: float, out: list[CaptureEvent]) -> None:
        conn, client, server = conv.id, conv.client, conv.server
        append = out.append  # a loop of appends: quicker than extending by a list comprehension
        for f in frames:
            append(CaptureEvent(ts, conn, client, server, "frame", f))

    def _data(
        self, conv: _Conversation, direction: Direction, data: bytes, gap: int, ts: float, out: list[CaptureEvent]
    ) -> None:
        f = conv.follow[direction]
        if f.ended:
            return
        if gap:
            self._gap(conv, f, direction, gap, ts, out)
        if f.state == "skip":
            if len(data) < f.skip_left:
                f.skip_left -= len(data)
                f.skipped += len(data)
                return
            f.skipped += f.skip_left
            data = data[f.skip_left :]
            self._resume(conv, f, direction, ts, out, "lost in the capture")
        if f.state == "search":
            f.search += data
            k = find_boundary(direction, f.search, max_frame=self.max_frame)
            if k is None:
                if len(f.search) > SEARCH_WINDOW + self.max_frame:
                    f.skipped += len(f.search)
                    f.search.clear()
                return
            data = bytes(f.search[k:])
            f.skipped += k
            f.search.clear()
            self._resume(conv, f, direction, ts, out, "before the first frame boundary found")
        self._frames(conv, conv.decoder.feed(direction, data, ts), ts, out)

    def _gap(
        self, conv: _Conversation, f: _Follow, direction: Direction, gap: int, ts: float, out: list[CaptureEvent]
    ) -> None:
        if gap < 0:
            note = f"{direction} side: the capture starts mid-connection; decoding resumes at a frame boundary"
            out.append(self._make(conv, ts, "note", note=note))
            f.state = "search"
            return
        left = conv.decoder.frame_left(direction) if f.state == "framed" else None
        left = left - gap if left is not None and gap <= left else None  # None: the gap reaches past the frame
        out.append(self._make(conv, ts, "note", note=f"{direction} side: {gap} bytes missing from the capture"))
        if f.state == "search":
            f.skipped += len(f.search) + gap
            f.search.clear()
        elif left is None:
            f.skipped += gap + (f.skip_left if f.state == "skip" else 0)
            f.state = "search"
        else:
            f.skipped += gap
            f.state, f.skip_left = "skip", left

    def _resume(
        self, conv: _Conversation, f: _Follow, direction: Direction, ts: float, out: list[CaptureEvent], why: str
    ) -> None:
        """The next byte starts a frame: the decoder drops what it held and what was skipped."""
        frames = conv.decoder.skip(direction, f.skipped, ts, reason=f"not decoded: {why}") if f.skipped else []
        if not frames:
            note = f"{direction} side: resynchronised on a frame boundary"
            out.append(self._make(conv, ts, "note", note=note))
        self._frames(conv, frames, ts, out)
        f.skipped = 0
        f.skip_left = 0
        f.state = "framed"

    def _end(self, conv: _Conversation, direction: Direction, ts: float, out: list[CaptureEvent]) -> None:
        f = conv.follow[direction]
        if f.ended:
            return
        if f.state == "search" and f.search:
            k = find_boundary(direction, f.search, max_frame=self.max_frame, final=True)
            if k is not None:
                data = bytes(f.search[k:])
                f.skipped += k
                f.search.clear()
                self._resume(conv, f, direction, ts, out, "before the first frame boundary found")
                self._frames(conv, conv.decoder.feed(direction, data, ts), ts, out)
            else:
                f.skipped += len(f.search)
                f.search.clear()
        if f.skipped:
            note = f"{direction} side: {f.skipped} bytes at the end not decoded (no frame boundary found)"
            out.append(self._make(conv, ts, "note", note=note))
            f.skipped = 0
        f.ended = True
        self._frames(conv, conv.decoder.eof(direction, ts), ts, out)
