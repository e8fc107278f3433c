"""Rule (c) of the package docstring: the counter the workers increment while holding the lock."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..history import Record
from .model import FinalState, Finding

#: Exceptions after which a counter write's outcome is unknown.
INDETERMINATE = frozenset({"ConnectionLossError", "SessionExpiredError", "Cancelled", "ClientClosedError"})


# ------------------------------------------------------------------------------------------ (c)


@dataclass
class CounterStats:
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    indeterminate: int = 0
    applied_indeterminate: int = 0
    reads: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failed": dict(self.failed),
            "indeterminate": self.indeterminate,
            "applied_indeterminate": self.applied_indeterminate,
        }


def check_counter(
    workers: Sequence[Record], parent: Sequence[Record], final: FinalState
) -> tuple[list[Finding], CounterStats]:
    stats = CounterStats()
    findings: list[Finding] = []
    oks: list[Record] = []
    pending: dict[tuple[int, int, int, int], Record] = {}  # inc_write without an outcome yet
    unknown: list[Record] = []  # writes of unknown outcome
    for r in workers:
        ev = r["ev"]
        key = (r["w"], r["inc"], r.get("c", -1), r.get("cycle", -1))
        if ev == "inc_write":
            pending[key] = r
        elif ev == "inc_ok":
            pending.pop(key, None)
            oks.append(r)
        elif ev == "inc_fail":
            if r.get("stage") == "write":
                w = pending.pop(key, None)
                if r.get("indeterminate"):
                    unknown.append(w if w is not None else r)
            stats.failed[r.get("err", "?")] += 1
    unknown.extend(pending.values())  # never answered: the process was killed or the record lost
    stats.ok = len(oks)
    stats.indeterminate = len(unknown)

    by_version: dict[int, Record] = {}
    for r in oks:
        if r["value"] != r["version"]:
            findings.append(
                Finding(
                    "counter", f"lost update: w{r['w']} wrote {r['value']} at version {r['version']}", {"record": r}
                )
            )
        if r["version"] in by_version:
            o = by_version[r["version"]]
            findings.append(
                Finding(
                    "counter",
                    f"two acknowledged writes produced version {r['version']}: "
                    f"w{o['w']} value {o['value']} and w{r['w']} value {r['value']}",
                    {"a": o, "b": r},
                )
            )
        by_version[r["version"]] = r

    # Real-time order: a write whose read began after another write was acknowledged must come later.
    acked = sorted(oks, key=lambda r: r["t"])
    acked_t = [r["t"] for r in acked]
    prefix_max: list[Record] = []
    for r in acked:
        prefix_max.append(r if not prefix_max or r["value"] > prefix_max[-1]["value"] else prefix_max[-1])
    for r in oks:
        i = bisect.bisect_left(acked_t, r["t0"]) - 1
        if i >= 0 and prefix_max[i]["value"] >= r["value"]:
            o = prefix_max[i]
            findings.append(
                Finding(
                    "counter",
                    f"stale write: w{r['w']} wrote {r['value']} from a read sent at {r['t0']:.3f}, after "
                    f"w{o['w']}'s write of {o['value']} was acknowledged at {o['t']:.3f}",
                    {"write": r, "earlier": o},
                )
            )

    if final.counter_value is not None and final.counter_version is not None:
        if final.counter_value != final.counter_version:
            findings.append(
                Finding(
                    "counter",
                    f"final value {final.counter_value} != final version {final.counter_version}: an update was lost",
                    {},
                )
            )
        expected_by_version: dict[int, int] = Counter(
            int(r["expected_version"]) + 1 for r in unknown if r.get("expected_version") is not None
        )
        phantom = []
        for v in range(1, final.counter_version + 1):
            if v in by_version:
                continue
            if expected_by_version.get(v):
                stats.applied_indeterminate += 1
            else:
                phantom.append(v)
        beyond = [v for v in by_version if v > final.counter_version]
        if phantom:
            findings.append(
                Finding(
                    "counter",
                    f"{len(phantom)} applied write(s) nobody attempted with an unknown "
                    f"outcome (versions {phantom[:10]})",
                    {"versions": phantom},
                )
            )
        if beyond:
            findings.append(
                Finding(
                    "counter",
                    f"acknowledged versions beyond the final version {final.counter_version}: {sorted(beyond)[:10]}",
                    {"versions": beyond},
                )
            )
        if final.counter_value < stats.ok:
            findings.append(
                Finding(
                    "counter",
                    f"final value {final.counter_value} < {stats.ok} acknowledged increments: lost updates",
                    {},
                )
            )
    return findings, stats
