"""A scriptable ZooKeeper impostor on loopback, for what the trio client does when a server misbehaves.

Each accepted TCP connection runs a *script*: an async function given a :class:`HostileConnection`.
The n-th connection runs the n-th script of the list (the last one repeats), so a test reads as "the
first two connections get garbage, the third an honest server"::

    async with open_hostile_server(garbage_handshake, garbage_handshake, honest) as server:
        async with zkwire.open_client(server.hosts) as zk:
            ...
        assert server.connections == 3

A script reads what the client sends (:meth:`HostileConnection.handshake`, :meth:`~HostileConnection.request`)
and writes whatever bytes it likes; :class:`fakeserver.FakeServer` (``conn.fake``) builds them.  When the
script returns, the connection is closed.  :func:`honest` is a minimal well-behaved server (getData,
exists, create, delete, multi, auth, pings, SetWatches, closeSession) that other scripts fall back to.
"""

from __future__ import annotations

import math
import tracemalloc
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio

from helpers.fakeserver import STAT, ClientRequest, FakeServer
from zkwire.constants import OpCode
from zkwire.protocol.multi import MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    ConnectRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    ErrorResponse,
    ExistsResponse,
    GetDataResponse,
    Record,
    SetDataResponse,
)

__all__ = ["HostileConnection", "HostileServer", "Script", "bounded", "honest", "open_hostile_server", "reply_for"]

Script = Callable[["HostileConnection"], Awaitable[None]]

#: What :func:`honest` answers a getData with.
HONEST_DATA = b"honest"


class HostileConnection:
    """One client connection, seen from the server."""

    def __init__(self, stream: trio.SocketStream, index: int) -> None:
        self.stream = stream
        #: 0 for the first connection the server accepted.
        self.index = index
        self.fake = FakeServer()
        self._frames: deque[ConnectRequest | ClientRequest] = deque()
        self._send_lock = trio.Lock()  # scripts may write from several tasks; frames stay whole
        self.closed_by_client = False

    async def _next(self) -> ConnectRequest | ClientRequest | None:
        while not self._frames:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                self.closed_by_client = True
                return None
            self._frames.extend(self.fake.receive(data))
        return self._frames.popleft()

    async def handshake(self) -> ConnectRequest | None:
        """The client's ConnectRequest (None if it closed the connection first)."""
        frame = await self._next()
        assert frame is None or isinstance(frame, ConnectRequest), frame
        return frame

    async def request(self, *, answer_pings: bool = True) -> ClientRequest | None:
        """The next request (None once the client closed the connection); pings are answered and skipped
        unless ``answer_pings`` is false."""
        while True:
            frame = await self._next()
            if frame is None:
                return None
            assert isinstance(frame, ClientRequest), frame
            if frame.is_ping and answer_pings:
                await self.send(self.fake.pong())
                continue
            return frame

    async def send(self, data: bytes) -> None:
        async with self._send_lock:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.closed_by_client = True

    async def trickle(self, data: bytes, delay: float) -> None:
        """``data`` one byte at a time, ``delay`` seconds apart."""
        for i in range(len(data)):
            await self.send(data[i : i + 1])
            await trio.sleep(delay)

    async def accept(self, **kwargs: object) -> ConnectRequest | None:
        """Read the ConnectRequest and grant a session (``kwargs`` go to ``FakeServer.accept``)."""
        req = await self.handshake()
        if req is not None:
            kwargs.setdefault("session_id", req.session_id or 0x1_0000_0001)
            await self.send(self.fake.accept(**kwargs))  # type: ignore[arg-type]
        return req

    async def hold(self) -> None:
        """Keep the connection open, reading and discarding, until the client closes it."""
        while await self._next() is not None:
            pass


def reply_for(req: ClientRequest) -> bytes | None:
    """What an honest server answers ``req`` with (None: nothing, the connection ends)."""
    fake = FakeServer()
    if req.is_auth:
        return fake.auth_reply()
    body: Record | None = None
    op, record = req.op, req.record
    if op == OpCode.GET_DATA:
        body = GetDataResponse(HONEST_DATA, STAT)
    elif op == OpCode.EXISTS:
        body = ExistsResponse(STAT)
    elif op == OpCode.CREATE and isinstance(record, CreateRequest):
        body = CreateResponse(record.path)
    elif op in (OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL) and isinstance(record, CreateRequest):
        body = Create2Response(record.path, STAT)
    elif op == OpCode.SET_DATA:
        body = SetDataResponse(STAT)
    elif op in (OpCode.MULTI, OpCode.MULTI_READ) and isinstance(record, MultiRequest):
        results: list[MultiResult] = []
        for sub in record.ops:
            if sub.op == OpCode.CREATE and isinstance(sub.request, CreateRequest):
                results.append(MultiResult(OpCode.CREATE, 0, CreateResponse(sub.request.path)))
            elif sub.op == OpCode.GET_DATA:
                results.append(MultiResult(OpCode.GET_DATA, 0, GetDataResponse(HONEST_DATA, STAT)))
            elif sub.op in (OpCode.DELETE, OpCode.CHECK):
                results.append(MultiResult(sub.op, 0, None))
            else:
                results.append(MultiResult(OpCode.ERROR, -6, ErrorResponse(-6)))
        body = MultiResponse(tuple(results))
    return fake.reply(req, body)


async def honest(conn: HostileConnection) -> None:
    """A minimal well-behaved server: grants (or re-attaches) the session and answers what it knows."""
    if await conn.accept() is None:
        return
    await serve(conn)


async def serve(conn: HostileConnection) -> None:
    """Answer requests honestly until the client closes the connection or the session."""
    while (req := await conn.request()) is not None:
        reply = reply_for(req)
        if reply is not None:
            await conn.send(reply)
        if req.op == OpCode.CLOSE_SESSION:
            return


class HostileServer:
    def __init__(self, scripts: tuple[Script, ...]) -> None:
        assert scripts
        self.scripts = scripts
        self.port = 0
        #: Connections accepted so far, and when (trio time).
        self.connections = 0
        self.connected_at: list[float] = []
        #: Exceptions scripts raised (a test asserts this stays empty).
        self.errors: list[BaseException] = []
        #: Every connection, in the order accepted.
        self.conns: list[HostileConnection] = []

    def received(self, op: int | None = None) -> list[ClientRequest]:
        """Requests (after the handshakes) received on every connection, optionally only those of ``op``."""
        return [r for conn in self.conns for r in conn.fake.requests(op)]

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def connections_within(self, start: float, end: float = math.inf) -> int:
        return sum(1 for t in self.connected_at if start <= t < end)

    async def _handle(self, stream: trio.SocketStream) -> None:
        index = self.connections
        self.connections += 1
        self.connected_at.append(trio.current_time())
        script = self.scripts[min(index, len(self.scripts) - 1)]
        conn = HostileConnection(stream, index)
        self.conns.append(conn)
        try:
            await script(conn)
        except Exception as e:  # kept for the test to see; the client must not care
            self.errors.append(e)
        finally:
            await trio.aclose_forcefully(stream)


@asynccontextmanager
async def open_hostile_server(*scripts: Script) -> AsyncIterator[HostileServer]:
    """Listen on a free loopback port; the n-th connection runs ``scripts[n]`` (the last one repeats)."""
    server = HostileServer(scripts)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    listener = listeners[0]
    for extra in listeners[1:]:
        await extra.aclose()
    server.port = listener.socket.getsockname()[1]
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, server._handle, [listener])
            try:
                yield server
            finally:
                nursery.cancel_scope.cancel()
    finally:
        await trio.aclose_forcefully(listener)
    assert not server.errors, server.errors


@asynccontextmanager
async def bounded(seconds: float, mib: float = 16.0) -> AsyncIterator[None]:
    """Fail if the block takes longer than ``seconds`` or its allocations peak above ``mib`` MiB."""
    tracemalloc.start()
    try:
        with trio.fail_after(seconds):
            yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < mib * (1 << 20), f"allocations peaked at {peak / (1 << 20):.1f} MiB"
