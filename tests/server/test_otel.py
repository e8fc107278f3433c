"""The OpenTelemetry adapter (zkwire.observing.otel) on the real server, the SDK in memory: the request
histogram one count per request made, errors with their class, bytes; the connection events of a sever;
the gauges of an attached client; request spans children of the test's own span, within the requests'
wall time; lock spans from reported events and from zklock's Mutex; Prometheus end to end (the OTel
exporter, prometheus_client's HTTP server, a plain GET of /metrics); no credential anywhere; the path
cap; an SDK that raises does not affect the requests."""

from __future__ import annotations

import contextvars
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server
from helpers.observing import sever_and_reattach
from helpers.otel import Raising, Telemetry
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

import zklock
import zkwire
from zkwire import Create, GetData, SessionState, SetData
from zkwire.observing import RecipeEvent
from zkwire.observing.otel import OTHER, OpenTelemetryObserver

DURATION = "db.client.operation.duration"
ROOT = Path(__file__).resolve().parents[2]


async def _requests(zk: zkwire.Client, path: str) -> None:
    """1 create, 4 + 20 getData (pipelined), 1 getData failed with NoNode, 1 multi."""
    await zk.create(path, b"x")
    for _ in range(4):
        await zk.get_data(path)
    with pytest.raises(zkwire.NoNodeError):
        await zk.get_data(f"{path}/none")
    await zk.multi([Create(f"{path}/m", b""), SetData(path, b"y")])
    await zk.pipeline([GetData(path)] * 20)


def _by_op_and_error(t: Telemetry) -> Counter[tuple[str, str | None]]:
    counts: Counter[tuple[str, str | None]] = Counter()
    for point in t.points(DURATION):
        counts[point.attributes["db.operation.name"], point.attributes.get("error.type")] += point.count
    return counts


async def test_the_request_histogram_counts_every_request_by_op_and_error(zk_hosts: str, zk_path: str) -> None:
    t = Telemetry(spans=False)
    async with t.client(zk_hosts) as zk:
        await _requests(zk, zk_path)
        assert await zk.flush_observers()
        counts = _by_op_and_error(t)
        sessions = t.counts("zkwire.client.session.count", "zkwire.session.state")
        in_flight = t.points("zkwire.client.request.in_flight")
        backlogged = t.points("zkwire.client.request.backlogged")
        server = first_server(zk_hosts)
    assert counts == {
        ("create", None): 1,
        ("getData", None): 24,
        ("getData", "NoNodeError"): 1,
        ("multi", None): 1,
    }
    points = t.points(DURATION)
    assert all(p.attributes["db.system.name"] == "zookeeper" for p in points)
    assert all((p.attributes["server.address"], p.attributes["server.port"]) == server for p in points)
    assert all(0 < p.sum < 10 * p.count for p in points)
    (failed,) = (p for p in points if "error.type" in p.attributes)
    assert failed.attributes["db.response.status_code"] == "-101"
    io = t.counts("zkwire.client.network.io", "network.io.direction")
    assert io["transmit"] > 27 * 16 and io["receive"] > 27 * 16
    assert sessions == {s.value: 1 if s is SessionState.CONNECTED else 0 for s in SessionState if s.value != "closed"}
    assert [p.value for p in in_flight] == [0] and [p.value for p in backlogged] == [0]
    # A closed client is forgotten by the gauges.
    assert sum(t.counts("zkwire.client.session.count", "zkwire.session.state").values()) == 0


async def test_a_sever_counts_lost_suspended_reattached(zk_hosts: str, zk_path: str, faultproxy) -> None:
    t = Telemetry(spans=False)
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with t.client(proxy.hosts, session_timeout=6) as zk:
            await zk.create(zk_path)
            await sever_and_reattach(zk, proxy)
            await zk.get_data(zk_path)
        events = t.counts("zkwire.client.connection.events", "zkwire.connection.event")
    # attached once connected; read once closed
    assert events == {"lost": 1, "suspended": 1, "connecting": 1, "reattached": 1, "closed": 1}
    lost = next(
        p for p in t.points("zkwire.client.connection.events") if p.attributes["zkwire.connection.event"] == "lost"
    )
    assert (lost.attributes["server.address"], lost.attributes["server.port"]) == first_server(proxy.hosts)


async def test_request_spans_are_children_of_the_callers_span(zk_hosts: str, zk_path: str) -> None:
    t = Telemetry()
    async with t.client(zk_hosts) as zk:
        with t.tracer.start_as_current_span("test") as test_span:
            before = time.time_ns()
            await _requests(zk, zk_path)
            after = time.time_ns()
        await zk.get_data(zk_path)  # outside the test's span: a root span
    parent = test_span.get_span_context()
    spans = [s for s in t.spans() if s.kind is SpanKind.CLIENT]
    assert Counter(s.name for s in spans) == {"create": 1, "getData": 26, "multi": 1}
    inside, outside = spans[:-1], spans[-1]
    slack = 5_000_000  # the wall clock and trio's may drift apart by a little during the test
    for span in inside:
        assert span.parent is not None and span.parent.span_id == parent.span_id
        assert span.context is not None and span.context.trace_id == parent.trace_id
        assert span.start_time is not None and span.end_time is not None
        assert before - slack <= span.start_time <= span.end_time <= after + slack
    assert outside.parent is None
    (failed,) = (s for s in spans if s.status.status_code is StatusCode.ERROR)
    assert failed.name == "getData" and failed.status.description == "NoNodeError"
    assert failed.attributes is not None and failed.attributes["error.type"] == "NoNodeError"


async def test_lock_spans_from_reported_events(zk_hosts: str, zk_path: str) -> None:
    t = Telemetry()
    async with t.client(zk_hosts) as zk:
        with t.tracer.start_as_current_span("worker") as worker:
            context = contextvars.copy_context()
            sid = zk.session_id

            def report(kind: str, **figures: float | int) -> None:
                zk.report(RecipeEvent("mutex", kind, zk_path, sid, time.time(), context=context, **figures))

            report("queued")
            await trio.sleep(0.05)
            report("granted", wait=0.06, token=7)
            await trio.sleep(0.1)
            report("released", hold=0.1, token=7)
    acquire, hold = (s for s in t.spans() if s.name != "worker")
    assert (acquire.name, hold.name) == ("acquire mutex", "hold mutex")
    for span in (acquire, hold):
        assert span.parent is not None and span.parent.span_id == worker.get_span_context().span_id
    assert [e.name for e in acquire.events] == ["queued"]
    assert acquire.end_time is not None and hold.start_time is not None
    assert abs(hold.start_time - acquire.end_time) < 20_000_000
    assert acquire.context is not None and [link.context for link in hold.links] == [acquire.context]
    assert t.counts("zkwire.lock.grants", "zkwire.lock.recipe") == {"mutex": 1}
    assert t.counts("zkwire.lock.hold.duration", "zkwire.lock.outcome") == {"released": 1}


async def test_lock_spans_of_a_zklock_mutex(zk_hosts: str, zk_path: str) -> None:
    t = Telemetry()
    async with t.client(zk_hosts) as zk:
        with t.tracer.start_as_current_span("worker") as worker:
            async with zklock.Mutex(zk, zk_path):
                await trio.sleep(0.1)
    spans = t.spans()
    acquire = next(s for s in spans if s.name == "acquire mutex")
    hold = next(s for s in spans if s.name == "hold mutex")
    worker_id = worker.get_span_context().span_id
    assert acquire.parent is not None and acquire.parent.span_id == worker_id
    assert hold.parent is not None and hold.parent.span_id == worker_id
    assert acquire.context is not None and [link.context for link in hold.links] == [acquire.context]
    assert hold.attributes is not None and hold.attributes["zkwire.lock.hold"] >= 0.1
    # the lock's own requests (its node's create, the listing) are children of the worker's span too
    requests = [s for s in spans if s.kind is SpanKind.CLIENT]
    assert requests and all(s.parent is not None and s.parent.span_id == worker_id for s in requests)
    assert t.counts("zkwire.lock.wait.duration", "zkwire.lock.outcome") == {"granted": 1}


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        body: bytes = reply.read()
    return body.decode()


async def test_prometheus_end_to_end(zk_hosts: str, zk_path: str) -> None:
    reader = PrometheusMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    server, _thread = start_http_server(0, addr="127.0.0.1")
    try:
        observer = OpenTelemetryObserver(meters, spans=False)
        async with zkwire.open_client(zk_hosts, follow_ensemble=False, observers=[observer]) as zk:
            observer.attach(zk)  # already observing it from its first connection: now its gauges too
            await _requests(zk, zk_path)
            zk.report(RecipeEvent("mutex", "granted", zk_path, zk.session_id, time.time(), wait=0.01, token=1))
            zk.report(RecipeEvent("mutex", "lost", zk_path, zk.session_id, time.time(), hold=1, margin=2, token=1))
            assert await zk.flush_observers()
            text = await trio.to_thread.run_sync(_get, f"http://127.0.0.1:{server.server_port}/metrics")
    finally:
        server.shutdown()
        server.server_close()
        meters.shutdown()
    # Label by label, as Prometheus reads them: an empty label is no label (the exporter gives every
    # series of a metric the same labels, "" where an attribute is absent).
    samples = {
        (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if v and not k.startswith("otel_scope")))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    host, port = first_server(zk_hosts)
    where = (("db_system_name", "zookeeper"), ("server_address", host), ("server_port", str(port)))

    def value(name: str, **labels: str) -> float:
        key = tuple(sorted((*where, *labels.items()))) if "server" not in name else tuple(sorted(labels.items()))
        return samples[name, key]

    assert value("db_client_operation_duration_seconds_count", db_operation_name="getData") == 24
    assert value("db_client_operation_duration_seconds_count", db_operation_name="create") == 1
    assert value("db_client_operation_duration_seconds_count", db_operation_name="multi") == 1
    failed = {"db_operation_name": "getData", "error_type": "NoNodeError", "db_response_status_code": "-101"}
    assert value("db_client_operation_duration_seconds_count", **failed) == 1
    assert value("db_client_operation_duration_seconds_bucket", db_operation_name="create", le="+Inf") == 1
    assert (
        value("zkwire_client_network_io_bytes_total", db_operation_name="getData", network_io_direction="receive") > 0
    )
    connection = (("server_address", host), ("server_port", str(port)), ("zkwire_connection_event", "connected"))
    assert samples["zkwire_client_connection_events_total", connection] == 1
    assert samples["zkwire_client_session_count", (("zkwire_session_state", "connected"),)] == 1
    assert samples["zkwire_client_request_in_flight", (("server_address", host), ("server_port", str(port)))] == 0
    assert samples["zkwire_lock_grants_total", (("zkwire_lock_recipe", "mutex"),)] == 1
    assert samples["zkwire_lock_losses_total", (("zkwire_lock_late", "false"), ("zkwire_lock_recipe", "mutex"))] == 1
    assert samples["zkwire_lock_lost_margin_seconds_sum", (("zkwire_lock_recipe", "mutex"),)] == 2
    assert (
        samples[
            "zkwire_lock_wait_duration_seconds_count",
            (("zkwire_lock_outcome", "granted"), ("zkwire_lock_recipe", "mutex")),
        ]
        == 1
    )
    assert (
        samples[
            "zkwire_lock_hold_duration_seconds_count",
            (("zkwire_lock_outcome", "lost"), ("zkwire_lock_recipe", "mutex")),
        ]
        == 1
    )
    names = {name for name, _ in samples}
    assert "zkwire_client_watch_notifications_total" not in names  # no watch fired: no series yet
    assert "zkwire_client_request_backlogged" in names


async def test_the_prometheus_example_serves_the_metrics(zk_hosts: str, zk_path: str) -> None:
    command = [sys.executable, str(ROOT / "examples" / "observing_prometheus.py"), zk_hosts, "0"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = await trio.lowlevel.open_process(
        [*command, "--seconds", "4", "--path", zk_path], stdout=subprocess.PIPE, env=env
    )
    try:
        assert process.stdout is not None
        with trio.fail_after(60):
            out = b""
            while b"\n" not in out:
                chunk = await process.stdout.receive_some()
                assert chunk, out
                out += chunk
            url = out.decode().split()[2]
            await trio.sleep(2)
            text = await trio.to_thread.run_sync(_get, url)
            async for chunk in process.stdout:
                out += chunk
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, out
    assert "rounds of requests made" in out.decode()
    counts = {
        s.labels["db_operation_name"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "db_client_operation_duration_seconds_count" and not s.labels.get("error_type")
    }
    assert counts["setData"] >= 1 and counts["getData"] >= 1 and counts["multi"] >= 1
    assert 'error_type="NoNodeError"' in text and "zkwire_client_session_count" in text


async def test_no_credential_in_any_attribute_label_or_span(zk_hosts: str, zk_path: str) -> None:
    t = Telemetry(paths=True)
    async with t.client(zk_hosts, auth=[("digest", "alice:secret")]) as zk:
        with t.tracer.start_as_current_span("test"):
            await zk.create(zk_path, b"secret", acl=[zkwire.digest_acl("alice", "secret", zkwire.Perm.ALL)])
            await zk.get_data(zk_path)
            async with zklock.Mutex(zk, f"{zk_path}/lock"):
                pass
    everything = t.everything()
    assert "getData" in everything and "hold mutex" in everything  # it is all there...
    assert "secret" not in everything and "alice" not in everything  # ...but the credential


async def test_paths_are_capped(zk_hosts: str, zk_path: str) -> None:
    t = Telemetry(spans=False, paths=True, max_paths=50, path_depth=3)
    async with t.client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.pipeline([Create(f"{zk_path}/n{i}", b"") for i in range(500)])
    values = {p.attributes.get("zkwire.path") for p in t.points(DURATION)}
    assert len(values) == 51 and OTHER in values and zk_path in values
    assert sum(t.counts(DURATION, "db.operation.name").values()) == 501


async def test_an_observer_whose_sdk_raises_does_not_affect_requests(zk_hosts: str, zk_path: str) -> None:
    observer = OpenTelemetryObserver(Raising(), Raising())  # type: ignore[arg-type]
    async with zkwire.open_client(zk_hosts, follow_ensemble=False) as zk:
        observer.attach(zk)
        await _requests(zk, zk_path)
        assert await zk.get_data(zk_path)
        assert await zk.flush_observers()
        assert zk._observers.failures == 0  # it never raised out of on_event
    assert observer.errors > 0
