"""What the tests of a ZooKeeper 3.8.0 server's quirks (tests/server/quirks) share: a raw session with its
own xid counter, a synchronous body run in a worker thread under a time limit, and the four-letter words.

The tests talk to the server through :mod:`rawwire` (a plain socket and zkwire's record codec, with no
session logic), so they see exactly what a client library would have to cope with; protocol-notes/quirks-3.8.0.md
describes each quirk by test name.  The raw driver is synchronous: each test runs its body in a worker thread,
bounded by ``trio.fail_after`` (and every socket call has its own timeout).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from typing import TypeVar

import trio

from helpers.addresses import first_server
from helpers.rawwire import Frame, open_session
from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import OpCode
from zkwire.protocol.records import (
    Create2Response,
    CreateRequest,
    CreateResponse,
    ExistsRequest,
    ExistsResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    Stat,
)

T = TypeVar("T")


LIMIT = 15


ERR = struct.Struct(">iqi")


async def in_thread(fn: Callable[[], T], limit: float = LIMIT) -> T:
    with trio.fail_after(limit):
        return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


class Session:
    """A raw session with its own xid counter and helpers for the common records."""

    def __init__(self, hosts: str, **kwargs: object) -> None:
        self.conn = open_session(hosts, **kwargs)  # type: ignore[arg-type]
        self.xid = 0

    def next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def call(self, op: int, record: object = None) -> Frame:
        return self.conn.call(self.next_xid(), op, record)  # type: ignore[arg-type]

    def ok(self, op: int, record: object = None) -> object:
        f = self.call(op, record)
        assert f.header.err == 0, f"{op}: error {f.header.err}"
        return f.decode(op)

    def create(self, path: str, data: bytes | None = b"", flags: int = 0, op: int = OpCode.CREATE) -> str:
        body = self.ok(op, CreateRequest(path, data, OPEN_ACL_UNSAFE, flags))
        assert isinstance(body, CreateResponse | Create2Response)
        assert body.path is not None
        return body.path

    def stat(self, path: str) -> Stat | None:
        f = self.call(OpCode.EXISTS, ExistsRequest(path, False))
        if f.header.err == -101:
            return None
        assert f.header.err == 0
        body = f.decode(OpCode.EXISTS)
        assert isinstance(body, ExistsResponse)
        return body.stat

    def children(self, path: str) -> list[str]:
        body = self.ok(OpCode.GET_CHILDREN, GetChildrenRequest(path, False))
        assert isinstance(body, GetChildrenResponse)
        return sorted(c for c in body.children or () if c is not None)

    def ensure(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            f = self.call(OpCode.CREATE, CreateRequest("/" + "/".join(parts[:i]), b"", OPEN_ACL_UNSAFE, 0))
            assert f.header.err in (0, -110)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def four_letter(hosts: str, word: bytes) -> bytes:
    with socket.create_connection(first_server(hosts), timeout=5) as s:
        s.sendall(word)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def server_conf(hosts: str) -> dict[str, str]:
    text = four_letter(hosts, b"conf").decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
