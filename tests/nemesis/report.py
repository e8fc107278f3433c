"""A run's summary: grants, faults by kind, outcomes, the checker's findings and the verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .harness import RunResult

__all__ = ["summary_text", "write_json"]

_SHOWN = 8  # findings listed per check (all are in the JSON)


def _counts(d: dict[Any, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: (-kv[1], str(kv[0])))) or "none"


def _contenders(k: int, sessions: int) -> str:
    if k == 1 and sessions == 1:
        return ""
    return f" x {k} contenders on {sessions} session{'s' if sessions > 1 else ''} each"


def summary_text(r: RunResult) -> str:
    v = r.verdict
    c = r.config
    lines = [
        f"== nemesis {c.recipe}: {c.workers} workers{_contenders(c.contenders_per_worker, c.sessions_per_worker)}, "
        f"{c.duration:g} s of faults, seed {r.seed}, {'membership mode, ' if c.reconfig else ''}"
        f"session timeout {c.session_timeout:g} s (wall {r.wall_time:.1f} s)",
        f"history: {r.run_dir}",
        f"grants: {r.grants} ({_counts(v.holds_by_role)}); per worker: "
        + " ".join(f"w{w}:{n}" for w, n in r.grants_per_worker.items())
        + f"; worker incarnations: {r.incarnations}",
        f"faults: {sum(r.faults.values())} ({_counts(r.faults)})",
    ]
    if r.faults_fired:
        lines.append(f"  rule faults that fired: {_counts(r.faults_fired)}")
    if r.faults_skipped:
        lines.append(f"  skipped (no target): {_counts(r.faults_skipped)}")
    if r.connections:
        lines.append(
            f"connections of the sessions: {r.connections.get('connections', 0)}, "
            f"{r.connections.get('server changes', 0)} to another server than the session's previous one, "
            f"{r.connections.get('servers', 0)} servers in all"
            + (f"; members at the end: {r.members_after}" if c.reconfig else "")
        )
    lines += [
        f"holds ended by: {_counts(v.ended_by)}",
        f"  losses, by the exception that ended the body: {_counts(v.lost_exc)}",
        f"outcomes out of async with / acquire: {_counts(r.outcomes)}",
        f"counter: {v.counter.ok} acknowledged increments, failed {_counts(dict(v.counter.failed))}, "
        f"{v.counter.indeterminate} of unknown outcome ({v.counter.applied_indeterminate} applied); "
        f"final value {r.final.counter_value} at version {r.final.counter_version}",
        f"recovery after the faults: {'every worker granted again' if r.recovered else 'NOT every worker granted'}",
    ]
    if v.excused:
        total = sum(f.data.get("length", 0.0) for f in v.excused)
        lines.append(
            f"overlaps excused (holder frozen by SIGSTOP past its session): {len(v.excused)}, {total:.3f} s in all"
        )
    for title, found in (
        ("losses seen less than T/6 before the next grant (session expired)", v.margins),
        ("lost leases whose async with raised something else than LockLostError", v.reporting),
    ):
        if found:
            lines.append(f"{title}: {len(found)}")
            lines.extend(f"    - {f.message}" for f in found[:_SHOWN])
    lines.append("checker:")
    for name, findings in v.failures.items():
        lines.append(f"  {name}: {len(findings)}")
        for f in findings[:_SHOWN]:
            lines.append(f"    - {f.message}")
        if len(findings) > _SHOWN:
            lines.append(f"    ... {len(findings) - _SHOWN} more in the JSON")
    for note in r.notes:
        lines.append(f"note: {note}")
    for problem in r.problems:
        lines.append(f"RUN PROBLEM: {problem}")
    lines.append(f"verdict: {'PASS' if r.ok else 'FAIL'}")
    return "\n".join(lines)


def write_json(results: list[RunResult], path: Path) -> None:
    data = {"ok": all(r.ok for r in results), "runs": [r.to_json() for r in results]}
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
