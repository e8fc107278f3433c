"""A small sans-I/O fake ZooKeeper server for deterministic tests of :class:`zkwire.sansio.session.SessionCore`.

Nothing here opens a socket, starts a task or reads a clock.  A :class:`FakeServer` is the server end of
one connection: :meth:`FakeServer.receive` decodes what the client wrote (the ConnectRequest first, then
RequestHeader + record frames), and the other methods build the exact bytes a test wants the client to
read -- a ConnectResponse (fresh, read-only, expired, refused), replies with any error code and zxid,
watch notifications, ping and auth answers, and frames that are malformed on purpose.

:class:`ConnectionPair` ties one core to the server of its current connection and moves bytes when asked,
so a test reads as a script of both sides::

    pair = ConnectionPair(SessionCore([HostPort("zk", 2181)]))
    pair.connect(now=0.0)                       # ConnectRequest sent, ConnectResponse delivered
    pair.core.send_request(OpCode.GET_DATA, GetDataRequest("/a", False), "tok", 1.0)
    [req] = pair.to_server()                    # the server sees the request
    events = pair.to_client(pair.server.reply(req, GetDataResponse(b"x", STAT)), now=1.1)
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from zkwire.constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, WATCH_XID, KeeperState, OpCode
from zkwire.protocol.codec import decode_connect_request, decode_request, op_name
from zkwire.protocol.framing import FrameDecoder
from zkwire.protocol.records import ConnectRequest, ConnectResponse, Record, ReplyHeader, Stat, WatcherEvent
from zkwire.sansio.session import Event, HostPort, SessionCore

__all__ = [
    "STAT",
    "DEFAULT_PASSWD",
    "ClientRequest",
    "FakeServer",
    "ConnectionPair",
    "frame",
    "stat",
]

_LEN = struct.Struct(">i")

#: Password the fake server hands out unless told otherwise (distinctive, to look for it in logs).
DEFAULT_PASSWD = bytes.fromhex("5ec12e7a11ce0bad5ec12e7a11ce0bad")

#: Ops that change the tree: the fake server gives each a new zxid.
_WRITES = frozenset(
    {
        OpCode.CREATE,
        OpCode.CREATE2,
        OpCode.CREATE_CONTAINER,
        OpCode.CREATE_TTL,
        OpCode.DELETE,
        OpCode.SET_DATA,
        OpCode.SET_ACL,
        OpCode.MULTI,
        OpCode.CLOSE_SESSION,
    }
)


def stat(version: int = 0, *, mzxid: int = 1, data_length: int = 0, num_children: int = 0) -> Stat:
    """A plausible Stat for reply bodies."""
    return Stat(1, mzxid, 1000, 2000, version, 0, 0, 0, data_length, num_children, 1)


STAT = stat()


def frame(payload: bytes | bytearray) -> bytes:
    """``payload`` with its length prefix, whatever it contains (no size check: tests send oversize frames)."""
    return _LEN.pack(len(payload)) + bytes(payload)


@dataclass(frozen=True)
class ClientRequest:
    """One frame the client sent after the handshake."""

    xid: int
    op: int
    record: Record | None

    @property
    def name(self) -> str:
        return op_name(self.op)

    @property
    def is_ping(self) -> bool:
        return self.xid == PING_XID

    @property
    def is_auth(self) -> bool:
        return self.xid == AUTH_XID


@dataclass
class FakeServer:
    """The server side of one connection.  Every reply method returns bytes for ``core.receive_data``."""

    max_frame: int = DEFAULT_MAX_FRAME
    #: The zxid the next write gets; replies to reads carry the current one.
    zxid: int = 0x100
    #: The handshake, once received.
    connect_request: ConnectRequest | None = None
    #: Every frame after the handshake, in arrival order (pings and auth packets included).
    received: list[ClientRequest] = field(default_factory=list)
    #: Requests with a positive xid that have not been answered yet, oldest first.
    unanswered: deque[ClientRequest] = field(default_factory=deque)
    _decoder: FrameDecoder = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._decoder = FrameDecoder(self.max_frame)

    # ------------------------------------------------------------------ client -> server

    def receive(self, data: bytes | bytearray) -> list[ConnectRequest | ClientRequest]:
        """Decode everything complete in ``data`` (any chunking works)."""
        out: list[ConnectRequest | ClientRequest] = []
        for payload in self._decoder.feed(data):
            if self.connect_request is None:
                self.connect_request = decode_connect_request(payload)
                out.append(self.connect_request)
                continue
            header, record = decode_request(payload)
            req = ClientRequest(header.xid, header.type, record)
            self.received.append(req)
            if req.xid > 0:
                self.unanswered.append(req)
            out.append(req)
        return out

    def requests(self, op: int | None = None) -> list[ClientRequest]:
        """Frames received after the handshake, optionally only those of ``op``."""
        return [r for r in self.received if op is None or r.op == op]

    # ------------------------------------------------------------------ handshake

    def accept(
        self,
        *,
        session_id: int = 0x1_0000_0001,
        passwd: bytes = DEFAULT_PASSWD,
        timeout_ms: int | None = None,
        read_only: bool = False,
    ) -> bytes:
        """A ConnectResponse granting ``session_id``; the timeout defaults to the one requested."""
        if timeout_ms is None:
            timeout_ms = self.connect_request.timeout if self.connect_request is not None else 10_000
        return self._connect_response(ConnectResponse(0, timeout_ms, session_id, passwd, read_only))

    def expire(self) -> bytes:
        """The answer to a re-attach of a session the ensemble no longer knows."""
        return self._connect_response(ConnectResponse(0, 0, 0, bytes(16), False))

    def refuse(self, err: int) -> bytes:
        """A bare ReplyHeader in place of a ConnectResponse (what a read-only 3.8 server sends)."""
        return self.header(0, err, zxid=0)

    def _connect_response(self, resp: ConnectResponse) -> bytes:
        out = bytearray()
        resp.write(out)
        return frame(out)

    # ------------------------------------------------------------------ replies

    def header(self, xid: int, err: int = 0, *, zxid: int | None = None, body: Record | None = None) -> bytes:
        """A ReplyHeader frame with an optional body, exactly as given."""
        out = bytearray()
        ReplyHeader(xid, self.zxid if zxid is None else zxid, err).write(out)
        if body is not None:
            body.write(out)
        return frame(out)

    def reply(
        self,
        request: ClientRequest | int,
        body: Record | None = None,
        *,
        err: int = 0,
        zxid: int | None = None,
    ) -> bytes:
        """Answer ``request`` (or a bare xid).  Writes that succeed get a fresh zxid unless one is given."""
        if isinstance(request, ClientRequest):
            xid, op = request.xid, request.op
            try:
                self.unanswered.remove(request)
            except ValueError:
                pass
        else:
            xid, op = request, None
            for r in self.unanswered:
                if r.xid == xid:
                    self.unanswered.remove(r)
                    break
        if zxid is None:
            if op in _WRITES and not err:
                self.zxid += 1
            zxid = self.zxid
        return self.header(xid, err, zxid=zxid, body=body)

    def answer(self, body: Record | None = None, *, err: int = 0, zxid: int | None = None) -> bytes:
        """Answer the oldest unanswered request."""
        return self.reply(self.unanswered[0], body, err=err, zxid=zxid)

    def answer_all(self, bodies: Iterable[Record | None] | None = None) -> bytes:
        """Answer every unanswered request successfully, in order (bodies default to none)."""
        pending = list(self.unanswered)
        body_list = list(bodies) if bodies is not None else [None] * len(pending)
        return b"".join(self.reply(r, b) for r, b in zip(pending, body_list, strict=True))

    def pong(self, *, zxid: int | None = None) -> bytes:
        """A ping reply (the server always uses xid -2)."""
        return self.header(PING_XID, zxid=zxid)

    def auth_reply(self, err: int = 0) -> bytes:
        """The answer to an AuthPacket (xid -4); -115 rejects the credential."""
        return self.header(AUTH_XID, err, zxid=0)

    def event(self, type_: int, path: str | None, state: int = KeeperState.SYNC_CONNECTED) -> bytes:
        """A watch notification: xid -1, zxid -1, then a WatcherEvent."""
        out = bytearray()
        ReplyHeader(WATCH_XID, -1, 0).write(out)
        WatcherEvent(type_, state, path).write(out)
        return frame(out)

    # ------------------------------------------------------------------ broken frames

    @staticmethod
    def raw(payload: bytes | bytearray) -> bytes:
        """Any payload, framed: for truncated headers, trailing garbage and the like."""
        return frame(payload)

    @staticmethod
    def bad_length(n: int) -> bytes:
        """Just a length prefix announcing ``n`` bytes (negative or oversize to break the framing)."""
        return _LEN.pack(n)


class ConnectionPair:
    """A :class:`SessionCore` and the :class:`FakeServer` of its current connection.

    Bytes only move when the test says so: :meth:`to_server` hands the server whatever the core queued,
    :meth:`to_client` feeds server bytes to the core.  Events the core returns are also appended to
    :attr:`events` so a scenario can be checked at the end.
    """

    def __init__(self, core: SessionCore) -> None:
        self.core = core
        self.server = FakeServer(max_frame=core.max_frame)
        self.host: HostPort | None = None
        self.events: list[Event] = []

    def open(self, now: float, host: HostPort | None = None) -> ConnectRequest:
        """A new TCP connection (to ``host``, or ``core.next_host()``): returns the ConnectRequest sent."""
        self.host = host if host is not None else self.core.next_host()
        self.server = FakeServer(max_frame=self.core.max_frame)
        self.core.connection_made(self.host, now)
        [req] = self.server.receive(self.core.data_to_send())
        assert isinstance(req, ConnectRequest)
        return req

    def connect(
        self,
        now: float,
        *,
        session_id: int = 0x1_0000_0001,
        passwd: bytes = DEFAULT_PASSWD,
        timeout_ms: int | None = None,
        read_only: bool = False,
    ) -> list[Event]:
        """open(), then deliver an accepting ConnectResponse."""
        self.open(now)
        resp = self.server.accept(session_id=session_id, passwd=passwd, timeout_ms=timeout_ms, read_only=read_only)
        return self.to_client(resp, now)

    def to_server(self) -> list[ClientRequest]:
        """Deliver what the core queued since the handshake went out: the requests the server got."""
        received = self.server.receive(self.core.data_to_send())
        requests = [r for r in received if isinstance(r, ClientRequest)]
        assert len(requests) == len(received), "a second ConnectRequest on one connection"
        return requests

    def to_client(self, data: bytes | bytearray, now: float) -> list[Event]:
        events = self.core.receive_data(data, now)
        self.events += events
        return events

    def timer(self, now: float) -> list[Event]:
        events = self.core.handle_timer(now)
        self.events += events
        return events

    def lose(self, now: float) -> list[Event]:
        """The socket broke."""
        events = self.core.connection_lost(now)
        self.events += events
        return events
