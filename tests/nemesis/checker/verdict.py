"""The verdict: every rule over a run's histories, the findings annotated with what happened before them."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..history import Record
from .counter import CounterStats, check_counter
from .exclusion import check_overlaps, check_tokens
from .liveness import check_liveness, check_loss_reporting, check_signal_margins
from .model import CheckConfig, FinalState, Finding, build_holds

# ------------------------------------------------------------------------------------------ verdict


@dataclass
class Verdict:
    config: CheckConfig
    holds: int = 0
    holds_by_role: dict[str, int] = field(default_factory=dict)
    ended_by: dict[str, int] = field(default_factory=dict)
    lost_exc: dict[str, int] = field(default_factory=dict)
    counter: CounterStats = field(default_factory=CounterStats)
    overlaps: list[Finding] = field(default_factory=list)
    excused: list[Finding] = field(default_factory=list)
    tokens: list[Finding] = field(default_factory=list)
    counter_findings: list[Finding] = field(default_factory=list)
    liveness: list[Finding] = field(default_factory=list)
    stuck: list[Finding] = field(default_factory=list)
    ghosts: list[Finding] = field(default_factory=list)
    orphans: list[Finding] = field(default_factory=list)
    #: Informational, not failures: late loss signals, losses reported as another exception.
    margins: list[Finding] = field(default_factory=list)
    reporting: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> dict[str, list[Finding]]:
        return {
            "unsignalled overlaps": self.overlaps,
            "token-order violations": self.tokens,
            "lost updates": self.counter_findings,
            "stuck locks": self.liveness + self.stuck,
            "ghost nodes": self.ghosts,
            "orphan nodes": self.orphans,
        }

    @property
    def ok(self) -> bool:
        return not any(self.failures.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "holds": self.holds,
            "holds_by_role": self.holds_by_role,
            "ended_by": self.ended_by,
            "lost_exceptions": self.lost_exc,
            "counter": self.counter.to_json(),
            "failures": {k: [f.to_json() for f in v] for k, v in self.failures.items()},
            "excused_overlaps": [f.to_json() for f in self.excused],
            "late_loss_signals": [f.to_json() for f in self.margins],
            "loss_reported_otherwise": [f.to_json() for f in self.reporting],
            "notes": self.notes,
        }


def _annotate(findings: Iterable[Finding], parent: Sequence[Record], lookback: float) -> None:
    """Name the faults active around each finding's time (from ``lookback`` before it to just after)."""
    faults = [r for r in parent if r["ev"] == "fault"]
    for f in findings:
        t = next((f.data[k] for k in ("start", "lost_t", "point") if isinstance(f.data.get(k), float)), None)
        if t is None:
            continue
        near = [f"{r['kind']}({r.get('target')})" for r in faults if r["start"] <= t + 0.5 and r["end"] >= t - lookback]
        f.data["faults"] = near
        if near:
            f.message += f" [faults: {', '.join(near)}]"


def check(cfg: CheckConfig, workers: Sequence[Record], parent: Sequence[Record], final: FinalState) -> Verdict:
    """All checks over one run (worker records sorted by time, parent records sorted by time)."""
    holds = build_holds(workers, parent)
    v = Verdict(cfg, holds=len(holds))
    v.holds_by_role = dict(Counter(h.role for h in holds))
    v.ended_by = dict(Counter(h.ended_by for h in holds))
    v.lost_exc = dict(
        Counter(h.lost_exc or f"none, seen by {h.lost_via or '?'}" for h in holds if h.lost_t is not None)
    )
    v.overlaps, v.excused = check_overlaps(cfg, holds, parent)
    v.tokens = check_tokens(cfg, holds)
    v.counter_findings, v.counter = check_counter(workers, parent, final)
    v.liveness = check_liveness(cfg, workers, parent)
    v.margins = check_signal_margins(cfg, holds, workers, parent)
    v.reporting = check_loss_reporting(holds)
    _annotate([*v.overlaps, *v.excused, *v.tokens, *v.liveness, *v.margins], parent, cfg.session_timeout * 1.5)
    for r in parent:
        if r["ev"] == "stuck":
            v.stuck.append(Finding("liveness", r.get("message", "stuck"), {k: r[k] for k in r if k not in ("ev",)}))
        elif r["ev"] == "ghost":
            v.ghosts.append(Finding("ghost", r.get("message", "ghost"), {k: r[k] for k in r if k not in ("ev",)}))
    for n in final.closed_session_nodes:
        v.orphans.append(
            Finding(
                "orphan",
                f"{n.get('path')} owned by 0x{n.get('owner', 0):x}, a session its worker "
                "closed while connected, was still there after shutdown",
                n,
            )
        )
    for n in final.leftover_nodes:
        v.orphans.append(
            Finding("orphan", f"{n.get('path')} (owner 0x{n.get('owner', 0):x}) left after every session ended", n)
        )
    open_holds = [h for h in holds if h.end == math.inf]
    if open_holds:
        v.notes.append(
            f"{len(open_holds)} hold(s) without an end record or process end: {[h.key for h in open_holds][:5]}"
        )
    return v
