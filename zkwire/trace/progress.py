"""Progress of a long ``zkwire decode`` on a terminal: bytes read of the file's size and frames per second,
rewritten in place on stderr about twice a second, and nothing at all when stderr is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

#: Frames between two looks at the clock (a look costs more than a frame's share of the work).
_CHECK_EVERY = 2048


class Progress:
    """Call :meth:`frame` for each frame, :meth:`done` at the end.  ``out`` (default stderr) is written to
    only when it is a terminal; ``interval`` seconds pass between updates, and none is shown before the
    first interval (a short read shows nothing)."""

    __slots__ = ("_countdown", "_last", "_shown", "_started", "frames", "interval", "out", "position", "total")

    def __init__(
        self, total: int, position: object = None, *, out: TextIO | None = None, interval: float = 0.5
    ) -> None:
        self.out = out if out is not None else sys.stderr
        self.total = total
        #: What tells how many bytes were read: a file object (its ``tell()``), or None.
        self.position = position if _is_tty(self.out) else None
        self.interval = interval
        self.frames = 0
        self._countdown = _CHECK_EVERY
        self._started = self._last = time.monotonic()
        self._shown = False

    @property
    def active(self) -> bool:
        return self.position is not None

    def frame(self) -> None:
        self.frames += 1
        self._countdown -= 1
        if self._countdown > 0 or self.position is None:
            return
        self._countdown = _CHECK_EVERY
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self._show(now)

    def _show(self, now: float) -> None:
        tell = getattr(self.position, "tell", None)
        done = int(tell()) if callable(tell) else 0
        share = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        rate = self.frames / max(now - self._started, 1e-9)
        text = f"{_size(done)} of {_size(self.total)}{share}, {rate:,.0f} frames/s"
        self.out.write("\r" + text + "\x1b[K")
        self.out.flush()
        self._shown = True

    def done(self) -> None:
        """Clear the progress line (if one was shown)."""
        if self._shown:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self._shown = False


def _size(n: int) -> str:
    """``12.3 MB``: a byte count to read at a glance."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _is_tty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False
