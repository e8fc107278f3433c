"""SessionCounters without a server: what each event adds, bounded memory for a session that runs for
weeks, counting in one thread while reading in another; and the shared summary figures (zkwire.summary)."""

from __future__ import annotations

import json
import threading
import tracemalloc

import pytest

import zkwire
from zkwire.constants import EventType, OpCode
from zkwire.observing import (
    ConnectionEvent,
    ConnectionEventKind,
    RecipeEvent,
    RequestEvent,
    SessionCounters,
    WatchEvent,
)
from zkwire.summary import LATENCY_WINDOW, Durations, errors_line, latency_lines, percentile, sessions_line

SID = 0x1234


def request(
    op: int = OpCode.GET_DATA, seconds: float = 0.001, error: type[zkwire.ZKError] | None = None
) -> RequestEvent:
    answered = error is not zkwire.ConnectionLossError
    return RequestEvent(SID, 1, op, "/a", None, 20, 40 if answered else 0, 0.0, seconds, error)


def test_bounded_memory_for_200_000_requests_of_one_op() -> None:
    counters = SessionCounters()
    counters.on_event(request(seconds=5.0))  # the longest, long out of the window at the end
    for _ in range(99_999):
        counters.on_event(request(seconds=0.010))
    tracemalloc.start()
    try:
        for _ in range(50_000):
            counters.on_event(request(seconds=0.001))
        full, _ = tracemalloc.get_traced_memory()
        for _ in range(50_000):
            counters.on_event(request(seconds=0.001))
        later, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert later - full < 4096  # a full window costs nothing more
    durations = counters._latency["getData"]
    assert len(durations.recent) == durations.recent.maxlen == LATENCY_WINDOW
    row = counters.to_json()["latency"]["getData"]
    assert row == {"count": 200_000, "p50_ms": 1.0, "p99_ms": 1.0, "max_ms": 5000.0}
    assert counters.to_json()["requests"] == {"getData": 200_000}
    assert counters.to_json()["bytes"] == {"client": 20 * 200_000, "server": 40 * 200_000}


def test_a_smaller_window() -> None:
    counters = SessionCounters(window=3)
    for ms in (9, 1, 2, 3):
        counters.on_event(request(seconds=ms / 1000))
    assert counters.to_json()["latency"]["getData"] == {"count": 4, "p50_ms": 2.0, "p99_ms": 3.0, "max_ms": 9.0}
    with pytest.raises(ValueError):
        SessionCounters(window=0)


def test_what_each_event_adds() -> None:
    counters = SessionCounters()
    counters.on_event(request(OpCode.CREATE, error=zkwire.NodeExistsError))
    counters.on_event(request(OpCode.EXISTS, error=zkwire.NoNodeError))
    counters.on_event(request(OpCode.SET_DATA, error=zkwire.ConnectionLossError))  # failed with its connection
    counters.on_event(request(OpCode.GET_DATA, error=zkwire.ClientClosedError))  # no code of its own
    for kind in (ConnectionEventKind.CONNECTING, ConnectionEventKind.ATTEMPT_FAILED, ConnectionEventKind.CONNECTING):
        counters.on_event(ConnectionEvent(kind, 0, None, 1.0))
    for kind in (ConnectionEventKind.CONNECTED, ConnectionEventKind.MOVED, ConnectionEventKind.EXPIRED):
        counters.on_event(ConnectionEvent(kind, SID, None, 1.0))
    counters.on_event(WatchEvent(SID, EventType.NODE_DELETED, "/a", 1, None, 1.0))
    counters.on_event(WatchEvent(SID, 99, "/a", 0, None, 1.0))
    counters.on_event(RecipeEvent("mutex", "queued", "/l", SID, 1.0))
    s = counters.to_json()
    assert s["requests"] == {"create": 1, "exists": 1, "setData": 1, "getData": 1}
    assert s["errors"] == {"NODEEXISTS": 1, "NONODE": 1, "CONNECTIONLOSS": 1, "ClientClosedError": 1}
    assert s["errors_by_op"] == {
        "create NODEEXISTS": 1,
        "exists NONODE": 1,
        "setData CONNECTIONLOSS": 1,
        "getData ClientClosedError": 1,
    }
    assert sorted(s["latency"]) == ["create", "exists", "getData"]  # no reply, no latency
    assert s["bytes"] == {"client": 80, "server": 120}
    assert s["sessions"] == {"opened": 1, "reattached": 0, "closed": 0, "expired": 1}
    assert {k: n for k, n in s["connection"].items() if n} == {
        "connecting": 2,
        "attempt_failed": 1,
        "connected": 1,
        "moved": 1,
        "expired": 1,
    }
    assert s["events"] == {"NODE_DELETED": 1, "UNKNOWN_99": 1}
    assert (s["in_flight"], s["backlog"]) == (None, None)
    assert s["locks"]["queued"] == 1 and s["locks"]["wait"] is None
    json.dumps(s)  # plain values
    lines = counters.lines()
    assert lines[:3] == [
        "summary: 4 requests, 80 bytes from clients, 120 bytes from servers",
        "sessions: 1 opened, 0 re-attached, 0 closed, 1 expired",
        "connections: 2 attempts, 1 failed attempts, 0 lost, 0 suspended, 1 moved, 0 read-only, 0 refused credentials",
    ]
    assert lines[3] == "requests: create 1, exists 1, setData 1, getData 1"
    assert lines[-2] == "watch events: NODE_DELETED 1, UNKNOWN_99 1"
    assert lines[-1] == "locks: 1 queued, 0 granted, 0 released, 0 lost, 0 abandoned"


def test_nothing_counted_yet() -> None:
    assert SessionCounters().lines() == [
        "summary: 0 requests, 0 bytes from clients, 0 bytes from servers",
        "sessions: 0 opened, 0 re-attached, 0 closed, 0 expired",
        "connections: 0 attempts, 0 failed attempts, 0 lost, 0 suspended, 0 moved, 0 read-only, 0 refused credentials",
        "requests: none",
        "errors: none",
    ]


def test_counting_in_one_thread_while_reading_in_another() -> None:
    counters = SessionCounters()
    ops = [OpCode.GET_DATA, OpCode.CREATE, OpCode.SET_DATA, OpCode.EXISTS]

    def feed() -> None:
        for i in range(40_000):
            counters.on_event(request(ops[i % 4], error=zkwire.NoNodeError if i % 7 == 0 else None))

    thread = threading.Thread(target=feed)
    thread.start()
    while thread.is_alive():
        s = counters.to_json()
        assert sum(s["requests"].values()) == sum(row["count"] for row in s["latency"].values())
        counters.lines()
    thread.join()
    s = counters.to_json()
    assert sum(s["requests"].values()) == 40_000 and s["errors"] == {"NONODE": len(range(0, 40_000, 7))}


def test_shared_figures_and_lines() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    d = Durations(window=2)
    for v in (0.004, 0.001, 0.002):
        d.add(v)
    assert d.row() == {"count": 3, "p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 4.0} and d.shortest == 0.001
    assert latency_lines({"getData": d.row()}) == ["latency getData: n=3 p50=1.000ms p99=2.000ms max=4.000ms"]
    assert sessions_line({"opened": 2, "reattached": 1, "closed": 1, "expired": 0}) == (
        "sessions: 2 opened, 1 re-attached, 1 closed, 0 expired"
    )
    assert errors_line({}) == "errors: none"
    with pytest.raises(ValueError):
        Durations(window=0)
