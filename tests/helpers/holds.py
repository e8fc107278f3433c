"""Hold intervals of contenders on one lock, recorded by every side of an interoperability test (zklock
tasks, kazoo threads, Curator processes; one machine, one wall clock), and the checks on them.

A hold's interval starts right after its grant and ends right before its release, so the intervals of
holders that exclude each other never overlap.  Kinds: ``x`` exclusive, ``s`` shared, ``l`` a lease.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field


def now_us() -> int:
    return time.time_ns() // 1000


@dataclass(frozen=True)
class Hold:
    side: str
    kind: str
    start: int
    end: int


@dataclass
class Holds:
    holds: list[Hold] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, side: str, kind: str, start: int, end: int) -> None:
        assert kind in ("x", "s", "l") and end >= start
        with self._lock:
            self.holds.append(Hold(side, kind, start, end))

    def add_java_output(self, side: str, output: str) -> int:
        """Adds the ``HOLD kind start end`` lines of a Curator worker; returns its ``DONE`` conflict count."""
        conflicts = None
        for line in output.splitlines():
            words = line.split()
            if words[:1] == ["HOLD"]:
                self.add(side, words[1], int(words[2]), int(words[3]))
            elif words[:1] == ["DONE"]:
                conflicts = int(words[1])
        assert conflicts is not None, output
        return conflicts

    def count(self, side: str) -> int:
        return sum(1 for h in self.holds if h.side == side)

    def overlaps(self, leases: int | None = None) -> list[tuple[Hold, Hold]]:
        """Pairs of holds that must not have overlapped: an exclusive hold with any other, a shared hold
        with an exclusive one.  With ``leases``, lease holds are checked by :meth:`most_at_once` instead."""
        bad = []
        ordered = sorted(self.holds, key=lambda h: h.start)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                if b.start >= a.end:
                    break
                if a.kind == "l" and b.kind == "l":
                    continue
                if "x" in (a.kind, b.kind):
                    bad.append((a, b))
        return bad

    def most_at_once(self, kind: str = "l") -> int:
        """The largest number of holds of ``kind`` whose intervals overlap at one instant."""
        events = sorted(
            [(h.start, 1) for h in self.holds if h.kind == kind] + [(h.end, -1) for h in self.holds if h.kind == kind],
            key=lambda e: (e[0], e[1]),  # an end before a start at the same instant
        )
        most = current = 0
        for _, delta in events:
            current += delta
            most = max(most, current)
        return most

    def shared_overlaps_across(self) -> int:
        """How many pairs of shared holds of different sides overlapped (readers sharing the lock)."""
        shared = sorted((h for h in self.holds if h.kind == "s"), key=lambda h: h.start)
        n = 0
        for i, a in enumerate(shared):
            for b in shared[i + 1 :]:
                if b.start >= a.end:
                    break
                n += a.side != b.side
        return n

    def switches(self) -> int:
        """How often the side changes between consecutive grants: above 1 only if the sides really took
        turns (neither finished before the other started)."""
        sides = [h.side for h in sorted(self.holds, key=lambda h: h.start)]
        return sum(1 for a, b in itertools.pairwise(sides) if a != b)
