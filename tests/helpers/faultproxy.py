"""A fault-injecting TCP proxy between a ZooKeeper client and a real server, for tests.

::

    async with open_fault_proxy(upstream_host, upstream_port) as proxy:   # or open_fault_proxy(zk_hosts)
        client = connect(proxy.hosts)            # "127.0.0.1:<free port>"
        await proxy.sever()                      # close every current connection (new ones still accepted)
        proxy.freeze(); ...; proxy.thaw()        # hold traffic both ways, connections open; then deliver it
        proxy.set_delay(0.05)                    # latency on every forwarded frame, order kept
        proxy.refuse(True)                       # new connections are reset as soon as they are accepted
        lost = proxy.swallow_reply(op=OpCode.CREATE2, path_prefix="/locks/x")
        info = await lost.wait()                 # request applied, reply dropped, connection severed
        proxy.drop_request(op=OpCode.DELETE)     # request never forwarded, connection severed
        proxy.sever_after_request(op=OpCode.CREATE2)  # request forwarded, connection severed at once
        proxy.retarget(host, port)               # upstream of NEW connections

Each direction of each connection is split into frames (4-byte big-endian length, then the payload)
with :class:`~zkwire.protocol.framing.FrameDecoder` and forwarded frame by frame, byte for byte as received. The
first frame each way is the handshake (ConnectRequest, ConnectResponse); after it, client frames start
with a RequestHeader ``(xid, type)`` and server frames with a ReplyHeader ``(xid, zxid, err)``, which is
what the request rules match on (the path is the request's own path, as sent on the wire, so it includes
any chroot; for multi it is any sub-operation's path). A stream that is not length-framed (a four-letter
word, TLS) is forwarded as raw chunks from the point where framing fails; no rule applies to it.

Rules are checked when a frame is forwarded, not when it is read: a request held by :meth:`freeze` and
then dropped by ``thaw(drop=True)`` does not trigger a rule.

Nothing here can hang a test: every task belongs to the ``async with`` block and is cancelled when it
ends, every socket is then closed, and what the proxy holds per direction is bounded (once
:data:`BUFFER_LIMIT` bytes are waiting, the proxy stops reading and TCP flow control pushes back).
"""

from __future__ import annotations

import itertools
import socket
import struct
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import trio

from helpers.addresses import first_server
from zkwire.constants import OpCode
from zkwire.errors import ProtocolError
from zkwire.protocol.codec import decode_connect_response, decode_reply, decode_reply_header, decode_request
from zkwire.protocol.framing import FrameDecoder
from zkwire.protocol.multi import MultiRequest
from zkwire.protocol.records import Create2Response, CreateResponse, ReplyHeader

__all__ = [
    "BUFFER_LIMIT",
    "Direction",
    "FaultProxy",
    "FaultRule",
    "ProxiedConnection",
    "Then",
    "open_fault_proxy",
]

#: Bytes held per direction of a connection before the proxy stops reading from that side.
BUFFER_LIMIT = 4 << 20
#: Largest frame the proxy splits out; a longer length prefix switches that direction to raw chunks.
_MAX_FRAME = 16 << 20
_CHUNK = 65536
_CONNECT_TIMEOUT = 5.0

_LEN = struct.Struct(">i")
_XID_OP = struct.Struct(">ii")
_LINGER_RESET = struct.pack("ii", 1, 0)

#: ``to_server``: client to server; ``to_client``: server to client.
Direction = Literal["to_server", "to_client"]
#: What happens to a connection after a rule fired: ``sever`` closes it (the default), ``continue``
#: goes on forwarding everything else, ``stall`` keeps it open but forwards nothing more either way
#: (until :meth:`FaultProxy.sever` or the end of the proxy).
Then = Literal["sever", "continue", "stall"]
_DIRECTIONS: tuple[Direction, Direction] = ("to_server", "to_client")
_CREATE_OPS = frozenset({OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL})


class _Signal:
    """Wakes every task waiting on it; check the condition, then ``await wait()``, in a loop."""

    def __init__(self) -> None:
        self._event = trio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = trio.Event()

    async def wait(self) -> None:
        await self._event.wait()


@dataclass(eq=False)
class FaultRule:
    """One armed fault, returned by :meth:`FaultProxy.swallow_reply` and :meth:`FaultProxy.drop_request`.

    It fires once, on the first request forwarded (after arming) whose op is in ``ops`` (any op but a
    ping if None) and one of whose paths starts with ``path_prefix`` (any request if None). Then the
    fields below the line describe what happened; ``await rule.wait()`` returns the rule once it is
    complete: for ``drop_request`` when the request was dropped, for ``swallow_reply`` when its reply
    was dropped (``reply`` set) or the connection ended before the reply came (``reply`` None).
    """

    action: Literal["swallow_reply", "drop_request", "sever_after_request"]
    ops: frozenset[int] | None
    path_prefix: str | None
    then: Then
    # ---- filled in when the rule fires
    connection: int | None = None  #: ProxiedConnection.id
    session_id: int | None = None
    xid: int | None = None
    op: int | None = None
    path: str | None = None  #: the request's (first) path
    reply: ReplyHeader | None = None  #: the swallowed reply's header
    reply_payload: bytes | None = None  #: the swallowed reply, header included (no length prefix)
    matched: trio.Event = field(default_factory=trio.Event, repr=False)
    done: trio.Event = field(default_factory=trio.Event, repr=False)

    @property
    def triggered(self) -> bool:
        return self.done.is_set()

    async def wait(self) -> FaultRule:
        await self.done.wait()
        return self

    @property
    def created_path(self) -> str | None:
        """For a swallowed successful create: the path the server created (sequence suffix included)."""
        if self.reply is None or self.reply_payload is None or self.reply.err != 0 or self.op not in _CREATE_OPS:
            return None
        try:
            _, body = decode_reply(self.op, self.reply_payload)
        except ProtocolError:
            return None
        return body.path if isinstance(body, CreateResponse | Create2Response) else None

    def _matches(self, op: int, paths: list[str]) -> bool:
        if self.ops is None:
            if op == OpCode.PING:
                return False
        elif op not in self.ops:
            return False
        return self.path_prefix is None or any(p.startswith(self.path_prefix) for p in paths)


def _request_paths(payload: bytes) -> list[str]:
    """The paths a request names: its record's ``path``, or every sub-operation's for a multi."""
    try:
        _, record = decode_request(payload)
    except ProtocolError:
        return _first_ustring(payload)
    if isinstance(record, MultiRequest):
        candidates = [getattr(sub.request, "path", None) for sub in record.ops]
    else:
        candidates = [getattr(record, "path", None)]
    return [p for p in candidates if isinstance(p, str)]


def _first_ustring(payload: bytes) -> list[str]:
    """Fallback for requests the codec rejects: the string right after the header, if there is one."""
    if len(payload) < 12:
        return []
    n = _LEN.unpack_from(payload, 8)[0]
    if n < 0 or 12 + n > len(payload):
        return []
    try:
        return [payload[12 : 12 + n].decode()]
    except UnicodeDecodeError:
        return []


def _as_ops(op: int | Iterable[int] | None) -> frozenset[int] | None:
    if op is None:
        return None
    if isinstance(op, int):
        return frozenset({int(op)})
    return frozenset(int(o) for o in op)


class _Pipe:
    """One direction of a connection: a reader task fills a bounded queue, a writer task drains it."""

    def __init__(
        self, conn: ProxiedConnection, direction: Direction, src: trio.SocketStream, dst: trio.SocketStream
    ) -> None:
        self.conn = conn
        self.direction = direction
        self.src = src
        self.dst = dst
        self.queue: deque[tuple[float, bytes, bool]] = deque()  # (arrival time, bytes, is a whole frame)
        self.buffered = 0
        self.eof = False
        self.raw = False  # framing failed: forward chunks as they come, match nothing
        self.frames = 0  # whole frames forwarded (the first one is the handshake)
        self.last_sent = float("-inf")  # when the last item went out (for the pace)
        self.after_send: FaultRule | None = None  # a rule to complete once the current frame is written
        self.changed = _Signal()
        self._decoder = FrameDecoder(max_frame=_MAX_FRAME)
        self._tail = b""  # the bytes the decoder holds (not yet a whole frame), kept for the raw fallback

    # ---------------------------------------------------------------- reading

    async def pump_in(self) -> None:
        try:
            while True:
                while self.buffered >= BUFFER_LIMIT:
                    await self.changed.wait()
                data = await self.src.receive_some(_CHUNK)
                if not data:
                    break
                now = trio.current_time()
                for item, is_frame in self._split(data):
                    self.queue.append((now, item, is_frame))
                    self.buffered += len(item)
                self.changed.notify()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self.conn._close_soon(reset=True)  # mirror an abrupt end on the other side
            return
        self.eof = True
        self.changed.notify()

    def _split(self, data: bytes) -> list[tuple[bytes, bool]]:
        if self.raw:
            return [(data, False)]
        try:
            payloads = self._decoder.feed(data)
        except ProtocolError:
            self.raw = True
            return [(self._tail + data, False)]
        if self._decoder.error is not None:
            # Whole frames, then a bad length: the frames go as frames, the rest raw.
            self.raw = True
            stream = self._tail + data
            used = sum(4 + len(p) for p in payloads)
            return [(_LEN.pack(len(p)) + p, True) for p in payloads] + [(stream[used:], False)]
        held = self._decoder.buffered
        if held == 0:
            self._tail = b""
        elif held <= len(data):
            self._tail = data[len(data) - held :]
        else:
            self._tail = self._tail[len(self._tail) - (held - len(data)) :] + data
        return [(_LEN.pack(len(p)) + p, True) for p in payloads]

    # ---------------------------------------------------------------- writing

    def _blocked(self) -> bool:
        return self.conn.stalled or self.direction in self.conn.proxy._frozen

    async def pump_out(self) -> None:
        proxy = self.conn.proxy
        try:
            while not self.conn._closing:
                if self._blocked() or not self.queue:
                    if self.eof and not self.queue and not self._blocked():
                        break
                    await self.changed.wait()
                    continue
                arrival, item, is_frame = self.queue[0]
                due = max(arrival + proxy._delay[self.direction], self.last_sent + proxy._pace[self.direction])
                if trio.current_time() < due:
                    with trio.move_on_at(due):
                        await self.changed.wait()  # early if the delay, the freeze or the queue changes
                    continue
                self.queue.popleft()
                self.buffered -= len(item)
                self.changed.notify()  # room for the reader
                if is_frame and not self._inspect(item[4:]):
                    continue
                if is_frame:
                    self.frames += 1
                self.last_sent = trio.current_time()
                await self.dst.send_all(item)
                rule, self.after_send = self.after_send, None
                if rule is not None:
                    rule.done.set()
                    self.conn._then(rule.then)
                    proxy._changed.notify()
                if is_frame and self.frames == 1 and self.direction == "to_client":
                    proxy.handshakes += 1
                    proxy._changed.notify()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self.conn._close_soon(reset=True)
            return
        self.conn._close_soon(reset=False)  # the source ended and everything it sent was delivered

    def _inspect(self, payload: bytes) -> bool:
        """Apply the rules to one frame about to be forwarded; False: do not forward it."""
        if self.frames == 0:  # the handshake
            if self.direction == "to_client":
                try:
                    self.conn.session_id = decode_connect_response(payload).session_id
                except ProtocolError:
                    pass
            return True
        if self.direction == "to_server":
            return self.conn._on_request(payload)
        return self.conn._on_reply(payload)

    def drop_queued(self) -> int:
        """Forget everything held (for ``thaw(drop=True)``); returns how many frames that was."""
        dropped = sum(1 for _, _, is_frame in self.queue if is_frame)
        self.queue.clear()
        self.buffered = 0
        self.changed.notify()
        return dropped


class ProxiedConnection:
    """One client connection and its upstream connection (see :attr:`FaultProxy.live`)."""

    def __init__(
        self,
        proxy: FaultProxy,
        conn_id: int,
        client: trio.SocketStream,
        upstream: trio.SocketStream,
        upstream_address: tuple[str, int],
    ) -> None:
        self.proxy = proxy
        self.id = conn_id
        self.upstream_address = upstream_address
        self.session_id: int | None = None  #: from the server's ConnectResponse
        self.stalled = False
        self._client = client
        self._upstream = upstream
        self._to_server = _Pipe(self, "to_server", client, upstream)
        self._to_client = _Pipe(self, "to_client", upstream, client)
        self._scope = trio.CancelScope()
        self._reset = False
        self._closing = False
        self._closed = trio.Event()
        self._awaiting_reply: dict[int, FaultRule] = {}  # xid -> swallow_reply rule

    def __repr__(self) -> str:
        sid = "-" if self.session_id is None else f"0x{self.session_id:x}"
        return f"<ProxiedConnection #{self.id} session {sid} to {self.upstream_address[0]}:{self.upstream_address[1]}>"

    @property
    def pipes(self) -> tuple[_Pipe, _Pipe]:
        return self._to_server, self._to_client

    @property
    def buffered(self) -> int:
        """Bytes read from either side and not yet forwarded (partial frames not counted)."""
        return self._to_server.buffered + self._to_client.buffered

    def held(self, direction: Direction) -> int:
        """Bytes held on their way ``to_server`` or ``to_client`` (partial frames not counted)."""
        return (self._to_server if direction == "to_server" else self._to_client).buffered

    def forwarded(self, direction: Direction) -> int:
        """Whole frames forwarded ``to_server`` or ``to_client`` so far, the handshake included."""
        return (self._to_server if direction == "to_server" else self._to_client).frames

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def sever(self, *, reset: bool = False) -> None:
        """Close both sides now (``reset``: with a TCP RST) and wait until they are closed."""
        self._close_soon(reset=reset)
        await self._closed.wait()

    def _close_soon(self, *, reset: bool) -> None:
        self._reset = self._reset or reset
        self._closing = True
        self._scope.cancel()

    def _wake(self) -> None:
        for pipe in self.pipes:
            pipe.changed.notify()

    async def run(self) -> None:
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    for pipe in self.pipes:
                        nursery.start_soon(pipe.pump_in)
                        nursery.start_soon(pipe.pump_out)
        finally:
            for stream in (self._client, self._upstream):
                if self._reset:
                    try:
                        stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                    except OSError:
                        pass
                await trio.aclose_forcefully(stream)
            for rule in self._awaiting_reply.values():
                rule.done.set()  # the reply never came
            self._awaiting_reply.clear()
            self._closed.set()

    # ---------------------------------------------------------------- rules

    def _fire(self, rule: FaultRule, xid: int, op: int, paths: list[str]) -> None:
        rule.connection, rule.session_id = self.id, self.session_id
        rule.xid, rule.op, rule.path = xid, op, (paths[0] if paths else None)
        rule.matched.set()
        self.proxy._changed.notify()

    def _then(self, then: Then) -> None:
        if then == "sever":
            self._close_soon(reset=False)
        elif then == "stall":
            self.stalled = True
            self._wake()

    def _on_request(self, payload: bytes) -> bool:
        if len(payload) < 8:
            return True
        xid, op = _XID_OP.unpack_from(payload, 0)
        rule = self.proxy._take_rule(op, payload)
        if rule is None:
            return True
        self._fire(rule, xid, op, _request_paths(payload))
        if rule.action == "drop_request":
            rule.done.set()
            self._then(rule.then)
            return False
        if rule.action == "sever_after_request":
            self._to_server.after_send = rule
            return True
        self._awaiting_reply[xid] = rule
        return True

    def _on_reply(self, payload: bytes) -> bool:
        if len(payload) < 16 or not self._awaiting_reply:
            return True
        rule = self._awaiting_reply.pop(_LEN.unpack_from(payload, 0)[0], None)
        if rule is None:
            return True
        rule.reply = decode_reply_header(payload)
        rule.reply_payload = payload
        rule.done.set()
        self.proxy._changed.notify()
        self._then(rule.then)
        return False


class FaultProxy:
    """The proxy; made by :func:`open_fault_proxy`, which owns its tasks and sockets."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream  #: where new connections go (see :meth:`retarget`)
        self.port = 0
        self.total_connections = 0  #: connections accepted so far, refused ones included
        self.refused_connections = 0  #: closed at once because of :meth:`refuse`
        self.failed_connections = 0  #: closed because the upstream server could not be reached
        self.handshakes = 0  #: ConnectResponses delivered to clients (sessions opened or resumed)
        self.refusing = False
        self._frozen: set[Direction] = set()
        self._delay: dict[Direction, float] = dict.fromkeys(_DIRECTIONS, 0.0)
        self._pace: dict[Direction, float] = dict.fromkeys(_DIRECTIONS, 0.0)
        self._live: dict[int, ProxiedConnection] = {}
        self._rules: list[FaultRule] = []
        self._ids = itertools.count(1)
        self._changed = _Signal()
        self._nursery: trio.Nursery | None = None

    # ---------------------------------------------------------------- state

    @property
    def hosts(self) -> str:
        """Connect string for a client: ``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        """Proxied connections open right now."""
        return len(self._live)

    @property
    def live(self) -> list[ProxiedConnection]:
        """The open connections, oldest first."""
        return list(self._live.values())

    @property
    def frozen(self) -> bool:
        return bool(self._frozen)

    @property
    def armed(self) -> list[FaultRule]:
        """Rules that have not fired yet."""
        return list(self._rules)

    async def wait_until(self, predicate: Callable[[FaultProxy], bool]) -> None:
        """Return once ``predicate(proxy)`` holds; re-checked whenever a connection opens, completes its
        handshake or closes, or a rule fires. Put it under ``trio.fail_after``."""
        while not predicate(self):
            await self._changed.wait()

    # ---------------------------------------------------------------- faults

    async def sever(self, *, reset: bool = False) -> int:
        """Close every current connection on both sides, abruptly: whatever the proxy still holds is lost.

        With ``reset`` both sockets are closed with a TCP RST instead of a FIN. Returns once they are
        closed, with the number of connections severed. New connections are accepted as before.
        """
        current = self.live
        for conn in current:
            conn._close_soon(reset=reset)
        for conn in current:
            await conn._closed.wait()
        await trio.lowlevel.checkpoint()
        return len(current)

    def freeze(self, *, to_server: bool = True, to_client: bool = True) -> None:
        """Stop forwarding (both directions by default) on every current and new connection.

        Connections stay open; what arrives is held (up to :data:`BUFFER_LIMIT` per direction and
        connection, then TCP pushes back) until :meth:`thaw`.
        """
        if to_server:
            self._frozen.add("to_server")
        if to_client:
            self._frozen.add("to_client")
        self._wake_all()

    def thaw(self, *, drop: bool = False) -> int:
        """Resume forwarding both ways. ``drop``: first forget every whole frame held (a partial frame
        is completed and delivered, so the stream stays well framed). Returns the frames dropped."""
        dropped = 0
        if drop:
            for conn in self._live.values():
                for pipe in conn.pipes:
                    if pipe.direction in self._frozen:
                        dropped += pipe.drop_queued()
        self._frozen.clear()
        self._wake_all()
        return dropped

    def set_delay(self, seconds: float, *, to_server: bool = True, to_client: bool = True) -> None:
        """Forward every frame ``seconds`` after it arrived (per direction; 0 for none). Order is kept."""
        self._set_per_direction(self._delay, "delay", seconds, to_server=to_server, to_client=to_client)

    def set_pace(self, seconds: float, *, to_server: bool = False, to_client: bool = True) -> None:
        """Forward at most one frame every ``seconds`` (per connection and direction; 0 for no limit):
        a slow link, or a server working through a deep queue.  Order is kept."""
        self._set_per_direction(self._pace, "pace", seconds, to_server=to_server, to_client=to_client)

    def _set_per_direction(
        self, table: dict[Direction, float], what: str, seconds: float, *, to_server: bool, to_client: bool
    ) -> None:
        if seconds < 0:
            raise ValueError(f"{what} must be >= 0")
        if to_server:
            table["to_server"] = seconds
        if to_client:
            table["to_client"] = seconds
        self._wake_all()

    def refuse(self, on: bool = True) -> None:
        """Reset new connections as soon as they are accepted (current ones are left alone)."""
        self.refusing = on

    def retarget(self, host: str, port: int) -> None:
        """Send new connections to ``host:port`` (current ones keep their server)."""
        self.upstream = (host, port)

    def swallow_reply(
        self,
        op: int | Iterable[int] | None = None,
        path_prefix: str | None = None,
        *,
        then: Then = "sever",
    ) -> FaultRule:
        """Forward the next matching request but drop its reply; by default then sever that connection.

        The client sees the connection lost with the request applied on the server (a "lost reply").
        """
        return self._arm(FaultRule("swallow_reply", _as_ops(op), path_prefix, then))

    def drop_request(
        self,
        op: int | Iterable[int] | None = None,
        path_prefix: str | None = None,
        *,
        then: Then = "sever",
    ) -> FaultRule:
        """Never forward the next matching request; by default sever that connection instead."""
        return self._arm(FaultRule("drop_request", _as_ops(op), path_prefix, then))

    def sever_after_request(
        self,
        op: int | Iterable[int] | None = None,
        path_prefix: str | None = None,
        *,
        then: Then = "sever",
    ) -> FaultRule:
        """Forward the next matching request, then at once (by default) sever that connection.

        The server has the request; whether it applies it before the client reconnects elsewhere is a
        race, as when a connection breaks right after a request leaves the client.
        """
        return self._arm(FaultRule("sever_after_request", _as_ops(op), path_prefix, then))

    def disarm(self, rule: FaultRule) -> bool:
        """Take back a rule that has not fired; False if it already had."""
        if rule in self._rules:
            self._rules.remove(rule)
            return True
        return False

    # ---------------------------------------------------------------- internals

    def _arm(self, rule: FaultRule) -> FaultRule:
        self._rules.append(rule)
        return rule

    def _take_rule(self, op: int, payload: bytes) -> FaultRule | None:
        if not self._rules:
            return None
        paths: list[str] | None = None
        for rule in self._rules:
            if rule.path_prefix is not None and paths is None:
                paths = _request_paths(payload)
            if rule._matches(op, paths or []):
                self._rules.remove(rule)
                return rule
        return None

    def _wake_all(self) -> None:
        for conn in self._live.values():
            conn._wake()

    async def _serve(self, listener: trio.SocketListener, task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        assert self._nursery is not None
        while True:
            stream = await listener.accept()
            self._nursery.start_soon(self._handle, stream)

    async def _handle(self, client: trio.SocketStream) -> None:
        self.total_connections += 1
        address = self.upstream
        upstream: trio.SocketStream | None = None
        try:
            if self.refusing:
                self.refused_connections += 1
            else:
                with trio.move_on_after(_CONNECT_TIMEOUT):
                    try:
                        upstream = await trio.open_tcp_stream(*address)
                    except OSError:
                        pass
                if upstream is None:
                    self.failed_connections += 1
        finally:
            if upstream is None:
                await _reset(client)
        if upstream is None:
            return
        conn = ProxiedConnection(self, next(self._ids), client, upstream, address)
        self._live[conn.id] = conn
        self._changed.notify()
        try:
            await conn.run()
        finally:
            del self._live[conn.id]
            self._changed.notify()


async def _reset(stream: trio.SocketStream) -> None:
    try:
        stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
    except OSError:
        pass
    await trio.aclose_forcefully(stream)


@asynccontextmanager
async def open_fault_proxy(host: str, port: int | None = None, *, listen_port: int = 0) -> AsyncIterator[FaultProxy]:
    """A proxy on ``127.0.0.1:<listen_port>`` (0: a free port) forwarding to ``host:port``.

    Without ``port``, ``host`` is a connect string (``"127.0.0.1:2181,..."``, chroot allowed) and the
    proxy forwards to its first server.
    """
    proxy = FaultProxy(first_server(host) if port is None else (host, port))
    listeners = await trio.open_tcp_listeners(listen_port, host="127.0.0.1")
    listener = listeners[0]
    for extra in listeners[1:]:
        await extra.aclose()
    proxy.port = listener.socket.getsockname()[1]
    try:
        async with trio.open_nursery() as nursery:
            proxy._nursery = nursery
            await nursery.start(proxy._serve, listener)
            try:
                yield proxy
            finally:
                nursery.cancel_scope.cancel()
    finally:
        await trio.aclose_forcefully(listener)
