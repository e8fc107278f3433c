"""Rules (a) and (b) of the package docstring: unsignalled overlaps of exclusive holds (excused while a holder
was frozen past its session), a semaphore's holders over its leases, and the order of fencing tokens."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from ..history import Record
from .intervals import subtract
from .model import CheckConfig, Finding, Hold, pause_windows

# ------------------------------------------------------------------------------------------ (a)


def _excused_windows(
    cfg: CheckConfig, pauses: dict[int, list[tuple[float, float]]]
) -> dict[int, list[tuple[float, float]]]:
    out: dict[int, list[tuple[float, float]]] = {}
    for pid, windows in pauses.items():
        ex = [(s + cfg.min_expiry, c + cfg.pause_grace) for s, c in windows if c - s >= cfg.min_expiry]
        if ex:
            out[pid] = ex
    return out


def _pieces(holds: Sequence[Hold], excused: dict[int, list[tuple[float, float]]]) -> list[tuple[float, float, Hold]]:
    pieces = []
    for h in holds:
        if h.end <= h.grant_t:
            continue
        for a, b in subtract((h.grant_t, h.end), excused.get(h.pid, [])):
            if b > a:
                pieces.append((a, b, h))
    pieces.sort(key=lambda p: p[0])
    return pieces


def _pair_overlaps(
    pieces: Sequence[tuple[float, float, Hold]], conflicting: Any
) -> dict[tuple[str, str], tuple[float, float, Hold, Hold]]:
    """(first start, last end, a, b) of the overlapping parts of each conflicting pair."""
    found: dict[tuple[str, str], tuple[float, float, Hold, Hold]] = {}
    active: list[tuple[float, float, Hold]] = []
    for a0, a1, ha in pieces:
        active = [p for p in active if p[1] > a0]
        for b0, b1, hb in active:
            if hb is ha or hb.key == ha.key:
                continue
            if not conflicting(ha, hb):
                continue
            lo, hi = max(a0, b0), min(a1, b1)
            if hi <= lo:
                continue
            first, second = (hb, ha) if hb.grant_t <= ha.grant_t else (ha, hb)
            k = (first.key, second.key)
            prev = found.get(k)
            found[k] = (lo, hi, first, second) if prev is None else (min(prev[0], lo), max(prev[1], hi), first, second)
        active.append((a0, a1, ha))
    return found


def conflicting(ha: Hold, hb: Hold) -> bool:
    return ha.exclusive or hb.exclusive


def check_overlaps(
    cfg: CheckConfig, holds: Sequence[Hold], parent: Sequence[Record]
) -> tuple[list[Finding], list[Finding]]:
    """(unsignalled overlaps, excused overlaps)."""
    excused_windows = _excused_windows(cfg, pause_windows(parent))
    if cfg.recipe == "semaphore":
        return _semaphore_excess(cfg, holds, excused_windows)
    real = _pair_overlaps(_pieces(holds, excused_windows), conflicting)
    raw = _pair_overlaps(_pieces(holds, {}), conflicting)
    findings = []
    for lo, hi, a, b in sorted(real.values(), key=lambda v: v[0]):
        findings.append(
            Finding(
                "overlap",
                f"{b.key} granted at {b.grant_t:.3f} while {a.key} still held (until {a.end:.3f}, ended by "
                f"{a.ended_by}): overlap {hi - lo:.3f} s",
                {
                    "start": lo,
                    "length": hi - lo,
                    "first": a.describe(),
                    "second": b.describe(),
                    "first_end": a.ended_by,
                    "tokens": [a.token, b.token],
                },
            )
        )
    excused = []
    for k, (lo, hi, a, b) in sorted(raw.items(), key=lambda kv: kv[1][0]):
        if k in real:
            continue
        excused.append(
            Finding(
                "excused",
                f"{a.key} and {b.key} overlapped {hi - lo:.3f} s while a holder was stopped (SIGSTOP) past its "
                f"session's life; tokens {a.token} < {b.token}"
                if a.token < b.token
                else f"{a.key} and {b.key} overlapped {hi - lo:.3f} s while a holder was stopped (SIGSTOP)",
                {"start": lo, "length": hi - lo, "first": a.describe(), "second": b.describe()},
            )
        )
    return findings, excused


def _semaphore_excess(
    cfg: CheckConfig, holds: Sequence[Hold], excused_windows: dict[int, list[tuple[float, float]]]
) -> tuple[list[Finding], list[Finding]]:
    def segments(pieces: Sequence[tuple[float, float, Hold]]) -> list[tuple[float, float, list[Hold]]]:
        edges = sorted(
            [(a, 1, i) for i, (a, _, _) in enumerate(pieces)] + [(b, -1, i) for i, (_, b, _) in enumerate(pieces)],
            key=lambda e: (e[0], e[1]),
        )
        active: set[int] = set()
        out: list[tuple[float, float, list[Hold]]] = []
        start: float | None = None
        for t, kind, i in edges:
            if kind == 1:
                active.add(i)
                if len(active) > cfg.max_leases and start is None:
                    start = t
            else:
                if len(active) > cfg.max_leases and start is not None:
                    members = [pieces[j][2] for j in active]
                    active.discard(i)
                    if len(active) <= cfg.max_leases:
                        if t > start:
                            out.append((start, t, members))
                        start = None
                else:
                    active.discard(i)
        return out

    real = segments(_pieces(holds, excused_windows))
    raw = segments(_pieces(holds, {}))
    findings = [
        Finding(
            "overlap",
            f"{len(ms)} leases held at once (max {cfg.max_leases}) for {b - a:.3f} s from {a:.3f}",
            {"start": a, "length": b - a, "holders": [h.describe() for h in ms]},
        )
        for a, b, ms in real
    ]
    real_starts = [a for a, _, _ in real]
    excused = [
        Finding(
            "excused",
            f"{len(ms)} leases at once for {b - a:.3f} s while a holder was stopped (SIGSTOP)",
            {"start": a, "length": b - a, "holders": [h.describe() for h in ms]},
        )
        for a, b, ms in raw
        if not any(abs(a - s) < 1e-9 for s in real_starts)
    ]
    return findings, excused


# ------------------------------------------------------------------------------------------ (b)


def check_tokens(cfg: CheckConfig, holds: Sequence[Hold]) -> list[Finding]:
    findings: list[Finding] = []
    seen: dict[int, Hold] = {}
    for h in holds:
        if h.token in seen:
            o = seen[h.token]
            findings.append(
                Finding(
                    "token",
                    f"token {h.token} granted twice: {o.key} and {h.key}",
                    {"token": h.token, "first": o.describe(), "second": h.describe()},
                )
            )
        else:
            seen[h.token] = h
    semaphore = cfg.recipe == "semaphore"
    by_end = sorted(holds, key=lambda h: h.end)
    ends = [h.end for h in by_end]
    # Running maxima of the token over holds sorted by end: of all holds, and of exclusive ones only.
    best_all: list[Hold] = []
    best_excl: list[Hold | None] = []
    cur_all: Hold | None = None
    cur_excl: Hold | None = None
    for h in by_end:
        if cur_all is None or h.token > cur_all.token:
            cur_all = h
        if h.exclusive and (cur_excl is None or h.token > cur_excl.token):
            cur_excl = h
        best_all.append(cur_all)
        best_excl.append(cur_excl)
    for g in holds:
        if g.born_lost:
            continue
        point = g.attempt_t if semaphore else g.grant_lb
        if point is None:
            continue
        i = bisect.bisect_left(ends, point) - 1  # holds that ended strictly before the point
        if i < 0:
            continue
        if semaphore or cfg.recipe == "mutex" or g.exclusive:
            worst: Hold | None = best_all[i]
        else:  # a reader is ordered only after writers
            worst = best_excl[i]
        if worst is None or worst is g or g.token > worst.token:
            continue
        what = "attempt" if semaphore else "grant"
        findings.append(
            Finding(
                "token",
                f"{g.key} granted token {g.token} ({what} at {point:.3f}) after {worst.key} with token {worst.token} "
                f"ended at {worst.end:.3f} ({worst.ended_by})",
                {
                    "grant": g.describe(),
                    "grant_t": g.grant_t,
                    "point": point,
                    "earlier": worst.describe(),
                    "earlier_end": worst.end,
                },
            )
        )
    return findings
