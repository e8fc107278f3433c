"""The client at scale: large replies, replies over ``max_frame``, long listings, a write blocked behind
a busy server, and a request a server never answers.

Real-server tests use the pytest plugin's server; the misbehaving servers are ``hostileserver.py``
scripts built on ``fakeserver.py``.
"""

from __future__ import annotations

import socket
import struct

import pytest
import trio
from helpers.addresses import first_server
from helpers.fakeserver import STAT, FakeServer
from helpers.faultproxy import open_fault_proxy
from helpers.hostileserver import HONEST_DATA, HostileConnection, bounded, honest, open_hostile_server, reply_for

import zkwire
from zkwire import SessionState
from zkwire.constants import DEFAULT_MAX_FRAME, WATCH_XID, EventType, KeeperState, OpCode
from zkwire.errors import ConnectionLossError, ProtocolError, ReplyTooLargeError
from zkwire.protocol.framing import LARGE_FRAME, READ_SIZE, FrameDecoder, OversizeFrame, frame
from zkwire.protocol.records import GetChildrenResponse, GetDataRequest, GetDataResponse, ReplyHeader, WatcherEvent
from zkwire.sansio.ops import Create, GetChildren
from zkwire.sansio.requests import child_names, sorted_names
from zkwire.sansio.session import HostPort

# ------------------------------------------------------------------------------------------ framing


def test_large_frame_is_read_into_one_buffer_sized_from_its_length() -> None:
    payload = bytes(range(256)) * ((LARGE_FRAME * 3) // 256)
    stream = frame(b"small") + frame(payload, len(payload)) + frame(b"after")
    decoder = FrameDecoder(len(payload))
    assert decoder.receive_buffer() is None  # between frames: read a chunk and feed it
    assert decoder.feed(stream[:1000]) == [b"small"]
    view = decoder.receive_buffer()
    assert view is not None and len(view) == len(payload) - (1000 - 9 - 4)  # the rest of the frame, exactly
    rest = stream[1000:]
    view[:] = rest[: len(view)]
    [whole] = decoder.received(len(view))
    assert whole == payload
    assert decoder.receive_buffer() is None
    assert decoder.feed(rest[len(payload) - (1000 - 13) :]) == [b"after"]


def test_large_frame_fed_in_chunks_equals_one_feed() -> None:
    payload = b"x" * (LARGE_FRAME + 12345)
    stream = frame(payload, len(payload)) * 2 + frame(b"tail")
    for step in (1, 7, 4096, 65536):
        decoder = FrameDecoder(len(payload))
        got: list[object] = []
        for at in range(0, len(stream), step):
            got += decoder.feed(stream[at : at + step])
        assert got == [payload, payload, b"tail"], step


def _read_large(decoder: FrameDecoder, payload: bytes) -> memoryview:
    """One large frame through ``decoder`` as the driver reads it (recv_into the decoder's buffer)."""
    stream = frame(payload, len(payload))
    assert decoder.feed(stream[:100]) == []
    view = decoder.receive_buffer()
    assert view is not None and len(view) == len(payload) - 96
    view[:] = stream[100:]
    [whole] = decoder.received(len(view))
    assert isinstance(whole, memoryview) and whole.readonly
    return whole


def test_a_large_frames_buffer_is_reused_once_nothing_looks_at_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each large frame used to get a new buffer of its size: a megabyte of fresh pages faulted in per
    reply.  The buffer of a frame the caller is done with serves the next (of this or another
    decoder); one whose view is still alive is never written again."""
    from zkwire.protocol import framing

    # The spares of the process start empty here (earlier tests' buffers could fill them: then ours is not kept).
    monkeypatch.setattr(framing, "_spares", framing._SpareBuffers())
    first = bytes(range(256)) * (3 * LARGE_FRAME // 256)
    second = b"\x01" * (2 * LARGE_FRAME)  # shorter: a reused buffer may be longer than the frame
    decoder = FrameDecoder(len(first))
    whole = _read_large(decoder, first)
    base = whole.obj
    del whole
    again = _read_large(FrameDecoder(len(first)), second)  # another decoder: the spares are shared
    assert again.obj is not base  # the first decoder has not given its buffer back yet (no call since)
    del again
    assert decoder.receive_buffer() is None  # the next call gives it back
    third = _read_large(FrameDecoder(len(first)), second)
    assert third.obj is base and third == second and len(third) == len(second)
    # A view still alive: its buffer is not handed to the next frame.
    held_decoder = FrameDecoder(len(first))
    held = _read_large(held_decoder, first)
    del third
    assert held_decoder.receive_buffer() is None
    for _ in range(3):
        other = _read_large(FrameDecoder(len(first)), second)
        assert other.obj is not held.obj
        del other
    assert held == first


def test_the_spare_buffers_are_few_and_bounded() -> None:
    from zkwire.protocol import framing

    spares = framing._SpareBuffers()
    for _ in range(5):
        spares.give(bytearray(LARGE_FRAME))
    spares.give(bytearray(framing.SPARE_LIMIT + 1))
    assert len(spares._free) == spares.count == 2
    assert all(len(b) == LARGE_FRAME for b in spares._free)
    assert len(spares.take(LARGE_FRAME + 1)) == LARGE_FRAME + 1  # none is large enough: a new one
    assert len(spares._free) == 2
    spares.take(LARGE_FRAME)
    assert len(spares._free) == 1


def test_a_spare_taken_by_another_thread_meanwhile_is_never_handed_out_too_small() -> None:
    from zkwire.protocol import framing

    class Raced(list[bytearray]):
        """Another thread's decoder takes the large spare between the scan and the pop."""

        def pop(self, index: int = -1) -> bytearray:
            super().pop(0)
            self.append(bytearray(10))
            return super().pop(index)

    for spares_list in (Raced([bytearray(LARGE_FRAME), bytearray(10)]), Raced([bytearray(LARGE_FRAME)])):
        spares = framing._SpareBuffers()
        spares._free = spares_list
        assert len(spares.take(LARGE_FRAME)) >= LARGE_FRAME


def test_oversize_frame_is_skipped_when_asked() -> None:
    big = struct.pack(">iqi", 7, 99, 0) + b"z" * 5000
    stream = frame(b"one") + struct.pack(">i", len(big)) + big + frame(b"two")
    decoder = FrameDecoder(1024, skip_oversize=True)
    got: list[object] = []
    at = 0
    while at < len(stream):  # as a driver does: recv_into while skipping, feed otherwise
        view = decoder.receive_buffer()
        if view is None:
            got += decoder.feed(stream[at : at + 100])
            at += 100
        else:
            n = min(len(view), len(stream) - at)
            view[:n] = stream[at : at + n]
            got += decoder.received(n)
            at += n
    assert got == [b"one", OversizeFrame(len(big), big[:16]), b"two"]
    # Without skip_oversize (or for a negative length) the stream fails, as before.
    with pytest.raises(ProtocolError):
        FrameDecoder(1024).feed(struct.pack(">i", len(big)) + big)
    with pytest.raises(ProtocolError):
        FrameDecoder(1024, skip_oversize=True).feed(struct.pack(">i", -1))


# ------------------------------------------------------------------------------------------ children


def test_children_records_keep_the_decoded_list_and_compare_by_names() -> None:
    assert GetChildrenResponse(["a", "b"]) == GetChildrenResponse(("a", "b"))
    assert GetChildrenResponse(["a"]) != GetChildrenResponse(("a", "b"))
    assert GetChildrenResponse(None) != GetChildrenResponse(())
    assert hash(GetChildrenResponse(["a"])) == hash(GetChildrenResponse(("a",)))
    names = ["b", "a", "c"]
    assert sorted_names(names) is names and names == ["a", "b", "c"]  # sorted in place, not copied
    assert child_names(names) is names
    assert sorted_names(["b", None, "a"]) == ["a", "b"]
    assert sorted_names([None]) == [] and sorted_names([None, None]) == []
    assert child_names(("b", None, "a")) == ["b", "a"]


async def test_get_children_sort_false_real_server(zk_connect_string: str) -> None:
    async with zkwire.open_client(zk_connect_string) as zk:
        await zk.create("/p")
        names = [f"n{i:03d}" for i in range(300)]
        results = await zk.pipeline([Create(f"/p/{n}") for n in names])
        assert all(isinstance(r, tuple) for r in results)
        assert await zk.get_children("/p") == names  # sorted by default
        unsorted = await zk.get_children("/p", sort=False)
        assert sorted(unsorted) == names
        unsorted2, stat = await zk.get_children_with_stat("/p", sort=False)
        assert sorted(unsorted2) == names and stat.num_children == 300
        [listed] = await zk.pipeline([GetChildren("/p", sort=False)])
        assert isinstance(listed, list) and sorted(listed) == names


async def test_listing_larger_than_a_read_buffer_real_server(zk_connect_string: str) -> None:
    """Listings longer than one read come as a view of a reused buffer and are decoded from it in place:
    names of one length (the stride path) and of mixed lengths (the split path), in the server's order,
    sorted, with the Stat, and twice in a row (the buffer is reused for the second)."""
    uniform = [f"{i:06d}" for i in range(8000)]
    mixed = [f"m{i}" + "x" * (i % 7) for i in range(8000)]
    async with zkwire.open_client(zk_connect_string) as zk:
        for parent, names in (("/uniform", uniform), ("/mixed", mixed)):
            await zk.create(parent)
            for start in range(0, len(names), 500):
                results = await zk.pipeline([Create(f"{parent}/{n}") for n in names[start : start + 500]])
                assert all(isinstance(r, tuple) for r in results)
            assert len(names) * 10 > READ_SIZE  # 4 length bytes and at least 6 of name each
            for _ in range(2):
                unsorted = await zk.get_children(parent, sort=False)
                assert len(unsorted) == len(names) and sorted(unsorted) == sorted(names)
                assert await zk.get_children(parent) == sorted(names)
                listed, stat = await zk.get_children_with_stat(parent, sort=False)
                assert sorted(listed) == sorted(names) and stat.num_children == len(names)


# ------------------------------------------------------------------------------------------ large replies


async def test_large_get_data_real_server(zk_connect_string: str) -> None:
    data = bytes(range(256)) * (1_000_000 // 256)
    async with zkwire.open_client(zk_connect_string) as zk:
        await zk.create("/big", data)
        for _ in range(3):
            got, stat = await zk.get_data("/big")
            assert type(got) is bytes and got == data and stat.data_length == len(data)
        # Pipelined, so several large replies follow each other on the socket.
        results = await zk.pipeline([zkwire.GetData("/big") for _ in range(4)])
        assert all(isinstance(r, tuple) and r[0] == data for r in results)


async def test_large_replies_read_into_reused_buffers_stay_intact_real_server(zk_connect_string: str) -> None:
    """Replies whose buffers are reused for the next large frames: what a caller holds never changes."""
    sizes = {"/big-a": 1_000_000, "/big-b": 600_000, "/big-c": 40_000}
    async with zkwire.open_client(zk_connect_string) as zk:
        for n, (path, size) in enumerate(sizes.items()):
            await zk.create(path, bytes([n + 1]) * size)
        held = [(await zk.get_data(path))[0] for path in [*sizes, *sizes]]
        held += [r[0] for r in await zk.pipeline([zkwire.GetData(p) for p in [*sizes, *sizes]])]  # type: ignore[index]
        children = await zk.get_children("/")
        assert {"big-a", "big-b", "big-c"} <= set(children)
        for i, got in enumerate(held):
            n = i % 3
            assert type(got) is bytes and got == bytes([n + 1]) * list(sizes.values())[n], i


async def test_a_reply_is_not_kept_alive_by_a_reference_cycle_real_server(zk_connect_string: str) -> None:
    """A reply referred to its call and the call to its reply: every request left cyclic garbage, and a
    megabyte reply's data stayed in memory until the cyclic collector ran (the heap grew by its size
    per call, each new megabyte faulted in afresh)."""
    import gc

    async with zkwire.open_client(zk_connect_string) as zk:
        await zk.create("/cycle", b"x" * 100_000)
        gc.collect()
        gc.disable()
        try:
            await zk.get_data("/cycle")
            await zk.pipeline([zkwire.GetData("/cycle"), zkwire.GetChildren("/cycle")])
            await zk.add_auth("digest", "cycle:secret")
            await zk.set_data("/cycle", b"y")
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                gc.collect()
                kinds = {type(o).__name__ for o in gc.garbage}
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
            assert not kinds & {"PendingCall", "Reply", "AuthResult", "GetDataResponse", "Stat"}, kinds
        finally:
            gc.enable()


async def test_listing_over_max_frame_fails_only_that_request_real_server(zk_connect_string: str) -> None:
    """About 1.2 MB of names (1,900 children with 600-character names) is over the default max_frame."""
    names = [f"{i:05d}-" + "n" * 594 for i in range(1900)]
    states: list[SessionState] = []
    async with zkwire.open_client(zk_connect_string) as zk:
        zk.add_state_listener(states.append)
        await zk.create("/wide")
        for start in range(0, len(names), 500):
            await zk.pipeline([Create(f"/wide/{n}") for n in names[start : start + 500]])
        session = zk.session_id
        with trio.fail_after(10):
            with pytest.raises(ReplyTooLargeError) as caught:
                await zk.get_children("/wide")
        error = caught.value
        assert error.max_frame == DEFAULT_MAX_FRAME and error.size > DEFAULT_MAX_FRAME
        assert "max_frame" in str(error) and str(error.size) in str(error) and error.path == "/wide"
        # The connection carried on: no state change, and the next request is answered on it.
        assert await zk.exists("/wide") is not None
        assert states == [] and zk.state is SessionState.CONNECTED and zk.session_id == session
        # Twice in a row, and between other replies in a pipeline.
        results = await zk.pipeline([GetChildren("/wide"), zkwire.GetData("/wide"), GetChildren("/wide")])
        assert isinstance(results[0], ReplyTooLargeError) and isinstance(results[2], ReplyTooLargeError)
        assert isinstance(results[1], tuple)
        assert states == []
    async with zkwire.open_client(zk_connect_string, max_frame=4 << 20) as big:
        assert await big.get_children("/wide") == names


# ------------------------------------------------------------------------------------------ hostile servers


async def test_oversize_reply_and_notification_keep_the_connection() -> None:
    big_data = b"x" * (DEFAULT_MAX_FRAME + 1000)

    async def oversize(conn: HostileConnection) -> None:
        if await conn.accept() is None:
            return
        while (req := await conn.request()) is not None:
            record = req.record
            if isinstance(record, GetDataRequest) and record.path == "/big":
                # First a notification too large to read (its path is over max_frame), then the reply.
                out = bytearray()
                ReplyHeader(WATCH_XID, -1, 0).write(out)
                WatcherEvent(EventType.NODE_DATA_CHANGED, KeeperState.SYNC_CONNECTED, "/" + "w" * len(big_data)).write(
                    out
                )
                await conn.send(struct.pack(">i", len(out)) + bytes(out))
                body = bytearray()
                ReplyHeader(req.xid, 5, 0).write(body)
                GetDataResponse(big_data, STAT).write(body)
                await conn.send(struct.pack(">i", len(body)) + bytes(body))
                continue
            reply = reply_for(req)
            if reply is not None:
                await conn.send(reply)

    async with open_hostile_server(oversize) as server:
        async with zkwire.open_client(server.hosts) as zk:
            with trio.fail_after(10):
                with pytest.raises(ReplyTooLargeError, match="max_frame"):
                    await zk.get_data("/big")
                data, _ = await zk.get_data("/small")
                assert data == b"honest"
            assert zk.state is SessionState.CONNECTED
        assert server.connections == 1


async def _opaque(host: HostPort) -> trio.abc.Stream:
    """A connection the driver reads with receive_some (as under TLS)."""
    return _OpaqueStream(await trio.open_tcp_stream(host.host, host.port))


@pytest.mark.parametrize("opaque", [False, True], ids=["recv_into", "stream"])
async def test_a_huge_announced_reply_is_held_only_as_its_bytes_come(opaque: bool) -> None:
    """A reply announced at 2**28 bytes (within the largest max_frame) of which 256 KiB ever come: the client
    allocates a few MiB for it, not 256 MiB (the buffer of a large frame follows its bytes), on the fast
    path (recv_into) and on a stream; the frame never completes, so the connection is dropped after the
    read timeout and the session re-attached."""
    huge = 1 << 28

    async def announces(conn: HostileConnection) -> None:
        await conn.accept()
        req = await conn.request()
        assert req is not None
        await conn.send(struct.pack(">iiqi", huge, req.xid, 5, 0) + bytes(256 * 1024))
        await conn.hold()

    options = {"connect": _opaque} if opaque else {}
    async with open_hostile_server(announces, honest) as server:
        async with bounded(10, mib=8):
            async with zkwire.open_client(
                server.hosts, session_timeout=3, max_frame=huge, follow_ensemble=False, **options
            ) as zk:
                with pytest.raises(ConnectionLossError):
                    await zk.get_data("/huge")
                assert (await zk.get_data("/"))[0] == HONEST_DATA
        assert server.connections == 2


@pytest.mark.parametrize("opaque", [False, True], ids=["recv_into", "stream"])
async def test_a_reply_longer_than_a_large_frames_first_buffer_comes_whole(opaque: bool) -> None:
    """A 6 MiB reply on a session allowing 8 MiB: its buffer grows as its bytes come (1 MiB, 2 MiB, then
    the whole frame), read into by the fast path or fed from a stream; replies before and after it, and
    it again, come intact."""
    data = bytes(range(256)) * (6 * 1024 * 1024 // 256)

    async def six(conn: HostileConnection) -> None:
        if await conn.accept() is None:
            return
        while (req := await conn.request()) is not None:
            if isinstance(req.record, GetDataRequest) and req.record.path == "/six":
                await conn.send(conn.fake.reply(req, GetDataResponse(data, STAT)))
                continue
            reply = reply_for(req)
            if reply is not None:
                await conn.send(reply)

    options = {"connect": _opaque} if opaque else {}
    async with open_hostile_server(six) as server:
        async with zkwire.open_client(server.hosts, max_frame=8 << 20, follow_ensemble=False, **options) as zk:
            with trio.fail_after(20):
                for _ in range(3):
                    assert await zk.get_data("/six") == (data, STAT)
                results = await zk.pipeline([zkwire.GetData("/a"), zkwire.GetData("/six"), zkwire.GetData("/b")])
                assert results == [(HONEST_DATA, STAT), (data, STAT), (HONEST_DATA, STAT)]
        assert server.connections == 1


async def test_request_unanswered_while_pings_flow_fails_with_connection_loss() -> None:
    async def loses_a_request(conn: HostileConnection) -> None:
        if await conn.accept() is None:
            return
        while (req := await conn.request()) is not None:  # pings are answered
            if isinstance(req.record, GetDataRequest) and req.record.path == "/lost":
                continue  # never answered
            reply = reply_for(req)
            if reply is not None:
                await conn.send(reply)

    async with open_hostile_server(loses_a_request, honest) as server:
        async with zkwire.open_client(server.hosts, session_timeout=1.0, follow_ensemble=False) as zk:
            start = trio.current_time()
            with trio.fail_after(6):
                with pytest.raises(ConnectionLossError):
                    await zk.get_data("/lost")
            waited = trio.current_time() - start
            assert 0.9 <= waited < 4, waited
            # Pings were answered meanwhile (the ordinary read timeout did not end it).
            assert len(server.conns[0].fake.requests(OpCode.PING)) >= 2
            with trio.fail_after(6):
                await zk.wait_connected()
                data, _ = await zk.get_data("/fine")
            assert data == b"honest"
        assert server.connections == 2


async def _small_send_buffer(host: HostPort) -> trio.abc.Stream:
    stream = await trio.open_tcp_stream(host.host, host.port)
    stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    return stream


async def test_write_blocked_while_the_server_answers_is_not_stalled() -> None:
    """A server that reads slowly (as a busy one does) but answers everything it reads: the client's
    writes stay blocked for longer than the read timeout, and the connection is kept."""

    async def slow_reader(conn: HostileConnection) -> None:
        if await conn.accept() is None:
            return
        conn.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
        fake: FakeServer = conn.fake
        while True:
            await trio.sleep(0.03)
            try:
                data = await conn.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            out = bytearray()
            for req in fake.receive(data):
                if getattr(req, "is_ping", False):
                    out += fake.pong()
                    continue
                reply = reply_for(req)  # type: ignore[arg-type]
                if reply is not None:
                    out += reply
            if out:
                await conn.send(bytes(out))

    states: list[SessionState] = []
    value = b"v" * 10_000
    async with open_hostile_server(slow_reader) as server:
        async with zkwire.open_client(server.hosts, session_timeout=1.5, connect=_small_send_buffer) as zk:
            zk.add_state_listener(states.append)
            zk.max_in_flight = 100
            done: list[object] = []

            async def put() -> None:
                done.append(await zk.set_data("/n", value))

            start = trio.current_time()
            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    for _ in range(600):
                        nursery.start_soon(put)
            took = trio.current_time() - start
            assert len(done) == 600
            assert took > 1.5, f"the writes were not blocked long enough to test anything ({took:.2f}s)"
            assert states == []
        assert server.connections == 1


class _CountSchedules(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


async def test_waiters_for_room_are_woken_only_as_room_frees() -> None:
    """2,000 callers queued behind max_in_flight: each reply wakes about one of them, not all."""
    async with open_hostile_server(honest) as server:
        async with zkwire.open_client(server.hosts) as zk:
            zk.max_in_flight = 10
            counter = _CountSchedules()
            done: list[bytes] = []

            async def get() -> None:
                data, _ = await zk.get_data("/n")
                done.append(data)

            trio.lowlevel.add_instrument(counter)
            try:
                with trio.fail_after(60):
                    async with trio.open_nursery() as nursery:
                        for _ in range(2000):
                            nursery.start_soon(get)
            finally:
                trio.lowlevel.remove_instrument(counter)
            assert len(done) == 2000
            # Waking every waiter on every reply would be about a million task switches.
            assert counter.count < 20 * 2000, counter.count


async def test_requests_allocate_no_event_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller waiting for its reply is parked directly on the scheduler: no trio.Event per request."""
    real_event = trio.Event
    made: list[trio.Event] = []

    def counting_event() -> trio.Event:
        event = real_event()
        made.append(event)
        return event

    async with open_hostile_server(honest) as server:
        async with zkwire.open_client(server.hosts) as zk:
            monkeypatch.setattr(trio, "Event", counting_event)
            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    for _ in range(500):
                        nursery.start_soon(zk.get_data, "/n")
                for _ in range(100):  # sequential: the caller reads its own reply
                    await zk.get_data("/n")
            monkeypatch.setattr(trio, "Event", real_event)
            assert len(made) < 50, len(made)


class _OpaqueStream(trio.abc.Stream):
    """A TCP stream the driver cannot see the socket of (as under TLS): it reads with receive_some."""

    def __init__(self, inner: trio.SocketStream) -> None:
        self.inner = inner
        self.largest_read = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await self.inner.receive_some(max_bytes)
        self.largest_read = max(self.largest_read, len(data))
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_large_and_oversize_replies_on_a_stream_connection(zk_connect_string: str) -> None:
    streams: list[_OpaqueStream] = []

    async def connect(host: HostPort) -> trio.abc.Stream:
        stream = _OpaqueStream(await trio.open_tcp_stream(host.host, host.port))
        streams.append(stream)
        return stream

    data = bytes(range(256)) * (900_000 // 256)
    async with zkwire.open_client(zk_connect_string, connect=connect) as zk:
        await zk.create("/big", data)
        for _ in range(3):
            got, _ = await zk.get_data("/big")
            assert got == data
    async with zkwire.open_client(zk_connect_string, connect=connect, max_frame=100_000) as small:
        with pytest.raises(ReplyTooLargeError):
            await small.get_data("/big")
        assert await small.exists("/big") is not None
        assert small.state is SessionState.CONNECTED
    assert len(streams) == 2


class _CountSchedulesPerTask(trio.abc.Instrument):
    def __init__(self) -> None:
        self.counts: dict[trio.lowlevel.Task, int] = {}

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        self.counts[task] = self.counts.get(task, 0) + 1


async def test_requests_beyond_max_in_flight_wait_in_a_backlog_parked_once(zk_hosts: str, zk_path: str) -> None:
    """4,000 concurrent callers, 100 in flight at most (real server): a caller beyond the bound waits in
    the driver's backlog and is sent by the reader as replies make room, so it is scheduled twice (to
    start, and with its reply), not a third time for room; every call gets its own reply."""
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"x")
        await zk.pipeline([Create(f"{zk_path}/{i}", str(i).encode()) for i in range(50)])
        zk.max_in_flight = 100
        counter = _CountSchedulesPerTask()
        wrong: list[tuple[int, bytes]] = []

        async def get(i: int) -> None:
            data, _ = await zk.get_data(f"{zk_path}/{i % 50}")
            if data != str(i % 50).encode():
                wrong.append((i, data))

        trio.lowlevel.add_instrument(counter)
        try:
            with trio.fail_after(60):
                async with trio.open_nursery() as nursery:
                    for i in range(4000):
                        nursery.start_soon(get, i)
        finally:
            trio.lowlevel.remove_instrument(counter)
        assert wrong == []
        callers = sorted(n for task, n in counter.counts.items() if task.name.endswith(".get"))
        assert len(callers) == 4000
        # The first 100 may also yield while writing; the 3,900 that waited for room are not woken for it.
        assert callers[len(callers) // 2] == 2, callers[len(callers) // 2]
        assert callers[int(len(callers) * 0.9)] <= 2, callers[int(len(callers) * 0.9)]


async def test_requests_given_up_in_the_backlog_are_never_sent(zk_hosts: str, zk_path: str) -> None:
    """Callers cancelled while their requests wait for room: those requests never reach the server; the
    others are answered; closing the client fails what still waits with ClientClosedError."""
    async with open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, follow_ensemble=False) as zk:
            await zk.create(zk_path, b"x")
            zk.max_in_flight = 5
            [conn] = proxy.live
            before = conn.forwarded("to_server")
            proxy.freeze(to_server=False)  # replies held: the first 5 fill the window
            results: list[object] = []

            async def get() -> None:
                try:
                    results.append((await zk.get_data(zk_path))[0])
                except zkwire.ZKError as e:
                    results.append(type(e))

            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    for _ in range(5):
                        nursery.start_soon(get)
                    while conn.forwarded("to_server") - before < 5:
                        await trio.sleep(0.01)
                    with trio.CancelScope() as doomed:
                        async with trio.open_nursery() as inner:
                            for _ in range(20):
                                inner.start_soon(get)
                            await trio.sleep(0.3)
                            doomed.cancel()
                    assert conn.forwarded("to_server") - before == 5
                    for _ in range(3):
                        nursery.start_soon(get)
                    await trio.sleep(0.3)
                    proxy.thaw()
            assert results == [b"x"] * 8
            await trio.sleep(0.2)
            assert conn.forwarded("to_server") - before == 8  # the 20 given up never went out

            proxy.freeze(to_server=False)
            closed: list[object] = []

            async def waiter() -> None:
                try:
                    await zk.get_data(zk_path)
                except zkwire.ZKError as e:
                    closed.append(type(e))

            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(waiter)
                await trio.sleep(0.3)
                with trio.CancelScope(shield=True):
                    await zk.close()
            assert len(closed) == 8
            assert set(closed) <= {zkwire.ClientClosedError, zkwire.ConnectionLossError}
            assert closed.count(zkwire.ClientClosedError) >= 3  # the 3 waiting for room
