"""Rule (d) of the package docstring, liveness (stalls with workers waiting, less fault time), and the signal
margins and loss reporting of the holds."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Sequence

from ..history import Record
from .exclusion import conflicting
from .intervals import stall_excess, union_length
from .model import CheckConfig, Finding, Hold, pause_windows, process_ends

# ------------------------------------------------------------------------------------------ (d)


def fault_windows(parent: Sequence[Record]) -> list[tuple[float, float]]:
    return [(r["start"], r["end"]) for r in parent if r["ev"] == "fault"]


def waiting_intervals(
    workers: Sequence[Record], parent: Sequence[Record], until: float
) -> list[tuple[float, float, int]]:
    """(start, end, worker) of every wait in acquire (of every contender of a worker)."""
    ends = process_ends(parent)
    open_: dict[tuple[int, int, int], tuple[float, int, int]] = {}  # (w, inc, c) -> (start, pid, session)
    out: list[tuple[float, float, int]] = []
    for r in workers:
        ev = r["ev"]
        k = (r["w"], r["inc"], r.get("c", -1))
        if ev == "attempt":
            open_[k] = (r["t"], r["pid"], r.get("sid", 0))
            continue
        if ev == "exit" or (ev == "session_end" and "c" not in r and "s" not in r):
            closed = [o for o in open_ if o[:2] == k[:2]]  # every wait of the process
        elif ev == "session_end":
            closed = [o for o in open_ if o[:2] == k[:2] and open_[o][2] == r.get("sid", 0)]  # its session's
        elif ev in ("grant", "acquire_fail"):
            closed = [k] if k in open_ else []
        else:
            continue
        for o in closed:
            t0, _, _ = open_.pop(o)
            out.append((t0, r["t"], r["w"]))
    for (w, _inc, _c), (t0, pid, _) in open_.items():
        out.append((t0, min(ends.get(pid, until), until), w))
    return out


def check_liveness(cfg: CheckConfig, workers: Sequence[Record], parent: Sequence[Record]) -> list[Finding]:
    phases: dict[str, float] = {r["name"]: r["t"] for r in parent if r["ev"] == "phase"}
    start: float = phases.get("running", workers[0]["t"] if workers else 0.0)
    stop: float = phases.get("stopping", workers[-1]["t"] if workers else 0.0)
    grants = sorted(r["t"] for r in workers if r["ev"] == "grant" and start <= r["t"] <= stop)
    waits = sorted(
        (max(a, start), min(b, stop)) for a, b, _ in waiting_intervals(workers, parent, stop) if b > start and a < stop
    )
    # merge the waits into periods during which someone waited
    merged: list[list[float]] = []
    for a, b in waits:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    faults = fault_windows(parent)
    edges = [start, *grants, stop]
    findings = []
    for a, b in merged:
        # split the waiting period at every grant inside it
        i = bisect.bisect_right(edges, a)
        lo = a
        for g in [*edges[i:], math.inf]:
            hi = min(g, b)
            excess = stall_excess(lo, hi, faults, cfg.bound)
            if excess > 0:
                fault_time = union_length(faults, lo, hi)
                findings.append(
                    Finding(
                        "liveness",
                        f"no grant for {hi - lo:.1f} s from {lo:.3f} while workers waited "
                        f"({fault_time:.1f} s of it under faults; bound {cfg.bound:.1f} s)",
                        {"start": lo, "end": hi, "length": hi - lo, "fault_time": fault_time},
                    )
                )
            if g >= b:
                break
            lo = g
    return findings


# ------------------------------------------------------------------------------------------ signal margins


def check_signal_margins(
    cfg: CheckConfig, holds: Sequence[Hold], workers: Sequence[Record], parent: Sequence[Record]
) -> list[Finding]:
    """Informational: losses signalled barely before the next conflicting grant.

    When a holder's session expires on the server, its client should have given up the lease about T/3
    earlier (it stops trusting a silent connection after 2T/3; the server expires the session after T).
    Listed: a loss seen less than T/6 before someone else's grant, where that session's next event was
    its expiry (no grant to it in between) and its process was not stopped meanwhile -- the holder
    learnt of the loss from the expiry itself: it won the race, but only just.
    """
    expired_at = {r["sid"]: r["t"] for r in workers if r["ev"] == "session_end" and r.get("state") == "expired"}
    grants = sorted(holds, key=lambda h: h.grant_t)
    times = [g.grant_t for g in grants]
    by_session: dict[int, list[float]] = defaultdict(list)
    for g in grants:
        by_session[g.session].append(g.grant_t)
    pauses = pause_windows(parent)
    out = []
    for h in holds:
        if h.lost_t is None or h.end != h.lost_t or h.session not in expired_at:
            continue
        expiry = expired_at[h.session]
        if expiry < h.lost_t or any(h.lost_t < t <= expiry for t in by_session[h.session]):
            continue  # the session went on after this loss: it expired later, for another reason
        if any(s < h.lost_t and c > h.grant_t for s, c in pauses.get(h.pid, ())):
            continue  # stopped by SIGSTOP: see the excused overlaps
        i = bisect.bisect_right(times, h.grant_t)
        nxt = next((g for g in grants[i:] if g.session != h.session and conflicting(h, g)), None)
        if nxt is None:
            continue
        margin = nxt.grant_t - h.lost_t
        if margin < cfg.session_timeout / 6:
            out.append(
                Finding(
                    "margin",
                    f"{h.key} saw its loss only {margin * 1000:.0f} ms before {nxt.key} was granted "
                    f"(its session then expired; expected about T/3 = {cfg.session_timeout / 3:.2f} s earlier)",
                    {"hold": h.describe(), "next": nxt.describe(), "margin": margin, "lost_t": h.lost_t},
                )
            )
    return out


def check_loss_reporting(holds: Sequence[Hold]) -> list[Finding]:
    """Informational: a lost lease whose ``async with`` ended with something else than LockLostError."""
    out = []
    for h in holds:
        if h.lost_t is not None and h.outcome not in (None, "LockLostError") and h.release_t is None:
            out.append(
                Finding(
                    "reporting",
                    f"{h.key}: lease lost ({h.lost_exc or 'no exception'} in the body) but async with raised "
                    f"{h.outcome}, not LockLostError",
                    {"hold": h.describe(), "outcome": h.outcome},
                )
            )
    return out
