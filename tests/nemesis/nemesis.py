"""The scheduler: one fault at a time, chosen at random (seeded), separated by quiet gaps, until a deadline.

The seed fixes the sequence of fault kinds, their durations and the random choices among candidate
targets; which worker is a candidate (who holds the lock at that instant) depends on timing, so a
replay with ``--seed`` repeats the plan, not every interleaving.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping

import trio

from .faults import FAULTS, FaultContext, max_duration
from .history import ParentLog

__all__ = ["Nemesis"]


class Nemesis:
    def __init__(
        self,
        ctx: FaultContext,
        log: ParentLog,
        weights: Mapping[str, float],
        rng: random.Random,
        gap: tuple[float, float] = (0.5, 2.0),
        max_per_kind: Mapping[str, int] | None = None,
    ) -> None:
        unknown = set(weights) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault kinds: {sorted(unknown)} (known: {sorted(FAULTS)})")
        self.ctx = ctx
        self.log = log
        self.weights = {k: w for k, w in weights.items() if w > 0}
        self.rng = rng
        self.gap = gap
        self.max_per_kind = dict(max_per_kind or {})
        self.counts: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.fired: Counter[str] = Counter()  #: rule-based faults whose rule actually fired
        self.done: list[tuple[float, float]] = []
        self.active_since: float | None = None
        self.active_kind: str | None = None

    def windows(self, now: float | None = None) -> list[tuple[float, float]]:
        """Time windows of the faults so far, the one in progress ending ``now``."""
        out = list(self.done)
        if self.active_since is not None:
            out.append((self.active_since, time.monotonic() if now is None else now))
        return out

    def _choose(self, remaining: float) -> str | None:
        kinds = [
            k
            for k in self.weights
            if self.counts[k] < self.max_per_kind.get(k, 1 << 30)
            and max_duration(k, self.ctx.session_timeout) <= remaining
        ]
        if not kinds:
            return None
        return self.rng.choices(kinds, weights=[self.weights[k] for k in kinds])[0]

    async def run(self, deadline: float) -> None:
        """Apply faults until ``deadline`` (time.monotonic()): a fault starts only if it can end by then."""
        while True:
            gap = self.rng.uniform(*self.gap)
            if time.monotonic() + gap >= deadline:
                break
            await trio.sleep(gap)
            kind = self._choose(deadline - time.monotonic())
            if kind is None:
                await trio.sleep(max(0.0, deadline - time.monotonic()))
                break
            start = time.monotonic()
            self.active_since, self.active_kind = start, kind
            try:
                details = await FAULTS[kind](self.ctx)
            finally:
                end = time.monotonic()
                self.active_since = self.active_kind = None
            if details is None:
                self.skipped[kind] += 1
                continue
            self.counts[kind] += 1
            if details.get("fired"):
                self.fired[kind] += 1
            self.done.append((start, end))
            self.log.write("fault", t=start, kind=kind, start=start, end=end, **details)
