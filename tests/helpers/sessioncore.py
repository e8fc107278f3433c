"""The session core's test kit: a core on made-up hosts with a fixed random source, one connected to the fake
server (``tests/helpers/fakeserver.py``), and the requests and answers the tests of ``tests/unit/sansio`` send
through it.  No sockets, no trio, no clock: time is passed in by hand."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from helpers.fakeserver import STAT, ClientRequest, ConnectionPair
from zkwire.constants import DEFAULT_MAX_FRAME, AddWatchMode, OpCode
from zkwire.protocol.records import (
    AddWatchRequest,
    ExistsRequest,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    Record,
)
from zkwire.sansio.session import (
    DropConnection,
    Event,
    HostPort,
    Reply,
    SessionCore,
    SessionState,
    StateChanged,
    WatchNotification,
    WatchRequest,
)
from zkwire.sansio.watches import WatchKind

__all__ = [
    "H1",
    "H2",
    "H3",
    "SID",
    "ZERO16",
    "Watcher",
    "add_watch",
    "connected",
    "data_reply",
    "drops",
    "exists",
    "get",
    "get_children",
    "get_data",
    "make_core",
    "notify",
    "only",
    "register_one_shot_watches",
    "watch_via",
]

H1, H2, H3 = HostPort("zk1", 2181), HostPort("zk2", 2181), HostPort("zk3", 2181)
#: The session id the fake server grants.
SID = 0x1_0000_0001
T = TypeVar("T")
ZERO16 = bytes(16)


def make_core(
    timeout: float = 9.0,
    *,
    hosts: Sequence[HostPort] = (H1,),
    chroot: str = "",
    allow_read_only: bool = False,
    max_frame: int = DEFAULT_MAX_FRAME,
) -> SessionCore:
    return SessionCore(
        list(hosts),
        session_timeout=timeout,
        chroot=chroot,
        allow_read_only=allow_read_only,
        max_frame=max_frame,
        rng=random.Random(1234),
    )


def connected(
    timeout: float = 9.0, now: float = 0.0, *, chroot: str = "", max_frame: int = DEFAULT_MAX_FRAME
) -> ConnectionPair:
    pair = ConnectionPair(make_core(timeout=timeout, chroot=chroot, max_frame=max_frame))
    assert pair.connect(now) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    return pair


class Watcher:
    """A distinct, nameable watcher object."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Watcher({self.name})"


def get(pair: ConnectionPair, token: object, now: float = 1.0) -> None:
    """A getData of ``/a`` without a watch, sent on ``pair``'s core."""
    pair.core.send_request(OpCode.GET_DATA, GetDataRequest("/a", False), token, now, path="/a")


def get_data(core: SessionCore, path: str, token: object, now: float, watcher: object = None) -> int:
    watch = WatchRequest(WatchKind.DATA, path, watcher) if watcher is not None else None
    return core.send_request(
        OpCode.GET_DATA, GetDataRequest(path, watcher is not None), token, now, path=path, watch=watch
    )


def exists(core: SessionCore, path: str, token: object, now: float, watcher: object, kind: WatchKind) -> int:
    return core.send_request(
        OpCode.EXISTS, ExistsRequest(path, True), token, now, path=path, watch=WatchRequest(kind, path, watcher)
    )


def get_children(core: SessionCore, path: str, token: object, now: float, watcher: object) -> int:
    return core.send_request(
        OpCode.GET_CHILDREN,
        GetChildrenRequest(path, True),
        token,
        now,
        path=path,
        watch=WatchRequest(WatchKind.CHILD, path, watcher),
    )


def add_watch(core: SessionCore, path: str, token: object, now: float, watcher: object, recursive: bool) -> int:
    mode = AddWatchMode.PERSISTENT_RECURSIVE if recursive else AddWatchMode.PERSISTENT
    kind = WatchKind.RECURSIVE if recursive else WatchKind.PERSISTENT
    return core.send_request(
        OpCode.ADD_WATCH, AddWatchRequest(path, mode), token, now, path=path, watch=WatchRequest(kind, path, watcher)
    )


def watch_via(pair: ConnectionPair, send: int, body: Record | None = None, *, err: int = 0, now: float = 0.5) -> Reply:
    """Deliver the answer to the request just sent; return its Reply."""
    [req] = pair.to_server()
    assert isinstance(req, ClientRequest) and req.xid == send
    [reply] = pair.to_client(pair.server.reply(req, body, err=err), now)
    assert isinstance(reply, Reply)
    return reply


def register_one_shot_watches(pair: ConnectionPair) -> dict[str, Watcher]:
    """A data watch on /d, an exist watch on /e, a child watch on /c."""
    core = pair.core
    ws = {name: Watcher(name) for name in "dec"}
    watch_via(pair, get_data(core, "/d", "d", 1.0, ws["d"]), data_reply())
    watch_via(pair, exists(core, "/e", "e", 1.0, ws["e"], WatchKind.DATA), err=-101)
    watch_via(pair, get_children(core, "/c", "c", 1.0, ws["c"]), GetChildrenResponse(()))
    return ws


def only(events: Sequence[object], cls: type[T]) -> list[T]:
    return [e for e in events if isinstance(e, cls)]


def drops(events: list[Event]) -> list[DropConnection]:
    return [e for e in events if isinstance(e, DropConnection)]


def notify(pair: ConnectionPair, type_: int, path: str, now: float = 1.0) -> WatchNotification:
    [ev] = pair.to_client(pair.server.event(type_, path), now)
    assert isinstance(ev, WatchNotification)
    return ev


def data_reply(data: bytes = b"v") -> GetDataResponse:
    return GetDataResponse(data, STAT)
