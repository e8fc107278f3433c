"""An observer that records every event a client tells (zkwire.observing), for the tests to inspect."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

import zkwire
from zkwire import GetData, SetData
from zkwire.observing import ConnectionEvent, ConnectionEventKind, ObservedEvent, RecipeEvent, RequestEvent


class Recorder:
    """Every event, in order (appended from the observers' thread); ``wants_context`` as asked."""

    def __init__(self, *, wants_context: bool = False) -> None:
        self.events: list[ObservedEvent] = []
        self.wants_context = wants_context
        self._lock = threading.Lock()

    def on_event(self, event: ObservedEvent) -> None:
        with self._lock:
            self.events.append(event)

    def connection(self) -> list[ConnectionEvent]:
        return [e for e in self.events if isinstance(e, ConnectionEvent)]

    def kinds(self) -> list[ConnectionEventKind]:
        return [e.kind for e in self.connection()]

    def requests(self) -> list[RequestEvent]:
        return [e for e in self.events if isinstance(e, RequestEvent)]

    def recipes(self) -> list[RecipeEvent]:
        return [e for e in self.events if isinstance(e, RecipeEvent)]


async def sever_and_reattach(zk: zkwire.Client, proxy: Any) -> None:
    """Sever ``zk``'s connection through the fault proxy and wait until its session is suspended, then
    connected again (at most 10 s)."""
    states = zk.states()
    await proxy.sever()
    with trio.fail_after(10):
        async for state in states:
            if state is zkwire.SessionState.SUSPENDED:
                break
        await zk.wait_connected()


async def mixed_traffic(zk: zkwire.Client, path: str) -> None:
    """15 requests on ``path`` (not created yet) of most kinds: four fail (an exists, two getData of a
    missing node, a create of an existing one), a multi, a pipeline of three, a children watch that
    fires."""
    await zk.create(path, b"a")
    await zk.get_data(path)
    await zk.set_data(path, b"b" * 300)
    await zk.exists(path)
    await zk.exists(f"{path}/none")
    with pytest.raises(zkwire.NoNodeError):
        await zk.get_data(f"{path}/none")
    with pytest.raises(zkwire.NodeExistsError):
        await zk.create(path)
    await zk.create(f"{path}/c", b"")
    await zk.get_children(path, watch=True)
    tx = zk.transaction()
    tx.set_data(path, b"c")
    tx.check(path, version=2)
    await tx.commit()
    await zk.pipeline([GetData(path), SetData(f"{path}/c", b"x"), GetData(f"{path}/none")])
    await zk.delete(f"{path}/c")  # fires the children watch
    await zk.sync(path)
