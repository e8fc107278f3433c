"""Jittered exponential back-off, the one schedule of waits in zkwire: between connection attempts
(:class:`~zkwire.sansio.hosts.HostRotation`), between retries of a request (:mod:`zkwire.client.retry`) and
between sessions (:func:`zkwire.sessions`).

Randomness comes from the generator a :class:`Backoff` is given, never from the ``random`` module's
global one: a test passes a seeded :class:`random.Random` and gets the same waits every run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

__all__ = ["Backoff", "SHARED_RNG"]

#: The generator used when none is given: one for the whole process (a generator costs 2.5 KiB, too much
#: to have one per session), private to zkwire.
SHARED_RNG = random.Random()


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits that grow by ``multiplier`` from ``initial`` to at most ``maximum`` seconds, jittered.

    The wait after ``n`` earlier failures in a row (``n`` from 0) is drawn uniformly from
    ``[cap * (1 - jitter), cap]``, where ``cap = min(maximum, initial * multiplier ** n)``.  With
    ``jitter=1`` ("full jitter") it is anything from 0 to the cap; with ``0.5`` it is at least half the
    cap, so waits still grow while clients that failed together do not come back together.
    """

    initial: float
    maximum: float
    multiplier: float = 2.0
    jitter: float = 0.5
    rng: random.Random = field(default=SHARED_RNG, repr=False, compare=False)

    def cap(self, n: int) -> float:
        """The longest wait after ``n`` failures in a row."""
        try:
            grown = self.initial * self.multiplier**n
        except OverflowError:  # far past the maximum
            return self.maximum
        return min(self.maximum, grown)

    def delay(self, n: int, at_most: float = math.inf) -> float:
        """A wait after ``n`` failures in a row, drawn from :attr:`rng`; ``at_most`` lowers the cap."""
        cap = min(self.cap(n), at_most)
        return self.rng.uniform(cap * (1.0 - self.jitter), cap)
