"""What the tracer prints, and where: :class:`TraceOptions` turns decoded frames and notes about
connections into lines of text or JSON objects (after the filters, counted in the statistics).

Shared by ``zkwire trace``, ``zkwire decode`` and ``zkwire sniff``; the time column is the wall clock
of the moment a frame was seen (:func:`show_event`: its capture time).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from ..terminal import escape_controls
from .conversations import CaptureEvent, format_endpoint
from .fastrender import fast_json_line, fast_text_rest
from .filters import ConnectionInfo, FrameFilter, format_session
from .frames import DecodedFrame
from .render import capped, format_frame, frame_to_json, json_default
from .stats import TraceStats

__all__ = ["DEFAULT_MAX_LINE", "DEFAULT_MAX_QUEUED", "FdWriter", "TraceOptions", "show_event"]

#: Bytes waiting for the decoder, all connections together, before it skips (see :class:`TraceOptions`).
DEFAULT_MAX_QUEUED = 16 << 20
#: Longest line printed for one frame (the JSON object of one frame, with ``--json``).
DEFAULT_MAX_LINE = 4096


class TraceOptions:
    """What the tracer prints, and where.

    ``max_line`` caps every printed line (0: no cap): long values are cut, saying how much was left out,
    and the hex dump of ``verbose`` stops after ``max_line // 8`` bytes.  ``max_queued_bytes`` bounds
    the bytes waiting to be decoded: past it, the tracer says that decoding fell behind, skips the bytes
    (they are forwarded all the same) and picks up again at the first frame that starts once the backlog
    is down to half.  When the tracer stops, decoding of what is queued may take ``drain_seconds`` more.
    ``flush_frames``: each frame's line is flushed as it is written (what live views need); reading a file,
    it is not, and the lines leave a buffer at a time (a system call per frame would cost more than its
    decoding); notes and the summary are always flushed.
    """

    def __init__(
        self,
        *,
        verbose: bool = False,
        json_lines: bool = False,
        hide_pings: bool = False,
        reveal_secrets: bool = False,
        out: TextIO | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED,
        drain_seconds: float = 2.0,
        frame_filter: FrameFilter | None = None,
        stats: TraceStats | None = None,
        show_frames: bool = True,
        session_view: int | None = None,
        stats_json: str | None = None,
        flush_frames: bool = True,
    ) -> None:
        self.verbose = verbose
        self.json_lines = json_lines
        self.hide_pings = hide_pings
        self.reveal_secrets = reveal_secrets
        self.out = out if out is not None else sys.stdout
        self.max_line = max_line
        self.max_queued_bytes = max_queued_bytes
        self.drain_seconds = drain_seconds
        self.frame_filter = frame_filter
        self.stats = stats
        self.show_frames = show_frames
        self.session_view = session_view
        #: Set while the statistics live elsewhere (the tracing proxy's decoding process): a summary asked
        #: for is then printed there, ``always`` passed on.
        self.summary_via: Callable[[bool], None] | None = None
        #: Where the summary is also written as one JSON object, each time it is printed (None: nowhere).
        self.stats_json = stats_json
        self.flush_frames = flush_frames
        self._connections: dict[int, ConnectionInfo] = {}

    def only_ops(self) -> frozenset[int] | None:
        """The op codes whose frames alone are shown (a filter on ops), or None: the other ops' records need
        not be read (where the reading reads records: see :func:`~zkwire.trace.decoder.body_decoder`)."""
        return self.frame_filter.op_codes() if self.frame_filter is not None else None

    def connection(self, conn: int | None) -> ConnectionInfo:
        """What is known of connection ``conn`` (its client's address, its session)."""
        key = conn if conn is not None else 0
        info = self._connections.get(key)
        if info is None:
            info = self._connections[key] = ConnectionInfo()
        return info

    def open_connection(self, conn: int, client: str) -> None:
        self.connection(conn).client = client

    def close_connection(self, conn: int) -> None:
        self._connections.pop(conn, None)

    def emit(self, conn: int | None, frame: DecodedFrame, wall: float) -> None:
        """Show one frame (if it passes the filters) and count it in the statistics."""
        kind = frame.kind
        if kind == "connect" or kind == "connect_response":  # where a connection's session is learned
            info = self.connection(conn)
            session = info.learn(frame)
            if session is not None and session == self.session_view and conn is not None:
                self._session_note(conn, session, info, wall)
        elif kind == "ping" and self.hide_pings:
            return
        if self.frame_filter is not None and not self.frame_filter.passes(frame, self.connection(conn)):
            return
        if self.stats is not None:
            self.stats.add(conn, frame)
        if not self.show_frames:
            return
        max_line = self.max_line or None
        if self.json_lines:
            text = self._json_line(conn, frame, wall, max_line)
        else:
            text = self._text_line(conn, frame, wall, max_line)
        self.out.write(text + "\n")
        if self.flush_frames:
            self.out.flush()

    def _text_line(self, conn: int | None, frame: DecodedFrame, wall: float, max_line: int | None) -> str:
        # A common frame's line comes from the fast writer; the others' (and verbose lines) from format_frame.
        # The decoder's own time column gives way to ours.
        rest = None if self.verbose else fast_text_rest(frame, max_line)
        if rest is not None:
            line = f"{_stamp(wall)} #{conn} {rest}" if conn is not None else rest
            return line if max_line is None or len(line) <= max_line else capped(line, max_line)
        line = format_frame(frame, self.verbose, reveal_secrets=self.reveal_secrets, max_line=max_line)
        first, newline, more = line.partition("\n")
        _, _, rest = first.partition(" ")
        return capped((f"{_stamp(wall)} #{conn} " if conn is not None else "") + rest, max_line) + newline + more

    def _json_line(self, conn: int | None, frame: DecodedFrame, wall: float, max_line: int | None) -> str:
        text = fast_json_line(frame, conn, wall, max_line, self.reveal_secrets)
        if text is not None:  # a common frame, written whole
            return text
        if max_line is not None and len(frame.payload) <= max_line:
            # Most frames fit whole: written as they are, their records are not walked to be shortened.
            text = self._json_text(conn, frame, wall, max_line, shorten=False)
            if len(text) <= max_line:
                return text
        budget = max_line
        while True:
            text = self._json_text(conn, frame, wall, budget)
            if max_line is None or budget is None or len(text) <= max_line or budget <= 256:
                return text
            budget //= 2  # JSON escapes made it longer than planned: shorten the values further

    def _json_text(
        self, conn: int | None, frame: DecodedFrame, wall: float, budget: int | None, shorten: bool | None = None
    ) -> str:
        obj = frame_to_json(frame, reveal_secrets=self.reveal_secrets, max_line=budget, jsonable=False, shorten=shorten)
        obj["conn"] = conn
        obj["wall_time"] = wall
        return json.dumps(obj, default=json_default)

    def _session_note(self, conn: int, session: int, info: ConnectionInfo, wall: float) -> None:
        if self.show_frames:
            self._write_note(conn, f"session {format_session(session)} on this connection (client {info.client})", wall)

    def note(self, conn: int, text: str, wall: float | None = None) -> None:
        """A line about connection ``conn`` (0: about the whole trace), shown unless frames are filtered."""
        if not self.show_frames:
            return
        if conn and self.frame_filter is not None and not self.frame_filter.shows_notes(self.connection(conn)):
            return
        self._write_note(conn, text, wall)

    def summary(self, *, always: bool = False) -> None:
        """Print the statistics gathered so far (text lines, or one JSON object with ``--json``): at the
        end when a frame was counted or only statistics are shown; ``always`` (on request) even if not."""
        if self.summary_via is not None:
            self.summary_via(always)
            return
        if self.stats is None:
            return
        if self.stats_json is not None:
            self._write_stats_json(self.stats_json)
        if not (always or self.stats.frames or not self.show_frames):
            return
        if self.json_lines:
            self.out.write(json.dumps(self.stats.to_json()) + "\n")
        else:
            self.out.write("".join(f"== {line}\n" for line in self.stats.lines()))
        self.out.flush()

    def _write_stats_json(self, path: str) -> None:
        assert self.stats is not None
        text = json.dumps(self.stats.to_json(), indent=2) + "\n"
        partial = f"{path}.partial"
        try:
            with open(partial, "w", encoding="utf-8") as f:  # replaced whole: a reader never sees half of it
                f.write(text)
            os.replace(partial, path)
        except OSError as e:
            print(escape_controls(f"zkwire: cannot write the summary to {path}: {e}"), file=sys.stderr)

    def _write_note(self, conn: int, text: str, wall: float | None = None) -> None:
        wall = time.time() if wall is None else wall
        if self.json_lines:
            obj = {"conn": conn, "kind": "connection", "note": text, "wall_time": wall}
            self.out.write(json.dumps(obj) + "\n")
        else:
            self.out.write(f"{_stamp(wall)} #{conn} -- {escape_controls(text)}\n")
        self.out.flush()


_SECONDS: list[tuple[int, str]] = [(-1, "")]  # the last whole second written, and its text


_LAST_STAMP: list[tuple[object, str]] = [(None, "")]  # the last wall time stamped (the object), and its text


def _stamp(wall: float) -> str:
    """The time column of every line: local time to the microsecond."""
    last_wall, stamp = _LAST_STAMP[0]
    if wall is last_wall:  # the frames of one packet share their time
        return stamp
    second = int(wall // 1)
    last, text = _SECONDS[0]
    if second != last:  # frames come many to a second: the clock's text is made once for each
        text = time.strftime("%H:%M:%S", time.localtime(second))
        _SECONDS[0] = (second, text)
    stamp = f"{text}.{int(wall % 1 * 1e6):06d}"
    _LAST_STAMP[0] = (wall, stamp)
    return stamp


def buffered_stdout(size: int = 1 << 16) -> TextIO:
    """Standard output through a buffer of ``size`` bytes of its own, for many lines written in a row.

    The interpreter's own stdout writes through when Python runs unbuffered (``PYTHONUNBUFFERED``, set in
    many container images, or ``python -u``): a system call for every line.  The writer made here shares
    stdout's file descriptor (which it leaves open), encoding and error handler; stdout is flushed first.
    A stdout that is a terminal, or no file (a test's capture), is given back as it is."""
    out = sys.stdout
    try:
        fd = out.fileno()
        if out.isatty():  # a person reads it: line by line, as the interpreter's own stdout writes it
            return out
    except (AttributeError, OSError, ValueError):
        return out
    out.flush()
    return open(fd, "w", buffering=size, encoding=out.encoding, errors=out.errors, closefd=False)


class FdWriter:
    """Lines written straight to a file descriptor: a write blocked on a full pipe holds no Python lock,
    so the program can still end while the decoder's thread waits on it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, text: str) -> int:
        data = memoryview(text.encode("utf-8", "backslashreplace"))
        while data:
            data = data[os.write(self.fd, data) :]
        return len(text)

    def flush(self) -> None:
        pass


def show_event(options: TraceOptions, event: CaptureEvent) -> None:
    """Print one event of a capture (a frame, or a note about its connection) at its capture time."""
    if event.kind == "open":
        options.open_connection(event.conn, format_endpoint(event.client))
    if event.frame is not None:
        options.emit(event.conn, event.frame, event.ts)
    elif event.note is not None:
        options.note(event.conn, event.note, event.ts)
    if event.kind == "close":
        options.close_connection(event.conn)
