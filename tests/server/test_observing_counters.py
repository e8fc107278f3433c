"""zkwire.observing.SessionCounters against the real server: the counts of real traffic and of a sever
are exactly what was done, the figures it shares with ``zkwire trace --stats`` are the tracer's for the
same traffic, and the lock events a recipe reports are summed."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from helpers.addresses import first_server
from helpers.observing import Recorder, mixed_traffic, sever_and_reattach
from helpers.tracerproc import TracerProcess

import zkwire
from zkwire.observing import RecipeEvent, SessionCounters
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.framing import REPLY_HEADER
from zkwire.protocol.records import ConnectRequest, ConnectResponse, WatcherEvent

CREATES, READS, MISSES = 7, 11, 3


async def test_counts_are_what_was_done_across_a_sever(zk_hosts: str, zk_path: str, faultproxy) -> None:
    counters, rec = SessionCounters(), Recorder()
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(
            proxy.hosts, session_timeout=6, observers=[counters, rec], follow_ensemble=False
        ) as zk:
            counters.client = zk
            await zk.create(zk_path)
            await zk.get_children(zk_path, watch=True)
            for i in range(CREATES):
                await zk.create(f"{zk_path}/n{i}", b"x")  # the first fires the children watch
            for _ in range(READS):
                await zk.get_data(f"{zk_path}/n0")
            for _ in range(MISSES):
                with pytest.raises(zkwire.NoNodeError):
                    await zk.get_data(f"{zk_path}/missing")
            await sever_and_reattach(zk, proxy)
            await zk.get_data(zk_path)
            assert await zk.flush_observers()
            during = counters.to_json()
            text = counters.lines()
        after = counters.to_json()
    requests = {"create": 1 + CREATES, "getChildren": 1, "getData": READS + MISSES + 1}
    assert during["requests"] == requests
    assert during["errors"] == {"NONODE": MISSES}
    assert during["errors_by_op"] == {"getData NONODE": MISSES}
    assert {op: row["count"] for op, row in during["latency"].items()} == requests
    assert all(0 <= row["p50_ms"] <= row["p99_ms"] <= row["max_ms"] for row in during["latency"].values())
    assert during["events"] == {"NODE_CHILDREN_CHANGED": 1}
    told = rec.requests()
    assert len(told) == sum(requests.values())
    assert during["bytes"] == {"client": sum(e.bytes_out for e in told), "server": sum(e.bytes_in for e in told)}
    assert during["sessions"] == {"opened": 1, "reattached": 1, "closed": 0, "expired": 0}
    connection = {kind: n for kind, n in during["connection"].items() if n}
    assert connection == {"connecting": 2, "connected": 1, "lost": 1, "suspended": 1, "reattached": 1}
    assert (during["in_flight"], during["backlog"]) == (0, 0)
    assert "sessions: 1 opened, 1 re-attached, 0 closed, 0 expired" in text
    assert (
        "connections: 2 attempts, 0 failed attempts, 1 lost, 1 suspended, 0 moved, 0 read-only, 0 refused credentials"
        in text
    )
    assert f"requests: getData {READS + MISSES + 1}, create {1 + CREATES}, getChildren 1" in text
    assert f"errors: getData NONODE {MISSES}" in text
    assert after["sessions"] == {"opened": 1, "reattached": 1, "closed": 1, "expired": 0}
    assert after["requests"] == requests  # closing is no request of the application's


def _frames_no_request_event_has(notified: list[str]) -> tuple[int, int]:
    """The bytes of the frames the tracer counts that belong to no request event, client side and server
    side, length prefixes included: the handshake (ConnectRequest, ConnectResponse: fixed-size fields),
    closeSession (a bare request and reply) and the watch notifications (on the paths ``notified``)."""
    connect = len(encode_connect_request(ConnectRequest(0, 0, 30_000, 0, bytes(16), False)))
    accepted = bytearray(4)
    ConnectResponse(0, 30_000, 1, bytes(16), False).write(accepted)
    close = len(encode_request(1, zkwire.OpCode.CLOSE_SESSION))
    notifications = 0
    for path in notified:
        body = bytearray()
        WatcherEvent(zkwire.EventType.NODE_CREATED, 3, path).write(body)
        notifications += 4 + REPLY_HEADER.size + len(body)
    return connect + close, len(accepted) + 4 + REPLY_HEADER.size + notifications


async def test_the_figures_both_give_are_the_tracers_for_the_same_traffic(zk_hosts: str, zk_path: str) -> None:
    """Pings are hidden from the tracer's counts (``--hide-pings``) and the ensemble follower is off, so
    both count the application's requests.  The tracer also counts frames no request event has: the
    handshake, closeSession (a request and a latency of its own) and the watch notifications (bytes from
    the server).  A request failed with its connection, a failed multi (err 0 in its header, the failure
    in its results: no error for an observer) and SetWatches after a re-attach would differ too; this
    traffic has none of them."""
    tracer = TracerProcess(zk_hosts, "--stats", "--json", "--hide-pings", stdout=subprocess.PIPE)
    counters = SessionCounters()
    try:
        async with zkwire.open_client(tracer.hosts, observers=[counters], follow_ensemble=False) as zk:
            await mixed_traffic(zk, zk_path)
            for _ in range(20):
                await zk.get_data(zk_path)
            assert await zk.flush_observers()
    finally:
        code, err = tracer.stop()
    assert code in (0, 130), err
    [summary] = [json.loads(line) for line in tracer.output.decode().splitlines() if line.startswith("{")]
    ours = counters.to_json()

    # requests and latency counts: the tracer's, less the one closeSession
    traced_requests = dict(summary["requests"])
    assert traced_requests.pop("closeSession") == 1
    assert ours["requests"] == traced_requests
    assert ours["requests"] == {
        "getData": 24,
        "create": 3,
        "setData": 2,
        "exists": 2,
        "getChildren": 1,
        "multi": 1,
        "delete": 1,
        "sync": 1,
    }
    traced_latency = {op: row["count"] for op, row in summary["latency"].items() if op != "closeSession"}
    assert {op: row["count"] for op, row in ours["latency"].items()} == traced_latency
    # errors, by name and by op, and watch events: the same
    assert ours["errors"] == summary["errors"] == {"NONODE": 3, "NODEEXISTS": 1}
    assert ours["errors_by_op"] == summary["errors_by_op"]
    assert ours["events"] == summary["events"] == {"NODE_CHILDREN_CHANGED": 1}
    # bytes: the tracer's, less the handshake's, closeSession's and the notifications' frames
    client_extra, server_extra = _frames_no_request_event_has([zk_path])
    assert ours["bytes"] == {
        "client": summary["bytes"]["client"] - client_extra,
        "server": summary["bytes"]["server"] - server_extra,
    }
    # sessions: one opened (and closed, once the close is delivered)
    assert ours["sessions"]["opened"] == summary["sessions"]["opened"] == 1
    assert ours["sessions"]["closed"] == summary["sessions"]["closed"] == 1
    assert ours["sessions"]["reattached"] == summary["sessions"]["reattached"] == 0


async def test_lock_events_reported_are_summed(zk_hosts: str) -> None:
    counters = SessionCounters()
    async with zkwire.open_client(zk_hosts, observers=[counters], follow_ensemble=False) as zk:
        sid = zk.session_id

        def report(kind: str, **figures: Any) -> None:
            zk.report(RecipeEvent("mutex", kind, "/locks/a", sid, 0.0, **figures))

        report("queued")
        report("granted", wait=0.010, token=1)
        report("released", hold=0.500, token=1)
        report("queued")
        report("granted", wait=0.030, token=2)
        report("lost", hold=2.0, margin=-0.25, token=2)
        report("queued")
        report("abandoned", wait=1.0)
        zk.report(RecipeEvent("barrier", "entered", "/b", sid, 0.0))
        assert await zk.flush_observers()
        locks = counters.to_json()["locks"]
        text = counters.lines()
    assert {k: v for k, v in locks.items() if isinstance(v, int)} == {
        "queued": 3,
        "granted": 2,
        "released": 1,
        "lost": 1,
        "abandoned": 1,
        "other": 1,
    }
    assert locks["wait"] == {"count": 2, "p50_ms": 10.0, "p99_ms": 30.0, "max_ms": 30.0}
    assert locks["hold"] == {"count": 2, "p50_ms": 500.0, "p99_ms": 2000.0, "max_ms": 2000.0}
    assert locks["lost_margin"] == {"count": 1, "min_ms": -250.0, "p50_ms": -250.0, "max_ms": -250.0}
    assert text[-4:] == [
        "locks: 3 queued, 2 granted, 1 released, 1 lost, 1 abandoned",
        "lock wait: n=2 p50=10.000ms p99=30.000ms max=30.000ms",
        "lock hold: n=2 p50=500.000ms p99=2000.000ms max=2000.000ms",
        "lost margin: n=1 min=-250.000ms p50=-250.000ms max=-250.000ms",
    ]
