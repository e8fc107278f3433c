"""The trio client against a hostile server (``hostileserver.py``): every case ends in the documented
outcome -- a typed error, a refused connection followed by a retry with back-off, or the correct
result -- within a bound on time and memory.

The outcomes are listed in ``protocol-notes/hostile-servers.md``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
from helpers.fakeserver import STAT, FakeServer, frame
from helpers.hostileserver import (
    HONEST_DATA,
    HostileConnection,
    Script,
    bounded,
    honest,
    open_hostile_server,
    reply_for,
    serve,
)

import zkwire
from zkwire import SessionState
from zkwire.constants import OpCode
from zkwire.errors import ProtocolError
from zkwire.protocol.multi import MultiResponse, MultiResult
from zkwire.protocol.records import CreateResponse
from zkwire.sansio.session import SessionCore

SID = 0x1_0000_0001
INT32_MAX = (1 << 31) - 1


async def _until_reconnected(states: zkwire.StateStream) -> AsyncIterator[SessionState]:
    suspended = False
    async for state in states:
        yield state
        if state is SessionState.SUSPENDED:
            suspended = True
        elif state is SessionState.CONNECTED and suspended:
            return


# ---------------------------------------------------------------------------------------------- scripts


async def garbage_handshake(conn: HostileConnection) -> None:
    await conn.handshake()
    await conn.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    await conn.hold()


async def huge_length_handshake(conn: HostileConnection) -> None:
    await conn.handshake()
    await conn.send(FakeServer.bad_length(INT32_MAX) + b"\x00" * 64)
    await conn.hold()


async def huge_length_reply(conn: HostileConnection) -> None:
    await conn.accept()
    await conn.request()
    await conn.send(FakeServer.bad_length(INT32_MAX) + b"\x00" * 64)
    await conn.hold()


async def unknown_xid(conn: HostileConnection) -> None:
    await conn.accept()
    req = await conn.request()
    assert req is not None
    await conn.send(conn.fake.reply(req.xid + 1000, reply_for(req) and None))
    await conn.hold()


async def out_of_order(conn: HostileConnection) -> None:
    await conn.accept()
    first, second = await conn.request(), await conn.request()
    assert first is not None and second is not None
    await conn.send((reply_for(second) or b"") + (reply_for(first) or b""))
    await conn.hold()


async def trickled(conn: HostileConnection) -> None:
    if await conn.accept() is None:
        return
    while (req := await conn.request()) is not None:
        reply = reply_for(req)
        if reply is not None:
            await conn.trickle(reply, 0.002)
        if req.op == OpCode.CLOSE_SESSION:
            return


async def half_frame_forever(conn: HostileConnection) -> None:
    """Answer a request with a frame that never completes: one byte of it every 50 ms."""
    await conn.accept()
    await conn.request()
    await conn.send(FakeServer.bad_length(1000))
    while not conn.closed_by_client:
        await conn.send(b"\x00")
        await trio.sleep(0.05)


async def endless_pings(conn: HostileConnection) -> None:
    if await conn.accept() is None:
        return
    async with trio.open_nursery() as nursery:

        async def pings() -> None:
            while not conn.closed_by_client:
                await conn.send(conn.fake.pong())
                await trio.sleep(0.001)

        nursery.start_soon(pings)
        await serve(conn)
        nursery.cancel_scope.cancel()


def accept_with(**kwargs: object) -> Script:
    async def script(conn: HostileConnection) -> None:
        if await conn.accept(**kwargs) is None:
            return
        await serve(conn)

    return script


async def null_password(conn: HostileConnection) -> None:
    await conn.handshake()
    await conn.send(frame(b"\x00" * 4 + (5000).to_bytes(4, "big") + SID.to_bytes(8, "big") + b"\xff" * 4))
    await conn.hold()


async def honest_once(conn: HostileConnection) -> None:
    """Grant the session, answer one request, then drop the connection."""
    await conn.accept(session_id=SID)
    req = await conn.request()
    if req is not None:
        await conn.send(reply_for(req) or b"")


async def multi_short(conn: HostileConnection) -> None:
    await conn.accept()
    req = await conn.request()
    assert req is not None and req.op == OpCode.MULTI
    await conn.send(conn.fake.reply(req, MultiResponse((MultiResult(OpCode.CREATE, 0, CreateResponse("/a")),))))
    await conn.hold()


async def null_created_path(conn: HostileConnection) -> None:
    await conn.accept()
    req = await conn.request()
    assert req is not None and req.op == OpCode.CREATE
    await conn.send(conn.fake.reply(req, CreateResponse(None)))
    await conn.hold()


async def accept_then_close(conn: HostileConnection) -> None:
    await conn.accept()


# ------------------------------------------------------------------------------------------------ cases


async def test_garbage_handshake_is_retried_with_back_off() -> None:
    async with open_hostile_server(garbage_handshake, garbage_handshake, garbage_handshake, honest) as server:
        async with bounded(10):
            start = trio.current_time()
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                assert (await zk.get_data("/"))[0] == HONEST_DATA
            assert server.connections == 4
            # Three refused attempts in a row back off (at least 25 + 50 + 100 ms of sleeping).
            assert trio.current_time() - start >= 0.175


async def test_garbage_forever_backs_off_and_never_connects() -> None:
    async with open_hostile_server(garbage_handshake) as server:
        async with bounded(10):
            with trio.move_on_after(3):
                async with zkwire.open_client(server.hosts, session_timeout=5):
                    raise AssertionError("not connected to anything")
        assert 3 <= server.connections <= 15, server.connections


@pytest.mark.parametrize("script", [huge_length_handshake, huge_length_reply], ids=["handshake", "reply"])
async def test_length_2_31_is_refused_without_allocating_it(script: Script) -> None:
    async with open_hostile_server(script, honest) as server:
        async with bounded(10, mib=4):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                if script is huge_length_reply:
                    with pytest.raises(zkwire.ConnectionLossError):
                        await zk.get_data("/")
                assert (await zk.get_data("/"))[0] == HONEST_DATA
                assert zk.session_id == SID
        assert server.connections == 2


async def test_reply_with_an_unknown_xid_drops_the_connection() -> None:
    async with open_hostile_server(unknown_xid, honest) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                with pytest.raises(zkwire.ConnectionLossError):
                    await zk.get_data("/")
                assert (await zk.get_data("/"))[0] == HONEST_DATA
                assert zk.session_id == SID


async def test_replies_out_of_order_drop_the_connection() -> None:
    async with open_hostile_server(out_of_order, honest) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                first, second = await zk.pipeline([zkwire.GetData("/a"), zkwire.GetData("/b")])
                assert isinstance(first, zkwire.ConnectionLossError)
                assert isinstance(second, zkwire.ConnectionLossError)
                assert (await zk.get_data("/"))[0] == HONEST_DATA


async def test_trickled_replies_are_assembled() -> None:
    async with open_hostile_server(trickled) as server:
        async with bounded(15):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                for _ in range(3):
                    assert await zk.get_data("/x") == (HONEST_DATA, STAT)
        assert server.connections == 1


async def test_half_frame_trickled_forever_is_dropped_after_the_read_timeout() -> None:
    async with open_hostile_server(half_frame_forever, honest) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=3) as zk:
                start = trio.current_time()
                with pytest.raises(zkwire.ConnectionLossError):
                    await zk.get_data("/")
                # Bytes that never complete a frame do not keep the connection: dropped after the read
                # timeout (2/3 of the session timeout), not kept alive by the trickle.
                assert trio.current_time() - start < 3.0
                assert (await zk.get_data("/"))[0] == HONEST_DATA
                assert zk.session_id == SID


async def test_endless_pings_change_nothing() -> None:
    async with open_hostile_server(endless_pings) as server:
        async with bounded(15, mib=8):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                for _ in range(50):
                    assert (await zk.get_data("/x"))[0] == HONEST_DATA
                await trio.sleep(0.5)
                assert zk.state is SessionState.CONNECTED
        assert server.connections == 1


async def test_huge_negotiated_timeout_is_clamped() -> None:
    async with open_hostile_server(accept_with(timeout_ms=INT32_MAX)) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                assert zk.session_timeout == 60.0
                assert (await zk.get_data("/"))[0] == HONEST_DATA


@pytest.mark.parametrize(
    "script",
    [
        accept_with(read_only=True),
        null_password,
        accept_with(passwd=b"p" * ((1 << 20) - 200)),
        accept_with(session_id=0),
    ],
    ids=["unasked read-only", "null password", "1 MiB password", "session id 0"],
)
async def test_hostile_connect_response_is_refused_and_the_next_attempt_used(script: Script) -> None:
    async with open_hostile_server(script, script, honest) as server:
        async with bounded(10, mib=12):
            async with zkwire.open_client(server.hosts, session_timeout=5) as zk:
                assert zk.state is SessionState.CONNECTED
                assert zk.session_id == SID
                assert (await zk.get_data("/"))[0] == HONEST_DATA
        assert server.connections == 3


async def test_reattach_answered_with_another_session_is_refused() -> None:
    other = accept_with(session_id=0x2_0000_0002)
    async with open_hostile_server(honest_once, other, honest) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5, follow_ensemble=False) as zk:
                states = zk.states()
                await zk.get_data("/")  # the first connection then ends
                seen = [state async for state in _until_reconnected(states)]
                assert seen == [SessionState.CONNECTED, SessionState.SUSPENDED, SessionState.CONNECTED]
                assert (await zk.get_data("/"))[0] == HONEST_DATA
                assert zk.session_id == SID
        assert server.connections == 3


async def test_multi_reply_with_too_few_results_is_connection_loss() -> None:
    async with open_hostile_server(multi_short, honest) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5, follow_ensemble=False) as zk:
                ops = [zkwire.Create("/a"), zkwire.Delete("/b")]
                with pytest.raises(zkwire.ConnectionLossError):
                    await zk.multi(ops)
                assert await zk.multi(ops) == ["/a", None]


async def test_null_created_path_is_connection_loss() -> None:
    async with open_hostile_server(null_created_path, honest) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5, follow_ensemble=False) as zk:
                with pytest.raises(zkwire.ConnectionLossError):
                    await zk.create("/n")
                assert await zk.create("/n") == "/n"


async def test_server_that_closes_after_every_handshake_gets_back_off() -> None:
    async with open_hostile_server(accept_then_close) as server:
        async with bounded(10):
            async with zkwire.open_client(server.hosts, session_timeout=5, wait_connected=False) as zk:
                await trio.sleep(3)
                assert not zk.state.is_terminal
        assert server.connections <= 20, server.connections


async def test_failing_connection_made_counts_toward_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: SessionCore, host: object, now: float) -> None:
        raise ProtocolError("simulated: the handshake cannot be encoded")

    monkeypatch.setattr(SessionCore, "connection_made", refuse)
    async with open_hostile_server(honest) as server:
        async with bounded(10):
            with trio.move_on_after(3):
                async with zkwire.open_client(server.hosts, session_timeout=5):
                    raise AssertionError("not reached")
        assert 3 <= server.connections <= 15, server.connections
