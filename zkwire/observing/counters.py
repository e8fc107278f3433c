"""A ready-made observer that counts what sessions do: :class:`SessionCounters`.

Attach one to one client or to several (``open_client(..., observers=[counters])``,
:meth:`zkwire.Client.add_observer`, or :meth:`SessionCounters.attach`); it adds up their events and
gives the totals as one JSON object (:meth:`SessionCounters.to_json`) or as text lines
(:meth:`SessionCounters.lines`).  The figures that ``zkwire trace --stats`` also gives have its names
and its text lines (:mod:`zkwire.summary`): ``requests``, ``errors``, ``errors_by_op``, ``latency``,
``events``, ``bytes`` and ``sessions``.  Its own: ``connection`` (connection events by kind),
``in_flight`` and ``backlog`` (read from the client, when it has one) and ``locks`` (zklock's
events).  docs/observing-counters.rst lists every figure.

Memory stays bounded however long the sessions run: counts by op, error, event type and kind, and for
each latency the count and maximum of all and the percentiles of the last
:data:`~zkwire.summary.LATENCY_WINDOW` values.  :meth:`SessionCounters.on_event` runs in the client's
observers' thread, the readers in any thread: one lock keeps them apart.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..constants import EventType
from ..errors import ERROR_CLASSES, ZKError, error_name
from ..sansio.observing import (
    ConnectionEvent,
    ConnectionEventKind,
    ObservedEvent,
    RecipeEvent,
    RequestEvent,
    WatchEvent,
)
from ..summary import (
    LATENCY_WINDOW,
    Durations,
    add_duration,
    bytes_text,
    enum_name,
    errors_line,
    events_lines,
    latency_lines,
    latency_table,
    requests_line,
    row_text,
    sessions_line,
)
from ..terminal import escape_controls

if TYPE_CHECKING:
    from ..client.api import Client

__all__ = ["LOCK_KINDS", "SessionCounters"]

#: The lock events counted by kind (:class:`~zkwire.sansio.observing.RecipeEvent`); others count as ``other``.
LOCK_KINDS = ("queued", "granted", "released", "lost", "abandoned")

#: How the text line names each kind of connection event.
_CONNECTION_WORDS = {
    ConnectionEventKind.CONNECTING: "attempts",
    ConnectionEventKind.ATTEMPT_FAILED: "failed attempts",
    ConnectionEventKind.LOST: "lost",
    ConnectionEventKind.SUSPENDED: "suspended",
    ConnectionEventKind.MOVED: "moved",
    ConnectionEventKind.READ_ONLY: "read-only",
    ConnectionEventKind.AUTH_FAILED: "refused credentials",
}


def _error_name(error: type[ZKError]) -> str:
    """The server's name for the error's code (``NONODE``, as the tracer counts replies), or the class's
    name for an error with no code of its own."""
    code = getattr(error, "code", 0)
    return error_name(code) if isinstance(code, int) and code in ERROR_CLASSES else error.__name__


def _margin_row(d: Durations) -> dict[str, float]:
    row = d.row()
    return {"count": row["count"], "min_ms": d.shortest * 1000, "p50_ms": row["p50_ms"], "max_ms": row["max_ms"]}


class SessionCounters:
    """Totals of the events of the sessions it is attached to (see the module).

    ``client``: the client whose :attr:`~zkwire.Client.in_flight` and :attr:`~zkwire.Client.backlogged`
    are read live for ``in_flight`` and ``backlog`` (settable: :attr:`client`; None: not shown).
    ``window``: the recent values each latency's p50 and p99 are taken over.
    """

    def __init__(self, client: Client | None = None, *, window: int = LATENCY_WINDOW) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        self.window = window
        #: The client whose gauges are read (None: ``in_flight`` and ``backlog`` are null).
        self.client = client
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._errors_by_op: Counter[str] = Counter()
        self._latency: dict[str, Durations] = {}
        self._events: Counter[str] = Counter()
        self._bytes = {"client": 0, "server": 0}
        self._connection: Counter[ConnectionEventKind] = Counter()
        self._locks: Counter[str] = Counter()
        self._lock_wait = Durations(window)
        self._lock_hold = Durations(window)
        self._lost_margin = Durations(window)

    def attach(self, client: Client) -> None:
        """Count ``client``'s events from now on and read its gauges (:attr:`client`)."""
        client.add_observer(self)
        self.client = client

    # ------------------------------------------------------------------ counting (the observers' thread)

    def on_event(self, event: ObservedEvent, /) -> None:
        with self._lock:
            if isinstance(event, RequestEvent):
                self._request(event)
            elif isinstance(event, ConnectionEvent):
                self._connection[event.kind] += 1
            elif isinstance(event, WatchEvent):
                self._events[enum_name(EventType, int(event.type))] += 1
            elif isinstance(event, RecipeEvent):
                self._recipe(event)

    def _request(self, event: RequestEvent) -> None:
        op = event.op_name
        self._requests[op] += 1
        self._bytes["client"] += event.bytes_out
        self._bytes["server"] += event.bytes_in
        if event.error is not None:
            name = _error_name(event.error)
            self._errors[name] += 1
            self._errors_by_op[f"{op} {name}"] += 1
        if event.bytes_in:  # answered: its latency (one failed with its connection has none)
            add_duration(self._latency, op, event.duration, self.window)

    def _recipe(self, event: RecipeEvent) -> None:
        kind = event.kind if event.kind in LOCK_KINDS else "other"
        self._locks[kind] += 1
        if kind == "granted" and event.wait is not None:
            self._lock_wait.add(event.wait)
        if kind in ("released", "lost") and event.hold is not None:
            self._lock_hold.add(event.hold)
        if kind == "lost" and event.margin is not None:
            self._lost_margin.add(event.margin)

    # ------------------------------------------------------------------ reading (any thread)

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain values (see docs/observing-counters.rst)."""
        client = self.client
        with self._lock:
            c = self._connection
            locks: dict[str, Any] = {kind: self._locks[kind] for kind in LOCK_KINDS}
            if self._locks["other"]:
                locks["other"] = self._locks["other"]
            locks["wait"] = self._lock_wait.row() if self._lock_wait.count else None
            locks["hold"] = self._lock_hold.row() if self._lock_hold.count else None
            locks["lost_margin"] = _margin_row(self._lost_margin) if self._lost_margin.count else None
            return {
                "requests": dict(self._requests.most_common()),
                "errors": dict(self._errors.most_common()),
                "errors_by_op": dict(self._errors_by_op.most_common()),
                "latency": latency_table(self._latency),
                "events": dict(self._events.most_common()),
                "bytes": dict(self._bytes),
                "sessions": {
                    "opened": c[ConnectionEventKind.CONNECTED],
                    "reattached": c[ConnectionEventKind.REATTACHED],
                    "closed": c[ConnectionEventKind.CLOSED],
                    "expired": c[ConnectionEventKind.EXPIRED],
                },
                "connection": {kind.value: c[kind] for kind in ConnectionEventKind},
                "in_flight": None if client is None else client.in_flight,
                "backlog": None if client is None else client.backlogged,
                "locks": locks,
            }

    def lines(self) -> list[str]:
        """The figures as text lines (control characters escaped); the lock lines once a lock event came."""
        s = self.to_json()
        out = []
        if s["in_flight"] is not None:
            out += [f"in flight: {s['in_flight']}", f"backlog: {s['backlog']}"]
        out.append(f"summary: {sum(s['requests'].values())} requests, {bytes_text(s['bytes'])}")
        out.append(sessions_line(s["sessions"]))
        conn = s["connection"]
        out.append(
            "connections: " + ", ".join(f"{conn[kind.value]} {word}" for kind, word in _CONNECTION_WORDS.items())
        )
        out.append(requests_line(s["requests"]))
        out.append(errors_line(s["errors_by_op"]))
        out += latency_lines(s["latency"])
        out += events_lines(s["events"])
        locks = s["locks"]
        if any(locks[kind] for kind in LOCK_KINDS) or "other" in locks:
            out.append("locks: " + ", ".join(f"{locks[kind]} {kind}" for kind in LOCK_KINDS))
            for key, label in (("wait", "lock wait"), ("hold", "lock hold")):
                if locks[key] is not None:
                    out.append(f"{label}: {row_text(locks[key])}")
            margin = locks["lost_margin"]
            if margin is not None:
                out.append(
                    f"lost margin: n={margin['count']} min={margin['min_ms']:.3f}ms p50={margin['p50_ms']:.3f}ms "
                    f"max={margin['max_ms']:.3f}ms"
                )
        return [escape_controls(line) for line in out]
