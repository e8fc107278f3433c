"""``zkwire trace``, ``zkwire decode`` and ``zkwire sniff``: see ZooKeeper traffic decoded, both ways.

``zkwire trace --listen HOST:PORT --server HOST:PORT`` is a transparent TCP proxy for any client
(kazoo, zkCli, Curator, zkwire); ``--upstream a,b,c`` tries several servers in order for each
connection (a whole ensemble), ``--upstream-tls`` (with ``--ca``, ``--cert``, ``--key``) speaks TLS to
them.  Bytes are forwarded unchanged as they arrive; a copy goes through the construct-based
:class:`~zkwire.trace.decoder.ConversationDecoder` of that connection, and one line per frame is
printed (time, connection, direction, xid, op, path, error, zxid, size, reply latency).

Decoding never delays or alters forwarding: it runs in a worker thread fed through a queue bounded in
bytes.  When it falls behind, the bytes it cannot take are skipped (a ``skipped`` line says how many) and
it picks up again at the next frame, whose start the forwarding path follows by reading the length
prefixes alone.  A stalled output stalls only the worker; a closed one stops the tracer.  A malformed
frame is shown as such and still forwarded; secrets are masked by position (see
:func:`zkwire.trace.decoder.secret_spans`), control characters escaped, lines capped (``--max-line``).

``zkwire decode FILE`` decodes a pcap or pcapng capture (every ZooKeeper connection in it, both
directions merged in capture order, with capture times: see :mod:`zkwire.trace.conversations`), or a raw
captured byte stream (one direction, or both with ``--server-file``) the same way.  ``zkwire sniff
--iface IF`` decodes live packets (:mod:`zkwire.trace.sniff`).  All three take the filters of
:mod:`zkwire.trace.filters` and print the summary of :mod:`zkwire.trace.stats` on exit and on SIGUSR1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import BinaryIO, TextIO

import trio

from ..errors import InvalidArgumentError
from ..sansio.hosts import parse_host_port
from ..shell.runtime import EXIT_INTERRUPTED, OneLineArgumentParser, run_cli
from ..terminal import escape_controls
from .capture import CaptureError, PacketReader, is_capture
from .conversations import CaptureDecoder, CaptureEvent, format_endpoint
from .decoder import (
    CLIENT,
    SERVER,
    ConversationDecoder,
    DecodedFrame,
    capped,
    detect_side,
    format_frame,
    frame_to_json,
)
from .filters import ConnectionInfo, FrameFilter, format_session, parse_op, parse_session_id
from .resync import FrameTracker
from .sniff import open_sniffer
from .stats import TraceStats
from .upstream import UpstreamError, Upstreams, tls_context

__all__ = [
    "TraceOptions",
    "serve_trace",
    "show_event",
    "main",
    "packet_capture_kind",
    "DEFAULT_MAX_LINE",
    "DEFAULT_MAX_QUEUED",
]


#: How much of a side is read (and then forwarded) at once.
_CHUNK = 65536
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
        self._connections: dict[int, ConnectionInfo] = {}

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
        info = self.connection(conn)
        session = info.learn(frame)
        if session is not None and session == self.session_view and conn is not None:
            self._session_note(conn, session, info, wall)
        if self.hide_pings and frame.kind == "ping":
            return
        if self.frame_filter is not None and not self.frame_filter.passes(frame, info):
            return
        if self.stats is not None:
            self.stats.add(conn, frame)
        if not self.show_frames:
            return
        max_line = self.max_line or None
        if self.json_lines:
            text = self._json_line(conn, frame, wall, max_line)
        else:
            line = format_frame(frame, self.verbose, reveal_secrets=self.reveal_secrets, max_line=max_line)
            first, newline, more = line.partition("\n")
            _, _, rest = first.partition(" ")  # the decoder's own time column gives way to ours
            first = (f"{_stamp(wall)} #{conn} " if conn is not None else "") + rest
            text = capped(first, max_line) + newline + more
        self.out.write(text + "\n")
        self.out.flush()

    def _json_line(self, conn: int | None, frame: DecodedFrame, wall: float, max_line: int | None) -> str:
        budget = max_line
        while True:
            obj = frame_to_json(frame, reveal_secrets=self.reveal_secrets, max_line=budget)
            obj["conn"] = conn
            obj["wall_time"] = wall
            text = json.dumps(obj)
            if max_line is None or budget is None or len(text) <= max_line or budget <= 256:
                return text
            budget //= 2  # JSON escapes made it longer than planned: shorten the values further

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
        if self.stats is None or not (always or self.stats.frames or not self.show_frames):
            return
        if self.json_lines:
            self.out.write(json.dumps(self.stats.to_json()) + "\n")
        else:
            self.out.write("".join(f"== {line}\n" for line in self.stats.lines()))
        self.out.flush()

    def _write_note(self, conn: int, text: str, wall: float | None = None) -> None:
        wall = time.time() if wall is None else wall
        if self.json_lines:
            obj = {"conn": conn, "kind": "connection", "note": text, "wall_time": wall}
            self.out.write(json.dumps(obj) + "\n")
        else:
            self.out.write(f"{_stamp(wall)} #{conn} -- {escape_controls(text)}\n")
        self.out.flush()


def _stamp(wall: float) -> str:
    """The time column of every line: local time to the microsecond."""
    return time.strftime("%H:%M:%S", time.localtime(wall)) + f".{int(wall % 1 * 1e6):06d}"


class _FdWriter:
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


def _parse_hostport(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``HOST:PORT``, ``[V6ADDR]:PORT``, ``:PORT`` or ``PORT`` (on ``default_host``); port 0 listens on any."""
    host, port = parse_host_port(text, default_port=None, default_host=default_host, allow_port_zero=True)
    return host, port


class _Direction:
    __slots__ = ("bounds", "skipped", "skipping")

    def __init__(self, max_frame: int) -> None:
        self.bounds = FrameTracker(max_frame)
        self.skipping = False
        self.skipped = 0


class _Connection:
    __slots__ = ("broken", "decoder", "id", "sides")

    def __init__(self, conn_id: int) -> None:
        self.id = conn_id
        self.decoder = ConversationDecoder()
        self.sides = {CLIENT: _Direction(self.decoder.max_frame), SERVER: _Direction(self.decoder.max_frame)}
        self.broken = False  # the decoder failed (a bug): the rest of the connection is not decoded


_Job = tuple[str, _Connection | int, str, bytes | int | str, float, float, int]


class _Decoding:
    """Decoding and printing, off the forwarding path: one worker thread takes the bytes each pump has
    already forwarded from a queue bounded in bytes (:attr:`TraceOptions.max_queued_bytes`).  Nothing
    here blocks the caller: when the queue is full the bytes are skipped (and said to be), so a slow
    decoder or a stalled output never slows the traffic.  A failed output (a closed pipe) stops the tracer
    (:attr:`failed`)."""

    def __init__(self, options: TraceOptions) -> None:
        self.options = options
        self.limit = max(options.max_queued_bytes, 1)
        self.failure: BaseException | None = None
        self.failed = trio.Event()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued = 0
        self._discard = False
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._run, name="zkwire trace decoder", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ forwarding side (trio)

    def note(self, conn: int, text: str) -> None:
        self._jobs.put(("note", conn, "", text, 0.0, time.time(), 0))

    def data(self, conn: _Connection, direction: str, data: bytes, now: float) -> None:
        side = conn.sides[direction]
        first = side.bounds.feed(data)
        size = len(data)
        wall = time.time()
        if side.skipping:
            if first is not None and self._reserve(size - first, resume=True):
                self._jobs.put(("skip", conn, direction, side.skipped + first, now, wall, 0))
                self._jobs.put(("data", conn, direction, data[first:], now, wall, size - first))
                side.skipping, side.skipped = False, 0
            else:
                side.skipped += size
        elif self._reserve(size):
            self._jobs.put(("data", conn, direction, data, now, wall, size))
        else:
            side.skipping, side.skipped = True, size

    def finish(self, conn: _Connection, now: float) -> None:
        wall = time.time()
        for direction, side in conn.sides.items():
            if side.skipping:
                self._jobs.put(("skip", conn, direction, side.skipped, now, wall, 0))
        self._jobs.put(("finish", conn, "", "", now, wall, 0))

    def _reserve(self, size: int, *, resume: bool = False) -> bool:
        with self._lock:
            if self._queued + size > (self.limit // 2 if resume else self.limit):
                return False
            self._queued += size
            return True

    async def aclose(self) -> None:
        """Let the worker print what is queued (for up to ``drain_seconds``), then stop it."""
        self._jobs.put(None)
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.options.drain_seconds):
                await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)
            self._discard = True
            with trio.move_on_after(1.0):
                await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)

    # ------------------------------------------------------------------ worker thread

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                if not self._discard:
                    self._do(job)
            except BaseException as e:  # the output failed: stop the tracer
                self._fail(e)
            finally:
                if job[6]:
                    with self._lock:
                        self._queued -= job[6]

    def _do(self, job: _Job) -> None:
        kind, conn, direction, value, now, wall, _ = job
        options = self.options
        if kind == "note":
            assert isinstance(conn, int) and isinstance(value, str)
            options.note(conn, value, wall)
            return
        assert isinstance(conn, _Connection)
        if not conn.broken:
            try:
                if kind == "data":
                    assert isinstance(value, bytes)
                    frames = conn.decoder.feed(direction, value, now)
                elif kind == "skip":
                    assert isinstance(value, int)
                    frames = conn.decoder.skip(direction, value, now, reason="not decoded: decoding fell behind")
                else:
                    frames = conn.decoder.finish(now)
            except Exception as e:  # a decoder bug must not stop the tracer
                conn.broken = True
                options.note(conn.id, f"decoder error: {e!r}; the rest of this connection is not decoded", wall)
                frames = []
            for frame in frames:
                options.emit(conn.id, frame, wall)
        if kind == "finish":
            options.note(conn.id, "closed", wall)
            options.close_connection(conn.id)

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
            self._discard = True
            try:
                self._token.run_sync_soon(self.failed.set)
            except trio.RunFinishedError:
                pass


def _save_files(save: Path, conn_id: int, decoding: _Decoding) -> dict[str, BinaryIO]:
    """The files that keep connection ``conn_id``'s raw bytes (none if they cannot be made: said)."""
    files: dict[str, BinaryIO] = {}
    try:
        save.mkdir(parents=True, exist_ok=True)
        for direction in (CLIENT, SERVER):
            files[direction] = open(save / f"conn-{conn_id}-{direction}.bin", "wb")  # noqa: SIM115
    except OSError as e:
        for f in files.values():
            f.close()
        decoding.note(conn_id, f"cannot save the raw bytes: {e}")
        return {}
    return files


async def serve_trace(
    listen: tuple[str, int],
    server: tuple[str, int] | Upstreams,
    options: TraceOptions,
    *,
    save: Path | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the tracing proxy until cancelled; ``task_status.started`` receives the listening port.

    ``server`` is one server, or :class:`~zkwire.trace.upstream.Upstreams`: several tried in order for
    each connection (a whole ensemble), over TLS if asked.

    With ``save``, each connection's bytes are also written, as forwarded, to ``conn-N-client.bin`` and
    ``conn-N-server.bin`` in that directory (``zkwire decode conn-N-client.bin --server-file
    conn-N-server.bin`` decodes them later).

    Each connection's bytes are forwarded as they arrive; decoding and printing happen in a worker thread
    (see :class:`_Decoding`) and never hold up the traffic.  If writing the output fails (a closed pipe),
    the proxy stops with that error.
    """
    upstreams = server if isinstance(server, Upstreams) else Upstreams([server])
    listeners = await trio.open_tcp_listeners(listen[1], host=listen[0])
    port = listeners[0].socket.getsockname()[1]
    ids = itertools.count(1)
    decoding = _Decoding(options)

    async def handle(client: trio.SocketStream) -> None:
        conn_id = next(ids)
        try:
            peer = client.socket.getpeername()
        except OSError:
            peer = "?"
        client_name = format_endpoint((str(peer[0]), int(peer[1]))) if isinstance(peer, tuple) else str(peer)
        try:
            upstream, chosen, failures = await upstreams.connect()
        except UpstreamError as e:
            decoding.note(conn_id, f"client {client_name}: {e}")
            await trio.aclose_forcefully(client)
            return
        conn = _Connection(conn_id)
        options.open_connection(conn_id, client_name)
        tls = " (TLS)" if upstreams.tls is not None else ""
        tried = f" after {'; '.join(failures)}" if failures else ""
        decoding.note(conn_id, f"open: client {client_name} -> server {format_endpoint(chosen)}{tls}{tried}")
        files = _save_files(save, conn_id, decoding) if save is not None else {}
        start = trio.current_time()

        async def pump(src: trio.abc.Stream, dst: trio.abc.Stream, direction: str) -> None:
            try:
                while True:
                    data = bytes(await src.receive_some(_CHUNK))  # the same object when it is bytes
                    if not data:
                        break
                    await dst.send_all(data)  # forwarded first; decoding gets a copy afterwards
                    decoding.data(conn, direction, data, trio.current_time() - start)
                    if files:
                        files[direction].write(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            finally:
                pumps.cancel_scope.cancel()

        try:
            async with client, upstream, trio.open_nursery() as pumps:
                pumps.start_soon(pump, client, upstream, CLIENT)
                pumps.start_soon(pump, upstream, client, SERVER)
        finally:
            for f in files.values():
                f.close()
            decoding.finish(conn, trio.current_time() - start)

    async def stop_when_output_fails() -> None:
        await decoding.failed.wait()
        assert decoding.failure is not None
        raise decoding.failure

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop_when_output_fails)
            task_status.started(port)
            await trio.serve_listeners(handle, listeners, handler_nursery=nursery)
    finally:
        await decoding.aclose()


#: Leading bytes of capture files that hold packets rather than a TCP stream's bytes.
_PACKET_CAPTURES = {
    b"\xd4\xc3\xb2\xa1": "a pcap capture",
    b"\xa1\xb2\xc3\xd4": "a pcap capture",
    b"\x4d\x3c\xb2\xa1": "a pcap capture (nanosecond)",
    b"\xa1\xb2\x3c\x4d": "a pcap capture (nanosecond)",
    b"\x0a\x0d\x0d\x0a": "a pcapng capture",
}


def packet_capture_kind(head: bytes) -> str | None:
    """ "a pcap capture" (or pcapng) when ``head`` starts like one, else None."""
    return _PACKET_CAPTURES.get(bytes(head[:4]))


def _decode_file(args: argparse.Namespace, options: TraceOptions) -> int:
    try:
        with open(args.file, "rb") as f:
            head = f.read(4)
    except OSError as e:
        print(escape_controls(f"zkwire decode: {e}"), file=sys.stderr)
        return 1
    if is_capture(head):
        if args.server_file:
            print(
                escape_controls(
                    f"zkwire decode: {args.file} is {packet_capture_kind(head)}, which holds both sides: "
                    "--server-file is only for raw byte streams"
                ),
                file=sys.stderr,
            )
            return 2
        return _decode_capture(args.file, args.port or (), options)
    if args.port:
        print("zkwire decode: --port is only for pcap and pcapng captures", file=sys.stderr)
        return 2
    try:
        data = Path(args.file).read_bytes()
        server_data = Path(args.server_file).read_bytes() if args.server_file else None
    except OSError as e:
        print(escape_controls(f"zkwire decode: {e}"), file=sys.stderr)
        return 1
    kind = packet_capture_kind(server_data[:4]) if server_data is not None else None
    if kind is not None:
        print(
            escape_controls(
                f"zkwire decode: {args.server_file} is {kind}: decode it on its own (it holds both sides), "
                "or give the raw bytes of the server's side of the stream"
            ),
            file=sys.stderr,
        )
        return 2
    # Fed in chunks and printed as it goes: a long capture piped into `head` stops early.
    decoder = ConversationDecoder()
    side = args.side if args.side != "auto" else detect_side(data)
    streams = [(CLIENT, data), (SERVER, server_data)] if server_data is not None else [(side, data)]
    malformed = False
    for direction, content in streams:
        for start in range(0, len(content), _CHUNK):
            for frame in decoder.feed(direction, content[start : start + _CHUNK]):
                malformed |= frame.kind == "malformed"
                options.emit(None, frame, time.time())
    for frame in decoder.finish() if server_data is not None else decoder.eof(side):
        malformed |= frame.kind == "malformed"
        options.emit(None, frame, time.time())
    options.summary()
    return 1 if malformed else 0


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


def _decode_capture(path: str, ports: Iterable[int], options: TraceOptions) -> int:
    """``zkwire decode`` of a pcap or pcapng file: every ZooKeeper connection in it, in capture order."""
    decoder = CaptureDecoder(ports)
    malformed = False
    try:
        stream = open(path, "rb")  # noqa: SIM115  (closed below)
    except OSError as e:
        print(escape_controls(f"zkwire decode: {e}"), file=sys.stderr)
        return 1
    restore = _summary_on_sigusr1(options)
    try:
        for event in decoder.add_all(PacketReader(stream)):
            malformed |= event.frame is not None and event.frame.kind == "malformed"
            show_event(options, event)
    except CaptureError as e:
        for event in decoder.finish():
            show_event(options, event)
        print(escape_controls(f"zkwire decode: {path}: {e}"), file=sys.stderr)
        return 1
    finally:
        restore()
        stream.close()
    if decoder.ignored:
        options.note(0, f"{decoder.ignored} TCP connections were not ZooKeeper's (give the server port with --port)")
    options.summary()
    return 1 if malformed else 0


def _summary_on_sigusr1(options: TraceOptions) -> Callable[[], object]:
    """Print the summary so far when SIGUSR1 comes (a long decode); returns what puts the old handler back."""

    def show(signum: int, frame: object) -> None:
        options.summary(always=True)

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGUSR1, show)
    return lambda: signal.signal(signal.SIGUSR1, previous)


def _ports(text: str) -> list[int]:
    try:
        ports = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not ports or not all(0 < p < 65536 for p in ports):
        raise argparse.ArgumentTypeError(f"ports are 1..65535: {text!r}")
    return ports


def main(argv: list[str]) -> int:
    """Entry point for ``zkwire trace ...`` and ``zkwire decode ...`` (``argv[0]`` names the command).

    Exit codes: 0 done (``trace``: stopped by SIGTERM), 1 a frame did not decode (``decode``) or the proxy
    could not listen, 2 usage error (one line), 130 Ctrl-C, 141 the output pipe was closed.
    """
    return run_cli(lambda: _main(argv))


async def _trace_until_interrupted(
    listen: tuple[str, int], server: tuple[str, int] | Upstreams, options: TraceOptions, save: Path | None = None
) -> int:
    code = EXIT_INTERRUPTED
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGUSR1) as signals:
        async with trio.open_nursery() as nursery:
            try:
                await nursery.start(partial(serve_trace, save=save), listen, server, options)
            except OSError as e:
                print(escape_controls(f"zkwire trace: cannot listen on {listen[0]}:{listen[1]}: {e}"), file=sys.stderr)
                code = 1
            else:
                async for signum in signals:
                    if signum != signal.SIGUSR1:
                        break
                    options.summary(always=True)
            nursery.cancel_scope.cancel()
    if code != 1:
        options.summary()
    return code


async def _sniff(iface: str, ports: list[int], options: TraceOptions, duration: float | None) -> int:
    """``zkwire sniff``: decode live traffic on ``iface`` until Ctrl-C (or ``duration`` seconds)."""
    try:
        sniffer = open_sniffer(iface, ports)
    except CaptureError as e:
        print(escape_controls(f"zkwire sniff: {e}"), file=sys.stderr)
        return 1
    decoder = CaptureDecoder(ports)
    code = EXIT_INTERRUPTED
    which = f"TCP port {','.join(map(str, ports))}" if ports else "ZooKeeper traffic (ports detected)"
    options.note(0, f"sniffing {which} on {iface}; Ctrl-C stops")

    async def decode_packets() -> None:
        async for segment in sniffer:
            for event in decoder.add(segment):
                show_event(options, event)

    with sniffer, trio.open_signal_receiver(signal.SIGINT, signal.SIGUSR1) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(decode_packets)
            with trio.move_on_after(duration if duration is not None else math.inf) as timer:
                async for signum in signals:
                    if signum != signal.SIGUSR1:
                        break
                    options.summary(always=True)
            if timer.cancelled_caught:
                code = 0
            nursery.cancel_scope.cancel()
    for event in decoder.finish():
        if event.kind != "close":  # connections still open when sniffing stops are not closed
            show_event(options, event)
    options.summary()
    return code


def _add_view_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", "-v", action="store_true", help="the full decoded record and a hex dump")
    p.add_argument("--json", action="store_true", help="one JSON object per frame")
    p.add_argument("--hide-pings", action="store_true", help="do not show pings and their replies")
    p.add_argument(
        "--reveal-secrets", action="store_true", help="show session passwords and auth data (hidden by default)"
    )
    p.add_argument(
        "--max-line",
        type=_line_length,
        default=DEFAULT_MAX_LINE,
        metavar="CHARS",
        help="cut longer lines, saying how much was left out; 0: no limit (default: %(default)s)",
    )
    f = p.add_argument_group("filters (a frame is shown when it passes all of them)")
    f.add_argument("--path", action="append", default=[], metavar="PREFIX|GLOB", help="frames on these paths")
    f.add_argument(
        "--op", action="extend", type=_ops, default=[], metavar="OP[,OP]", help="frames of these ops (getData, ...)"
    )
    f.add_argument(
        "--session", action="append", type=_session, default=[], metavar="ID", help="frames of this session (0x...)"
    )
    f.add_argument(
        "--client", action="append", default=[], metavar="HOST[:PORT]", help="frames of connections from there"
    )
    f.add_argument("--errors", action="store_true", help="only replies with an error (and malformed frames)")
    f.add_argument("--slower", type=_milliseconds, metavar="MS", help="only replies slower than MS milliseconds")
    s = p.add_argument_group("statistics (a summary is printed on exit and on SIGUSR1)")
    s.add_argument("--stats", action="store_true", help="print only the summary, no frames")
    s.add_argument(
        "--depth", type=_depth, metavar="N", help="count request paths by their first N components in the summary"
    )
    s.add_argument(
        "--session-view",
        type=_session,
        metavar="ID",
        help="one session's requests and replies in order, across its connections",
    )


def _view_options(args: argparse.Namespace) -> TraceOptions:
    sessions = set(args.session) | ({args.session_view} if args.session_view is not None else set())
    frame_filter = FrameFilter(
        paths=tuple(args.path),
        ops=frozenset(args.op),
        sessions=frozenset(sessions),
        clients=tuple(args.client),
        errors=args.errors,
        slower_ms=args.slower,
        hide_pings=args.hide_pings or args.session_view is not None,
    )
    return TraceOptions(
        verbose=args.verbose,
        json_lines=args.json,
        hide_pings=args.hide_pings or args.session_view is not None,
        reveal_secrets=args.reveal_secrets,
        max_line=args.max_line,
        frame_filter=frame_filter if frame_filter.active else None,
        stats=TraceStats(depth=args.depth),
        show_frames=not args.stats,
        session_view=args.session_view,
    )


def _main(argv: list[str]) -> int:
    parser = OneLineArgumentParser(prog="zkwire", description="Decode ZooKeeper traffic.")
    sub = parser.add_subparsers(dest="command", required=True)
    trace = sub.add_parser("trace", help="a transparent proxy that prints every frame, both ways")
    trace.add_argument("--listen", required=True, metavar="HOST:PORT", help="where clients connect")
    trace.add_argument("--server", metavar="HOST:PORT", help="the ZooKeeper server")
    trace.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="HOST:PORT[,HOST:PORT]",
        help="servers tried in order for each connection (a whole ensemble), instead of --server",
    )
    trace.add_argument("--upstream-tls", action="store_true", help="TLS towards the servers")
    trace.add_argument("--ca", metavar="FILE", help="CA certificates (PEM) that sign the servers' (default: system's)")
    trace.add_argument("--cert", metavar="FILE", help="a client certificate (PEM) to present to the servers")
    trace.add_argument("--key", metavar="FILE", help="the client certificate's key (PEM), if not in --cert")
    trace.add_argument(
        "--tls-hostname", metavar="NAME", help="the name the servers' certificate must carry (default: the host given)"
    )
    trace.add_argument(
        "--save",
        type=Path,
        metavar="DIR",
        help="keep each connection's raw bytes in DIR (conn-N-client.bin, conn-N-server.bin) for zkwire decode",
    )
    decode = sub.add_parser("decode", help="decode a pcap/pcapng capture or a raw captured byte stream")
    decode.add_argument(
        "file", help="a pcap or pcapng capture, or the raw bytes of one stream (client side, server side, or detected)"
    )
    decode.add_argument(
        "--port",
        type=_ports,
        action="extend",
        metavar="PORT[,PORT]",
        help="the server's ports in a capture (default: 2181, 2281 and servers that answered a ConnectRequest)",
    )
    decode.add_argument("--side", choices=["auto", "client", "server"], default="auto")
    decode.add_argument("--server-file", help="the server's side of the same connection, to pair replies")
    sniff = sub.add_parser("sniff", help="decode live traffic on a network interface (root or CAP_NET_RAW)")
    sniff.add_argument("--iface", required=True, metavar="NAME", help="the interface (lo, eth0, ...)")
    sniff.add_argument(
        "--port",
        type=_ports,
        action="extend",
        metavar="PORT[,PORT]",
        help="the server's ports (default: all TCP, ZooKeeper's detected as in zkwire decode)",
    )
    sniff.add_argument("--duration", type=_seconds, metavar="SECONDS", help="stop after this long (default: Ctrl-C)")
    for p in (trace, decode, sniff):
        _add_view_options(p)
    args = parser.parse_args(argv)
    options = _view_options(args)
    if args.command == "decode":
        return _decode_file(args, options)
    sys.stdout.flush()
    try:
        options.out = _FdWriter(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): written as it is
        options.out = sys.stdout
    if args.command == "sniff":
        return trio.run(_sniff, args.iface, args.port or [], options, args.duration)
    try:
        listen = _parse_hostport(args.listen)
        upstreams = _upstreams(args)
    except ValueError as e:
        parser.error(str(e))
    return trio.run(_trace_until_interrupted, listen, upstreams, options, args.save)


def _upstreams(args: argparse.Namespace) -> Upstreams:
    names = [name for text in args.upstream for name in text.split(",") if name.strip()]
    if args.server:
        names.insert(0, args.server)
    if not names:
        raise InvalidArgumentError("give the server: --server HOST:PORT or --upstream HOST:PORT[,HOST:PORT...]")
    tls_options = [o for o in ("ca", "cert", "key", "tls_hostname") if getattr(args, o)]
    if tls_options and not args.upstream_tls:
        raise InvalidArgumentError(f"--{tls_options[0].replace('_', '-')} is for --upstream-tls")
    context = tls_context(args.ca, args.cert, args.key) if args.upstream_tls else None
    return Upstreams([_parse_hostport(n.strip()) for n in names], context, args.tls_hostname)


def _ops(text: str) -> list[str]:
    try:
        return [parse_op(part) for part in text.split(",") if part.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _session(text: str) -> int:
    try:
        return parse_session_id(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of {what}: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{what} must be 0 or more: {text!r}")
    return value


def _milliseconds(text: str) -> float:
    return _number(text, "milliseconds")


def _seconds(text: str) -> float:
    return _number(text, "seconds")


def _depth(text: str) -> int:
    value = _number(text, "path components")
    if value != int(value) or value < 1:
        raise argparse.ArgumentTypeError(f"a depth is a whole number of path components, 1 or more: {text!r}")
    return int(value)


def _line_length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of characters: {text!r}") from None
    if value != 0 and value < 80:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or at least 80, not {value}")
    return value
