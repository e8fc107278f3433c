"""The reader's hand-back after a caller read its own reply (FastPathDriver.reader_handback).

On the fast path a lone request's caller reads the socket itself.  When it leaves nothing behind that
anyone waits for, the reader is not woken for every request: it comes back by itself within
``reader_handback``.  These tests set a long hand-back, so that any path that needs the reader and forgot
to call it back would wait that long, and check every such path: watches, pings, auth, other callers, a
closing server.  Each runs against the plain driver too (zkwire.client.fastpath.FAST_PATH off), where
the reader task reads every reply: the same behaviour, and the scheduler passes the fast path saves.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire import EventType, SessionState
from zkwire.client import fastpath

LONG = 60.0  # longer than any bound below: a path that waits for the slice to end fails


@pytest.fixture(params=["fast", "plain"], autouse=True)
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which driver the clients of the test run: the fast path or the plain driver."""
    monkeypatch.setattr(fastpath, "FAST_PATH", request.param == "fast")
    return str(request.param)


@pytest.fixture
def long_handback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(fastpath.FastPathDriver, "reader_handback", LONG)
    yield


class _IoWaits(trio.abc.Instrument):
    """Counts the scheduler's passes (one I/O wait each)."""

    def __init__(self) -> None:
        self.count = 0

    def before_io_wait(self, timeout: float) -> None:
        self.count += 1


#: Scheduler passes per sequential request.  The fast path: one (the caller writes, waits for the socket,
#: reads).  The plain driver: three (the caller's write through the stream is a schedule point, the reply
#: wakes the reader in one pass and the caller in the next); measured 2.8.
PASSES = {"fast": 1, "plain": 3}


async def test_scheduler_passes_per_sequential_request(
    zk_hosts: str, zk_path: str, driver: str, long_handback: None
) -> None:
    # Waking the reader after every request (to take the socket back) doubles the passes: 2.0 per request.
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"x" * 100)
        for _ in range(20):
            await zk.get_data(zk_path)
        waits = _IoWaits()
        trio.lowlevel.add_instrument(waits)
        try:
            for _ in range(300):
                data, _ = await zk.get_data(zk_path)
                assert data == b"x" * 100
        finally:
            trio.lowlevel.remove_instrument(waits)
        assert waits.count <= 300 * PASSES[driver] * 1.1, waits.count / 300


async def test_a_watch_fires_at_once_after_a_lone_request(zk_hosts: str, zk_path: str, long_handback: None) -> None:
    # Session timeout 30 s: no ping (which would call the reader back) for 10 s.
    async with zkwire.open_client(zk_hosts, session_timeout=30) as zk, zkwire.open_client(zk_hosts) as other:
        await zk.create(zk_path, b"a")
        for i in range(5):
            _, _, watch = await zk.get_data(zk_path, watch=True)  # lone: this task reads the reply
            await other.set_data(zk_path, b"%d" % i)
            with trio.fail_after(2):
                assert (await watch.wait()).type is EventType.NODE_DATA_CHANGED


async def test_pings_are_answered_while_the_reader_rests(zk_hosts: str, zk_path: str, long_handback: None) -> None:
    # Session timeout 2 s: a ping every ~0.67 s, SUSPENDED if nothing is answered for ~1.33 s.  A reader
    # left resting after a lone request would read no ping reply for LONG seconds.
    async with zkwire.open_client(zk_hosts, session_timeout=2) as zk:
        await zk.create(zk_path)
        states = zk.states()
        assert await states.__anext__() is SessionState.CONNECTED
        seen: list[SessionState] = []

        async def watch_states() -> None:
            async for state in states:
                seen.append(state)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_states)
            for _ in range(3):
                await zk.get_data(zk_path)
                await trio.sleep(1.5)
            nursery.cancel_scope.cancel()
        assert seen == [] and zk.state is SessionState.CONNECTED


async def test_other_callers_and_auth_after_a_lone_request(zk_hosts: str, zk_path: str, long_handback: None) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"v")
        got: list[bytes] = []

        async def get() -> None:
            got.append((await zk.get_data(zk_path))[0])

        with trio.fail_after(10):
            for _ in range(3):
                await zk.get_data(zk_path)  # lone: leaves the reader resting
                got.clear()
                async with trio.open_nursery() as nursery:
                    for _ in range(50):
                        nursery.start_soon(get)
                assert got == [b"v"] * 50
                await zk.get_data(zk_path)
                await zk.add_auth("digest", "user:secret")  # answered to the reader
                await zk.get_data(zk_path)
                assert len(await zk.pipeline([zkwire.GetData(zk_path)] * 20)) == 20


async def test_a_closed_connection_is_noticed_within_the_handback(
    zk_hosts: str, zk_path: str, faultproxy: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing in flight, no watch: only the connection's end can arrive, and the resting reader comes
    # back for it within the hand-back (0.3 s here), long before the next ping (10 s).
    monkeypatch.setattr(fastpath.FastPathDriver, "reader_handback", 0.3)
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=30) as zk:
            await zk.create(zk_path)
            sid = zk.session_id
            states = zk.states()
            assert await states.__anext__() is SessionState.CONNECTED
            for _ in range(10):
                await zk.get_data(zk_path)
            await proxy.sever()
            with trio.fail_after(3):
                assert await states.__anext__() is SessionState.SUSPENDED
            with trio.fail_after(10):
                await zk.wait_connected()
            assert zk.session_id == sid
