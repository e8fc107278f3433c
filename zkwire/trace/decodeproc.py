"""The tracing proxy's decoding process: decoding, filtering, counting and printing, in an interpreter
of its own, so that decoding a large frame never holds up forwarding
(:mod:`~zkwire.trace.worker` starts it and feeds it).

It reads jobs from its standard input, each a :data:`JOB` header (kind, connection, direction, the
forwarding path's clock when the bytes were read, the wall clock, a size) and, for some kinds, that
many bytes.  The first job is the configuration (kind ``C``, a pickle of :func:`options_config`).
Output goes straight to the file descriptor the configuration names, or, when there is none (a
:class:`io.StringIO` in the proxy's process), back through its standard output as :data:`RESULT`
messages of kind ``T``.  Kind ``S`` of those carries the statistics at the end, ``X`` an output failure
(``EPIPE``: the output pipe was closed; anything else: its text).  Kind ``E`` of the jobs ends it;
SIGUSR2 makes it skip what is still queued before that (the proxy stops and cannot wait longer).

    python -m zkwire.trace.decodeproc   (started by the proxy, never by hand)
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import Any, BinaryIO

from .decoder import ConversationDecoder
from .frames import CLIENT, SERVER, DecodedFrame, Direction
from .output import FdWriter, TraceOptions
from .stats import TraceStats

__all__ = ["JOB", "NICENESS", "RESULT", "main", "options_config", "stats_state"]

#: Job header: kind, connection, direction (0 client, 1 server; ``S``: 1 to print even if empty),
#: clock when read (the connection's own, seconds), wall clock, size.
JOB = struct.Struct("=BIBddI")
#: Result header: kind, size of what follows.
RESULT = struct.Struct("=BI")
DIRECTIONS: tuple[Direction, Direction] = (CLIENT, SERVER)
#: Job kinds that carry ``size`` bytes after their header.
WITH_PAYLOAD = frozenset(b"CNOD")


def options_config(options: TraceOptions, out_fd: int | None, reading: str = "fast") -> bytes:
    """What the decoding process needs of ``options`` (and the descriptor it writes to, if any, and how
    it reads records: one of :data:`~zkwire.trace.decoder.READINGS`)."""
    config: dict[str, Any] = {
        "verbose": options.verbose,
        "json_lines": options.json_lines,
        "hide_pings": options.hide_pings,
        "reveal_secrets": options.reveal_secrets,
        "max_line": options.max_line,
        "frame_filter": options.frame_filter,
        "stats_depth": options.stats.depth if options.stats is not None else None,
        "stats": options.stats is not None,
        "show_frames": options.show_frames,
        "session_view": options.session_view,
        "stats_json": options.stats_json,
        "out_fd": out_fd,
        "reading": reading,
    }
    return pickle.dumps(config)


def stats_state(stats: TraceStats) -> dict[str, Any]:
    """A :class:`TraceStats`'s figures (without its lock), to be set on another one."""
    return {k: v for k, v in vars(stats).items() if k != "_lock"}


class _ResultWriter:
    """Text sent back to the proxy as ``T`` results (when it has no descriptor to write to)."""

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "backslashreplace")
        _send(b"T", data)
        return len(text)

    def flush(self) -> None:
        pass


def _send(kind: bytes, data: bytes) -> None:
    view = memoryview(RESULT.pack(kind[0], len(data)) + data)
    while view:
        view = view[os.write(1, view) :]


class _Decoding:
    def __init__(self, config: dict[str, Any]) -> None:
        out_fd = config["out_fd"]
        self.options = TraceOptions(
            verbose=config["verbose"],
            json_lines=config["json_lines"],
            hide_pings=config["hide_pings"],
            reveal_secrets=config["reveal_secrets"],
            out=FdWriter(out_fd) if out_fd is not None else _ResultWriter(),  # type: ignore[arg-type]
            max_line=config["max_line"],
            frame_filter=config["frame_filter"],
            stats=TraceStats(depth=config["stats_depth"]) if config["stats"] else None,
            show_frames=config["show_frames"],
            session_view=config["session_view"],
            stats_json=config["stats_json"],
        )
        self.reading: str = config["reading"]
        self.only_ops = self.options.only_ops()
        if self.reading == "verify" and self.options.stats is not None:
            self.options.stats.verified = 0
        self.decoders: dict[int, ConversationDecoder] = {}
        self.broken: set[int] = set()

    def job(self, kind: int, conn: int, direction: Direction, now: float, wall: float, size: int, data: bytes) -> None:
        options = self.options
        if kind == ord("N"):
            options.note(conn, data.decode("utf-8", "replace"), wall)
        elif kind == ord("O"):
            options.open_connection(conn, data.decode("utf-8", "replace"))
            self.decoders[conn] = ConversationDecoder(reading=self.reading, only_ops=self.only_ops)
        elif kind == ord("S"):
            options.summary(always=direction == SERVER)
        elif kind in (ord("D"), ord("K"), ord("F")):
            for frame in self._decode(kind, conn, direction, now, wall, size, data):
                options.emit(conn, frame, wall)
            if kind == ord("F"):
                options.note(conn, "closed", wall)
                options.close_connection(conn)
                self.decoders.pop(conn, None)
                self.broken.discard(conn)

    def _decode(
        self, kind: int, conn: int, direction: Direction, now: float, wall: float, size: int, data: bytes
    ) -> list[DecodedFrame]:
        decoder = self.decoders.get(conn)
        if decoder is None or conn in self.broken:
            return []
        try:
            if kind == ord("D"):
                return decoder.feed(direction, data, now)
            if kind == ord("K"):
                return decoder.skip(direction, size, now, reason="not decoded: decoding fell behind")
            return decoder.finish(now)
        except Exception as e:  # a decoder bug must not stop the tracer
            self.broken.add(conn)
            # Its name only: an error's text may quote the bytes it met, a secret's among them.
            note = f"decoder error: {type(e).__name__}; the rest of this connection is not decoded"
            self.options.note(conn, note, wall)
            return []


def _jobs(stream: BinaryIO) -> Any:
    while True:
        head = stream.read(JOB.size)
        if len(head) < JOB.size:
            return
        kind, conn, direction, now, wall, size = JOB.unpack(head)
        data = stream.read(size) if kind in WITH_PAYLOAD else b""
        yield kind, conn, DIRECTIONS[direction & 1], now, wall, size, data


#: How much lower this process's scheduling priority is than the proxy's: when the cores are busy,
#: forwarding gets them first and decoding waits (it has a queue for that).
NICENESS = 10


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the proxy's to handle
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    try:
        return _run()
    except BrokenPipeError:  # the proxy has gone: nothing more to say
        return 0


class _Discard:
    """Set by SIGUSR2: the proxy is stopping and will not wait; what is still queued is not decoded."""

    now = False

    @classmethod
    def set(cls, signum: int, frame: object) -> None:
        cls.now = True


def _run() -> int:
    signal.signal(signal.SIGUSR2, _Discard.set)
    stream = open(0, "rb", buffering=1 << 20, closefd=False)  # noqa: SIM115
    jobs = _jobs(stream)
    first = next(jobs, None)
    if first is None or first[0] != ord("C"):
        return 2
    decoding = _Decoding(pickle.loads(first[6]))  # from the proxy that started this process
    failed = False
    for kind, conn, direction, now, wall, size, data in jobs:
        if kind == ord("E"):
            break
        if failed or _Discard.now:
            continue  # read on, so that the proxy is never blocked by a full pipe
        try:
            decoding.job(kind, conn, direction, now, wall, size, data)
        except BaseException as e:  # the output failed: the proxy stops
            failed = True
            # An output's error says what failed; another (a bug) only its name, as its text may quote bytes.
            text = repr(e) if isinstance(e, OSError) else f"{type(e).__name__} in the decoding process"
            _send(b"X", b"EPIPE" if isinstance(e, BrokenPipeError) else text.encode("utf-8", "replace"))
    stats = decoding.options.stats
    if stats is not None and not failed:
        _send(b"S", pickle.dumps(stats_state(stats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
