"""A minimal raw-socket client: a blocking socket, struct, and zkwire.protocol.codec to encode requests.

No session management, no pings, no watches, no error handling beyond checking ``err``: the floor of
what a Python client can cost, not a client to use.
"""

from __future__ import annotations

import socket
import struct
import time

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.records import (
    ConnectRequest,
    CreateRequest,
    DeleteRequest,
    GetChildrenRequest,
    GetDataRequest,
)

from . import (
    Params,
    Result,
    children_path,
    measure_counted,
    measure_listing,
    measure_sequential,
    metric_function,
    throughput,
    unique,
)

_LEN = struct.Struct(">i")
_HEADER = struct.Struct(">iqi")  # xid, zxid, err
GET_DATA, CREATE, DELETE, GET_CHILDREN = 4, 1, 2, 8
EPHEMERAL_SEQUENTIAL = 3


class RawConnection:
    def __init__(self, hosts: str) -> None:
        host, port = hosts.split(",")[0].split("/")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.xid = 0
        self.sock.sendall(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
        self.frame()

    def close(self) -> None:
        self.sock.sendall(encode_request(self.next_xid(), -11))  # closeSession
        self.sock.close()

    def next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def frame(self) -> bytes:
        """The next complete frame from the server."""
        buf = self.buf
        while True:
            if len(buf) >= 4:
                size = _LEN.unpack_from(buf)[0]
                if len(buf) >= 4 + size:
                    out = bytes(buf[4 : 4 + size])
                    del buf[: 4 + size]
                    return out
            chunk = self.sock.recv(262144)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf.extend(chunk)

    def frames_available(self) -> int:
        """Read once, then count and drop the complete frames buffered (at least one)."""
        buf = self.buf
        while True:
            chunk = self.sock.recv(262144)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf.extend(chunk)
            count = pos = 0
            while len(buf) - pos >= 4:
                size = _LEN.unpack_from(buf, pos)[0]
                if len(buf) - pos < 4 + size:
                    break
                pos += 4 + size
                count += 1
            if count:
                del buf[:pos]
                return count

    def call(self, op: int, record: object) -> bytes:
        self.sock.sendall(encode_request(self.next_xid(), op, record))  # type: ignore[arg-type]
        reply = self.frame()
        err = _HEADER.unpack_from(reply)[2]
        if err:
            raise RuntimeError(f"server error {err}")
        return reply


def run(metric: str, hosts: str, path: str, p: Params) -> Result:
    conn = RawConnection(hosts)
    try:
        return metric_function(globals(), metric)(conn, path, p)
    finally:
        conn.close()


def _seq(conn: RawConnection, path: str, p: Params) -> Result:
    request = GetDataRequest(path, False)
    return measure_sequential(lambda: conn.call(GET_DATA, request), p)


def _pipelined(conn: RawConnection, path: str, p: Params) -> Result:
    """A sliding window: each read's worth of replies is answered with as many new requests, in one send."""
    request = GetDataRequest(path, False)

    def requests(k: int) -> bytes:
        return b"".join(encode_request(conn.next_xid(), GET_DATA, request) for _ in range(k))

    def phase(seconds: float) -> tuple[int, float]:
        t = time.perf_counter()
        deadline = t + seconds
        conn.sock.sendall(requests(p.window))
        in_flight, done = p.window, 0
        while in_flight:
            k = conn.frames_available()
            done += k
            in_flight -= k
            if done < p.max_ops and time.perf_counter() < deadline:
                conn.sock.sendall(requests(k))
                in_flight += k
        return done, time.perf_counter() - t

    phase(p.warm)
    ops, elapsed = phase(p.measure)
    return throughput(ops, elapsed)


def _create_delete(conn: RawConnection, path: str, p: Params) -> Result:
    prefix = f"{path}/{unique('cd')}-"

    def create_delete() -> None:
        reply = conn.call(CREATE, CreateRequest(prefix, b"", OPEN_ACL_UNSAFE, EPHEMERAL_SEQUENTIAL))
        size = _LEN.unpack_from(reply, 16)[0]
        created = reply[20 : 20 + size].decode()
        conn.call(DELETE, DeleteRequest(created, -1))

    return throughput(*measure_counted(create_delete, p, step=2))


def _names(reply: bytes) -> list[str]:
    """The child names of a getChildren reply (after the 16-byte header): a count, then
    length-prefixed UTF-8 strings."""
    count = _LEN.unpack_from(reply, 16)[0]
    names = []
    pos = 20
    for _ in range(count):
        size = _LEN.unpack_from(reply, pos)[0]
        names.append(reply[pos + 4 : pos + 4 + size].decode())
        pos += 4 + size
    return names


def _children(conn: RawConnection, path: str, p: Params) -> Result:
    """Scale: getChildren of a node with ``arg`` children, names decoded to str."""
    request = GetChildrenRequest(children_path(path, p.arg), False)
    return measure_listing(lambda: _names(conn.call(GET_CHILDREN, request)), request.path, p)
