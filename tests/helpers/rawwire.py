"""A tiny synchronous driver of the ZooKeeper client protocol over a plain socket.

It uses zkwire's codec for the records but none of its session logic, so a test can send exactly the
bytes it wants (odd xids, unknown op codes, truncated bodies, oversize frames) and see exactly the bytes
the server sends back (reply lengths, bodies on error replies, the order of events and replies).

Blocking calls are fine here: tests run it in a worker thread with ``trio.to_thread.run_sync`` or call it
directly from a synchronous helper; every socket operation has a timeout.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from helpers.addresses import first_server
from zkwire.constants import PING_XID, WATCH_XID, OpCode
from zkwire.protocol.codec import (
    decode_connect_response,
    decode_reply_header,
    decode_response_body,
    decode_watcher_event,
    encode_connect_request,
    encode_request,
)
from zkwire.protocol.records import ConnectRequest, ConnectResponse, Record, ReplyHeader, WatcherEvent

__all__ = ["RawConn", "Frame", "open_session"]

_LEN = struct.Struct(">i")


@dataclass(frozen=True)
class Frame:
    """One server frame: the full bytes (length prefix included) and its decoded header."""

    raw: bytes

    @property
    def payload(self) -> bytes:
        return self.raw[4:]

    @property
    def header(self) -> ReplyHeader:
        return decode_reply_header(self.payload)

    @property
    def body(self) -> bytes:
        return self.payload[16:]

    def decode(self, op: int) -> Record | None:
        """The body as ``op``'s success reply."""
        return decode_response_body(op, self.payload)

    def event(self) -> WatcherEvent:
        assert self.header.xid == WATCH_XID
        return decode_watcher_event(self.payload)


class RawConn:
    """One TCP connection to a server, driven frame by frame."""

    def __init__(self, hosts: str, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(first_server(hosts), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray()
        self.connect_response: ConnectResponse | None = None
        self.connect_raw = b""

    # -------------------------------------------------------------------- bytes

    def send_raw(self, data: bytes | bytearray) -> None:
        self.sock.sendall(data)

    def send_payload(self, payload: bytes | bytearray) -> None:
        """Send ``payload`` with a correct length prefix."""
        self.sock.sendall(_LEN.pack(len(payload)) + bytes(payload))

    def _fill(self, n: int) -> bool:
        while len(self._buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return False
            self._buf += chunk
        return True

    def recv_raw(self) -> bytes:
        """One frame, length prefix included.  Raises EOFError if the server closed the connection."""
        if not self._fill(4):
            raise EOFError("connection closed by the server")
        (n,) = _LEN.unpack_from(self._buf, 0)
        if not self._fill(4 + n):
            raise EOFError("connection closed in the middle of a frame")
        raw = bytes(self._buf[: 4 + n])
        del self._buf[: 4 + n]
        return raw

    def recv(self) -> Frame:
        return Frame(self.recv_raw())

    def is_closed_by_server(self, wait: float = 3.0) -> bool:
        """True if the server closes the connection (EOF or reset) within ``wait`` seconds with nothing
        more to read; raises AssertionError if a frame arrives instead."""
        old = self.sock.gettimeout()
        self.sock.settimeout(wait)
        try:
            if self._buf:
                raise AssertionError(f"unexpected buffered bytes {bytes(self._buf).hex()}")
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        finally:
            self.sock.settimeout(old)
        if data:
            raise AssertionError(f"unexpected bytes from the server: {data.hex()}")
        return True

    # -------------------------------------------------------------------- protocol

    def handshake(
        self,
        *,
        session_id: int = 0,
        passwd: bytes | None = bytes(16),
        timeout_ms: int = 4000,
        read_only: bool | None = False,
        last_zxid: int = 0,
    ) -> ConnectResponse:
        """Send a ConnectRequest (``read_only=None`` leaves out the trailing byte) and read the answer."""
        req = ConnectRequest(0, last_zxid, timeout_ms, session_id, passwd, read_only)
        self.send_raw(encode_connect_request(req))
        self.connect_raw = self.recv_raw()
        self.connect_response = decode_connect_response(self.connect_raw[4:])
        return self.connect_response

    def send(self, xid: int, op: int, record: Record | None = None) -> None:
        self.send_raw(encode_request(xid, op, record))

    def call(self, xid: int, op: int, record: Record | None = None) -> Frame:
        """Send a request and return the next frame that is not a notification (nor, unless the request
        is a ping, a ping reply)."""
        self.send(xid, op, record)
        while True:
            f = self.recv()
            hx = f.header.xid
            if hx == WATCH_XID or (hx == PING_XID and op != OpCode.PING):
                continue
            return f

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> RawConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_session(hosts: str, *, read_only: bool | None = False, timeout_ms: int = 4000) -> RawConn:
    """A RawConn with a fresh session established."""
    conn = RawConn(hosts)
    try:
        resp = conn.handshake(read_only=read_only, timeout_ms=timeout_ms)
    except BaseException:
        conn.close()
        raise
    assert resp.timeout > 0 and resp.session_id != 0, resp
    return conn
