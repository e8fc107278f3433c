"""An observer that records every event a client tells (zkwire.observing), for the tests to inspect."""

from __future__ import annotations

import threading
from typing import Any

import trio

import zkwire
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
