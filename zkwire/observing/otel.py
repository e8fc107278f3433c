"""An OpenTelemetry adapter: a client's events as metrics and spans (the ``otel`` extra).

:class:`OpenTelemetryObserver` is an observer (:mod:`zkwire.observing`): attach it to a client and each
request becomes a measurement of ``db.client.operation.duration`` and, with spans on, a CLIENT span that
is a child of the caller's span; connection changes, watch notifications and zklock's lock events become
counters and histograms, and each lock's acquire and hold a span.  Prometheus reads the metrics through
OpenTelemetry's Prometheus exporter.  ``docs/observing-otel.rst`` lists every metric and span with its
unit, kind and attributes, and why each name was chosen.

Only ``opentelemetry-api`` is needed at run time (``pip install 'zkwire[otel]'``); the application
picks the SDK, readers and exporters, or leaves the global (no-op) providers in place.  Importing
:mod:`zkwire` never imports OpenTelemetry: only this module does.

The observer keeps no unbounded state: attribute sets are cached per (op, server, error, path) and
paths appear only with ``paths=True``, cut to ``path_depth`` components and at most ``max_paths``
distinct values (the rest as ``"other"``); a lock's queued time and its grant wait for its later events
in tables of at most :data:`MAX_LOCK_STATES` entries.  It never raises out of ``on_event``: an event it
cannot read, or an SDK that fails, is counted (:attr:`OpenTelemetryObserver.errors`) and ignored.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics as otel_metrics
    from opentelemetry import trace as otel_trace
    from opentelemetry.metrics import CallbackOptions, Histogram, Meter, MeterProvider, Observation
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, Tracer, TracerProvider
except ImportError:  # pragma: no cover - exercised in a subprocess without the package
    raise ImportError(
        "zkwire.observing.otel needs the opentelemetry-api package: pip install 'zkwire[otel]'",
        name="opentelemetry",
    ) from None

from ..constants import EventType, OpCode
from ..errors import NoNodeError
from ..protocol.optable import op_name
from ..sansio.events import SessionState
from ..sansio.hosts import HostPort
from ..sansio.observing import ConnectionEvent, ObservedEvent, RecipeEvent, RequestEvent, WatchEvent
from ..sansio.paths import path_at_depth

if TYPE_CHECKING:
    from ..client.api import Client

__all__ = [
    "ATTRIBUTES",
    "CONVENTION_ATTRIBUTES",
    "DB_SYSTEM",
    "DEFAULT_MAX_PATHS",
    "DEFAULT_PATH_DEPTH",
    "DURATION_BUCKETS",
    "LOCK_BUCKETS",
    "MARGIN_BUCKETS",
    "MAX_LOCK_STATES",
    "METRICS",
    "OTHER",
    "OpenTelemetryObserver",
    "cut_path",
]

log = logging.getLogger("zkwire.observing.otel")

#: The names of the adapter's metrics (``docs/observing-otel.rst`` describes each).
METRICS = frozenset(
    {
        "db.client.operation.duration",
        "zkwire.client.network.io",
        "zkwire.client.connection.events",
        "zkwire.client.session.count",
        "zkwire.client.request.in_flight",
        "zkwire.client.request.backlogged",
        "zkwire.client.watch.notifications",
        "zkwire.lock.wait.duration",
        "zkwire.lock.hold.duration",
        "zkwire.lock.grants",
        "zkwire.lock.losses",
        "zkwire.lock.lost.margin",
    }
)

#: The attributes of the metrics and spans from OpenTelemetry's semantic conventions.
CONVENTION_ATTRIBUTES = frozenset(
    {
        "db.system.name",
        "db.operation.name",
        "db.response.status_code",
        "error.type",
        "server.address",
        "server.port",
        "network.io.direction",
    }
)

#: The attributes of the metrics and spans in zkwire's own namespace.
ATTRIBUTES = frozenset(
    {
        "zkwire.path",
        "zkwire.connection.event",
        "zkwire.session.state",
        "zkwire.session.id",
        "zkwire.watch.event_type",
        "zkwire.request.xid",
        "zkwire.request.attempt",
        "zkwire.request.in_flight",
        "zkwire.request.bytes_out",
        "zkwire.request.bytes_in",
        "zkwire.lock.recipe",
        "zkwire.lock.outcome",
        "zkwire.lock.late",
        "zkwire.lock.token",
        "zkwire.lock.wait",
        "zkwire.lock.hold",
        "zkwire.lock.margin",
        "zkwire.lock.cause",
    }
)

#: ``db.system.name`` of every request (not one of the convention's well-known values, which name no
#: coordination service: a custom value, as the convention allows).
DB_SYSTEM = "zookeeper"

#: Bucket boundaries of ``db.client.operation.duration`` (seconds): from 100 µs (a read from a server on
#: the same host) to 10 s (a request that waited out a reconnection).
DURATION_BUCKETS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.00075,
    0.001, 0.0025, 0.005, 0.0075,
    0.01, 0.025, 0.05, 0.075,
    0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 10.0,
)  # fmt: skip

#: Bucket boundaries of the locks' wait and hold histograms (seconds): 1 ms to an hour.
LOCK_BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

#: Bucket boundaries of ``zkwire.lock.lost.margin`` (seconds).  A margin of zero or less (the holder was
#: told after the servers could have expired the session) is recorded as 0: the first bucket.
MARGIN_BUCKETS: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0)

#: Distinct path values the metrics carry at most (``paths=True``), by default; later ones are ``OTHER``.
DEFAULT_MAX_PATHS = 100
#: Path components kept in the metrics' ``zkwire.path`` by default (``/app/jobs/job-0000000042`` is
#: ``/app/jobs``).
DEFAULT_PATH_DEPTH = 2
#: The value of ``zkwire.path`` (and of ``zkwire.lock.recipe``) past the cap.
OTHER = "other"
#: Locks remembered at most between their events (queued acquires, granted leases), per table; the
#: oldest are forgotten first (their spans are still made, without the queued time or the link).
MAX_LOCK_STATES = 4096
#: Acquires of one lock (session, path, recipe) queued at the same time, remembered at most.
MAX_QUEUED_PER_LOCK = 64
#: Distinct recipe names the metrics carry at most; later ones are ``OTHER``.
MAX_RECIPES = 32

#: Nanoseconds per second, a float: a time that is not a number fails to multiply (a str would repeat).
_NS = 1e9
#: The watch event types the metrics name; any other number (a server's new type) is ``OTHER``.
_WATCH_TYPES = {int(t): t.name.lower() for t in EventType if not t.name.startswith("UNKNOWN")}
#: The session states ``zkwire.client.session.count`` reports (a closed client is forgotten).
_REPORTED_STATES = tuple(s for s in SessionState if s is not SessionState.CLOSED)
_ROOT = otel_context.Context()
_LOCK_KINDS = frozenset(("queued", "granted", "abandoned", "released", "lost"))


def _histogram(meter: Meter, name: str, unit: str, description: str, buckets: Sequence[float]) -> Histogram:
    try:
        return meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
        )
    except TypeError:  # pragma: no cover - opentelemetry-api before 1.23 has no advisory parameter
        return meter.create_histogram(name, unit=unit, description=description)


def cut_path(path: str, depth: int) -> str:
    """``path``'s first ``depth`` components (``cut_path("/a/b/c", 2) == "/a/b"``; the tracer's rule,
    :func:`~zkwire.sansio.paths.path_at_depth`)."""
    return path_at_depth(path, depth)


class _Request:
    """What every request of one (op, server, error, path, replied) has in common: its attributes."""

    __slots__ = ("attributes", "io", "span_attributes", "span_name", "status")

    def __init__(
        self,
        attributes: dict[str, Any],
        io: list[int],
        span_name: str,
        span_attributes: dict[str, Any],
        status: Status | None,
    ) -> None:
        self.attributes = attributes
        self.io = io
        self.span_name = span_name
        self.span_attributes = span_attributes
        self.status = status


class OpenTelemetryObserver:
    """Metrics and spans of the clients it is attached to (see the module, and
    ``docs/observing-otel.rst`` for every metric and span).

    Args:
        meter_provider: where the metrics go (None: the global provider, as
            :func:`opentelemetry.metrics.set_meter_provider` set it, or will).
        tracer_provider: where the spans go (None: the global provider).
        metrics: make the metrics.
        spans: make the spans (the observer then asks for each request's caller context:
            :attr:`wants_context`).
        paths: add the node's path to the metrics (``zkwire.path``: cut to ``path_depth`` components,
            at most ``max_paths`` distinct values, the rest ``"other"``) and the whole path to the
            spans.  Off by default: paths are the application's data, and unbounded.
        max_paths: distinct path values at most, with ``paths``.
        path_depth: path components kept in the metrics, with ``paths``.

    Attach it with :meth:`attach` (which also lets the gauges read the client) or as any observer
    (``open_client(observers=[...])``, :meth:`zkwire.Client.add_observer`).
    """

    def __init__(
        self,
        meter_provider: MeterProvider | None = None,
        tracer_provider: TracerProvider | None = None,
        *,
        metrics: bool = True,
        spans: bool = True,
        paths: bool = False,
        max_paths: int = DEFAULT_MAX_PATHS,
        path_depth: int = DEFAULT_PATH_DEPTH,
    ) -> None:
        if max_paths < 0 or path_depth < 1:
            raise ValueError("max_paths must be >= 0 and path_depth >= 1")
        from .. import __version__

        #: The observer wants each event's caller context (for the spans' parents).
        self.wants_context = spans
        #: Events ignored because they could not be read or the SDK failed on them.
        self.errors = 0
        self._paths = paths
        self._max_paths = max_paths
        self._path_depth = path_depth
        self._path_values: set[str] = set()
        self._recipe_values: set[str] = set()
        self._lock = threading.Lock()  # the caches' inserts, the counts, the clients
        self._clients: weakref.WeakSet[Client] = weakref.WeakSet()
        self._requests: dict[tuple[Any, ...], _Request] = {}
        self._io: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any], list[int]]] = {}
        self._counts: dict[tuple[Any, ...], tuple[str, dict[str, Any], list[int]]] = {}
        self._attributes: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._server_attributes: dict[HostPort | None, dict[str, Any]] = {}
        self._queued: OrderedDict[tuple[int, str, str], list[tuple[Any, float]]] = OrderedDict()
        self._grants: OrderedDict[tuple[int, str, str, int | None], SpanContext] = OrderedDict()

        self._duration: Histogram | None = None
        self._wait: Histogram | None = None
        self._hold: Histogram | None = None
        self._margin: Histogram | None = None
        if metrics:
            meter = (meter_provider or otel_metrics.get_meter_provider()).get_meter("zkwire", __version__)
            self._duration, self._wait, self._hold, self._margin = (
                _histogram(meter, name, "s", description, buckets)
                for name, description, buckets in (
                    ("db.client.operation.duration", "Duration of ZooKeeper requests.", DURATION_BUCKETS),
                    (
                        "zkwire.lock.wait.duration",
                        "Time from the start of a lock acquire to its grant or to giving up.",
                        LOCK_BUCKETS,
                    ),
                    ("zkwire.lock.hold.duration", "Time a lock was held, to its release or loss.", LOCK_BUCKETS),
                    (
                        "zkwire.lock.lost.margin",
                        "Time from telling a holder its lock is lost to the earliest moment the session could "
                        "expire (0: told too late).",
                        MARGIN_BUCKETS,
                    ),
                )
            )
            meter.create_observable_counter(
                "zkwire.client.network.io",
                [self._observe_io],
                unit="By",
                description="Bytes of ZooKeeper request and reply frames (length prefix included).",
            )
            for name, unit, description in (
                ("zkwire.client.connection.events", "{event}", "Connection and session events, by kind."),
                ("zkwire.client.watch.notifications", "{notification}", "Watch notifications received."),
                ("zkwire.lock.grants", "{grant}", "Locks granted."),
                ("zkwire.lock.losses", "{loss}", "Locks lost while held."),
            ):
                meter.create_observable_counter(name, [self._counts_callback(name)], unit=unit, description=description)
            meter.create_observable_up_down_counter(
                "zkwire.client.session.count",
                [self._observe_sessions],
                unit="{session}",
                description="Sessions of the attached clients, by state.",
            )
            meter.create_observable_up_down_counter(
                "zkwire.client.request.in_flight",
                [self._observe_in_flight],
                unit="{request}",
                description="Requests of the attached clients sent and not answered yet.",
            )
            meter.create_observable_up_down_counter(
                "zkwire.client.request.backlogged",
                [self._observe_backlogged],
                unit="{request}",
                description="Requests of the attached clients waiting for room under max_in_flight.",
            )
        self._tracer: Tracer | None = None
        if spans:
            self._tracer = (tracer_provider or otel_trace.get_tracer_provider()).get_tracer("zkwire", __version__)

    # ------------------------------------------------------------------ attaching

    def attach(self, client: Client) -> None:
        """Observe ``client`` (:meth:`zkwire.Client.add_observer`) and read its gauges (sessions by
        state, requests in flight and backlogged) at each collection.  The client is weakly referenced:
        attaching keeps nothing alive."""
        client.add_observer(self)
        with self._lock:
            self._clients.add(client)

    def detach(self, client: Client) -> None:
        """Stop observing ``client`` and reading its gauges."""
        client.remove_observer(self)
        with self._lock:
            self._clients.discard(client)

    # ------------------------------------------------------------------ events

    def on_event(self, event: ObservedEvent) -> None:
        """Record one event (in the client's observers' thread); never raises."""
        try:
            kind = type(event)
            if kind is RequestEvent:
                self._request(event)  # type: ignore[arg-type]
            elif kind is ConnectionEvent:
                self._connection(event)  # type: ignore[arg-type]
            elif kind is WatchEvent:
                self._watch(event)  # type: ignore[arg-type]
            elif kind is RecipeEvent:
                self._recipe(event)  # type: ignore[arg-type]
        except Exception:
            self._failed()

    def _failed(self) -> None:
        self.errors += 1
        if self.errors == 1:
            log.warning("the OpenTelemetry observer ignored an event it could not record", exc_info=True)

    # ------------------------------------------------------------------ requests

    def _request(self, event: RequestEvent) -> None:
        path = self._path_value(event.path) if self._paths and event.path is not None else None
        key = (event.op, event.server, event.error, path, event.bytes_in > 0)
        entry = self._requests.get(key)
        if entry is None:
            entry = self._request_entry(key)
        finished = event.finished
        if self._duration is not None:
            duration = 0.0 if finished is None else finished - event.started
            self._duration.record(duration if duration > 0.0 else 0.0, entry.attributes)
            io = entry.io
            with self._lock:
                io[0] += event.bytes_out
                io[1] += event.bytes_in
        if self._tracer is not None:
            context = event.context
            attributes = entry.span_attributes.copy()
            attributes["zkwire.session.id"] = f"0x{event.session_id:x}"
            attributes["zkwire.request.xid"] = event.xid
            attributes["zkwire.request.attempt"] = event.attempt
            attributes["zkwire.request.in_flight"] = event.in_flight
            attributes["zkwire.request.bytes_out"] = event.bytes_out
            attributes["zkwire.request.bytes_in"] = event.bytes_in
            if self._paths and event.path is not None:
                attributes["zkwire.path"] = event.path
            started = int(event.started * _NS)
            span = self._tracer.start_span(
                entry.span_name,
                context=_ROOT if context is None else context.run(otel_context.get_current),
                kind=SpanKind.CLIENT,
                attributes=attributes,
                start_time=started,
            )
            if entry.status is not None:
                span.set_status(entry.status)
            span.end(end_time=started if finished is None else max(started, int(finished * _NS)))

    def _request_entry(self, key: tuple[Any, ...]) -> _Request:
        op, server, error, path, replied = key
        name = op_name(op)
        attributes: dict[str, Any] = {"db.system.name": DB_SYSTEM, "db.operation.name": name}
        attributes.update(self._server(server))
        status = None
        if error is not None:
            error_name = error.__name__
            # exists() of a missing node is a NoNode reply the client returns as None: not a failure.
            if not (op == OpCode.EXISTS and error is NoNodeError):
                attributes["error.type"] = error_name
                status = Status(StatusCode.ERROR, error_name)
            code = getattr(error, "code", None)
            if replied and isinstance(code, int) and code != 0:
                attributes["db.response.status_code"] = str(code)
        span_attributes = dict(attributes)
        if path is not None:
            attributes["zkwire.path"] = path
        io_key = (op, server, path)
        io = self._io.get(io_key)
        if io is None:
            base = {"db.system.name": DB_SYSTEM, "db.operation.name": name, **self._server(server)}
            if path is not None:
                base["zkwire.path"] = path
            io = ({**base, "network.io.direction": "transmit"}, {**base, "network.io.direction": "receive"}, [0, 0])
            io = self._io.setdefault(io_key, io)
        entry = _Request(attributes, io[2], name, span_attributes, status)
        self._requests[key] = entry
        return entry

    def _server(self, server: HostPort | None) -> dict[str, Any]:
        attributes = self._server_attributes.get(server)
        if attributes is None:
            attributes = {} if server is None else {"server.address": str(server.host), "server.port": int(server.port)}
            self._server_attributes[server] = attributes
        return attributes

    def _path_value(self, path: str) -> str:
        """``path`` as the metrics carry it: cut to the depth, or ``OTHER`` past the cap."""
        value = cut_path(path, self._path_depth)
        if value in self._path_values:
            return value
        with self._lock:
            if len(self._path_values) < self._max_paths:
                self._path_values.add(value)
                return value
        return OTHER

    # ------------------------------------------------------------------ connections and watches

    def _count(self, metric: str, key: tuple[Any, ...], make: Any, n: int = 1) -> None:
        """Add ``n`` to the count of ``metric`` with the attributes ``make()`` gives (once per key)."""
        full = (metric, *key)
        cell = self._counts.get(full)
        if cell is None:
            cell = self._counts.setdefault(full, (metric, make(), [0]))
        with self._lock:
            cell[2][0] += n

    def _connection(self, event: ConnectionEvent) -> None:
        if self._duration is None:
            return
        kind, server = event.kind, event.server
        self._count(
            "zkwire.client.connection.events",
            (kind, server),
            lambda: {"zkwire.connection.event": kind.value, **self._server(server)},
        )

    def _watch(self, event: WatchEvent) -> None:
        if self._duration is None:
            return
        type_name = _WATCH_TYPES.get(int(event.type), OTHER)
        path = self._path_value(event.path) if self._paths else None

        def make() -> dict[str, Any]:
            attributes = {"zkwire.watch.event_type": type_name}
            if path is not None:
                attributes["zkwire.path"] = path
            return attributes

        self._count("zkwire.client.watch.notifications", (type_name, path), make)

    # ------------------------------------------------------------------ locks

    def _recipe(self, event: RecipeEvent) -> None:
        kind = event.kind
        if kind not in _LOCK_KINDS or not isinstance(event.recipe, str) or not isinstance(event.path, str):
            return
        recipe = self._recipe_value(event.recipe)
        path = self._path_value(event.path) if self._paths else None
        if self._duration is not None:
            self._lock_metrics(event, kind, recipe, path)
        if self._tracer is not None:
            self._lock_spans(event, kind, recipe)

    def _recipe_value(self, recipe: str) -> str:
        if recipe in self._recipe_values:
            return recipe
        with self._lock:
            if len(self._recipe_values) < MAX_RECIPES:
                self._recipe_values.add(recipe)
                return recipe
        return OTHER

    def _lock_attributes(self, recipe: str, path: str | None, outcome: str | None = None) -> dict[str, Any]:
        key = (recipe, path, outcome)
        attributes = self._attributes.get(key)
        if attributes is None:
            attributes = {"zkwire.lock.recipe": recipe}
            if outcome is not None:
                attributes["zkwire.lock.outcome"] = outcome
            if path is not None:
                attributes["zkwire.path"] = path
            attributes = self._attributes.setdefault(key, attributes)
        return attributes

    def _lock_metrics(self, event: RecipeEvent, kind: str, recipe: str, path: str | None) -> None:
        assert self._wait is not None and self._hold is not None and self._margin is not None
        if kind in ("granted", "abandoned"):
            if kind == "granted":
                self._count("zkwire.lock.grants", (recipe, path), lambda: self._lock_attributes(recipe, path))
            if event.wait is not None:
                self._wait.record(max(0.0, event.wait), self._lock_attributes(recipe, path, kind))
        elif kind in ("released", "lost"):
            if event.hold is not None:
                self._hold.record(max(0.0, event.hold), self._lock_attributes(recipe, path, kind))
            if kind == "lost":
                margin = event.margin
                late = margin is not None and margin <= 0.0

                def make() -> dict[str, Any]:
                    return {**self._lock_attributes(recipe, path), "zkwire.lock.late": late}

                self._count("zkwire.lock.losses", (recipe, path, late), make)
                if margin is not None:
                    self._margin.record(max(0.0, margin), self._lock_attributes(recipe, path))

    def _lock_spans(self, event: RecipeEvent, kind: str, recipe: str) -> None:
        assert self._tracer is not None
        lock = (event.session_id, event.path, event.recipe)
        if kind == "queued":
            with self._lock:
                waiting = self._queued.get(lock)
                if waiting is None:
                    waiting = self._queued[lock] = []
                    if len(self._queued) > MAX_LOCK_STATES:
                        self._queued.popitem(last=False)
                waiting.append((event.context, event.at))
                del waiting[:-MAX_QUEUED_PER_LOCK]
            return
        context = _ROOT if event.context is None else event.context.run(otel_context.get_current)
        attributes: dict[str, Any] = {
            "zkwire.lock.recipe": recipe,
            "zkwire.lock.outcome": kind,
            "zkwire.session.id": f"0x{event.session_id:x}",
        }
        if self._paths:
            attributes["zkwire.path"] = event.path
        if event.token is not None:
            attributes["zkwire.lock.token"] = event.token
        end = int(event.at * _NS)
        if kind in ("granted", "abandoned"):
            queued_at = self._queued_at(lock, event.context)
            if event.wait is not None:
                attributes["zkwire.lock.wait"] = event.wait
                start = end - int(max(0.0, event.wait) * _NS)
            else:
                start = end if queued_at is None else min(end, int(queued_at * _NS))
            span = self._tracer.start_span(
                f"acquire {recipe}", context=context, kind=SpanKind.INTERNAL, attributes=attributes, start_time=start
            )
            if queued_at is not None:
                span.add_event("queued", timestamp=max(start, min(end, int(queued_at * _NS))))
            span.end(end_time=end)
            if kind == "granted":
                with self._lock:
                    self._grants[(*lock, event.token)] = span.get_span_context()
                    if len(self._grants) > MAX_LOCK_STATES:
                        self._grants.popitem(last=False)
            return
        with self._lock:
            granted = self._grants.pop((*lock, event.token), None)
        hold = 0.0 if event.hold is None else max(0.0, event.hold)
        attributes["zkwire.lock.hold"] = hold
        if kind == "lost":
            if event.margin is not None:
                attributes["zkwire.lock.margin"] = event.margin
            if event.cause is not None:
                attributes["zkwire.lock.cause"] = str(event.cause)
        span = self._tracer.start_span(
            f"hold {recipe}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=None if granted is None else [Link(granted)],
            start_time=end - int(hold * _NS),
        )
        if kind == "lost":
            span.set_status(Status(StatusCode.ERROR, "lock lost"))
        span.end(end_time=end)

    def _queued_at(self, lock: tuple[int, str, str], context: Any) -> float | None:
        """When the acquire that ``context`` began was queued (forgotten now), if it was."""
        with self._lock:
            waiting = self._queued.get(lock)
            if not waiting:
                return None
            index = next((i for i, (c, _) in enumerate(waiting) if c is context), 0)
            _, at = waiting.pop(index)
            if not waiting:
                del self._queued[lock]
            return at

    # ------------------------------------------------------------------ collection (the reader's thread)

    def _observe_io(self, options: CallbackOptions) -> Iterable[Observation]:
        try:
            with self._lock:
                values = [(tx, rx, io[0], io[1]) for tx, rx, io in list(self._io.values())]
            out: list[Observation] = []
            for tx, rx, sent, received in values:
                out.append(Observation(sent, tx))
                out.append(Observation(received, rx))
            return out
        except Exception:  # pragma: no cover - nothing to fail on, but a collection never raises
            return []

    def _counts_callback(self, metric: str) -> Any:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            try:
                with self._lock:
                    cells = [
                        (attributes, n[0]) for name, attributes, n in list(self._counts.values()) if name == metric
                    ]
                return [Observation(n, attributes) for attributes, n in cells]
            except Exception:  # pragma: no cover
                return []

        return observe

    def _live_clients(self) -> list[Client]:
        with self._lock:
            clients = list(self._clients)
            for client in clients:
                if client.state is SessionState.CLOSED:
                    self._clients.discard(client)
        return [c for c in clients if c.state is not SessionState.CLOSED]

    def _observe_sessions(self, options: CallbackOptions) -> Iterable[Observation]:
        try:
            counts: dict[SessionState, int] = dict.fromkeys(_REPORTED_STATES, 0)
            for client in self._live_clients():
                counts[client.state] += 1
            return [Observation(n, {"zkwire.session.state": state.value}) for state, n in counts.items()]
        except Exception:  # pragma: no cover
            return []

    def _per_server(self, read: Any) -> list[Observation]:
        try:
            totals: dict[HostPort | None, int] = {}
            for client in self._live_clients():
                host = client.connected_host
                totals[host] = totals.get(host, 0) + int(read(client))
            return [Observation(n, self._server(host)) for host, n in totals.items()]
        except Exception:  # pragma: no cover
            return []

    def _observe_in_flight(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._per_server(lambda client: client.in_flight)

    def _observe_backlogged(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._per_server(lambda client: client.backlogged)
