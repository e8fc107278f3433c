"""``zkwire sniff``'s loop: segments from a :class:`~zkwire.trace.sniff.Sniffer`, decoded as a capture
is (:class:`~zkwire.trace.conversations.CaptureDecoder`), shown through the tracer's output.

The kernel's counts go with the summary (a ``capture:`` line: packets read, kernel drops), printed on
exit and on SIGUSR1.  The moment the kernel starts dropping, one line on stderr says so ("kernel dropped
N packets: the figures below are partial"), again at most every :data:`WARN_EVERY` seconds while the
count grows; and, when the ring is half full or more, that decoding is behind.  ``before_decode``
(tests) is called before each segment is decoded.
"""

from __future__ import annotations

import math
import signal
import sys
import time
from collections.abc import Callable
from typing import TextIO

import trio

from ..shell.runtime import EXIT_INTERRUPTED
from ..terminal import escape_controls
from .capture import CaptureError, TcpSegment
from .conversations import CaptureDecoder
from .output import TraceOptions, show_event
from .sniff import Sniffer, open_sniffer

__all__ = ["BehindWarning", "DropWarning", "WARN_EVERY", "capture_counts", "sniff_command", "sniff_into"]

#: Least seconds between two warnings about kernel drops.
WARN_EVERY = 5.0


class _Warning:
    """A line on ``err`` (default: stderr), at most every ``every`` seconds."""

    def __init__(self, err: TextIO | None = None, every: float = WARN_EVERY) -> None:
        self.err = err
        self.every = every
        self._last = -math.inf

    def _say(self, text: str) -> bool:
        now = time.monotonic()
        if now - self._last < self.every:
            return False
        self._last = now
        err = self.err if self.err is not None else sys.stderr
        err.write(f"zkwire sniff: {text}\n")
        err.flush()
        return True


class DropWarning(_Warning):
    """Says when the kernel starts dropping, then again (at most every ``every`` seconds) as it goes on."""

    warned = 0

    def __call__(self, dropped: int) -> None:
        if dropped > self.warned and self._say(f"kernel dropped {dropped} packets: the figures below are partial"):
            self.warned = dropped


class BehindWarning(_Warning):
    """Says that decoding is behind the capture (the ring half full or more): drops come next."""

    def __call__(self, full: float) -> None:
        self._say(f"decoding is behind the capture: the ring is {full:.0%} full (the kernel drops when it is full)")


def capture_counts(sniffer: Sniffer) -> dict[str, int]:
    """The counts the summary shows for a live capture (reads the kernel's drop counter)."""
    sniffer.update_counts()
    return {
        "packets": sniffer.packets,
        "segments": sniffer.matched,
        "kernel_dropped": sniffer.dropped,
        "buffer_bytes": sniffer.buffer_bytes,
        "ring": int(sniffer.ring),
        "ring_full_percent": round(sniffer.backlog() * 100),
    }


async def sniff_into(
    sniffer: Sniffer,
    decoder: CaptureDecoder,
    options: TraceOptions,
    before_decode: Callable[[TcpSegment], object] | None = None,
    *,
    idle: float | None = None,
) -> None:
    """Decode and show what ``sniffer`` captures, until cancelled (or ``idle`` seconds without any)."""
    async for segment in sniffer.segments(idle):
        if before_decode is not None:
            before_decode(segment)
        for event in decoder.add(segment):
            show_event(options, event)


def _summary(options: TraceOptions, sniffer: Sniffer, *, always: bool = False) -> None:
    if options.stats is not None:
        options.stats.capture = capture_counts(sniffer)
    options.summary(always=always)


async def sniff_command(
    iface: str,
    ports: list[int],
    options: TraceOptions,
    duration: float | None,
    ring_bytes: int = 0,
    reading: str = "fast",
    only_ops: frozenset[int] | None = None,
) -> int:
    """``zkwire sniff``: decode live traffic on ``iface`` until Ctrl-C (or ``duration`` seconds).
    ``reading`` and ``only_ops``: how records are read (:class:`~zkwire.trace.conversations.CaptureDecoder`)."""
    try:
        sniffer = open_sniffer(iface, ports, ring_bytes=ring_bytes)
    except CaptureError as e:
        print(escape_controls(f"zkwire sniff: {e}"), file=sys.stderr)
        return 1
    sniffer.on_drops = DropWarning()
    sniffer.on_behind = BehindWarning()
    decoder = CaptureDecoder(ports, reading=reading, only_ops=only_ops)
    code = EXIT_INTERRUPTED
    which = f"TCP port {','.join(map(str, ports))}" if ports else "ZooKeeper traffic (ports detected)"
    how = f"{sniffer.buffer_bytes >> 20} MiB ring" if sniffer.ring else "one read per packet"
    started = f"sniffing {which} on {iface} ({how}); Ctrl-C stops"
    if options.show_frames:
        options.note(0, started)
    else:  # only the summary goes to the output: say on stderr that it has started
        print(escape_controls(f"zkwire sniff: {started}, SIGUSR1 prints the summary so far"), file=sys.stderr)
    with sniffer, trio.open_signal_receiver(signal.SIGINT, signal.SIGUSR1) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sniff_into, sniffer, decoder, options)
            with trio.move_on_after(duration if duration is not None else math.inf) as timer:
                async for signum in signals:
                    if signum != signal.SIGUSR1:
                        break
                    _summary(options, sniffer, always=True)
            if timer.cancelled_caught:
                code = 0
            nursery.cancel_scope.cancel()
        with trio.move_on_after(options.drain_seconds):  # what the kernel holds already
            await sniff_into(sniffer, decoder, options, idle=0.2)  # > the block timeout
        for event in decoder.finish():
            if event.kind != "close":  # connections still open when sniffing stops are not closed
                show_event(options, event)
        _summary(options, sniffer)
    return code
