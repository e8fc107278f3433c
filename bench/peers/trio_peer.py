"""The floor of a trio client: one task, a non-blocking socket, ``trio.lowlevel.wait_readable``.

It sends a getData, waits until the socket is readable, reads and splits frames; nothing else (no
session, no pings, no other task, no decoding beyond the frame length).  Beside the raw (blocking)
peer it shows what trio's I/O wait itself costs per request, so a zkwire figure can be read against
the least any trio client pays.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from zkwire.protocol.codec import encode_request
from zkwire.protocol.records import GetDataRequest

from . import Params, Result, measure_sequential_async
from .raw_peer import _HEADER, _LEN, GET_DATA, RawConnection


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    return run_seq(_seq, "trio floor", metric, hosts, path, p)


def run_seq(
    seq: Callable[[RawConnection, str, Params], Awaitable[Result]],
    peer: str,
    metric: str,
    hosts: str,
    path: str,
    p: Params,
) -> Result:
    """Run ``seq`` under trio on a raw connection (the seq-only peers)."""
    if metric != "seq":
        raise ValueError(f"the {peer} peer runs only seq, not {metric}")
    conn = RawConnection(hosts)  # the handshake, blocking; then the socket is handed to trio
    conn.sock.setblocking(False)
    try:
        return trio.run(seq, conn, path, p)
    finally:
        conn.sock.setblocking(True)
        conn.close()


async def _call(conn: RawConnection, request: bytes | bytearray) -> None:
    sock, buf = conn.sock, conn.buf
    sock.send(request)  # a few dozen bytes: a non-blocking send takes them whole
    while True:
        if len(buf) >= 4:
            size = _LEN.unpack_from(buf)[0]
            if len(buf) >= 4 + size:
                if _HEADER.unpack_from(buf, 4)[2]:
                    raise RuntimeError("server error")
                del buf[: 4 + size]
                return
        await trio.lowlevel.wait_readable(sock)
        chunk = sock.recv(262144)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk


async def _seq(conn: RawConnection, path: str, p: Params) -> Result:
    request = GetDataRequest(path, False)
    return await measure_sequential_async(lambda: _call(conn, encode_request(conn.next_xid(), GET_DATA, request)), p)
