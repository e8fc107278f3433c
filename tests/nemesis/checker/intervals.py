"""Time intervals: the length of a union of windows inside a span, and a stall's length less its fault time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# ------------------------------------------------------------------------------------------ intervals


def union_length(windows: Iterable[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``windows`` clipped to ``[lo, hi]``."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in windows if b > lo and a < hi)
    total = 0.0
    cur_a, cur_b = None, None
    for a, b in clipped:
        if b <= a:
            continue
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_a is not None and cur_b is not None:
        total += cur_b - cur_a
    return total


def stall_excess(start: float, now: float, fault_windows: Iterable[tuple[float, float]], bound: float) -> float:
    """How far a stall from ``start`` to ``now`` exceeds ``bound`` once fault time is taken out (> 0: stuck)."""
    return (now - start) - union_length(fault_windows, start, now) - bound


def subtract(interval: tuple[float, float], holes: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    pieces = [interval]
    for h0, h1 in holes:
        nxt = []
        for a, b in pieces:
            if h1 <= a or h0 >= b:
                nxt.append((a, b))
                continue
            if a < h0:
                nxt.append((a, h0))
            if h1 < b:
                nxt.append((h1, b))
        pieces = nxt
    return pieces
