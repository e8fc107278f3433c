"""Per worker, one fault proxy (``tests/helpers/faultproxy.py``) in front of each ensemble member, so that a
fault can hit one worker's connections and leave the others alone.  A worker's connect string lists
its three proxies; :class:`ProxySet` applies a fault to all three at once (or to one member's)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

_TESTS_DIR = str(Path(__file__).resolve().parents[1])
if _TESTS_DIR not in sys.path:  # the suite's helpers are imported from tests/ (pytest puts it on the path)
    sys.path.append(_TESTS_DIR)

from helpers import faultproxy  # noqa: E402

__all__ = ["ProxySet", "open_proxy_sets"]


class ProxySet:
    """The proxies of one worker, index i forwarding to ensemble member i."""

    def __init__(self, worker: int, proxies: list[faultproxy.FaultProxy], members: list[tuple[str, int]]) -> None:
        self.worker = worker
        self.proxies = proxies
        self.members = members

    @property
    def hosts(self) -> str:
        return ",".join(p.hosts for p in self.proxies)

    def connected_members(self) -> list[int]:
        """Members this worker has an open proxied connection to (normally one)."""
        return [i for i, p in enumerate(self.proxies) if p.connections]

    async def sever(self) -> int:
        n = 0
        for p in self.proxies:
            n += await p.sever()
        return n

    def freeze(self, *, to_server: bool = True, to_client: bool = True) -> None:
        for p in self.proxies:
            p.freeze(to_server=to_server, to_client=to_client)

    def thaw(self) -> None:
        for p in self.proxies:
            p.thaw()

    def refuse(self, on: bool) -> None:
        for p in self.proxies:
            p.refuse(on)

    def swallow_reply(self, op: Iterable[int], path_prefix: str) -> list[faultproxy.FaultRule]:
        return [p.swallow_reply(op=list(op), path_prefix=path_prefix) for p in self.proxies]

    def drop_request(self, op: Iterable[int], path_prefix: str) -> list[faultproxy.FaultRule]:
        return [p.drop_request(op=list(op), path_prefix=path_prefix) for p in self.proxies]

    def disarm(self, rules: Iterable[faultproxy.FaultRule]) -> None:
        for p in self.proxies:
            for r in rules:
                p.disarm(r)

    def retarget_all(self, member: int) -> None:
        """Send this worker's new connections, whatever proxy they use, to ``member``."""
        host, port = self.members[member]
        for p in self.proxies:
            p.retarget(host, port)

    def restore_targets(self) -> None:
        for p, (host, port) in zip(self.proxies, self.members, strict=True):
            p.retarget(host, port)

    def heal(self) -> None:
        """Undo every lasting fault state (used at the end of a run, whatever happened)."""
        for p in self.proxies:
            for r in p.armed:
                p.disarm(r)
            p.refuse(False)
            p.thaw()
            p.set_delay(0)
        self.restore_targets()

    def stats(self) -> dict[str, Any]:
        return {
            "connections": sum(p.total_connections for p in self.proxies),
            "refused": sum(p.refused_connections for p in self.proxies),
            "failed": sum(p.failed_connections for p in self.proxies),
            "handshakes": sum(p.handshakes for p in self.proxies),
        }


@asynccontextmanager
async def open_proxy_sets(workers: int, members: list[tuple[str, int]]) -> AsyncIterator[list[ProxySet]]:
    """``workers`` proxy sets, each with one proxy per member; all closed when the block ends."""
    async with AsyncExitStack() as stack:
        sets = []
        for w in range(workers):
            proxies = [await stack.enter_async_context(faultproxy.open_fault_proxy(h, p)) for h, p in members]
            sets.append(ProxySet(w, proxies, members))
        yield sets
