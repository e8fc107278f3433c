"""The least a session client does per getData, in one trio task: the ``least`` peer.

Beside the trio floor (send, wait, read: no protocol work) it also builds the request record, encodes it,
keeps a pending entry, splits the reply frame, matches its xid and decodes data and Stat into a reply
event, with zkwire's own codec and reply type; no path check, no API layers, no hand-off between tasks,
no liveness bookkeeping, no other task.  Any session client does at least this, so its CPU per request
(the ``seq`` row of bench/run.py) and its instructions (bench/instructions.py) bound from below what a
client built on trio and this codec can cost.
"""

from __future__ import annotations

from collections import deque

import trio

from zkwire.protocol.codec import decode_response_body, encode_request_into
from zkwire.protocol.framing import REPLY_HEADER
from zkwire.protocol.records import GetDataRequest, GetDataResponse
from zkwire.sansio.session import Reply

from . import Params, Result, measure_sequential_async
from .raw_peer import _LEN, GET_DATA, RawConnection
from .trio_peer import run_seq


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    return run_seq(_seq, "least-work", metric, hosts, path, p)


class LeastClient:
    """One connection's request loop, nothing more (see the module docstring)."""

    def __init__(self, conn: RawConnection) -> None:
        self.conn = conn
        self.pending: deque[tuple[int, int, float]] = deque()
        self.now = trio.lowlevel.current_clock().current_time

    async def get_data(self, path: str) -> Reply[None]:
        conn = self.conn
        sock, buf = conn.sock, conn.buf
        out = bytearray()
        xid = conn.next_xid()
        encode_request_into(out, xid, GET_DATA, GetDataRequest(path, False))
        self.pending.append((xid, GET_DATA, self.now()))
        sock.send(out)  # a few dozen bytes: a non-blocking send takes them whole
        while len(buf) < 4 or len(buf) < 4 + _LEN.unpack_from(buf)[0]:
            await trio.lowlevel.wait_readable(sock)
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
        size = _LEN.unpack_from(buf)[0]
        payload = bytes(buf[4 : 4 + size])
        del buf[: 4 + size]
        got, zxid, err = REPLY_HEADER.unpack_from(payload)
        sent, op, _ = self.pending.popleft()
        if got != sent or err:
            raise RuntimeError(f"reply xid {got} err {err} for xid {sent}")
        reply: Reply[None] = Reply(None, zxid, decode_response_body(op, payload), None)
        if type(reply.body) is not GetDataResponse:
            raise RuntimeError(f"not a getData reply: {reply.body!r}")
        return reply


async def _seq(conn: RawConnection, path: str, p: Params) -> Result:
    client = LeastClient(conn)
    return await measure_sequential_async(lambda: client.get_data(path), p)
