"""The request events an observer is told (zkwire.observing.RequestEvent), compared one for one with what
``zkwire trace --json`` saw of the same traffic; the caller's context and the retry's attempt number;
observers that raise or block, which must not affect the requests."""

from __future__ import annotations

import contextvars
import json
import logging
import subprocess
import threading
import time

import pytest
import trio
from helpers.observing import Recorder, mixed_traffic
from helpers.tracerproc import TracerProcess

import zkwire
from zkwire.observing import ObservedEvent, WatchEvent

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("observing_test", default="unset")


async def test_request_events_match_the_tracers_frames_one_for_one(zk_hosts: str, zk_path: str) -> None:
    tracer = TracerProcess(zk_hosts, "--json", "--hide-pings", stdout=subprocess.PIPE)
    rec = Recorder()
    try:
        async with zkwire.open_client(tracer.hosts, observers=[rec], follow_ensemble=False) as zk:
            await mixed_traffic(zk, zk_path)
            assert await zk.flush_observers()
    finally:
        tracer.stop()
    frames = [json.loads(line) for line in tracer.output.decode().splitlines() if line.startswith("{")]
    requests = {f["xid"]: f for f in frames if f.get("direction") == "client" and f["kind"] == "request"}
    replies = {f["xid"]: f for f in frames if f.get("direction") == "server" and f["kind"] == "reply"}
    seen = [
        (xid, f["op"], f["path"], replies[xid]["err"], f["size"] + 4, replies[xid]["size"] + 4)
        for xid, f in sorted(requests.items())
        if f["op"] != zkwire.OpCode.CLOSE_SESSION
    ]
    told = [
        (e.xid, int(e.op), e.path, 0 if e.error is None else e.error.code, e.bytes_out, e.bytes_in)
        for e in rec.requests()
    ]
    assert len(told) == 15
    assert told == seen
    events = rec.requests()
    assert all(e.server == zkwire.HostPort("127.0.0.1", tracer.port) for e in events)
    assert [e.op_name for e in events][:2] == ["create", "getData"]
    # The server's answer, as on the wire: exists() of a missing node is a NoNode reply (returned as None).
    errors = [(e.op_name, e.error_name) for e in events if e.error]
    assert errors == [
        ("exists", "NoNodeError"),
        ("getData", "NoNodeError"),
        ("create", "NodeExistsError"),
        ("getData", "NoNodeError"),
    ]
    assert all(e.started <= e.finished <= time.time() for e in events if e.finished is not None)
    assert [e.in_flight for e in events][-5:-2] == [1, 2, 3]  # the pipeline's three went out together
    watch_events = [e for e in rec.events if isinstance(e, WatchEvent)]
    assert [(e.path, e.watchers) for e in watch_events] == [(zk_path, 1)]


async def test_requests_carry_the_callers_context_also_from_the_backlog(zk_hosts: str, zk_path: str) -> None:
    rec = Recorder(wants_context=True)
    async with zkwire.open_client(zk_hosts, observers=[rec], follow_ensemble=False) as zk:
        await zk.create(zk_path)
        zk.max_in_flight = 1  # the others wait in the backlog and are sent by another task

        async def one(i: int) -> None:
            VAR.set(f"caller-{i}")
            await zk.get_data(zk_path)

        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(one, i)
        assert await zk.flush_observers()
    got = sorted(e.context.run(VAR.get) for e in rec.requests() if e.op == zkwire.OpCode.GET_DATA)
    assert got == sorted(f"caller-{i}" for i in range(10))


async def test_no_context_unless_asked_and_no_event_without_observers(zk_hosts: str, zk_path: str) -> None:
    rec = Recorder()
    async with zkwire.open_client(zk_hosts, follow_ensemble=False) as zk:
        assert zk._core.observed is None and not zk.observed
        await zk.create(zk_path)
        zk.add_observer(rec)
        assert zk.observed
        await zk.get_data(zk_path)
        assert await zk.flush_observers()
        zk.remove_observer(rec)
        assert zk._core.observed is None
        await zk.get_data(zk_path)
        assert await zk.flush_observers()
    assert [(e.op_name, e.context) for e in rec.requests()] == [("getData", None)]


async def test_a_retried_request_carries_its_attempt_number(zk_hosts: str, zk_path: str) -> None:
    rec = Recorder()
    calls = 0
    async with zkwire.open_client(zk_hosts, observers=[rec], follow_ensemble=False) as zk:
        await zk.create(zk_path)

        async def flaky() -> bytes:
            nonlocal calls
            calls += 1
            data, _ = await zk.get_data(zk_path)
            if calls < 3:
                raise zkwire.ConnectionLossError(zk_path)
            return data

        policy = zkwire.RetryPolicy(initial_delay=0.001, max_delay=0.002)
        await zkwire.retry_with(policy, flaky)
        await zk.get_data(zk_path)  # outside the retry: a first attempt again
        assert await zk.flush_observers()
    reads = [e for e in rec.requests() if e.op == zkwire.OpCode.GET_DATA]
    assert [(e.attempt, e.retried) for e in reads] == [(1, False), (2, True), (3, True), (1, False)]


class Raising:
    def __init__(self) -> None:
        self.calls = 0

    def on_event(self, event: ObservedEvent) -> None:
        self.calls += 1
        raise RuntimeError("observer bug")


class Blocking:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def on_event(self, event: ObservedEvent) -> None:
        self.calls += 1
        self.release.wait(30)


async def test_a_raising_observer_is_logged_once_and_kept(
    zk_hosts: str, zk_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    bad, good = Raising(), Recorder()
    with caplog.at_level(logging.WARNING, logger="zkwire.observers"):
        async with zkwire.open_client(zk_hosts, observers=[bad, good], follow_ensemble=False) as zk:
            await zk.create(zk_path)
            for _ in range(50):
                await zk.get_data(zk_path)
            assert await zk.flush_observers()
            assert zk._observers.failures == bad.calls >= 52
    assert len(good.requests()) == 51
    assert len([r for r in caplog.records if "Raising raised" in r.getMessage()]) == 1


async def test_a_blocked_observer_neither_stalls_the_client_nor_grows_its_memory(zk_hosts: str, zk_path: str) -> None:
    stuck = Blocking()
    try:
        async with zkwire.open_client(zk_hosts, observers=[stuck], follow_ensemble=False) as zk:
            zk._observers.capacity = 200
            await zk.create(zk_path)
            with trio.fail_after(20):  # 2,000 requests; a stalled client would never finish
                async with trio.open_nursery() as nursery:
                    for _ in range(20):
                        nursery.start_soon(_reads, zk, zk_path, 100)
            assert stuck.calls == 1  # the first event's call is still blocked
            assert len(zk._observers._queue) == 200
            assert zk._observers.dropped >= 2_000 - 200
            assert not await zk.flush_observers(limit=0.2)
            started = trio.current_time()
        assert trio.current_time() - started < 3  # closing leaves the stuck observer behind, bounded
    finally:
        stuck.release.set()


async def _reads(zk: zkwire.Client, path: str, n: int) -> None:
    for _ in range(n):
        await zk.get_data(path)
