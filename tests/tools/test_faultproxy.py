"""The fault-injecting proxy (tests/helpers/faultproxy.py): against a scripted upstream, and against the real server."""

from __future__ import annotations

import random
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import trio
from helpers.addresses import first_server
from helpers.faultproxy import FaultProxy, open_fault_proxy

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import PING_XID, WATCH_XID, CreateMode, EventType, OpCode
from zkwire.protocol.codec import decode_connect_response, decode_reply_header, encode_connect_request, encode_request
from zkwire.protocol.framing import FrameDecoder
from zkwire.protocol.multi import MultiOp, MultiRequest
from zkwire.protocol.records import (
    ConnectRequest,
    ConnectResponse,
    CreateRequest,
    DeleteRequest,
    ExistsRequest,
    GetDataRequest,
    Record,
    ReplyHeader,
    SetDataRequest,
)

NO_NODE = -101


class Closed(Exception):
    """The other end closed the connection (``reset``: with an RST)."""

    def __init__(self, reset: bool) -> None:
        super().__init__("reset" if reset else "closed")
        self.reset = reset


class Wire:
    """A bare ZooKeeper connection driven frame by frame (zkwire's codec, no session logic)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._decoder = FrameDecoder()
        self._frames: list[bytes] = []
        self._xid = 0
        self.events: list[bytes] = []  # watch notifications seen while waiting for replies

    @classmethod
    async def connect(cls, hosts: str) -> Wire:
        return cls(await trio.open_tcp_stream(*first_server(hosts)))

    async def handshake(
        self, session_id: int = 0, passwd: bytes = bytes(16), timeout_ms: int = 4000
    ) -> ConnectResponse:
        await self.send_raw(encode_connect_request(ConnectRequest(0, 0, timeout_ms, session_id, passwd, False)))
        return decode_connect_response(await self.recv())

    async def send_raw(self, data: bytes | bytearray) -> None:
        try:
            await self.stream.send_all(data)
        except trio.BrokenResourceError:
            raise Closed(reset=True) from None

    async def recv(self) -> bytes:
        """The next frame's payload; raises :class:`Closed` at the end of the stream."""
        while not self._frames:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                raise Closed(reset=True) from None
            if not data:
                raise Closed(reset=False)
            self._frames += self._decoder.feed(data)
        return self._frames.pop(0)

    def next_xid(self) -> int:
        self._xid += 1
        return self._xid

    async def send(self, op: int, record: Record | None = None, xid: int | None = None) -> int:
        xid = self.next_xid() if xid is None else xid
        await self.send_raw(encode_request(xid, op, record))
        return xid

    async def reply(self) -> tuple[ReplyHeader, bytes]:
        """The next reply, skipping (and keeping) watch notifications and ping replies."""
        while True:
            payload = await self.recv()
            header = decode_reply_header(payload)
            if header.xid == WATCH_XID:
                self.events.append(payload)
            elif header.xid != PING_XID:
                return header, payload

    async def call(self, op: int, record: Record | None = None) -> tuple[ReplyHeader, bytes]:
        xid = await self.send(op, record)
        header, payload = await self.reply()
        assert header.xid == xid, (header, xid)
        return header, payload

    async def create(self, path: str, data: bytes = b"", flags: int = 0) -> int:
        header, _ = await self.call(OpCode.CREATE, CreateRequest(path, data, OPEN_ACL_UNSAFE, flags))
        return header.err

    async def exists(self, path: str) -> bool:
        header, _ = await self.call(OpCode.EXISTS, ExistsRequest(path, False))
        assert header.err in (0, NO_NODE), header
        return header.err == 0

    async def expect_closed(self) -> Closed:
        """The connection ends with nothing more to read (any frame is a failure)."""
        try:
            payload = await self.recv()
        except Closed as closed:
            return closed
        raise AssertionError(f"expected the connection to close, got a frame {payload.hex()}")

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self.stream)


@asynccontextmanager
async def wire(
    hosts: str, *, session_id: int = 0, passwd: bytes = bytes(16)
) -> AsyncIterator[tuple[Wire, ConnectResponse]]:
    w = await Wire.connect(hosts)
    try:
        yield w, await w.handshake(session_id, passwd)
    finally:
        await w.aclose()


@asynccontextmanager
async def scripted_upstream() -> AsyncIterator[tuple[int, trio.MemoryReceiveChannel[trio.SocketStream]]]:
    """A listener on a free loopback port; every accepted connection is handed to the test."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    listener = listeners[0]
    send, receive = trio.open_memory_channel[trio.SocketStream](16)

    async def accept_loop() -> None:
        while True:
            await send.send(await listener.accept())

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(accept_loop)
            yield listener.socket.getsockname()[1], receive
            nursery.cancel_scope.cancel()
    finally:
        for extra in listeners:
            await trio.aclose_forcefully(extra)


async def _receive_exactly(stream: trio.SocketStream, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        data = await stream.receive_some(n - len(buf))
        assert data, f"stream ended after {len(buf)} of {n} bytes"
        buf += data
    return bytes(buf)


async def _send_in_random_chunks(stream: trio.SocketStream, data: bytes, rng: random.Random) -> None:
    pos = 0
    while pos < len(data):
        n = rng.choice([1, 2, 3, 5, 7, 64, 1000, 70_000])
        await stream.send_all(data[pos : pos + n])
        pos += n
        if rng.random() < 0.2:
            await trio.sleep(0.001)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _stream_of_frames(rng: random.Random, first: bytes, count: int) -> bytes:
    frames = [_frame(first)]
    for xid in range(1, count + 1):
        size = rng.choice([0, 1, 8, 100, 5000, 300_000])
        frames.append(_frame(struct.pack(">ii", xid, rng.randrange(1, 20)) + rng.randbytes(size)))
    return b"".join(frames)


async def _wait(proxy: FaultProxy, predicate: Callable[[FaultProxy], bool], seconds: float = 5) -> None:
    with trio.fail_after(seconds):
        await proxy.wait_until(predicate)


# ------------------------------------------------------------------ scripted upstream


async def test_bytes_pass_unchanged_in_both_directions() -> None:
    rng = random.Random(7)
    to_server = _stream_of_frames(rng, b"\x00" * 44, 40)
    to_client = _stream_of_frames(rng, b"\x01" * 36, 40)
    with trio.fail_after(10):
        async with scripted_upstream() as (port, accepted), open_fault_proxy("127.0.0.1", port) as proxy:
            client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            server = await accepted.receive()
            received: dict[str, bytes] = {}

            async def at_server() -> None:
                received["server"] = await _receive_exactly(server, len(to_server))

            async def at_client() -> None:
                received["client"] = await _receive_exactly(client, len(to_client))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(at_server)
                nursery.start_soon(at_client)
                nursery.start_soon(_send_in_random_chunks, client, to_server, rng)
                nursery.start_soon(_send_in_random_chunks, server, to_client, rng)
            assert received["server"] == to_server
            assert received["client"] == to_client
            assert proxy.connections == 1 and proxy.total_connections == 1
            (conn,) = proxy.live
            assert conn.forwarded("to_server") == conn.forwarded("to_client") == 41
            await client.aclose()
            await _wait(proxy, lambda p: p.connections == 0)  # the client's close travels through


async def test_unframed_stream_is_forwarded_raw() -> None:
    # A length prefix no ZooKeeper frame has (a four-letter word): from there on, raw chunks.
    head = _frame(b"\x00" * 44)
    tail = b"ruok" + bytes(range(256)) * 10
    with trio.fail_after(5):
        async with scripted_upstream() as (port, accepted), open_fault_proxy("127.0.0.1", port) as proxy:
            client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            server = await accepted.receive()
            await client.send_all(head + tail[:3])
            await client.send_all(tail[3:])
            assert await _receive_exactly(server, len(head) + len(tail)) == head + tail
            await server.send_all(b"imok")
            assert await _receive_exactly(client, 4) == b"imok"


async def test_freeze_holds_and_thaw_delivers_in_order() -> None:
    with trio.fail_after(5):
        async with scripted_upstream() as (port, accepted), open_fault_proxy("127.0.0.1", port) as proxy:
            client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            server = await accepted.receive()
            await client.send_all(_frame(b"connect"))
            assert await _receive_exactly(server, 11) == _frame(b"connect")
            proxy.freeze()
            await client.send_all(
                _frame(b"\x00\x00\x00\x01\x00\x00\x00\x04a") + _frame(b"\x00\x00\x00\x02\x00\x00\x00\x04b")
            )
            with trio.move_on_after(0.3) as waited:
                await server.receive_some(100)
            assert waited.cancelled_caught, "bytes went through a frozen proxy"
            assert proxy.live[0].held("to_server") == 26
            proxy.thaw()
            assert await _receive_exactly(server, 26) == _frame(b"\x00\x00\x00\x01\x00\x00\x00\x04a") + _frame(
                b"\x00\x00\x00\x02\x00\x00\x00\x04b"
            )


async def test_thaw_drop_forgets_whole_frames_only() -> None:
    first, second = (
        _frame(b"\x00\x00\x00\x01\x00\x00\x00\x04" + b"x" * 10),
        _frame(b"\x00\x00\x00\x02\x00\x00\x00\x04y"),
    )
    with trio.fail_after(5):
        async with scripted_upstream() as (port, accepted), open_fault_proxy("127.0.0.1", port) as proxy:
            client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            server = await accepted.receive()
            await client.send_all(_frame(b"connect"))
            await _receive_exactly(server, 11)
            proxy.freeze(to_client=False)
            await client.send_all(first + second[:5])  # a whole frame and the start of the next
            while proxy.live[0].held("to_server") < len(first):
                await trio.sleep(0.01)
            assert proxy.thaw(drop=True) == 1
            await client.send_all(second[5:])
            assert await _receive_exactly(server, len(second)) == second


async def test_delay_applies_to_each_direction_and_keeps_order() -> None:
    with trio.fail_after(5):
        async with scripted_upstream() as (port, accepted), open_fault_proxy("127.0.0.1", port) as proxy:
            client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            server = await accepted.receive()
            proxy.set_delay(0.2)
            frames = [_frame(struct.pack(">ii", i, 4)) for i in range(20)]
            start = trio.current_time()
            for f in frames:
                await client.send_all(f)
            got = await _receive_exactly(server, sum(map(len, frames)))
            one_way = trio.current_time() - start
            assert got == b"".join(frames)
            assert 0.2 <= one_way < 1.0
            proxy.set_delay(0.1, to_server=False)
            start = trio.current_time()
            await server.send_all(frames[0])
            assert await _receive_exactly(client, len(frames[0])) == frames[0]
            assert 0.1 <= trio.current_time() - start < 0.6


async def test_bounded_buffer_and_exit_never_hang() -> None:
    """A client pushing far more than the proxy holds while frozen: reading stops, the exit is prompt."""
    from helpers.faultproxy import BUFFER_LIMIT

    with trio.fail_after(10):
        async with scripted_upstream() as (port, accepted):
            async with open_fault_proxy("127.0.0.1", port) as proxy:
                client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
                await accepted.receive()
                proxy.freeze()
                blob = _frame(bytes(1 << 20))
                with trio.move_on_after(1.0):
                    for _ in range(64):  # 64 MiB, far beyond the buffer and the socket buffers
                        await client.send_all(blob)
                    raise AssertionError("64 MiB went into a frozen proxy")
                assert 0 < proxy.live[0].held("to_server") <= BUFFER_LIMIT + (1 << 20) + 4
            with pytest.raises(trio.BrokenResourceError):
                for _ in range(64):
                    await client.send_all(blob)
            assert proxy.connections == 0


async def test_refused_and_unreachable_upstream() -> None:
    with trio.fail_after(5):
        async with scripted_upstream() as (port, accepted), open_fault_proxy("127.0.0.1", port) as proxy:
            proxy.refuse(True)
            client = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            with pytest.raises(Closed):
                await Wire(client).recv()
            assert proxy.refused_connections == 1 and proxy.connections == 0
            proxy.refuse(False)
            # retargeted to a port nobody listens on: the client is reset
            free = await trio.open_tcp_listeners(0, host="127.0.0.1")
            dead_port = free[0].socket.getsockname()[1]
            await free[0].aclose()
            proxy.retarget("127.0.0.1", dead_port)
            with pytest.raises(Closed):
                await Wire(await trio.open_tcp_stream("127.0.0.1", proxy.port)).recv()
            assert proxy.failed_connections == 1
            proxy.retarget("127.0.0.1", port)
            ok = await trio.open_tcp_stream("127.0.0.1", proxy.port)
            server = await accepted.receive()
            await ok.send_all(_frame(b"hi"))
            assert await _receive_exactly(server, 6) == _frame(b"hi")
            assert proxy.total_connections == 3


# ------------------------------------------------------------------ the real server


@pytest.fixture
async def proxy(zk_hosts: str) -> AsyncIterator[FaultProxy]:
    async with open_fault_proxy(zk_hosts) as p:
        assert p.upstream == first_server(zk_hosts)
        yield p


async def test_create_and_get_through_proxy(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, session), wire(zk_hosts) as (direct, _):
            assert session.session_id != 0 and session.timeout > 0
            assert await zk.create(zk_path, b"through") == 0
            header, payload = await zk.call(OpCode.GET_DATA, GetDataRequest(zk_path, True))
            assert header.err == 0 and payload[16:].startswith(struct.pack(">i", 7) + b"through")
            header, _ = await direct.call(OpCode.SET_DATA, SetDataRequest(zk_path, b"changed", -1))
            assert header.err == 0
            while not zk.events:  # the watch notification comes through too
                assert await zk.exists(zk_path)
                await trio.sleep(0.02)
            assert struct.unpack_from(">i", zk.events[0], 16)[0] == EventType.NODE_DATA_CHANGED
            assert proxy.connections == 1 and proxy.handshakes == 1
            assert proxy.live[0].session_id == session.session_id


async def test_sever_then_resume_session_through_proxy(proxy: FaultProxy, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, session):
            assert await zk.create(zk_path) == 0
            assert await proxy.sever() == 1
            assert not (await zk.expect_closed()).reset
            assert proxy.connections == 0
            async with wire(proxy.hosts, session_id=session.session_id, passwd=session.passwd or b"") as (
                again,
                resumed,
            ):
                assert resumed.session_id == session.session_id and resumed.timeout > 0
                assert await again.exists(zk_path)
                assert proxy.total_connections == 2 and proxy.handshakes == 2


async def test_sever_with_reset(proxy: FaultProxy) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _):
            await zk.send(OpCode.EXISTS, ExistsRequest("/", False))
            await zk.reply()
            await proxy.sever(reset=True)
            assert (await zk.expect_closed()).reset


async def test_kazoo_reconnects_through_proxy_after_sever(proxy: FaultProxy, zk_path: str) -> None:
    from kazoo.client import KazooClient, KazooState

    kz = KazooClient(hosts=proxy.hosts, timeout=4, connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.2})
    states: list[str] = []
    kz.add_listener(lambda state: states.append(state))
    try:
        with trio.fail_after(10):
            await trio.to_thread.run_sync(lambda: kz.start(timeout=5), abandon_on_cancel=True)
            sid = kz.client_id[0]
            await trio.to_thread.run_sync(lambda: kz.create(zk_path, b"v1"), abandon_on_cancel=True)
            await proxy.sever()
            await _wait(proxy, lambda p: p.handshakes >= 2)
            data, _ = await trio.to_thread.run_sync(lambda: kz.get(zk_path), abandon_on_cancel=True)
            assert data == b"v1"
            assert kz.client_id[0] == sid  # the same session, resumed
            while states[-1] != KazooState.CONNECTED:
                await trio.sleep(0.01)
            assert KazooState.SUSPENDED in states
    finally:
        await trio.to_thread.run_sync(kz.stop, abandon_on_cancel=True)
        await trio.to_thread.run_sync(kz.close, abandon_on_cancel=True)


async def test_freeze_stalls_a_request_until_thaw(proxy: FaultProxy, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _):
            assert await zk.create(zk_path, b"x") == 0
            proxy.freeze()
            xid = await zk.send(OpCode.GET_DATA, GetDataRequest(zk_path, False))
            with trio.move_on_after(0.4) as waited:
                await zk.reply()
            assert waited.cancelled_caught, "a reply came through a frozen proxy"
            assert proxy.connections == 1
            proxy.thaw()
            header, _ = await zk.reply()
            assert header.xid == xid and header.err == 0


async def test_freeze_replies_only_then_drop_them(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    """Requests reach the server, their replies are held and then thrown away: the write is applied."""
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _), wire(zk_hosts) as (observer, _):
            proxy.freeze(to_server=False)
            await zk.send(OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0))
            while not proxy.live[0].held("to_client"):
                await trio.sleep(0.01)
            assert proxy.thaw(drop=True) == 1
            assert await observer.exists(zk_path)
            xid = await zk.send(OpCode.EXISTS, ExistsRequest(zk_path, False))
            header, _ = await zk.reply()
            assert header.xid == xid  # the create's reply never arrives


async def test_refuse_new_connections(proxy: FaultProxy) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (kept, _):
            proxy.refuse(True)
            refused = await Wire.connect(proxy.hosts)
            try:
                with pytest.raises(Closed):
                    await refused.handshake()
            finally:
                await refused.aclose()
            assert await kept.exists("/")  # current connections are left alone
            proxy.refuse(False)
            async with wire(proxy.hosts) as (_, session):
                assert session.session_id != 0
            assert proxy.refused_connections == 1


async def test_swallowed_create_reply(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, session), wire(zk_hosts) as (direct, _):
            assert await direct.create(zk_path) == 0
            lost = proxy.swallow_reply(op=OpCode.CREATE, path_prefix=f"{zk_path}/lock-")
            assert await zk.create(f"{zk_path}/other") == 0  # does not match: untouched
            xid = await zk.send(
                OpCode.CREATE, CreateRequest(f"{zk_path}/lock-", b"", OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL)
            )
            await zk.expect_closed()  # no reply, then the connection ends
            info = await lost.wait()
            assert (info.xid, info.op, info.path) == (xid, OpCode.CREATE, f"{zk_path}/lock-")
            assert info.session_id == session.session_id
            assert info.reply is not None and info.reply.err == 0 and info.reply.xid == xid
            created = info.created_path
            assert created is not None and created.startswith(f"{zk_path}/lock-")
            assert await direct.exists(created)  # the write was applied
            assert proxy.armed == []
            await _wait(proxy, lambda p: p.connections == 0)
            # a rule fires once: the next matching create goes through
            async with wire(proxy.hosts, session_id=session.session_id, passwd=session.passwd or b"") as (again, _):
                assert await again.create(f"{zk_path}/lock-", flags=CreateMode.EPHEMERAL_SEQUENTIAL) == 0


async def test_swallow_then_continue_keeps_the_connection(proxy: FaultProxy, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _):
            lost = proxy.swallow_reply(op=[OpCode.CREATE, OpCode.CREATE2], then="continue")
            await zk.send(OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0))
            xid = await zk.send(OpCode.EXISTS, ExistsRequest(zk_path, False))
            header, _ = await zk.reply()
            assert header.xid == xid and header.err == 0  # applied, and its reply skipped
            assert (await lost.wait()).reply is not None


async def test_swallow_matches_a_path_inside_multi(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _), wire(zk_hosts) as (direct, _):
            lost = proxy.swallow_reply(path_prefix=f"{zk_path}/b")
            ops = (
                MultiOp(OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0)),
                MultiOp(OpCode.CREATE, CreateRequest(f"{zk_path}/b", b"", OPEN_ACL_UNSAFE, 0)),
            )
            await zk.send(OpCode.MULTI, MultiRequest(ops))
            await zk.expect_closed()
            assert (await lost.wait()).op == OpCode.MULTI
            assert await direct.exists(f"{zk_path}/b")


async def test_dropped_request_is_not_applied(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _), wire(zk_hosts) as (direct, _):
            assert await direct.create(zk_path) == 0
            dropped = proxy.drop_request(op=OpCode.DELETE, path_prefix=zk_path)
            spare = proxy.drop_request(op=OpCode.EXISTS)
            assert proxy.disarm(spare) and not proxy.disarm(spare)
            await zk.send(OpCode.DELETE, DeleteRequest(zk_path, -1))
            await zk.expect_closed()
            info = await dropped.wait()
            assert info.path == zk_path and info.reply is None
            assert await direct.exists(zk_path)  # never reached the server


async def test_sever_after_request_forwards_it_then_closes(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, session), wire(zk_hosts) as (direct, _):
            rule = proxy.sever_after_request(op=OpCode.CREATE, path_prefix=zk_path)
            xid = await zk.send(OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0))
            await zk.expect_closed()  # no reply: the connection ends right after the request
            info = await rule.wait()
            assert (info.xid, info.op, info.path, info.reply) == (xid, OpCode.CREATE, zk_path, None)
            assert info.session_id == session.session_id
            with trio.fail_after(2):
                while not await direct.exists(zk_path):  # the server got it
                    await trio.sleep(0.01)


async def test_swallow_waits_for_the_reply_even_when_stalled(proxy: FaultProxy, zk_path: str) -> None:
    with trio.fail_after(5):
        async with wire(proxy.hosts) as (zk, _):
            lost = proxy.swallow_reply(op=OpCode.CREATE, then="stall")
            await zk.send(OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0))
            await lost.wait()
            await zk.send(OpCode.EXISTS, ExistsRequest(zk_path, False))
            with trio.move_on_after(0.3) as waited:
                await zk.reply()
            assert waited.cancelled_caught and proxy.connections == 1  # open, and silent
            assert proxy.live[0].stalled


async def test_many_concurrent_connections(proxy: FaultProxy, zk_hosts: str, zk_path: str) -> None:
    n = 30
    with trio.fail_after(10):
        async with wire(zk_hosts) as (direct, _):
            assert await direct.create(zk_path) == 0
            all_open = trio.Event()

            async def one(i: int) -> None:
                async with wire(proxy.hosts) as (zk, _):
                    for j in range(5):
                        assert await zk.create(f"{zk_path}/n{i}-{j}") == 0
                    if proxy.connections == n:
                        all_open.set()
                    await all_open.wait()

            async with trio.open_nursery() as nursery:
                for i in range(n):
                    nursery.start_soon(one, i)
            _, payload = await direct.call(OpCode.EXISTS, ExistsRequest(zk_path, False))
            assert struct.unpack_from(">i", payload, len(payload) - 12)[0] == n * 5  # numChildren
            await _wait(proxy, lambda p: p.connections == 0)
            assert proxy.total_connections == n and proxy.handshakes == n


async def test_exit_closes_client_connections(zk_hosts: str) -> None:
    with trio.fail_after(5):
        async with open_fault_proxy(*first_server(zk_hosts)) as proxy:
            zk = await Wire.connect(proxy.hosts)
            await zk.handshake()
            proxy.freeze()
            await zk.send(OpCode.EXISTS, ExistsRequest("/", False))
        await zk.expect_closed()
        await zk.aclose()
