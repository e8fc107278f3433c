"""Observing a zkwire service: what every session does, as events, for metrics and traces.

Attach an observer -- any object with an ``on_event(event)`` method -- to a client
(``open_client(..., observers=[...])`` or :meth:`zkwire.Client.add_observer`) and it is told, in order:

* :class:`RequestEvent`: each request answered or failed (op, path, xid, server, bytes out and in,
  start and end, error class, attempt number, depth in flight);
* :class:`ConnectionEvent`: connection attempts, connections lost, the session connected, suspended,
  re-attached, moved, expired, closed (:class:`ConnectionEventKind`), with the server and the cause;
* :class:`WatchEvent`: each watch notification and the watchers it woke;
* :class:`RecipeEvent`: zklock's recipes -- a lock queued, granted (wait, fencing token), released
  (hold), lost (hold, and the margin before the session could expire).

Observers run in a thread of the client's own, never holding it up: one that raises is logged once and
kept; one that is slow makes events wait, then be dropped and counted, never the client
(:mod:`zkwire.client.observers`).  With no observer attached a session makes no event at all.

Ready-made observers: :class:`SessionCounters` (:mod:`zkwire.observing.counters`: totals of requests,
errors, latency, bytes, sessions, connection, watch and lock events, under the names ``zkwire trace
--stats`` uses; the shell's ``session`` command shows them; docs/observing-counters.rst), and an
OpenTelemetry adapter (:mod:`zkwire.observing.otel`: metrics and spans, and through OpenTelemetry's
Prometheus exporter, Prometheus; the ``otel`` extra).  docs/observing-otel.rst lists every metric and
span.
"""

from __future__ import annotations

from ..sansio.observing import (
    ConnectionEvent,
    ConnectionEventKind,
    ObservedEvent,
    Observer,
    RecipeEvent,
    RequestEvent,
    WatchEvent,
)
from .counters import SessionCounters

__all__ = [
    "ConnectionEvent",
    "ConnectionEventKind",
    "ObservedEvent",
    "Observer",
    "RecipeEvent",
    "RequestEvent",
    "SessionCounters",
    "WatchEvent",
]
