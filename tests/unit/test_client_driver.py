"""The trio layer without a server: the client runs over trio memory streams or a socket pair, through
the ``connect`` hook of open_client, against tests/helpers/fakeserver.py's sans-I/O FakeServer, on trio's
autojump clock (timeouts, pings and back-off take no real time).

The real-server suites (test_session_real, tests/server/ops...) cover the same paths against
ZooKeeper itself; these pin the driver's own logic: handshake, request/reply, pipelining, watch events,
reconnect with the same session, expiry, close, and the caller/reader socket hand-off.

Every behaviour test runs twice: against the fast path (zkwire.client.fastpath.FastPathDriver, the
default) and against the plain driver (ConnectionDriver: the reader task reads every reply and wakes the
caller).  The tests of the fast path's own mechanics (the socket hand-off) run against the fast path only.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import trio
import trio.testing
from helpers.fakeserver import DEFAULT_PASSWD, STAT, ClientRequest, FakeServer

import zkwire
from zkwire.client import fastpath
from zkwire.client.connection import ConnectionDriver
from zkwire.constants import EventType, OpCode
from zkwire.errors import ClientClosedError, ConnectionLossError, NoNodeError, SessionExpiredError
from zkwire.protocol.multi import MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    ConnectRequest,
    CreateResponse,
    ErrorResponse,
    ExistsResponse,
    GetChildrenResponse,
    GetDataResponse,
    Record,
    SetDataResponse,
    SetWatches,
    SyncResponse,
)
from zkwire.sansio.session import HostPort, SessionState

HOSTS = "zk1:2181,zk2:2181"
SESSION = 0x1_0000_00AB
#: Every test body is bounded (in the autojump clock's virtual seconds).
LIMIT = 60


@dataclass
class FakeConnection:
    """One connection: the server end of the stream and the FakeServer decoding it."""

    host: HostPort
    stream: trio.abc.Stream
    server: FakeServer = field(default_factory=FakeServer)
    closed: trio.Event = field(default_factory=trio.Event)
    #: The serving task and the test both send (replies, events).
    sending: trio.Lock = field(default_factory=trio.Lock)

    async def send(self, data: bytes) -> None:
        async with self.sending:
            await self.stream.send_all(data)

    async def close(self) -> None:
        await trio.aclose_forcefully(self.stream)


class FakeEnsemble:
    """Servers behind the ``connect`` hook, sharing one tree (path -> data) and one session.

    ``kind`` is "socket" (a socket pair: the client's lone-request path reads the socket itself) or
    "memory" (trio memory streams: the reader task reads every byte).  With ``hold`` set, requests are
    not answered until the test does it (``conn.server.unanswered`` / :meth:`answer_held`).
    """

    def __init__(self, nursery: trio.Nursery, kind: str = "socket") -> None:
        self.nursery = nursery
        self.kind = kind
        self.tree: dict[str, bytes] = {"/": b""}
        self.connections: list[FakeConnection] = []
        self.refuse = 0  # the next n connection attempts fail
        self.attempts = 0
        self.expired = False  # re-attaches are answered "expired"
        self.hold = False
        self.reading = True  # False: the server stops reading its connections (a stalled peer)
        self.new_connection = trio.Event()
        self.request_seen = trio.Event()

    @property
    def conn(self) -> FakeConnection:
        return self.connections[-1]

    async def connect(self, host: HostPort) -> trio.abc.Stream:
        self.attempts += 1
        await trio.lowlevel.checkpoint()
        if self.refuse:
            self.refuse -= 1
            raise OSError(111, "connection refused")
        client_end: trio.abc.Stream
        server_end: trio.abc.Stream
        if self.kind == "socket":
            a, b = socket.socketpair()
            client_end, server_end = (
                trio.SocketStream(trio.socket.from_stdlib_socket(a)),
                trio.SocketStream(trio.socket.from_stdlib_socket(b)),
            )
        else:
            client_end, server_end = trio.testing.memory_stream_pair()
        conn = FakeConnection(host, server_end)
        self.connections.append(conn)
        self.nursery.start_soon(self._serve, conn)
        self.new_connection.set()
        self.new_connection = trio.Event()
        return client_end

    async def _serve(self, conn: FakeConnection) -> None:
        try:
            while True:
                while not self.reading:
                    await trio.sleep(0.01)
                data = await conn.stream.receive_some(65536)
                if not data:
                    break
                for item in conn.server.receive(data):
                    out = self._respond(conn, item)
                    if out:
                        await conn.send(out)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            conn.closed.set()
            await trio.aclose_forcefully(conn.stream)

    def _respond(self, conn: FakeConnection, item: ConnectRequest | ClientRequest) -> bytes:
        server = conn.server
        if isinstance(item, ConnectRequest):
            if item.session_id and self.expired:
                return server.expire()
            return server.accept(session_id=SESSION)
        if item.is_ping:
            return server.pong()
        if item.is_auth:
            return server.auth_reply()
        self.request_seen.set()
        self.request_seen = trio.Event()
        if item.op in (OpCode.SET_WATCHES, OpCode.SET_WATCHES2):
            return server.reply(item)
        if item.op == OpCode.CLOSE_SESSION:
            return server.reply(item)
        if self.hold:
            return b""
        return self.answer(server, item)

    def answer(self, server: FakeServer, req: ClientRequest) -> bytes:
        """The honest answer to ``req`` from the shared tree."""
        path: str = getattr(req.record, "path", None) or "/"
        body: Record | None = None
        if req.op == OpCode.CREATE:
            if path in self.tree:
                return server.reply(req, err=-110)
            self.tree[path] = getattr(req.record, "data", None) or b""
            body = CreateResponse(path)
        elif path not in self.tree:
            return server.reply(req, err=NoNodeError.code)
        elif req.op == OpCode.GET_DATA:
            body = GetDataResponse(self.tree[path], STAT)
        elif req.op == OpCode.SET_DATA:
            self.tree[path] = getattr(req.record, "data", None) or b""
            body = SetDataResponse(STAT)
        elif req.op == OpCode.GET_CHILDREN:
            prefix = path.rstrip("/") + "/"
            names = [p[len(prefix) :] for p in self.tree if p.startswith(prefix) and "/" not in p[len(prefix) :]]
            body = GetChildrenResponse(tuple(names))
        elif req.op == OpCode.EXISTS:
            body = ExistsResponse(STAT)
        elif req.op == OpCode.DELETE:
            del self.tree[path]
        elif req.op == OpCode.SYNC:
            body = SyncResponse(path)
        elif req.op == OpCode.ADD_WATCH:
            body = ErrorResponse(0)
        elif req.op == OpCode.MULTI:
            assert isinstance(req.record, MultiRequest)
            results = []
            for sub in req.record.ops:
                sub_path = getattr(sub.request, "path", "")
                if sub.op == OpCode.CREATE:
                    self.tree[sub_path] = b""
                    results.append(MultiResult(OpCode.CREATE, 0, CreateResponse(sub_path)))
                else:
                    results.append(MultiResult(OpCode.CHECK, 0, None))
            body = MultiResponse(tuple(results))
        return server.reply(req, body)

    async def answer_held(self) -> int:
        """Answer every request held on the current connection, in one send; returns how many."""
        server = self.conn.server
        held = list(server.unanswered)
        await self.conn.send(b"".join(self.answer(server, r) for r in held))
        return len(held)


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Bounded polling on the autojump clock (each pass is 10 virtual ms)."""
    for _ in range(1000):
        if predicate():
            return
        await trio.sleep(0.01)
    raise AssertionError("condition not reached")


@pytest.fixture(params=["fast", "plain"], autouse=True)
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which driver the clients of the test run: the fast path or the plain driver."""
    monkeypatch.setattr(fastpath, "FAST_PATH", request.param == "fast")
    return str(request.param)


#: For the tests of the fast path's own mechanics.
fast_path_only = pytest.mark.parametrize("driver", ["fast"], indirect=True)


@pytest.fixture(params=["socket", "memory"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_handshake_and_requests(kind: str, driver: str, autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            async with zkwire.open_client(HOSTS, session_timeout=6, connect=ens.connect) as zk:
                assert isinstance(zk._driver, fastpath.FastPathDriver) is (driver == "fast")
                assert zk.state is SessionState.CONNECTED
                assert zk.session_id == SESSION
                assert zk.session_timeout == 6
                assert zk.connected_host == ens.conn.host
                request = ens.conn.server.connect_request
                assert request is not None and request.timeout == 6000 and request.session_id == 0
                assert await zk.create("/a", b"one") == "/a"
                await zk.create("/a/y")
                await zk.create("/a/x")
                assert await zk.get_data("/a") == (b"one", STAT)
                assert await zk.get_children("/a") == ["x", "y"]
                assert await zk.set_data("/a", b"two") == STAT
                with pytest.raises(NoNodeError) as info:
                    await zk.get_data("/missing")
                assert info.value.path == "/missing"
                assert await zk.exists("/missing") is None
            assert zk.state is SessionState.CLOSED
            assert ens.conn.server.requests(OpCode.CLOSE_SESSION)
            nursery.cancel_scope.cancel()


async def test_a_chroot_is_applied_and_stripped(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery)
            ens.tree["/app"] = b""
            async with zkwire.open_client(HOSTS + "/app", connect=ens.connect) as zk:
                assert await zk.create("/n", b"v") == "/n"
                assert "/app/n" in ens.tree
                with pytest.raises(NoNodeError):
                    await zk.get_data("/missing")
            nursery.cancel_scope.cancel()


async def test_pipelined_requests_leave_in_one_burst(kind: str, autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            for i in range(5):
                ens.tree[f"/n{i}"] = b"%d" % i
            async with zkwire.open_client(HOSTS, connect=ens.connect, follow_ensemble=False) as zk:
                ens.hold = True
                results: list[object] = []

                async def pipeline() -> None:
                    ops = [zkwire.GetData(f"/n{i}") for i in range(5)] + [zkwire.GetData("/missing")]
                    results.extend(await zk.pipeline(ops))

                nursery.start_soon(pipeline)
                await wait_until(lambda: len(ens.conn.server.unanswered) == 6)
                assert not results  # nothing is answered yet: all six went out before any reply
                assert await ens.answer_held() == 6
                await wait_until(lambda: len(results) == 6)
                assert results[:5] == [(b"%d" % i, STAT) for i in range(5)]
                assert isinstance(results[5], NoNodeError)
                ens.hold = False
            nursery.cancel_scope.cancel()


async def test_concurrent_callers_are_answered_by_the_reader(kind: str, autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            async with zkwire.open_client(HOSTS, connect=ens.connect) as zk:
                zk.max_in_flight = 3  # the fourth and later callers wait for room
                got: dict[int, tuple[bytes, object]] = {}

                async def caller(i: int) -> None:
                    await zk.create(f"/c{i}", b"%d" % i)
                    got[i] = await zk.get_data(f"/c{i}")

                async with trio.open_nursery() as callers:
                    for i in range(10):
                        callers.start_soon(caller, i)
                assert got == {i: (b"%d" % i, STAT) for i in range(10)}
            nursery.cancel_scope.cancel()


async def test_a_watch_event_is_delivered(kind: str, autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            ens.tree["/w"] = b""
            async with zkwire.open_client(HOSTS, connect=ens.connect, follow_ensemble=False) as zk:
                _, _, watch = await zk.get_data("/w", watch=True)
                [request] = ens.conn.server.requests(OpCode.GET_DATA)
                assert request.record is not None and request.record.watch  # type: ignore[attr-defined]
                await ens.conn.send(ens.conn.server.event(EventType.NODE_DATA_CHANGED, "/w"))
                event = await watch.wait()
                assert (event.type, event.path) == (EventType.NODE_DATA_CHANGED, "/w")
            nursery.cancel_scope.cancel()


async def test_reconnect_keeps_the_session_and_its_watches(kind: str, autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            ens.tree["/w"] = b"x"
            async with zkwire.open_client(HOSTS, connect=ens.connect) as zk:
                states = zk.states()
                assert await states.__anext__() is SessionState.CONNECTED
                _, _, watch = await zk.get_data("/w", watch=True)
                first = ens.conn
                ens.hold = True
                failed: list[BaseException] = []

                async def in_flight() -> None:
                    try:
                        await zk.get_data("/w")
                    except ConnectionLossError as e:
                        failed.append(e)

                nursery.start_soon(in_flight)
                await wait_until(lambda: bool(first.server.unanswered))
                ens.hold = False
                ens.refuse = 2  # the next two attempts fail: back-off, then the next host
                await first.close()
                assert await states.__anext__() is SessionState.SUSPENDED
                assert await states.__anext__() is SessionState.CONNECTED
                assert failed and isinstance(failed[0], ConnectionLossError)  # in flight: outcome unknown
                second = ens.conn
                assert second is not first and ens.attempts == 4
                request = second.server.connect_request
                assert request is not None
                assert (request.session_id, request.passwd) == (SESSION, DEFAULT_PASSWD)
                [set_watches] = second.server.requests(OpCode.SET_WATCHES)
                assert isinstance(set_watches.record, SetWatches) and set_watches.record.data_watches == ("/w",)
                assert zk.session_id == SESSION
                assert await zk.get_data("/w") == (b"x", STAT)
                await second.send(second.server.event(EventType.NODE_DELETED, "/w"))
                assert (await watch.wait()).type is EventType.NODE_DELETED
            nursery.cancel_scope.cancel()


async def test_session_expiry_ends_the_client(kind: str, autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            ens.tree["/w"] = b""
            async with zkwire.open_client(HOSTS, connect=ens.connect) as zk:
                _, _, watch = await zk.get_data("/w", watch=True)
                assert zk.ended is None
                ens.expired = True
                await ens.conn.close()
                await wait_until(lambda: zk.state is not SessionState.CONNECTED)
                with pytest.raises(SessionExpiredError):
                    await zk.wait_for_state(SessionState.CONNECTED)
                assert zk.state is SessionState.EXPIRED
                assert isinstance(zk.ended, SessionExpiredError)
                with pytest.raises(SessionExpiredError):
                    await watch.wait()
                with pytest.raises(SessionExpiredError):
                    await zk.get_data("/w")
                with pytest.raises(SessionExpiredError):
                    await zk.pipeline([zkwire.GetData("/w")])
            nursery.cancel_scope.cancel()


async def test_no_server_for_the_session_timeout_expires_it(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery)
            async with zkwire.open_client(HOSTS, session_timeout=4, connect=ens.connect) as zk:
                ens.refuse = 10_000
                start = trio.current_time()
                await ens.conn.close()
                with pytest.raises(SessionExpiredError):
                    await zk.wait_connected()
                assert 4 <= trio.current_time() - start < 6
                assert ens.attempts < 200  # backed off, not a tight loop
            nursery.cancel_scope.cancel()


async def test_a_silent_server_loses_the_connection(autojump_clock: trio.testing.MockClock) -> None:
    """Pings go out every third of the timeout; with no answer the connection is dropped and redone."""
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, "memory")
            async with zkwire.open_client(HOSTS, session_timeout=3, connect=ens.connect) as zk:
                await trio.sleep(2.5)
                assert any(r.is_ping for r in ens.conn.server.received)
                first = ens.conn
                first.server.pong = lambda zxid=None: b""  # type: ignore[method-assign]
                await wait_until(lambda: ens.conn is not first)
                await zk.wait_connected()
                assert zk.session_id == SESSION
            nursery.cancel_scope.cancel()


async def test_close_sends_close_session_and_fails_later_calls(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, kind)
            async with zkwire.open_client(HOSTS, connect=ens.connect) as zk:
                await zk.close()
                await zk.close()  # idempotent
                assert zk.state is SessionState.CLOSED
                assert isinstance(zk.ended, ClientClosedError)
                with pytest.raises(ClientClosedError):
                    await zk.get_data("/")
                with pytest.raises(ClientClosedError):
                    zk.spawn(trio.sleep_forever)
            assert len(ens.conn.server.requests(OpCode.CLOSE_SESSION)) == 1
            nursery.cancel_scope.cancel()


async def test_wait_connected_false_and_an_unreachable_ensemble(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery)
            ens.refuse = 10_000
            async with zkwire.open_client(HOSTS, connect=ens.connect, wait_connected=False) as zk:
                with trio.move_on_after(5) as scope:
                    await zk.wait_connected()
                assert scope.cancelled_caught and zk.state is SessionState.CONNECTING
                assert 2 < ens.attempts < 500
            nursery.cancel_scope.cancel()


async def test_auth_is_sent_before_connected(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery)
            async with zkwire.open_client(HOSTS, connect=ens.connect, auth=[("digest", "u:p")]) as zk:
                assert [r.is_auth for r in ens.conn.server.received] == [True]
                await zk.add_auth("digest", b"v:q")
                assert len([r for r in ens.conn.server.received if r.is_auth]) == 2
            nursery.cancel_scope.cancel()


@fast_path_only
async def test_the_caller_reads_its_own_reply_and_hands_the_socket_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A lone request's caller reads the socket itself while the reader task steps aside.  Whatever
    arrives with or before the reply (a watch event) is handled by the caller, the reader takes the
    socket back afterwards, and a cancelled caller leaves its late reply to the reader."""
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, "socket")
            ens.tree["/h"] = b"v"
            async with zkwire.open_client(HOSTS, connect=ens.connect, follow_ensemble=False) as zk:
                driver = zk._driver
                assert isinstance(driver, fastpath.FastPathDriver)
                for i in range(30):
                    _, _, watch = await zk.get_data("/h", watch=True)
                    # The event reaches the socket at a different point of the caller's next request
                    # each round: before it, as it is sent, or while the reader is being moved aside.
                    await ens.conn.send(ens.conn.server.event(EventType.NODE_DATA_CHANGED, "/h"))
                    for _ in range(i % 3):
                        await trio.lowlevel.checkpoint()
                    assert await zk.get_data("/h") == (b"v", STAT)
                    assert driver._socket_reader is None  # handed back
                    with trio.fail_after(1):
                        await watch.wait()
                # A cancelled caller: the reply comes after it gave up; the reader reads and drops it.
                ens.hold = True
                with trio.move_on_after(1) as scope:
                    await zk.get_data("/h")
                assert scope.cancelled_caught and driver._socket_reader is None
                assert await ens.answer_held() == 1
                ens.hold = False
                await wait_until(lambda: zk._core.outstanding == 0)
                assert await zk.get_data("/h") == (b"v", STAT)
                # An event while nothing is in flight is read by the reader task.
                _, _, watch = await zk.get_data("/h", watch=True)
                await ens.conn.send(ens.conn.server.event(EventType.NODE_DELETED, "/h"))
                assert (await watch.wait()).type is EventType.NODE_DELETED
            nursery.cancel_scope.cancel()


async def test_the_connection_breaks_while_the_caller_reads(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, "socket")
            ens.tree["/h"] = b"v"
            async with zkwire.open_client(HOSTS, connect=ens.connect) as zk:
                ens.hold = True
                first = ens.conn

                async def breaker() -> None:
                    await wait_until(lambda: bool(first.server.unanswered))
                    await first.close()

                nursery.start_soon(breaker)
                with pytest.raises(ConnectionLossError):
                    await zk.get_data("/h")
                ens.hold = False
                await zk.wait_connected()
                assert await zk.get_data("/h") == (b"v", STAT)
            nursery.cancel_scope.cancel()


async def test_a_custom_connect_that_times_out_counts_as_a_failed_attempt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery)
            hangs = 2

            async def slow_connect(host: HostPort) -> trio.abc.Stream:
                nonlocal hangs
                if hangs:
                    hangs -= 1
                    await trio.sleep_forever()
                return await ens.connect(host)

            start = trio.current_time()
            async with zkwire.open_client(HOSTS, session_timeout=10, connect=slow_connect) as zk:
                # Each hanging attempt is cut at the connect timeout (the session timeout over the hosts,
                # at most a third of it: 10 / 3 s here).
                assert trio.current_time() - start >= 2 * 10 / 3
                assert zk.state is SessionState.CONNECTED
            nursery.cancel_scope.cancel()


async def test_a_large_write_continues_after_a_partial_send(autojump_clock: trio.testing.MockClock) -> None:
    """More than the socket takes at once: the rest is written by the shielded loop, whole."""
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, "socket")
            ens.tree["/big"] = b""
            big = bytes(range(256)) * 3000  # 768,000 bytes: more than a socket pair buffers
            async with zkwire.open_client(HOSTS, connect=ens.connect) as zk:
                assert await zk.set_data("/big", big) == STAT
                assert ens.tree["/big"] == big
                assert await zk.get_data("/big") == (big, STAT)
            nursery.cancel_scope.cancel()


async def test_a_peer_that_stops_reading_loses_the_connection(autojump_clock: trio.testing.MockClock) -> None:
    """A write that cannot complete for the read timeout drops the connection; the request fails
    with ConnectionLossError and the session carries on over a new connection."""
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, "socket")
            ens.tree["/big"] = b""
            async with zkwire.open_client(HOSTS, session_timeout=3, connect=ens.connect) as zk:
                first = ens.conn
                ens.reading = False
                start = trio.current_time()
                with pytest.raises(ConnectionLossError):
                    await zk.set_data("/big", b"x" * 900_000)
                assert trio.current_time() - start >= 2  # the read timeout: 2/3 of 3 s
                ens.reading = True
                await zk.wait_connected()
                assert ens.conn is not first and zk.session_id == SESSION
            nursery.cancel_scope.cancel()


async def test_more_ops_watches_and_background_tasks(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            ens = FakeEnsemble(nursery, "socket")
            ens.tree["/p"] = b""
            async with zkwire.open_client(HOSTS + "/", connect=ens.connect) as zk:
                seen: list[SessionState] = []
                zk.add_state_listener(seen.append)
                assert await zk.exists("/p") == STAT
                assert await zk.sync("/p") == "/p"
                assert await zk.transaction().create("/p/t").check("/p", 0).commit() == ["/p/t", None]
                assert await zk.multi([]) == [] and await zk.multi_read([]) == []
                await zk.delete("/p/t")
                stat, exists_watch = await zk.exists("/p", watch=True)
                assert stat == STAT
                async with zk.add_watch("/p") as persistent:
                    await ens.conn.send(ens.conn.server.event(EventType.NODE_DATA_CHANGED, "/p"))
                    assert (await persistent.__anext__()).type is EventType.NODE_DATA_CHANGED
                    assert (await exists_watch.wait()).type is EventType.NODE_DATA_CHANGED
                    _, children_watch = await zk.get_children("/p", watch=True)
                    await zk.remove_watches("/p", zkwire.WatcherType.CHILDREN)
                    assert (await children_watch.wait()).type is EventType.CHILD_WATCH_REMOVED
                assert ens.conn.server.requests(OpCode.REMOVE_WATCHES)[-1].record is not None
                ran = trio.Event()

                async def background() -> None:
                    ran.set()
                    raise RuntimeError("logged, not raised")

                zk.spawn(background, name="background")
                await ran.wait()
                await ens.conn.close()
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                zk.remove_state_listener(seen.append)
                zk.remove_state_listener(seen.append)  # unknown listeners are ignored
                assert seen == [SessionState.SUSPENDED, SessionState.CONNECTED]
            nursery.cancel_scope.cancel()


def test_connect_must_be_callable() -> None:
    with pytest.raises(zkwire.InvalidArgumentError, match="connect"):
        zkwire.Client(HOSTS, connect="tcp")  # type: ignore[arg-type]


def test_the_fast_path_is_the_default_and_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    core = zkwire.Client(HOSTS)._core

    async def connect(host: HostPort) -> trio.abc.Stream:
        raise OSError("never connected here")

    def made(fast_path: bool | None = None) -> type[ConnectionDriver]:
        return type(fastpath.connection_driver(core, connect, fast_path=fast_path))

    monkeypatch.setattr(fastpath, "FAST_PATH", True)
    assert (made(), made(False), made(True)) == (fastpath.FastPathDriver, ConnectionDriver, fastpath.FastPathDriver)
    monkeypatch.setattr(fastpath, "FAST_PATH", False)
    assert (made(), made(False), made(True)) == (ConnectionDriver, ConnectionDriver, fastpath.FastPathDriver)
