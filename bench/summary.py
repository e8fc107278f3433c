"""The summary table of a dated note (bench/results/*.md) from the JSON of one ``bench/run.py`` run.

    .venv/bin/python bench/summary.py bench/results/latest.json

Prints the condensed table (several figures per row, e.g. pipelined depths 8 / 128 / 4,096), medians of
the run's measured rounds, with zkwire ÷ Java or Curator and the range of the per-round ratios where the
row has one figure.  Rows whose metric the run did not measure are left out; a peer without a figure
shows ``n/a``.  The full per-metric tables are in the JSON's ``markdown`` and ``scale_markdown``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.tables import DASH, fmt

PEERS = [
    ("zkwire", "zkwire / zklock"),
    ("raw", "raw socket"),
    ("trio", "trio floor"),
    ("kazoo", "kazoo"),
    ("aiozk", "aiozk"),
    ("java", "Java / Curator"),
]

#: (label, [(metric, figure, scale)...]): one row; several figures are joined with " / ".
ROWS: list[tuple[str, list[tuple[str, str, float]]]] = [
    ("sequential getData latency, p50 (µs, lower is better)", [("seq", "p50_us", 1)]),
    ("sequential getData latency, p99 (µs, lower is better)", [("seq", "p99_us", 1)]),
    ("sequential getData, client CPU per op (µs, lower is better)", [("seq", "cpu_us_per_op", 1)]),
    (
        "pipelined getData, 8 / 128 / 4,096 in flight (kops/s)",
        [
            ("scale_depth@8", "ops_per_s", 1e-3),
            ("pipelined", "ops_per_s", 1e-3),
            ("scale_depth@4096", "ops_per_s", 1e-3),
        ],
    ),
    ("create+delete, sequential (ops/s)", [("create_delete", "ops_per_s", 1)]),
    (
        "getData of 1 MB: time / client CPU per op (µs, lower is better)",
        [("scale_payload@1000000", "mean_us", 1), ("scale_payload@1000000", "cpu_us_per_op", 1)],
    ),
    (
        "getChildren of 100,000 children: time per call (ms, lower is better)",
        [("scale_children@100000", "ms_per_call", 1)],
    ),
    ("1,000 sessions in one process: getData round-robin (ops/s)", [("scale_sessions@1000", "ops_per_s", 1)]),
    ("uncontended lock acquire+release (ms, lower is better)", [("lock_cycle", "ms", 1)]),
    ("contended lock, 4 workers / 2 sessions (grants/s)", [("contended", "grants_per_s", 1)]),
    ("lock handoff latency, p50 / p99 (ms, lower is better)", [("handoff", "p50_ms", 1), ("handoff", "p99_ms", 1)]),
    (
        "10,000 waiters on one lock: queued in (s) / drain (grants/s)",
        [("scale_waiters@10000", "queue_s", 1), ("scale_waiters@10000", "drain_grants_per_s", 1)],
    ),
    (
        "10,000 waiters: server bytes per grant / RSS per waiter (KiB)",
        [("scale_waiters@10000", "server_bytes_per_grant", 1), ("scale_waiters@10000", "rss_kib", 1)],
    ),
    ("1,000 waiters on one lock: drain (grants/s)", [("scale_waiters@1000", "drain_grants_per_s", 1)]),
    ("herd: watchers triggered per release, 100 waiters", [("herd", "server_triggers_per_release", 1)]),
    ("memory per idle session, RSS / heap (KiB)", [("mem_session", "rss_kib", 1), ("mem_session", "heap_kib", 1)]),
    (
        "memory per waiting lock contender, RSS / heap (KiB)",
        [("mem_waiter", "rss_kib", 1), ("mem_waiter", "heap_kib", 1)],
    ),
]

#: Figures without a ratio: counts where any client does about the same, and runtimes' memory (not
#: comparable; the ratio would mislead).
NO_RATIO = {
    ("herd", "server_triggers_per_release"),
    ("mem_session", "rss_kib"),
    ("mem_session", "heap_kib"),
    ("mem_waiter", "rss_kib"),
    ("mem_waiter", "heap_kib"),
    ("scale_waiters@10000", "server_bytes_per_grant"),
    ("scale_waiters@10000", "rss_kib"),
}


def number(value: float) -> str:
    return fmt(value)


def ratio(value: float) -> str:
    return f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def _figure(run: dict[str, Any], metric: str, peer: str, figure: str) -> float | None:
    value = run["medians"].get(metric, {}).get(peer, {}).get(figure)
    return value if isinstance(value, int | float) else None


def _per_round_ratios(run: dict[str, Any], metric: str, figure: str) -> list[float]:
    """zkwire ÷ Java for each measured round in which both have the figure."""
    rounds: dict[str, dict[Any, float]] = {}
    for peer in ("zkwire", "java"):
        rounds[peer] = {
            r.get("round"): r[figure]
            for r in run["runs"].get(metric, {}).get(peer, [])
            if "error" not in r and isinstance(r.get(figure), int | float)
        }
    return [z / rounds["java"][k] for k, z in rounds["zkwire"].items() if rounds["java"].get(k)]


def table(run: dict[str, Any]) -> str:
    peers = [(p, name) for p, name in PEERS if p in run["peers"]]
    lines = [
        "| metric | " + " | ".join(name for _, name in peers) + " | zkwire ÷ Java |",
        "|---|" + "---:|" * (len(peers) + 1),
    ]
    for label, figures in ROWS:
        if not any(metric in run["medians"] for metric, _, _ in figures):
            continue
        cells = []
        for peer, _ in peers:
            values = [_figure(run, metric, peer, figure) for metric, figure, _ in figures]
            if all(v is None for v in values):
                cells.append("n/a")
            else:
                cells.append(
                    " / ".join(
                        "-" if v is None else number(v * scale)
                        for v, (_, _, scale) in zip(values, figures, strict=True)
                    )
                )
        ratios = []
        for metric, figure, _ in figures:
            z, j = _figure(run, metric, "zkwire", figure), _figure(run, metric, "java", figure)
            if (metric, figure) in NO_RATIO or z is None or not j:
                continue
            text = ratio(z / j)
            per_round = _per_round_ratios(run, metric, figure)
            if len(figures) == 1 and len(per_round) > 1:
                text += f" ({min(per_round):.2f}{DASH}{max(per_round):.2f})"
            ratios.append(text)
        lines.append(f"| {label} | " + " | ".join(cells) + " | " + " / ".join(ratios) + " |")
    return "\n".join(lines)


def floor_share(run: dict[str, Any]) -> str | None:
    """zkwire and Java against the trio floor on sequential CPU per op, if the run has the trio peer."""
    per_peer = {p: _figure(run, "seq", p, "cpu_us_per_op") for p in ("zkwire", "trio", "java")}
    if any(v is None for v in per_peer.values()):
        return None
    z, t, j = (per_peer[p] for p in ("zkwire", "trio", "java"))
    assert z is not None and t is not None and j is not None
    floor_vs_java = [
        r["cpu_us_per_op"] / java["cpu_us_per_op"]
        for r in run["runs"]["seq"]["trio"]
        for java in run["runs"]["seq"]["java"]
        if r.get("round") == java.get("round") and "error" not in r and "error" not in java
    ]
    spread = f" (per round {min(floor_vs_java):.2f}{DASH}{max(floor_vs_java):.2f})" if floor_vs_java else ""
    return (
        f"sequential client CPU per op: zkwire {number(z)} µs, trio floor {number(t)} µs, Java {number(j)} µs; "
        f"floor ÷ Java {t / j:.2f}x{spread}, zkwire ÷ floor {z / t:.2f}x, "
        f"median of rounds of floor ÷ Java {statistics.median(floor_vs_java) if floor_vs_java else float('nan'):.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", type=Path, help="a bench/run.py --json file")
    args = parser.parse_args()
    run = json.loads(args.json.read_text())
    print(table(run))
    share = floor_share(run)
    if share:
        print("\n" + share)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
