"""The figures that ``zkwire trace --stats`` and :class:`zkwire.observing.SessionCounters` both give, with
one name and one text form each (standard library only).

Both summaries hold a JSON object whose shared keys mean the same thing -- ``requests`` (by op),
``errors`` (by the server's error name), ``errors_by_op`` (``"getData NONODE"``), ``latency`` (by op:
``count``, ``p50_ms``, ``p99_ms``, ``max_ms``), ``events`` (watch notifications by type), ``bytes``
(``client``, ``server``) and ``sessions`` (``opened``, ``reattached``, ``closed``, ``expired``) -- and
render those keys as the same text lines::

    sessions: 1 opened, 0 re-attached, 1 closed, 0 expired
    requests: create 3, getData 2
    errors: getData NONODE 1
    latency getData: n=2 p50=0.412ms p99=0.733ms max=0.733ms
    watch events: NODE_DATA_CHANGED 1

A :class:`Durations` keeps what a latency row needs in bounded memory: the count and the maximum over
everything added, the percentiles over the last :data:`LATENCY_WINDOW` values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "LATENCY_WINDOW",
    "Durations",
    "add_duration",
    "bytes_text",
    "enum_name",
    "errors_line",
    "events_lines",
    "latency_lines",
    "latency_table",
    "percentile",
    "requests_line",
    "row_text",
    "sessions_line",
]

#: The recent values the percentiles of a :class:`Durations` are taken over.
LATENCY_WINDOW = 10_000


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of an ascending, non-empty list (``fraction`` 0.5 for p50)."""
    rank = max(1, min(len(sorted_values), int(-(-fraction * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def enum_name(enum: Callable[[int], Any], value: int) -> str:
    """The name of ``value`` in ``enum`` (``NODE_DATA_CHANGED``), or the number when it has none."""
    try:
        return str(enum(value).name)
    except ValueError:
        return str(value)


class Durations:
    """Durations in seconds: how many and the longest of all that were added, and the p50 and p99 of the
    last ``window`` of them (memory stays bounded however long it runs).  Not thread-safe: its owner
    locks."""

    __slots__ = ("count", "longest", "recent", "shortest")

    def __init__(self, window: int = LATENCY_WINDOW) -> None:
        if window < 1:
            raise ValueError(f"a window of {window} values")
        self.count = 0
        self.longest = float("-inf")
        self.shortest = float("inf")
        #: The last ``window`` values, oldest first.
        self.recent: deque[float] = deque(maxlen=window)

    def add(self, seconds: float) -> None:
        self.count += 1
        if seconds > self.longest:
            self.longest = seconds
        if seconds < self.shortest:
            self.shortest = seconds
        self.recent.append(seconds)

    def row(self) -> dict[str, float]:
        """``count``, ``p50_ms``, ``p99_ms``, ``max_ms`` (with at least one value added)."""
        ordered = sorted(self.recent)
        return {
            "count": self.count,
            "p50_ms": percentile(ordered, 0.5) * 1000,
            "p99_ms": percentile(ordered, 0.99) * 1000,
            "max_ms": self.longest * 1000,
        }


def add_duration(table: dict[str, Durations], key: str, seconds: float, window: int = LATENCY_WINDOW) -> None:
    """Add ``seconds`` to ``table[key]`` (a new :class:`Durations` of ``window`` values if it has none)."""
    durations = table.get(key)
    if durations is None:
        durations = table[key] = Durations(window)
    durations.add(seconds)


def latency_table(durations: Mapping[str, Durations]) -> dict[str, dict[str, float]]:
    """The ``latency`` object: each op's :meth:`Durations.row`, ops in alphabetical order."""
    return {op: d.row() for op, d in sorted(durations.items()) if d.count}


def row_text(row: Mapping[str, float]) -> str:
    """``n=2 p50=0.412ms p99=0.733ms max=0.733ms``."""
    return f"n={row['count']} p50={row['p50_ms']:.3f}ms p99={row['p99_ms']:.3f}ms max={row['max_ms']:.3f}ms"


def latency_lines(latency: Mapping[str, Mapping[str, float]]) -> list[str]:
    """One ``latency getData: n=...`` line per op of the ``latency`` object."""
    return [f"latency {op}: {row_text(row)}" for op, row in latency.items()]


def _counts(counts: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts) or "none"


def sessions_line(sessions: Mapping[str, int]) -> str:
    return (
        f"sessions: {sessions['opened']} opened, {sessions['reattached']} re-attached, {sessions['closed']} closed, "
        f"{sessions['expired']} expired"
    )


def requests_line(requests: Mapping[str, int]) -> str:
    return "requests: " + _counts(requests.items())


def errors_line(errors_by_op: Mapping[str, int]) -> str:
    return "errors: " + _counts(errors_by_op.items())


def events_lines(events: Mapping[str, int]) -> list[str]:
    """The ``watch events: ...`` line, none without events."""
    return ["watch events: " + _counts(events.items())] if events else []


def bytes_text(sent: Mapping[str, int]) -> str:
    """The ``bytes`` object as ``120 bytes from clients, 340 bytes from servers``."""
    return f"{sent['client']} bytes from clients, {sent['server']} bytes from servers"
