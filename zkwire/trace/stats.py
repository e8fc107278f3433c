"""Counts over decoded traffic: requests by op and by path, errors, reply latency per op, watch events,
bytes, sessions opened, re-attached, closed and expired (sans I/O, thread-safe).

The figures it shares with :class:`zkwire.observing.SessionCounters` have the same names and text lines
(:mod:`zkwire.summary`); the latency percentiles are those of each op's last
:data:`~zkwire.summary.LATENCY_WINDOW` replies (the count and the maximum of all).

:class:`TraceStats` is fed every :class:`~zkwire.trace.decoder.DecodedFrame` shown (after filters) with
the connection it came from; :meth:`TraceStats.lines` renders the summary and :meth:`TraceStats.to_json`
gives the same as plain values.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from ..constants import EventType, KeeperState, OpCode
from ..errors import error_name
from ..sansio.paths import path_at_depth
from ..summary import (
    Durations,
    add_duration,
    bytes_text,
    enum_name,
    errors_line,
    events_lines,
    latency_lines,
    latency_table,
    percentile,
    requests_line,
    sessions_line,
)
from ..terminal import escape_controls
from .filters import multi_failure
from .frames import CLIENT, SERVER, DecodedFrame
from .notes import MULTI_OPS

__all__ = ["TraceStats", "capture_line", "percentile", "path_at_depth"]

_CLOSE_SESSION = int(OpCode.CLOSE_SESSION)


def capture_line(capture: dict[str, int]) -> str:
    """The live capture's counts: packets read and what the kernel dropped, said plainly."""
    dropped = capture.get("kernel_dropped", 0)
    line = f"capture: {capture.get('packets', 0)} packets read, kernel dropped {dropped}"
    if dropped:
        line += " (the figures are partial)"
    if capture.get("ring_full_percent"):
        line += f", ring {capture['ring_full_percent']} % full (decoding is behind)"
    return line


class TraceStats:
    """See the module docstring.  ``depth`` aggregates request paths to that many components."""

    def __init__(self, depth: int | None = None) -> None:
        self.depth = depth
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.paths: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.errors_by_op: Counter[str] = Counter()
        self.latency: dict[str, Durations] = {}
        self.events: Counter[str] = Counter()
        self.bytes = {"client": 0, "server": 0}
        self.frames = 0
        self.pings = 0
        self.malformed = 0
        #: Frames checked by ``--verify`` (None: not verifying) and those whose readings disagreed.
        self.verified: int | None = None
        self.disagreements = 0
        self.skipped_bytes = 0
        self.connections: set[int] = set()
        self.sessions_opened = 0
        self.sessions_reattached = 0
        self.sessions_closed = 0
        self.sessions_expired = 0
        #: A live capture's counts (packets read, kernel drops, ...), shown with the summary when set.
        self.capture: dict[str, int] | None = None
        self._asked_session: dict[int, int] = {}  # connection -> session id of its ConnectRequest

    def add(self, conn: int | None, frame: DecodedFrame) -> None:
        if conn is None:
            conn = 0
        kind = frame.kind
        with self._lock:
            self.connections.add(conn)
            self.frames += 1
            if self.verified is not None:
                self.verified += 1
                self.disagreements += frame.disagreement is not None
            # Requests and paired replies, most of any capture, first (what _count_other does for them, in
            # short).
            if kind == "request":
                self.bytes[CLIENT] += frame.size + 4
                self.requests[frame.op_name] += 1  # type: ignore[index]  # a request always has its op's name
                if frame.path is not None:
                    self.paths[path_at_depth(frame.path, self.depth) if self.depth is not None else frame.path] += 1
                return
            if kind == "reply" and frame.op_name is not None and not frame.err and frame.op not in MULTI_OPS:
                self.bytes[SERVER] += frame.size + 4
                if frame.op == _CLOSE_SESSION:
                    self.sessions_closed += 1
                latency = frame.latency
                if latency is not None:
                    durations = self.latency.get(frame.op_name)
                    if durations is None:
                        add_duration(self.latency, frame.op_name, latency)
                    else:
                        durations.add(latency)
                return
            self._count_other(conn, frame)

    def _count_other(self, conn: int, frame: DecodedFrame) -> None:
        if frame.kind == "skipped":
            self.skipped_bytes += frame.size
            return
        self.bytes[frame.direction] += frame.size + (4 if frame.kind != "four_letter" else 0)
        record = frame.record if isinstance(frame.record, dict) else {}
        if frame.kind == "malformed":
            self.malformed += 1
        elif frame.kind == "ping":
            self.pings += frame.direction == CLIENT
        elif frame.kind == "connect":
            self._asked_session[conn] = int(record.get("session_id", 0))
        elif frame.kind == "connect_response":
            if int(record.get("timeout", 0)) <= 0:
                self.sessions_expired += 1
            elif self._asked_session.pop(conn, 0):
                self.sessions_reattached += 1
            else:
                self.sessions_opened += 1
        elif frame.kind == "event":
            self.events[enum_name(EventType, int(record.get("type", 0)))] += 1
            if record.get("state") == KeeperState.EXPIRED:
                self.sessions_expired += 1
        elif frame.direction == CLIENT and frame.op_name is not None:
            self.requests[frame.op_name] += 1
            if frame.path is not None:
                self.paths[path_at_depth(frame.path, self.depth)] += 1
        elif frame.kind in ("reply", "auth") and frame.op_name is not None:
            failed = frame.err or multi_failure(frame)
            if failed:
                name = error_name(failed)
                self.errors[name] += 1
                self.errors_by_op[f"{frame.op_name} {name}"] += 1
            elif frame.op == OpCode.CLOSE_SESSION:
                self.sessions_closed += 1
            if frame.latency is not None:
                add_duration(self.latency, frame.op_name, frame.latency)

    # ------------------------------------------------------------------ rendering

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "kind": "summary",
                "connections": len(self.connections),
                "frames": self.frames,
                "requests": dict(self.requests.most_common()),
                "paths": dict(self.paths.most_common()),
                "path_depth": self.depth,
                "errors": dict(self.errors.most_common()),
                "errors_by_op": dict(self.errors_by_op.most_common()),
                "latency": latency_table(self.latency),
                "events": dict(self.events.most_common()),
                "pings": self.pings,
                "malformed": self.malformed,
                "verified": self.verified,
                "disagreements": self.disagreements,
                "bytes": dict(self.bytes),
                "skipped_bytes": self.skipped_bytes,
                "sessions": {
                    "opened": self.sessions_opened,
                    "reattached": self.sessions_reattached,
                    "closed": self.sessions_closed,
                    "expired": self.sessions_expired,
                },
            } | ({"capture": dict(self.capture)} if self.capture is not None else {})

    def lines(self, top: int = 20) -> list[str]:
        """The summary as text lines (the ``top`` most frequent paths)."""
        s = self.to_json()
        out = [
            f"summary: {s['connections']} connections, {s['frames']} frames, {bytes_text(s['bytes'])}"
            + (f", {s['skipped_bytes']} bytes not decoded" if s["skipped_bytes"] else "")
            + (f", {s['malformed']} malformed" if s["malformed"] else ""),
        ]
        if "capture" in s:
            out.append(capture_line(s["capture"]))
        out.append(sessions_line(s["sessions"]))
        out.append(requests_line(s["requests"]))
        if s["pings"]:
            out.append(f"pings: {s['pings']}")
        if s["paths"]:
            depth = f" (depth {self.depth})" if self.depth is not None else ""
            shown = list(s["paths"].items())[:top]
            more = len(s["paths"]) - len(shown)
            out.append(
                f"paths{depth}: " + ", ".join(f"{p} {n}" for p, n in shown) + (f", ... {more} more" if more > 0 else "")
            )
        if s["verified"] is not None:
            out.append(
                f"verify: {s['verified']} frames read by the fast codec and the construct schemas, "
                f"{s['disagreements']} disagreements"
            )
        out.append(errors_line(s["errors_by_op"]))
        out += latency_lines(s["latency"])
        out += events_lines(s["events"])
        return [escape_controls(line) for line in out]
