"""``zkwire trace``'s proxy: each client connection forwarded to a server, a copy of its bytes decoded.

Bytes are forwarded unchanged as they arrive, each piece timestamped when it is read; the copy goes to
the :mod:`~zkwire.trace.worker`, which has it decoded and printed in another process, so decoding never
delays or alters the traffic, and reply latencies are the times the bytes passed here.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import BinaryIO

import trio

from .conversations import format_endpoint
from .frames import CLIENT, SERVER, Direction
from .output import TraceOptions
from .upstream import UpstreamError, Upstreams
from .worker import DecodingWorker, TracedConnection, open_decoding_worker

__all__ = ["READ_CHUNK", "serve_trace"]

#: How much of a side is read (and then forwarded) at once.
READ_CHUNK = 65536


def _save_files(save: Path, conn_id: int, decoding: DecodingWorker) -> dict[Direction, BinaryIO]:
    """The files that keep connection ``conn_id``'s raw bytes (none if they cannot be made: said)."""
    files: dict[Direction, BinaryIO] = {}
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
    reading: str = "fast",
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the tracing proxy until cancelled; ``task_status.started`` receives the listening port.

    ``server`` is one server, or :class:`~zkwire.trace.upstream.Upstreams`: several tried in order for
    each connection (a whole ensemble), over TLS if asked.

    With ``save``, each connection's bytes are also written, as forwarded, to ``conn-N-client.bin`` and
    ``conn-N-server.bin`` in that directory (``zkwire decode conn-N-client.bin --server-file
    conn-N-server.bin`` decodes them later).

    ``reading`` is how records are read (one of :data:`~zkwire.trace.decoder.READINGS`).

    Each connection's bytes are forwarded as they arrive; decoding and printing happen in a process of
    their own (see :class:`~zkwire.trace.worker.DecodingWorker`) and never hold up the traffic.  If
    writing the output fails (a closed pipe), the proxy stops with that error.
    """
    upstreams = server if isinstance(server, Upstreams) else Upstreams([server])
    listeners = await trio.open_tcp_listeners(listen[1], host=listen[0])
    port = listeners[0].socket.getsockname()[1]
    async with open_decoding_worker(options, reading) as decoding:
        await _serve(listeners, upstreams, decoding, save, task_status, port)


async def _serve(
    listeners: list[trio.SocketListener],
    upstreams: Upstreams,
    decoding: DecodingWorker,
    save: Path | None,
    task_status: trio.TaskStatus[int],
    port: int,
) -> None:
    ids = itertools.count(1)

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
        conn = TracedConnection(conn_id)
        decoding.open(conn, client_name)
        tls = " (TLS)" if upstreams.tls is not None else ""
        tried = f" after {'; '.join(failures)}" if failures else ""
        decoding.note(conn_id, f"open: client {client_name} -> server {format_endpoint(chosen)}{tls}{tried}")
        files = _save_files(save, conn_id, decoding) if save is not None else {}
        start = trio.current_time()

        async def pump(src: trio.abc.Stream, dst: trio.abc.Stream, direction: Direction) -> None:
            try:
                while True:
                    data = bytes(await src.receive_some(READ_CHUNK))  # the same object when it is bytes
                    if not data:
                        break
                    # Queued for decoding before it is forwarded (the queue never blocks): a reply can
                    # only come after its request went out, so it is never queued before the request.
                    decoding.data(conn, direction, data, trio.current_time() - start)
                    await dst.send_all(data)
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

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stop_when_output_fails)
        task_status.started(port)
        await trio.serve_listeners(handle, listeners, handler_nursery=nursery)
