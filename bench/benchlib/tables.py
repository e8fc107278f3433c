"""What bench/run.py prints and charts from a run's figures: medians and ranges over the measured rounds, the
Markdown tables (ratios to Java/Curator per round, the targets, zkwire against kazoo and aiozk) with their
verdicts, the codec table, and the PNG chart."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from peers import PEERS

from .rows import ROWS, Row


def fmt(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


#: Keys of a child's figures that are bookkeeping, not figures.
NOT_FIGURES = {"round"}


def medians(results: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, dict[str, float | None]]]:
    return _summary(results, statistics.median)


def spreads(results: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per (metric, peer, figure): [min, max] over the measured rounds."""
    return _summary(results, lambda vals: [min(vals), max(vals)])


def _summary(results: dict[str, dict[str, list[dict[str, Any]]]], f: Callable[[list[float]], Any]) -> Any:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for metric, by_peer in results.items():
        out[metric] = {}
        for peer, runs in by_peer.items():
            good = [r for r in runs if "error" not in r]
            if not good:
                continue
            keys = [k for k, v in good[0].items() if (isinstance(v, int | float) or v is None) and k not in NOT_FIGURES]
            out[metric][peer] = {}
            for k in keys:
                vals = [r[k] for r in good if r.get(k) is not None]
                out[metric][peer][k] = f(vals) if vals else None
    return out


def round_ratios(runs_z: list[dict[str, Any]], runs_j: list[dict[str, Any]], figure: str) -> list[float]:
    """zkwire ÷ Java per measured round (runs paired by their round), where both have the figure."""
    java = {r.get("round"): r.get(figure) for r in runs_j if "error" not in r}
    out = []
    for r in runs_z:
        z, j = r.get(figure), java.get(r.get("round"))
        if "error" not in r and z is not None and j:
            out.append(z / j)
    return out


def _better_or_equal(a: float, b: float, higher: bool, slack: float = 0.0) -> bool:
    """``a`` is at least as good as ``b`` (within 0.5 %, or ``slack`` absolute)."""
    return a >= b * 0.995 - slack if higher else a <= b * 1.005 + slack


#: Between the two ends of a range in the tables.
DASH = "\u2013"


def _cell(v: float | None, spread: list[float] | None) -> str:
    """The median, with the range over the rounds when there was more than one value."""
    if v is None or not spread or fmt(spread[0]) == fmt(spread[1]):
        return fmt(v)
    return f"{fmt(v)} ({fmt(spread[0])}{DASH}{fmt(spread[1])})"


def table(
    med: dict[str, dict[str, dict[str, float | None]]],
    peers: list[str],
    metrics: list[str],
    rows: list[Row] | None = None,
    results: dict[str, dict[str, list[dict[str, Any]]]] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Markdown table of ``rows`` (default: the main rows) for ``metrics``: medians, with the minimum and maximum
    over the measured rounds in parentheses when ``results`` holds more than one round; the ratio to
    Java/Curator likewise (the ratio of the medians, and the range of the per-round ratios)."""
    rows = ROWS if rows is None else rows
    spread = spreads(results) if results else {}
    has_java = "java" in peers and "zkwire" in peers
    has_targets = any(r.java_target is not None for r in rows if r.metric in metrics)
    rivals: list[str] = [p for p in ("kazoo", "aiozk") if p in peers]
    head = ["metric"] + [PEERS[p][1] for p in peers]
    if has_java:
        head += ["zkwire ÷ Java/Curator (range over rounds)"] + (["target vs Java/Curator"] if has_targets else [])
    if "zkwire" in peers and rivals:
        head.append("ahead of " + " & ".join(rivals))
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    verdicts: list[dict[str, Any]] = []
    for row in rows:
        if row.metric not in metrics:
            continue
        vals = {p: med.get(row.metric, {}).get(p, {}).get(row.figure) for p in peers}
        if all(v is None for v in vals.values()):
            continue
        better = "higher" if row.higher_is_better else "lower"
        ranges = {p: spread.get(row.metric, {}).get(p, {}).get(row.figure) for p in peers}
        cells = [f"{row.label} ({row.unit}, {better} is better)"] + [_cell(vals[p], ranges[p]) for p in peers]
        verdict: dict[str, Any] = {"metric": row.metric, "figure": row.figure, "label": row.label}
        if has_java:
            cells += _java_cells(row, vals, results, has_targets, verdict)
        if "zkwire" in peers and rivals:
            cells.append(_rivals_cell(row, vals, rivals, verdict))
        verdicts.append(verdict)
        lines.append("| " + " | ".join(cells) + " |")
    return ("\n".join(lines) if verdicts else ""), verdicts


def _java_cells(
    row: Row,
    vals: dict[str, float | None],
    results: dict[str, dict[str, list[dict[str, Any]]]] | None,
    has_targets: bool,
    verdict: dict[str, Any],
) -> list[str]:
    """The ratio to Java/Curator (and the target's verdict, when the table has targets); notes both in
    ``verdict``."""
    z, j = vals.get("zkwire"), vals.get("java")
    ratio = z / j if z is not None and j is not None and j else None
    per_round = (
        round_ratios(results[row.metric].get("zkwire", []), results[row.metric].get("java", []), row.figure)
        if results and row.metric in results
        else []
    )
    text = f"{ratio:.2f}x" if ratio is not None else "n/a"
    if ratio is not None and len(per_round) > 1:
        text += f" ({min(per_round):.2f}{DASH}{max(per_round):.2f})"
    verdict["ratio_to_java"] = ratio
    verdict["ratio_to_java_per_round"] = per_round
    if not has_targets:
        return [text]
    if row.java_target is None:
        return [text, "—"]
    op, factor = row.java_target
    if ratio is None:
        return [text, f"{op} {factor}x: n/a"]
    met = ratio >= factor if op == ">=" else ratio <= factor
    verdict["java_target"] = f"{op} {factor}"
    verdict["java_target_met"] = met
    return [text, f"{op.replace('>=', '≥').replace('<=', '≤')} {factor}x: {'met' if met else 'MISSED'}"]


def _rivals_cell(row: Row, vals: dict[str, float | None], rivals: list[str], verdict: dict[str, Any]) -> str:
    """Whether zkwire is at least as good as kazoo and aiozk on this row; notes who is ahead in ``verdict``."""
    z = vals.get("zkwire")
    if z is None:
        return "n/a"
    behind = [
        p
        for p in rivals
        if (v := vals.get(p)) is not None and not _better_or_equal(z, v, row.higher_is_better, row.slack)
    ]
    compared = [p for p in rivals if vals.get(p) is not None]
    verdict["behind"] = behind
    return "n/a" if not compared else "yes" if not behind else "NO (" + ", ".join(behind) + ")"


def codec_table(codec: dict[str, Any] | None) -> str:
    if not codec or "results" not in codec:
        return ""
    lines = ["| codec, per message | implementation | µs | x fast path |", "|---|---|---:|---:|"]
    for r in codec["results"]:
        lines.append(
            f"| {r['operation']} | {r['implementation']} | {r['us_per_op']:.2f} | {r['relative_to_fast']:.1f} |"
        )
    return "\n".join(lines)


def chart(med: dict[str, dict[str, dict[str, float | None]]], peers: list[str], png: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no chart (pip install matplotlib, or the project's bench extra)"
    rows = [r for r in ROWS if any(med.get(r.metric, {}).get(p, {}).get(r.figure) is not None for p in peers)]
    if not rows:
        return "nothing to chart"
    cols = 4
    nrows = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    colors = {
        "zkwire": "#d62728",
        "raw": "#7f7f7f",
        "trio": "#bcbd22",
        "least": "#17becf",
        "kazoo": "#1f77b4",
        "aiozk": "#2ca02c",
        "java": "#ff7f0e",
    }
    for ax, row in zip(axes.flat, rows, strict=False):
        names, values, cs = [], [], []
        for p in peers:
            v = med.get(row.metric, {}).get(p, {}).get(row.figure)
            if v is not None:
                names.append(p)
                values.append(v)
                cs.append(colors.get(p, "#999999"))
        ax.bar(names, values, color=cs)
        ax.set_title(
            f"{row.label}\n({row.unit}, {'higher' if row.higher_is_better else 'lower'} is better)", fontsize=8
        )
        ax.tick_params(axis="both", labelsize=7)
    for ax in list(axes.flat)[len(rows) :]:
        ax.axis("off")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)
    return f"chart written to {png}"
