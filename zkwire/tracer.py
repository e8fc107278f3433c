"""``zkwire trace`` and ``zkwire decode``: see ZooKeeper traffic decoded, both ways.

``zkwire trace --listen HOST:PORT --server HOST:PORT`` is a transparent TCP proxy for any client
(kazoo, zkCli, Curator, zkwire).  Bytes are forwarded unchanged as they arrive; a copy goes through the
construct-based :class:`~zkwire.stream_decoder.ConversationDecoder` of that connection, and one line per
frame is printed (time, connection, direction, xid, op, path, error, zxid, size, reply latency).
Decoding never delays or alters forwarding: a malformed frame is shown as such and still forwarded.

``zkwire decode FILE`` decodes a raw captured byte stream (one direction, or both with
``--server-file``) the same way.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import trio

from .errors import InvalidArgumentError
from .stream_decoder import (
    CLIENT,
    SERVER,
    ConversationDecoder,
    DecodedFrame,
    decode_conversation,
    decode_stream,
    format_frame,
    frame_to_json,
)

__all__ = ["TraceOptions", "serve_trace", "main"]


class TraceOptions:
    def __init__(
        self,
        *,
        verbose: bool = False,
        json_lines: bool = False,
        hide_pings: bool = False,
        reveal_secrets: bool = False,
        out: TextIO | None = None,
    ) -> None:
        self.verbose = verbose
        self.json_lines = json_lines
        self.hide_pings = hide_pings
        self.reveal_secrets = reveal_secrets
        self.out = out if out is not None else sys.stdout

    def emit(self, conn: int | None, frame: DecodedFrame, wall: float) -> None:
        if self.hide_pings and frame.kind == "ping":
            return
        if self.json_lines:
            obj = frame_to_json(frame, reveal_secrets=self.reveal_secrets)
            obj["conn"] = conn
            obj["wall_time"] = wall
            self.out.write(json.dumps(obj) + "\n")
        else:
            line = format_frame(frame, self.verbose, reveal_secrets=self.reveal_secrets)
            _, _, rest = line.partition(" ")  # drop the decoder's own time column
            stamp = time.strftime("%H:%M:%S", time.localtime(wall)) + f".{int(wall % 1 * 1e6):06d}"
            prefix = f"{stamp} #{conn} " if conn is not None else ""
            self.out.write(prefix + rest + "\n")
        self.out.flush()

    def note(self, conn: int, text: str) -> None:
        if self.json_lines:
            obj = {"conn": conn, "kind": "connection", "note": text, "wall_time": time.time()}
            self.out.write(json.dumps(obj) + "\n")
        else:
            stamp = time.strftime("%H:%M:%S")
            self.out.write(f"{stamp} #{conn} -- {text}\n")
        self.out.flush()


def _parse_hostport(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = default_host, text
    host = host.strip("[]") or default_host
    try:
        number = int(port)
    except ValueError:
        raise InvalidArgumentError(f"not HOST:PORT: {text!r}") from None
    if not 0 <= number < 65536:
        raise InvalidArgumentError(f"port out of range in {text!r}")
    return host, number


async def serve_trace(
    listen: tuple[str, int],
    server: tuple[str, int],
    options: TraceOptions,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the tracing proxy until cancelled; ``task_status.started`` receives the listening port."""
    listeners = await trio.open_tcp_listeners(listen[1], host=listen[0])
    port = listeners[0].socket.getsockname()[1]
    ids = itertools.count(1)

    async def handle(client: trio.SocketStream) -> None:
        conn = next(ids)
        try:
            peer = client.socket.getpeername()
        except OSError:
            peer = "?"
        try:
            upstream = await trio.open_tcp_stream(*server)
        except OSError as e:
            options.note(conn, f"client {peer}: cannot reach server {server[0]}:{server[1]}: {e}")
            await trio.aclose_forcefully(client)
            return
        options.note(conn, f"open: client {peer} -> server {server[0]}:{server[1]}")
        decoder = ConversationDecoder()
        start = trio.current_time()

        def decode(feed: Callable[[], list[DecodedFrame]]) -> None:
            try:
                frames = feed()
            except Exception as e:  # the decoder must never stop the forwarding
                options.note(conn, f"decoder error: {e!r}")
                return
            wall = time.time()
            for frame in frames:
                options.emit(conn, frame, wall)

        async def pump(src: trio.SocketStream, dst: trio.SocketStream, direction: str) -> None:
            try:
                while True:
                    data = await src.receive_some(65536)
                    if not data:
                        break
                    await dst.send_all(data)
                    now = trio.current_time() - start
                    decode(lambda data=data, now=now: decoder.feed(direction, data, now))  # type: ignore[misc]
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            finally:
                nursery.cancel_scope.cancel()

        async with client, upstream:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump, client, upstream, CLIENT)
                nursery.start_soon(pump, upstream, client, SERVER)
            decode(lambda: decoder.finish(trio.current_time() - start))
        options.note(conn, "closed")

    async with trio.open_nursery() as nursery:
        task_status.started(port)
        await trio.serve_listeners(handle, listeners, handler_nursery=nursery)


def _decode_file(args: argparse.Namespace, options: TraceOptions) -> int:
    try:
        data = Path(args.file).read_bytes()
        server_data = Path(args.server_file).read_bytes() if args.server_file else None
    except OSError as e:
        print(f"zkwire decode: {e}", file=sys.stderr)
        return 1
    frames = decode_conversation(data, server_data) if server_data is not None else decode_stream(data, args.side)
    for frame in frames:
        options.emit(None, frame, time.time())
    return 1 if any(f.kind == "malformed" for f in frames) else 0


def main(argv: list[str]) -> int:
    """Entry point for ``zkwire trace ...`` and ``zkwire decode ...`` (``argv[0]`` names the command)."""
    parser = argparse.ArgumentParser(prog="zkwire", description="Decode ZooKeeper traffic.")
    sub = parser.add_subparsers(dest="command", required=True)
    trace = sub.add_parser("trace", help="a transparent proxy that prints every frame, both ways")
    trace.add_argument("--listen", required=True, metavar="HOST:PORT", help="where clients connect")
    trace.add_argument("--server", required=True, metavar="HOST:PORT", help="the ZooKeeper server")
    decode = sub.add_parser("decode", help="decode a raw captured byte stream")
    decode.add_argument("file", help="the captured bytes (client side, server side, or auto-detected)")
    decode.add_argument("--side", choices=["auto", "client", "server"], default="auto")
    decode.add_argument("--server-file", help="the server's side of the same connection, to pair replies")
    for p in (trace, decode):
        p.add_argument("--verbose", "-v", action="store_true", help="the full decoded record and a hex dump")
        p.add_argument("--json", action="store_true", help="one JSON object per frame")
        p.add_argument("--hide-pings", action="store_true", help="do not show pings and their replies")
        p.add_argument(
            "--reveal-secrets", action="store_true", help="show session passwords and auth data (hidden by default)"
        )
    args = parser.parse_args(argv)
    options = TraceOptions(
        verbose=args.verbose, json_lines=args.json, hide_pings=args.hide_pings, reveal_secrets=args.reveal_secrets
    )
    if args.command == "decode":
        return _decode_file(args, options)
    try:
        listen = _parse_hostport(args.listen)
        server = _parse_hostport(args.server)
    except ValueError as e:
        parser.error(str(e))
    try:
        trio.run(serve_trace, listen, server, options)
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"zkwire trace: {e}", file=sys.stderr)
        return 1
    return 0
