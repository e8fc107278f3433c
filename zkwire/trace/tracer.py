"""``zkwire trace``, ``zkwire decode`` and ``zkwire sniff``: see ZooKeeper traffic decoded, both ways.

This module is the command line; the proxy is :mod:`~zkwire.trace.proxy`, its decoding worker
:mod:`~zkwire.trace.worker`, and what is printed and where :mod:`~zkwire.trace.output`.

``zkwire trace --listen HOST:PORT --server HOST:PORT`` is a transparent TCP proxy for any client
(kazoo, zkCli, Curator, zkwire); ``--upstream a,b,c`` tries several servers in order for each
connection (a whole ensemble), ``--upstream-tls`` (or ``--upstream-tls-ca``, ``--upstream-tls-cert``,
``--upstream-tls-key``, ``--upstream-tls-key-password-file``: the options of every tool, see
:func:`~zkwire.shell.security.add_security_options`) speaks TLS to them.  Bytes are forwarded unchanged
as they arrive; a copy goes through the :class:`~zkwire.trace.decoder.ConversationDecoder` of that
connection (records read by the fast codec; ``--verify`` on ``decode`` and ``sniff`` also reads them with
the construct schemas and reports disagreements), and one line per frame is printed (time, connection,
direction, xid, op, path, error, zxid, size, reply latency).

Decoding never delays or alters forwarding: it runs in a process of its own
(:mod:`~zkwire.trace.decodeproc`) fed through a pipe from a queue bounded in bytes, each piece with the
time the proxy read it.  When it falls behind, the bytes it cannot take are skipped (a ``skipped`` line
says how many) and it picks up again at the next frame, whose start the forwarding path follows by
reading the length prefixes alone.  A stalled output stalls only the decoding process; a closed one
stops the tracer.  A malformed frame is shown as such and still forwarded; secrets are masked by position (see
:func:`zkwire.trace.masking.secret_spans`), control characters escaped, lines capped (``--max-line``).

``zkwire decode FILE`` decodes a pcap or pcapng capture (every ZooKeeper connection in it, both
directions merged in capture order, with capture times: see :mod:`zkwire.trace.conversations`), or a raw
captured byte stream (one direction, or both with ``--server-file``) the same way.  ``zkwire sniff
--iface IF`` decodes live packets (:mod:`zkwire.trace.sniff`, :mod:`zkwire.trace.sniffing`: a
memory-mapped ring, a kernel port filter, kernel timestamps and drop counts).  All three take the filters of
:mod:`zkwire.trace.filters` and print the summary of :mod:`zkwire.trace.stats` on exit and on SIGUSR1.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import trio

from ..errors import InvalidArgumentError
from ..sansio.hosts import parse_host_port
from ..shell.runtime import EXIT_INTERRUPTED, OneLineArgumentParser, run_cli
from ..shell.security import add_security_options, security_options
from ..terminal import escape_controls
from .capture import CaptureError, PacketReader, is_capture
from .conversations import CaptureDecoder
from .decoder import ConversationDecoder, detect_side
from .filters import FrameFilter, parse_op, parse_session_id
from .frames import CLIENT, SERVER
from .output import DEFAULT_MAX_LINE, DEFAULT_MAX_QUEUED, FdWriter, TraceOptions, buffered_stdout, show_event
from .progress import Progress
from .proxy import READ_CHUNK, serve_trace
from .sniffing import sniff_command
from .stats import TraceStats
from .upstream import Upstreams

# TraceOptions, serve_trace and show_event live in output.py and proxy.py; they stay importable from here.
__all__ = [
    "TraceOptions",
    "serve_trace",
    "show_event",
    "main",
    "packet_capture_kind",
    "DEFAULT_MAX_LINE",
    "DEFAULT_MAX_QUEUED",
]


def _parse_hostport(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``HOST:PORT``, ``[V6ADDR]:PORT``, ``:PORT`` or ``PORT`` (on ``default_host``); port 0 listens on any."""
    host, port = parse_host_port(text, default_port=None, default_host=default_host, allow_port_zero=True)
    return host, port


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
        return _decode_capture(args.file, args.port or (), options, _reading(args), options.only_ops())
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
    decoder = ConversationDecoder(reading=_reading(args), only_ops=options.only_ops())
    side = args.side if args.side != "auto" else detect_side(data)
    streams = [(CLIENT, data), (SERVER, server_data)] if server_data is not None else [(side, data)]
    malformed = False
    for direction, content in streams:
        for start in range(0, len(content), READ_CHUNK):
            for frame in decoder.feed(direction, content[start : start + READ_CHUNK]):
                malformed |= frame.kind == "malformed"
                options.emit(None, frame, time.time())
    for frame in decoder.finish() if server_data is not None else decoder.eof(side):
        malformed |= frame.kind == "malformed"
        options.emit(None, frame, time.time())
    options.summary()
    return 1 if malformed else 0


def _reading(args: argparse.Namespace) -> str:
    """How records are read: both ways with ``--verify``; header facts only when nothing but the summary
    is shown and no filter looks into records (a path filter matches a multi's operations too); the
    records its lines show for the one-line view; else (``-v``, ``--json``) every record, with the fast
    codec."""
    if getattr(args, "verify", False):
        return "verify"
    if args.stats and not args.path:
        return "headers"
    return "fast" if args.verbose or args.json else "notes"


def _decode_capture(
    path: str,
    ports: Iterable[int],
    options: TraceOptions,
    reading: str = "fast",
    only_ops: frozenset[int] | None = None,
) -> int:
    """``zkwire decode`` of a pcap or pcapng file: every ZooKeeper connection in it, in capture order.

    The file is read as it is decoded (the memory used does not grow with its size); on a terminal, stderr
    shows how far the reading is."""
    decoder = CaptureDecoder(ports, reading=reading, only_ops=only_ops)
    malformed = False
    try:
        stream = open(path, "rb")  # noqa: SIM115  (closed below)
        size = os.fstat(stream.fileno()).st_size
    except OSError as e:
        print(escape_controls(f"zkwire decode: {e}"), file=sys.stderr)
        return 1
    asked, restore = _summary_on_sigusr1()
    progress = Progress(size, stream)
    try:
        for event in decoder.add_all(PacketReader(stream)):
            if event.frame is not None:
                malformed |= event.frame.kind == "malformed"
                progress.frame()
            show_event(options, event)
            if asked[0]:
                asked[0] = False
                options.summary(always=True)
    except CaptureError as e:
        for event in decoder.finish():
            show_event(options, event)
        progress.done()
        options.out.flush()  # the lines before the error's
        print(escape_controls(f"zkwire decode: {path}: {e}"), file=sys.stderr)
        return 1
    finally:
        progress.done()
        restore()
        stream.close()
    if decoder.ignored:
        options.note(0, f"{decoder.ignored} TCP connections were not ZooKeeper's (give the server port with --port)")
    options.summary()
    return 1 if malformed else 0


def _summary_on_sigusr1() -> tuple[list[bool], Callable[[], object]]:
    """SIGUSR1 asks for the summary so far (a long decode): returns the flag it sets, and what puts the old
    handler back.  The summary is printed by the decoding loop between two events, never by the handler: a
    signal may come while a frame is being counted (the statistics' lock is held) or a line written, and
    the handler would then wait for the lock forever or write into the middle of the line."""
    asked = [False]

    def ask(signum: int, frame: object) -> None:
        asked[0] = True

    if threading.current_thread() is not threading.main_thread():
        return asked, lambda: None
    previous = signal.signal(signal.SIGUSR1, ask)
    return asked, lambda: signal.signal(signal.SIGUSR1, previous)


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
    listen: tuple[str, int],
    server: tuple[str, int] | Upstreams,
    options: TraceOptions,
    save: Path | None = None,
    reading: str = "fast",
) -> int:
    code = EXIT_INTERRUPTED
    # SIGTERM stops it as Ctrl-C does (exit 0): what the decoding process still holds is printed first.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGUSR1, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            try:
                await nursery.start(partial(serve_trace, save=save, reading=reading), listen, server, options)
            except OSError as e:
                print(escape_controls(f"zkwire trace: cannot listen on {listen[0]}:{listen[1]}: {e}"), file=sys.stderr)
                code = 1
            else:
                async for signum in signals:
                    if signum != signal.SIGUSR1:
                        code = 0 if signum == signal.SIGTERM else code
                        break
                    options.summary(always=True)
            nursery.cancel_scope.cancel()
    if code != 1:
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
        "--stats-json",
        metavar="PATH",
        help="also write the summary to PATH as one JSON object (replaced each time the summary is printed)",
    )
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
    stats = TraceStats(depth=args.depth)
    if getattr(args, "verify", False):
        stats.verified = 0
    return TraceOptions(
        verbose=args.verbose,
        json_lines=args.json,
        hide_pings=args.hide_pings or args.session_view is not None,
        reveal_secrets=args.reveal_secrets,
        max_line=args.max_line,
        frame_filter=frame_filter if frame_filter.active else None,
        stats=stats,
        show_frames=not args.stats,
        session_view=args.session_view,
        stats_json=args.stats_json,
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
    add_security_options(
        trace, prefix="upstream-", credentials=False
    )  # --upstream-tls, --upstream-tls-ca, ...: towards the servers
    # The former names of --upstream-tls-ca, -cert and -key.
    trace.add_argument("--ca", dest="tls_ca", help=argparse.SUPPRESS)
    trace.add_argument("--cert", dest="tls_cert", help=argparse.SUPPRESS)
    trace.add_argument("--key", dest="tls_key", help=argparse.SUPPRESS)
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
    sniff.add_argument(
        "--ring-mb",
        type=_ring_mb,
        default=64,
        metavar="MIB",
        help="the ring packets wait in for decoding (default: %(default)s MiB); when full the kernel drops and says so",
    )
    sniff.add_argument("--duration", type=_seconds, metavar="SECONDS", help="stop after this long (default: Ctrl-C)")
    for p in (trace, decode, sniff):
        _add_view_options(p)
    for p in (trace, decode, sniff):
        p.add_argument(
            "--verify",
            action="store_true",
            help="read every record with the fast codec and the construct schemas, and report where they disagree",
        )
    args = parser.parse_args(argv)
    options = _view_options(args)
    if args.command == "decode":
        options.flush_frames = False  # a file is read: lines leave a buffer at a time
        options.out = buffered_stdout()
        try:
            return _decode_file(args, options)
        finally:
            options.out.flush()
    sys.stdout.flush()
    try:
        options.out = FdWriter(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): written as it is
        options.out = sys.stdout
    if args.command == "sniff":
        return trio.run(
            sniff_command,
            args.iface,
            args.port or [],
            options,
            args.duration,
            args.ring_mb << 20,
            _reading(args),
            options.only_ops(),
        )
    try:
        listen = _parse_hostport(args.listen)
        upstreams = _upstreams(args)
    except ValueError as e:
        parser.error(str(e))
    return trio.run(_trace_until_interrupted, listen, upstreams, options, args.save, _reading(args))


def _upstreams(args: argparse.Namespace) -> Upstreams:
    names = [name for text in args.upstream for name in text.split(",") if name.strip()]
    if args.server:
        names.insert(0, args.server)
    if not names:
        raise InvalidArgumentError("give the server: --server HOST:PORT or --upstream HOST:PORT[,HOST:PORT...]")
    context = security_options(args, prefix="upstream-").ssl_context
    if args.tls_hostname and context is None:
        raise InvalidArgumentError("--tls-hostname is for TLS towards the servers (--upstream-tls...)")
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


def _ring_mb(text: str) -> int:
    value = _number(text, "MiB")
    if value != int(value) or not 2 <= value <= 4096:
        raise argparse.ArgumentTypeError(f"the ring is a whole number of MiB, 2 to 4096: {text!r}")
    return int(value)


def _line_length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of characters: {text!r}") from None
    if value != 0 and value < 80:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or at least 80, not {value}")
    return value
