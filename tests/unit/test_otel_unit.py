"""zkwire.observing.otel without a server: events made by hand, the SDK in memory.  Attributes per the
documented conventions, exists() of a missing node not a failure, the path cap, spans and their parents
from the event's context, lock spans and metrics (queued, granted, released, lost, abandoned), bounded
lock state, events it cannot read and an SDK that raises (never out of on_event), and the imports: zkwire
without OpenTelemetry, the adapter without opentelemetry-api."""

from __future__ import annotations

import contextvars
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from helpers.otel import Raising, Telemetry
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import SpanKind, StatusCode

import zkwire
from zkwire import EventType, HostPort, OpCode
from zkwire.observing import ConnectionEvent, ConnectionEventKind, RecipeEvent, RequestEvent, WatchEvent, otel
from zkwire.observing.otel import OpenTelemetryObserver

SERVER = HostPort("10.0.0.7", 2181)
DURATION = "db.client.operation.duration"


def request(
    op: int = OpCode.GET_DATA,
    path: str | None = "/app/a",
    error: type[zkwire.ZKError] | None = None,
    *,
    started: float | None = None,
    took: float = 0.002,
    bytes_in: int = 60,
    context: Any = None,
    xid: int = 1,
) -> RequestEvent:
    started = time.time() if started is None else started
    return RequestEvent(0x1234, xid, op, path, SERVER, 40, bytes_in, started, started + took, error, 1, 1, context)


def recipe(kind: str, *, path: str = "/locks/a", context: Any = None, **figures: Any) -> RecipeEvent:
    return RecipeEvent("mutex", kind, path, 0x1234, figures.pop("at", time.time()), context=context, **figures)


def test_requests_give_the_duration_histogram_with_the_documented_attributes() -> None:
    t = Telemetry(spans=False)
    for _ in range(3):
        t.observer.on_event(request())
    t.observer.on_event(request(OpCode.CREATE, error=zkwire.NodeExistsError))
    t.observer.on_event(request(OpCode.EXISTS, error=zkwire.NoNodeError))
    t.observer.on_event(request(OpCode.SET_DATA, error=zkwire.ConnectionLossError, bytes_in=0))
    points = {(p.attributes["db.operation.name"], p.attributes.get("error.type")): p for p in t.points(DURATION)}
    assert {k: p.count for k, p in points.items()} == {
        ("getData", None): 3,
        ("create", "NodeExistsError"): 1,
        ("exists", None): 1,  # a missing node is an answer of exists(), not a failure...
        ("setData", "ConnectionLossError"): 1,
    }
    get = points["getData", None]
    assert dict(get.attributes) == {
        "db.system.name": "zookeeper",
        "db.operation.name": "getData",
        "server.address": "10.0.0.7",
        "server.port": 2181,
    }
    assert 0.0059 < get.sum < 0.0061 and get.explicit_bounds[0] == 0.0001 and get.explicit_bounds[-1] == 10.0
    # ...but its status code is kept; a request failed with its connection has none (no reply).
    assert points["exists", None].attributes["db.response.status_code"] == "-101"
    assert points["create", "NodeExistsError"].attributes["db.response.status_code"] == "-110"
    assert "db.response.status_code" not in points["setData", "ConnectionLossError"].attributes
    io = t.counts("zkwire.client.network.io", "network.io.direction")
    assert io == {"transmit": 6 * 40, "receive": 5 * 60}
    assert t.metrics()["zkwire.client.network.io"].unit == "By"
    assert t.observer.errors == 0


def test_attribute_sets_are_cached_per_op_server_error() -> None:
    t = Telemetry(spans=False)
    for _ in range(5):
        t.observer.on_event(request())
    t.observer.on_event(request(error=zkwire.NoNodeError))
    assert len(t.observer._requests) == 2
    first = t.observer._requests[OpCode.GET_DATA, SERVER, None, None, True]
    t.observer.on_event(request())
    assert t.observer._requests[OpCode.GET_DATA, SERVER, None, None, True] is first


def test_paths_are_left_out_unless_asked_then_cut_and_capped() -> None:
    t = Telemetry(spans=True)
    with t.tracer.start_as_current_span("test"):
        context = contextvars.copy_context()
    t.observer.on_event(request(path="/app/jobs/job-1", context=context))
    assert all("zkwire.path" not in p.attributes for p in t.points(DURATION))
    assert "zkwire.path" not in (t.spans()[-1].attributes or {})

    t = Telemetry(paths=True, max_paths=50, path_depth=3)
    for i in range(500):
        t.observer.on_event(request(path=f"/app/jobs/job-{i:04d}/data", context=context))
    t.observer.on_event(request(OpCode.MULTI, path=None))
    values = {p.attributes.get("zkwire.path") for p in t.points(DURATION)}
    assert len(values - {None}) == 51 and otel.OTHER in values and "/app/jobs/job-0000" in values
    assert sum(t.counts(DURATION, "zkwire.path").values()) == 501
    assert t.counts(DURATION, "zkwire.path")[otel.OTHER] == 450
    io_values = {p.attributes.get("zkwire.path") for p in t.points("zkwire.client.network.io")}
    assert io_values == values
    # A span is one request: it carries the whole path.
    assert t.spans()[-2].attributes is not None and t.spans()[-2].attributes["zkwire.path"] == "/app/jobs/job-0499/data"

    assert otel.cut_path("/app/jobs/job-1", 2) == "/app/jobs"
    assert otel.cut_path("/app", 2) == "/app"
    assert otel.cut_path("/", 2) == "/"


def test_a_request_span_is_a_child_of_the_callers_span_with_the_events_times() -> None:
    t = Telemetry()
    assert t.observer.wants_context and not OpenTelemetryObserver(metrics=False, spans=False).wants_context
    with t.tracer.start_as_current_span("caller") as caller:
        context = contextvars.copy_context()
    started = time.time()
    t.observer.on_event(request(context=context, started=started, took=0.25, xid=77))
    t.observer.on_event(request(OpCode.DELETE, error=zkwire.NoNodeError, context=context))
    t.observer.on_event(request(context=None))
    span, failed, orphan = t.spans()[1:]
    assert span.name == "getData" and span.kind is SpanKind.CLIENT
    assert span.parent is not None and span.parent.span_id == caller.get_span_context().span_id
    assert span.context is not None and span.context.trace_id == caller.get_span_context().trace_id
    assert span.start_time == int(started * 1e9) and span.end_time is not None
    assert abs(span.end_time - span.start_time - 250_000_000) < 1000
    assert span.status.status_code is StatusCode.UNSET
    attributes = dict(span.attributes or {})
    assert attributes["db.system.name"] == "zookeeper" and attributes["server.port"] == 2181
    assert attributes["zkwire.request.xid"] == 77 and attributes["zkwire.session.id"] == "0x1234"
    assert failed.status.status_code is StatusCode.ERROR and failed.status.description == "NoNodeError"
    assert failed.attributes is not None and failed.attributes["error.type"] == "NoNodeError"
    assert orphan.parent is None


def test_connection_and_watch_events_are_counted() -> None:
    t = Telemetry(spans=False)
    for kind in (ConnectionEventKind.CONNECTED, ConnectionEventKind.LOST, ConnectionEventKind.LOST):
        t.observer.on_event(ConnectionEvent(kind, 1, SERVER, time.time(), "the server closed the connection"))
    t.observer.on_event(ConnectionEvent(ConnectionEventKind.SUSPENDED, 1, None, time.time()))
    t.observer.on_event(WatchEvent(1, EventType.NODE_DELETED, "/a", 2, SERVER, time.time()))
    t.observer.on_event(WatchEvent(1, 99, "/a", 1, SERVER, time.time()))
    events = t.counts("zkwire.client.connection.events", "zkwire.connection.event")
    assert events == {"connected": 1, "lost": 2, "suspended": 1}
    lost = next(
        p for p in t.points("zkwire.client.connection.events") if p.attributes["zkwire.connection.event"] == "lost"
    )
    assert dict(lost.attributes) == {
        "zkwire.connection.event": "lost",
        "server.address": "10.0.0.7",
        "server.port": 2181,
    }
    assert t.counts("zkwire.client.watch.notifications", "zkwire.watch.event_type") == {"node_deleted": 1, "other": 1}


def test_lock_events_give_metrics_and_linked_spans() -> None:
    t = Telemetry()
    with t.tracer.start_as_current_span("worker") as worker:
        acquiring = contextvars.copy_context()
    now = time.time()
    t.observer.on_event(recipe("queued", context=acquiring, at=now - 0.4))
    t.observer.on_event(recipe("granted", context=acquiring, at=now - 0.3, wait=0.2, token=42))
    t.observer.on_event(recipe("released", context=acquiring, at=now, hold=0.3, token=42))
    acquire, hold = t.spans()[1:]
    assert acquire.name == "acquire mutex" and hold.name == "hold mutex"
    for span in (acquire, hold):
        assert span.parent is not None and span.parent.span_id == worker.get_span_context().span_id
        assert span.kind is SpanKind.INTERNAL
    assert acquire.start_time == int((now - 0.3) * 1e9) - 200_000_000
    assert [e.name for e in acquire.events] == ["queued"]
    assert acquire.attributes is not None and acquire.attributes["zkwire.lock.token"] == 42
    assert acquire.context is not None and [link.context for link in hold.links] == [acquire.context]
    assert hold.start_time == int(now * 1e9) - 300_000_000 and hold.end_time == int(now * 1e9)
    assert t.counts("zkwire.lock.grants", "zkwire.lock.recipe") == {"mutex": 1}
    assert t.counts("zkwire.lock.wait.duration", "zkwire.lock.outcome") == {"granted": 1}
    assert t.counts("zkwire.lock.hold.duration", "zkwire.lock.outcome") == {"released": 1}
    assert not t.observer._queued and not t.observer._grants

    t.observer.on_event(recipe("granted", context=acquiring, wait=0.0, token=43))
    t.observer.on_event(recipe("lost", context=acquiring, hold=2.0, token=43, margin=-0.5, cause="session expired"))
    t.observer.on_event(recipe("abandoned", context=acquiring, wait=1.5))
    lost, abandoned = t.spans()[-2:]
    assert lost.status.status_code is StatusCode.ERROR and lost.attributes is not None
    assert lost.attributes["zkwire.lock.cause"] == "session expired" and lost.attributes["zkwire.lock.margin"] == -0.5
    assert abandoned.name == "acquire mutex" and abandoned.attributes is not None
    assert abandoned.attributes["zkwire.lock.outcome"] == "abandoned"
    assert t.counts("zkwire.lock.losses", "zkwire.lock.late") == {True: 1}
    (margin,) = t.points("zkwire.lock.lost.margin")
    assert margin.count == 1 and margin.sum == 0.0  # told too late: recorded as 0, the first bucket
    assert t.counts("zkwire.lock.wait.duration", "zkwire.lock.outcome") == {"granted": 2, "abandoned": 1}


def test_queued_acquires_of_one_lock_are_told_apart_by_their_context() -> None:
    t = Telemetry()
    first, second = contextvars.Context(), contextvars.Context()
    now = time.time()
    t.observer.on_event(recipe("queued", context=first, at=now - 2))
    t.observer.on_event(recipe("queued", context=second, at=now - 1))
    t.observer.on_event(recipe("granted", context=second, at=now, wait=1.0, token=1))
    (span,) = t.spans()
    assert span.events[0].timestamp == int((now - 1) * 1e9)
    assert [c for c, _ in t.observer._queued[0x1234, "/locks/a", "mutex"]] == [first]


def test_lock_state_is_bounded() -> None:
    t = Telemetry()
    for i in range(otel.MAX_LOCK_STATES + 500):
        t.observer.on_event(recipe("queued", path=f"/locks/{i}"))
        t.observer.on_event(recipe("granted", path=f"/locks/x{i}", wait=0.1, token=i))
    assert len(t.observer._queued) == otel.MAX_LOCK_STATES
    assert len(t.observer._grants) == otel.MAX_LOCK_STATES
    for _ in range(200):
        t.observer.on_event(recipe("queued", path="/locks/busy"))
    assert len(t.observer._queued[0x1234, "/locks/busy", "mutex"]) == otel.MAX_QUEUED_PER_LOCK
    # the recipe names the metrics carry are capped too
    for i in range(100):
        t.observer.on_event(RecipeEvent(f"recipe-{i}", "granted", "/l", 1, time.time(), wait=0.1, token=1))
    assert len(t.counts("zkwire.lock.grants", "zkwire.lock.recipe")) == otel.MAX_RECIPES + 1


BAD_EVENTS: list[Any] = [
    None,
    "a string",
    RequestEvent(1, 1, OpCode.GET_DATA, "/a", "not a server", 1, 1, 1.0, 2.0, None),  # type: ignore[arg-type]
    RequestEvent(1, 1, OpCode.GET_DATA, "/a", SERVER, "x", 1, 1.0, 2.0, None),  # type: ignore[arg-type]
    RequestEvent(1, 1, OpCode.GET_DATA, "/a", SERVER, 1, 1, None, 2.0, None),  # type: ignore[arg-type]
    RequestEvent(1, 1, OpCode.GET_DATA, "/a", SERVER, 1, 1, 1.0, 2.0, "NoNode"),  # type: ignore[arg-type]
    RequestEvent(1, 1, OpCode.GET_DATA, "/a", SERVER, 1, 1, 1.0, 2.0, None, context="not a context"),
    RequestEvent(1, 1, 9999, ["/a"], [SERVER], 1, 1, 1.0, 2.0, None),  # type: ignore[arg-type]
    ConnectionEvent("lost", 1, SERVER, 1.0),  # type: ignore[arg-type]
    WatchEvent(1, "deleted", "/a", 1, SERVER, 1.0),  # type: ignore[arg-type]
    WatchEvent(1, EventType.NODE_DELETED, None, 1, SERVER, 1.0),  # type: ignore[arg-type]
    RecipeEvent("mutex", "granted", "/l", 1, "now", wait=0.1, token=1),  # type: ignore[arg-type]
    RecipeEvent("mutex", "released", "/l", 1, 1.0, hold="long"),  # type: ignore[arg-type]
    RecipeEvent("mutex", "lost", "/l", 1, 1.0, hold=1.0, margin="small"),  # type: ignore[arg-type]
    RecipeEvent(None, "granted", "/l", 1, 1.0),  # type: ignore[arg-type]
    RecipeEvent("mutex", "exploded", "/l", 1, 1.0),
]


@pytest.mark.parametrize("paths", [False, True])
def test_events_it_cannot_read_are_ignored(paths: bool) -> None:
    t = Telemetry(paths=paths)
    for event in BAD_EVENTS:
        t.observer.on_event(event)
    t.observer.on_event(request())
    assert t.observer.errors > 0
    assert t.counts(DURATION, "db.operation.name")["getData"] >= 1
    t.metrics()  # and the collection still works


def test_an_sdk_that_raises_never_gets_out_of_on_event() -> None:
    observer = OpenTelemetryObserver(Raising(), Raising(), paths=True)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(otel.log, "warning", lambda *args, **kwargs: None)
        observer.on_event(request())
        observer.on_event(ConnectionEvent(ConnectionEventKind.LOST, 1, SERVER, 1.0))
        observer.on_event(WatchEvent(1, EventType.NODE_DELETED, "/a", 1, SERVER, 1.0))
        for kind in ("queued", "granted", "released", "lost", "abandoned"):
            observer.on_event(recipe(kind, wait=0.1, hold=0.1, margin=0.1, token=1))
    assert observer.errors >= 1


def test_metrics_off_and_spans_off() -> None:
    t = Telemetry(metrics=False, spans=False)
    t.observer.on_event(request())
    t.observer.on_event(recipe("granted", wait=0.1, token=1))
    assert t.metrics() == {} and t.spans() == [] and t.observer.errors == 0
    assert not t.observer.wants_context
    OpenTelemetryObserver(NoOpMeterProvider()).on_event(request())  # the API's no-op provider


def test_the_documented_names_are_the_names_made() -> None:
    t = Telemetry(paths=True)
    context = contextvars.copy_context()
    t.observer.on_event(request(context=context))
    t.observer.on_event(request(OpCode.CREATE, error=zkwire.NodeExistsError, context=context))
    t.observer.on_event(ConnectionEvent(ConnectionEventKind.CONNECTED, 1, SERVER, time.time()))
    t.observer.on_event(WatchEvent(1, EventType.NODE_DELETED, "/a", 2, SERVER, time.time()))
    for kind in ("queued", "granted", "lost", "granted", "released", "abandoned"):
        t.observer.on_event(recipe(kind, context=context, wait=0.1, hold=0.1, margin=0.1, token=1, cause="c"))
    made = set(t.metrics())
    assert made == otel.METRICS - {"zkwire.client.request.in_flight", "zkwire.client.request.backlogged"}
    keys = {key for metric in t.metrics().values() for point in metric.data.data_points for key in point.attributes}
    keys |= {key for span in t.spans() for key in span.attributes or {}}
    assert keys == otel.ATTRIBUTES | otel.CONVENTION_ATTRIBUTES


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        OpenTelemetryObserver(path_depth=0)
    with pytest.raises(ValueError):
        OpenTelemetryObserver(max_paths=-1)


def test_importing_zkwire_does_not_import_opentelemetry() -> None:
    code = textwrap.dedent(
        """
        import sys
        import zkwire, zkwire.observing, zkwire.client.observers, zklock
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_adapter_without_opentelemetry_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import sys

        class NoOpenTelemetry:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NoOpenTelemetry())
        try:
            import zkwire.observing.otel
        except ImportError as e:
            print(e)
        else:
            raise SystemExit("imported")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "opentelemetry-api" in out and "pip install 'zkwire[otel]'" in out
