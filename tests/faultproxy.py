"""A fault-injecting TCP proxy between a client and a real ZooKeeper server, for tests.

``async with open_fault_proxy(host, port) as proxy:`` listens on a free loopback port
(``proxy.hosts``) and forwards every connection to the server, unchanged, until told otherwise:

* ``await proxy.sever()`` closes every current connection abruptly (new ones are still accepted);
* ``proxy.freeze()`` / ``proxy.thaw()`` stop and resume forwarding in both directions, connections open;
* ``proxy.refuse(True)`` closes new connections as soon as they are accepted;
* ``proxy.swallow_reply(op=..., path_prefix=...)`` lets the next matching request through to the server
  but drops its reply and severs that connection: the write is applied, the client never hears of it;
* ``proxy.drop_request(op=..., path_prefix=...)`` severs the connection instead of forwarding the next
  matching request: the write is never applied.

Every task belongs to the context manager and ends with it.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from zkwire.framing import FrameDecoder

__all__ = ["FaultProxy", "FaultRule", "open_fault_proxy"]

_HEADER = struct.Struct(">ii")
_LEN = struct.Struct(">i")


@dataclass
class FaultRule:
    """One armed fault; ``await rule.wait()`` returns once it has happened."""

    op: int | None
    path_prefix: str | None
    action: str  # "swallow_reply" or "drop_request"
    xid: int | None = None
    path: str | None = None
    done: trio.Event = field(default_factory=trio.Event)

    @property
    def triggered(self) -> bool:
        return self.done.is_set()

    async def wait(self) -> FaultRule:
        await self.done.wait()
        return self

    def matches(self, op: int, path: str | None) -> bool:
        if self.op is not None and op != self.op:
            return False
        return self.path_prefix is None or (path is not None and path.startswith(self.path_prefix))


def _request_path(payload: bytes) -> str | None:
    """The first ustring after the RequestHeader: the path, for every op that has one."""
    if len(payload) < 12:
        return None
    n = _LEN.unpack_from(payload, 8)[0]
    if n < 0 or 12 + n > len(payload):
        return None
    try:
        return payload[12 : 12 + n].decode()
    except UnicodeDecodeError:
        return None


class _Connection:
    def __init__(self, proxy: FaultProxy, client: trio.SocketStream, upstream: trio.SocketStream) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.scope = trio.CancelScope()
        self.swallow: FaultRule | None = None

    async def run(self) -> None:
        with self.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._client_to_server)
                nursery.start_soon(self._server_to_client)
        await trio.aclose_forcefully(self.client)
        await trio.aclose_forcefully(self.upstream)

    def sever(self) -> None:
        self.scope.cancel()

    async def _gate(self) -> None:
        while self.proxy.frozen:
            await self.proxy._thawed.wait()

    async def _client_to_server(self) -> None:
        decoder = FrameDecoder()
        first = True
        try:
            while True:
                data = await self.client.receive_some(65536)
                if not data:
                    break
                await self._gate()
                for payload in decoder.feed(data):
                    if first:  # the ConnectRequest
                        first = False
                        continue
                    xid, op = _HEADER.unpack_from(payload, 0)
                    rule = self.proxy._take_rule(op, _request_path(payload))
                    if rule is None:
                        continue
                    rule.xid, rule.path = xid, _request_path(payload)
                    if rule.action == "drop_request":
                        rule.done.set()
                        self.sever()
                        return
                    self.swallow = rule
                await self.upstream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        self.sever()

    async def _server_to_client(self) -> None:
        decoder = FrameDecoder()
        first = True
        try:
            while True:
                data = await self.upstream.receive_some(65536)
                if not data:
                    break
                await self._gate()
                if self.swallow is None:
                    # forward as received; still split frames so a later swallow starts on a boundary
                    decoder.feed(data)
                    first = False if first and len(data) >= 4 else first
                    await self.client.send_all(data)
                    continue
                out = bytearray()
                for payload in decoder.feed(data):
                    if len(payload) >= 4 and _LEN.unpack_from(payload, 0)[0] == self.swallow.xid:
                        await self.client.send_all(bytes(out))
                        self.swallow.done.set()
                        self.sever()
                        return
                    out += _LEN.pack(len(payload)) + payload
                await self.client.send_all(bytes(out))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        self.sever()


class FaultProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self.frozen = False
        self.refusing = False
        self.total_connections = 0
        self._thawed = trio.Event()
        self._connections: set[_Connection] = set()
        self._rules: list[FaultRule] = []

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        return len(self._connections)

    async def sever(self) -> None:
        for conn in list(self._connections):
            conn.sever()
        await trio.lowlevel.checkpoint()

    def freeze(self) -> None:
        self.frozen = True
        self._thawed = trio.Event()

    def thaw(self) -> None:
        self.frozen = False
        self._thawed.set()

    def refuse(self, on: bool = True) -> None:
        self.refusing = on

    def retarget(self, host: str, port: int) -> None:
        self.upstream = (host, port)

    def swallow_reply(self, op: int | None = None, path_prefix: str | None = None) -> FaultRule:
        rule = FaultRule(op, path_prefix, "swallow_reply")
        self._rules.append(rule)
        return rule

    def drop_request(self, op: int | None = None, path_prefix: str | None = None) -> FaultRule:
        rule = FaultRule(op, path_prefix, "drop_request")
        self._rules.append(rule)
        return rule

    def _take_rule(self, op: int, path: str | None) -> FaultRule | None:
        for rule in self._rules:
            if rule.matches(op, path):
                self._rules.remove(rule)
                return rule
        return None

    async def _handle(self, client: trio.SocketStream) -> None:
        self.total_connections += 1
        if self.refusing:
            await trio.aclose_forcefully(client)
            return
        try:
            upstream = await trio.open_tcp_stream(*self.upstream)
        except OSError:
            await trio.aclose_forcefully(client)
            return
        conn = _Connection(self, client, upstream)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)


@asynccontextmanager
async def open_fault_proxy(host: str, port: int) -> AsyncIterator[FaultProxy]:
    proxy = FaultProxy((host, port))
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    proxy.port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, proxy._handle, listeners)
        try:
            yield proxy
        finally:
            proxy.thaw()
            nursery.cancel_scope.cancel()
