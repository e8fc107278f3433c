"""What bench/run.py measures: the metrics (run in rounds, or once per peer), the parameters of a full and a
quick run, the rows of the tables (:class:`Row`, one figure of a metric each) and the scale groups whose sizes
make rows of their own (:class:`ScaleGroup`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from peers import Params, payload_path

#: Metrics run in interleaved rounds, in this order.
ROUND_METRICS = ["seq", "pipelined", "create_delete", "lock_cycle", "contended", "handoff"]
#: Metrics run once per peer, after the rounds.
ONCE_METRICS = ["herd", "mem_session", "mem_waiter"]
ALL_METRICS = ROUND_METRICS + ONCE_METRICS

FULL = Params(
    warm=1.0,
    jit_warm=2.0,
    measure=2.0,
    samples=3000,
    handoffs=100,
    waiters=100,
    idle_sessions=50,
    mem_waiters=200,
)
QUICK = Params(
    warm=0.25,
    jit_warm=0.5,
    measure=0.5,
    samples=1000,
    handoffs=30,
    waiters=100,
    idle_sessions=10,
    mem_waiters=50,
)


@dataclass(frozen=True)
class Row:
    """One line of the table: a figure of a metric."""

    metric: str
    figure: str
    label: str
    unit: str
    higher_is_better: bool
    #: The target against the Java column: (comparison, factor), e.g. (">=", 0.9); None: no target.
    java_target: tuple[str, float] | None = None
    #: What the Java column is for this row.
    java_is: str = "Java client"
    #: Absolute slack when comparing with kazoo and aiozk (counts of watch events are small integers).
    slack: float = 0.0


ROWS = [
    Row("seq", "p50_us", "sequential getData latency, p50", "µs", False, ("<=", 1.5)),
    Row("seq", "p99_us", "sequential getData latency, p99", "µs", False, ("<=", 1.5)),
    Row("seq", "cpu_us_per_op", "sequential getData, client CPU per op (process CPU / ops)", "µs", False),
    Row("pipelined", "ops_per_s", "pipelined getData, one session, 128 in flight", "ops/s", True, (">=", 0.9)),
    Row("create_delete", "ops_per_s", "create+delete, sequential (each request one op)", "ops/s", True),
    Row("lock_cycle", "ms", "uncontended lock acquire+release", "ms/cycle", False, ("<=", 1.0), "Curator"),
    Row(
        "contended", "grants_per_s", "contended lock, 4 workers / 2 sessions", "grants/s", True, (">=", 1.0), "Curator"
    ),
    Row("handoff", "p50_ms", "lock handoff latency, p50", "ms", False, None, "Curator"),
    Row("handoff", "p99_ms", "lock handoff latency, p99", "ms", False, None, "Curator"),
    Row(
        "herd",
        "server_triggers_per_release",
        "herd: watchers the server triggers per release",
        "count",
        False,
        None,
        "Curator",
        0.05,
    ),
    Row(
        "herd",
        "wakeups_per_release",
        "herd: waiters woken per release (client side)",
        "count",
        False,
        None,
        "Curator",
        0.05,
    ),
    Row("mem_session", "rss_kib", "memory per idle session, RSS", "KiB", False),
    Row("mem_session", "heap_kib", "memory per idle session, heap (tracemalloc / JVM heap)", "KiB", False),
    Row("mem_waiter", "rss_kib", "memory per waiting lock contender, RSS", "KiB", False, None, "Curator"),
    Row("mem_waiter", "heap_kib", "memory per waiting lock contender, heap", "KiB", False, None, "Curator"),
]


@dataclass(frozen=True)
class ScaleGroup:
    """A family of scale rows: one child run per (size, peer, round), with the size in ``Params``."""

    name: str
    #: The peer metric that runs it (the depth and payload groups reuse ``pipelined`` and ``seq``).
    peer_metric: str
    sizes: tuple[int, ...]
    title: str
    #: (figure, label, unit, higher is better)
    figures: tuple[tuple[str, str, str, bool], ...]
    java_is: str = "Java client"

    def key(self, size: int) -> str:
        return f"{self.name}@{size}"

    def params(self, p: Params, size: int) -> Params:
        if self.peer_metric == "pipelined":
            return dataclasses.replace(p, window=size)
        return dataclasses.replace(p, arg=size)

    def path(self, path: str, size: int) -> str:
        return payload_path(path, size) if self.name == "scale_payload" else path

    def rows(self, size: int) -> list[Row]:
        n = _size(size) if self.name == "scale_payload" else f"{size:,}"
        return [
            Row(self.key(size), fig, f"{self.title.format(n=n)}: {label}", unit, higher, None, self.java_is)
            for fig, label, unit, higher in self.figures
        ]


def _size(n: int) -> str:
    """A byte count as the tables write it: 1 MB, 64 KiB, 100."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000} MB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n:,}"


SCALE_GROUPS = [
    ScaleGroup(
        "scale_waiters",
        "waiters",
        (100, 1000),
        "{n} waiters on one lock",
        (
            ("queue_s", "time until all queued", "s", False),
            ("drain_grants_per_s", "drain", "grants/s", True),
            ("rss_kib", "RSS per waiter", "KiB", False),
            ("heap_kib", "heap per waiter", "KiB", False),
            ("cpu_us_per_grant", "client CPU per grant", "µs", False),
            ("server_bytes_per_grant", "bytes the server sent per grant", "bytes", False),
            ("server_packets_per_grant", "server packets per grant", "count", False),
        ),
        "Curator",
    ),
    ScaleGroup(
        "scale_sessions",
        "sessions",
        (10, 100, 1000),
        "{n} sessions in one process",
        (
            ("rss_kib", "RSS per session", "KiB", False),
            ("ops_per_s", "getData round-robin", "ops/s", True),
            ("cpu_us_per_op", "client CPU per getData", "µs", False),
        ),
    ),
    ScaleGroup(
        "scale_depth",
        "pipelined",
        (1, 8, 64, 512, 4096),
        "pipelined getData, {n} in flight",
        (("ops_per_s", "throughput", "ops/s", True),),
    ),
    ScaleGroup(
        "scale_payload",
        "seq",
        (1024, 65536, 1_000_000),
        "getData of {n}",
        (
            ("mean_us", "time per op", "µs", False),
            ("cpu_us_per_op", "client CPU per op", "µs", False),
        ),
    ),
    ScaleGroup(
        "scale_children",
        "children",
        (10_000, 100_000),
        "getChildren of {n} children",
        (
            ("ms_per_call", "time per call (p50)", "ms", False),
            ("cpu_ms_per_call", "client CPU per call", "ms", False),
        ),
    ),
]
SCALE = {g.name: g for g in SCALE_GROUPS}
