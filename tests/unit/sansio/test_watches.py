"""Watches in the session core (zkwire.sansio.watches): registered only when the request that sets one
succeeds, the tables (data, exist, child, persistent, recursive) and who each notification wakes, the
chroot stripped from event paths; and removal beside registration: a removeWatches answered without error
makes the core forget the local watchers of the tables it empties and say what each is woken with.
(SetWatches on re-attach is test_handshake.py.)"""

from __future__ import annotations

import random
import threading

import pytest
from helpers.fakeserver import STAT
from helpers.sessioncore import (
    Watcher,
    add_watch,
    connected,
    data_reply,
    exists,
    get_children,
    get_data,
    notify,
    watch_via,
)

from zkwire.constants import EventType, KeeperState, WatcherType
from zkwire.errors import NoAuthError, NoNodeError
from zkwire.protocol.records import ErrorResponse, ExistsResponse, GetChildrenResponse
from zkwire.sansio.session import DropConnection, Event, HostPort, SessionCore, WatchNotification
from zkwire.sansio.watches import WatchKind, WatchRegistry

# ------------------------------------------------------------------------------------------------ watches


def test_get_data_watch_registers_only_on_success() -> None:
    pair = connected()
    core = pair.core
    w_fail, w_ok = Watcher("fail"), Watcher("ok")
    reply = watch_via(pair, get_data(core, "/d", "t1", 1.0, w_fail), err=-101)
    assert isinstance(reply.error, NoNodeError)
    assert not core.watches.has(WatchKind.DATA, "/d")
    ev = notify(pair, EventType.NODE_CREATED, "/d")
    assert ev.watchers == []

    watch_via(pair, get_data(core, "/d", "t2", 1.0, w_ok), data_reply())
    assert core.watches.has(WatchKind.DATA, "/d")
    ev = notify(pair, EventType.NODE_DATA_CHANGED, "/d")
    assert (ev.type, ev.state, ev.path, ev.watchers) == (
        EventType.NODE_DATA_CHANGED,
        KeeperState.SYNC_CONNECTED,
        "/d",
        [w_ok],
    )
    # One-shot: gone after firing.
    assert notify(pair, EventType.NODE_DATA_CHANGED, "/d").watchers == []


def test_watch_of_a_request_lost_with_the_connection_is_not_registered() -> None:
    pair = connected()
    get_data(pair.core, "/d", "t", 1.0, Watcher("w"))
    pair.to_server()
    pair.lose(2.0)
    assert not pair.core.watches


@pytest.mark.parametrize("kind", [WatchKind.DATA, WatchKind.EXIST])
def test_exists_watch_on_missing_node_registers(kind: WatchKind) -> None:
    # Client.exists asks with WatchKind.DATA; the table must follow the server's answer either way.
    pair = connected()
    core = pair.core
    w = Watcher("exists")
    reply = watch_via(pair, exists(core, "/e", "t", 1.0, w, kind), err=-101)
    assert isinstance(reply.error, NoNodeError)
    assert core.watches.has(WatchKind.EXIST, "/e")
    assert not core.watches.has(WatchKind.DATA, "/e")
    assert notify(pair, EventType.NODE_CREATED, "/e").watchers == [w]
    assert not core.watches


@pytest.mark.parametrize("kind", [WatchKind.DATA, WatchKind.EXIST])
def test_exists_watch_on_existing_node_is_a_data_watch(kind: WatchKind) -> None:
    pair = connected()
    core = pair.core
    w = Watcher("exists")
    reply = watch_via(pair, exists(core, "/e", "t", 1.0, w, kind), ExistsResponse(STAT))
    assert reply.body == ExistsResponse(STAT)
    assert core.watches.has(WatchKind.DATA, "/e")
    assert not core.watches.has(WatchKind.EXIST, "/e")
    assert notify(pair, EventType.NODE_DELETED, "/e").watchers == [w]


def test_exists_watch_not_registered_on_other_errors() -> None:
    pair = connected()
    reply = watch_via(pair, exists(pair.core, "/e", "t", 1.0, Watcher("w"), WatchKind.EXIST), err=-102)
    assert isinstance(reply.error, NoAuthError)
    assert not pair.core.watches


def test_data_and_child_tables_are_separate() -> None:
    pair = connected()
    core = pair.core
    wd, wc = Watcher("data"), Watcher("child")
    watch_via(pair, get_data(core, "/n", "d", 1.0, wd), data_reply())
    watch_via(pair, get_children(core, "/n", "c", 1.0, wc), GetChildrenResponse(("x",)))

    assert notify(pair, EventType.NODE_CHILDREN_CHANGED, "/n").watchers == [wc]
    assert notify(pair, EventType.NODE_CHILDREN_CHANGED, "/n").watchers == []
    assert notify(pair, EventType.NODE_DATA_CHANGED, "/n").watchers == [wd]

    watch_via(pair, get_data(core, "/n", "d", 1.0, wd), data_reply())
    watch_via(pair, get_children(core, "/n", "c", 1.0, wc), GetChildrenResponse(()))
    # Deletion wakes both tables, each watcher once.
    assert notify(pair, EventType.NODE_DELETED, "/n").watchers == [wd, wc]
    assert not core.watches


def test_events_on_other_paths_wake_nobody() -> None:
    pair = connected()
    watch_via(pair, get_data(pair.core, "/a/b", "d", 1.0, Watcher("w")), data_reply())
    for path in ("/a", "/a/b/c", "/a/bc"):
        assert notify(pair, EventType.NODE_DELETED, path).watchers == []
    assert pair.core.watches.has(WatchKind.DATA, "/a/b")


def test_persistent_watch_sees_every_event_on_its_path_and_stays() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("persistent")
    reply = watch_via(pair, add_watch(core, "/p", "t", 1.0, w, recursive=False), ErrorResponse(0))
    assert reply.error is None
    for etype in (
        EventType.NODE_CREATED,
        EventType.NODE_DATA_CHANGED,
        EventType.NODE_CHILDREN_CHANGED,
        EventType.NODE_DELETED,
        EventType.NODE_CREATED,
    ):
        assert notify(pair, etype, "/p").watchers == [w]
    assert notify(pair, EventType.NODE_CREATED, "/p/child").watchers == []
    assert core.watches.has(WatchKind.PERSISTENT, "/p")


def test_recursive_watch_sees_descendants_but_never_children_changed() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("recursive")
    watch_via(pair, add_watch(core, "/r", "t", 1.0, w, recursive=True), ErrorResponse(0))
    for path in ("/r", "/r/a", "/r/a/b/c"):
        for etype in (EventType.NODE_CREATED, EventType.NODE_DATA_CHANGED, EventType.NODE_DELETED):
            assert notify(pair, etype, path).watchers == [w], (etype, path)
        assert notify(pair, EventType.NODE_CHILDREN_CHANGED, path).watchers == []
    for path in ("/", "/rx", "/other/r"):
        assert notify(pair, EventType.NODE_CREATED, path).watchers == []
    assert core.watches.has(WatchKind.RECURSIVE, "/r")


def test_one_watcher_in_several_tables_is_woken_once() -> None:
    pair = connected()
    core = pair.core
    w = Watcher("everywhere")
    watch_via(pair, get_data(core, "/n", "d", 1.0, w), data_reply())
    watch_via(pair, get_children(core, "/n", "c", 1.0, w), GetChildrenResponse(()))
    watch_via(pair, add_watch(core, "/", "r", 1.0, w, recursive=True), ErrorResponse(0))
    assert notify(pair, EventType.NODE_DELETED, "/n").watchers == [w]


def test_recursive_watch_and_a_notification_with_a_relative_path() -> None:
    # A malformed path must not hang the ancestor walk.
    pair = connected()
    w = Watcher("root")
    watch_via(pair, add_watch(pair.core, "/", "t", 1.0, w, recursive=True), ErrorResponse(0))
    result: list[list[Event]] = []
    worker = threading.Thread(target=lambda: result.append(pair.core.receive_data(pair.server.event(1, "a/b"), 2.0)))
    worker.daemon = True
    worker.start()
    worker.join(5.0)
    assert not worker.is_alive(), "receive_data hung on a notification path without a leading slash"
    [events] = result
    assert all(isinstance(e, WatchNotification | DropConnection) for e in events)


def test_chroot_is_stripped_from_event_paths() -> None:
    pair = connected(chroot="/app")
    core = pair.core
    w1, w2 = Watcher("root"), Watcher("x")
    watch_via(pair, get_data(core, "/app", "t", 1.0, w1), data_reply())
    watch_via(pair, get_data(core, "/app/x", "t", 1.0, w2), data_reply())
    ev = notify(pair, EventType.NODE_DATA_CHANGED, "/app")
    assert (ev.path, ev.watchers) == ("/", [w1])
    ev = notify(pair, EventType.NODE_DELETED, "/app/x")
    assert (ev.path, ev.watchers) == ("/x", [w2])
    assert notify(pair, EventType.NODE_CREATED, "/application").path == "/application"


def test_unknown_event_type_and_state_are_passed_through() -> None:
    pair = connected()
    [ev] = pair.to_client(pair.server.event(42, "/z", state=77), 1.0)
    assert isinstance(ev, WatchNotification)
    assert (ev.type, ev.state, ev.path, ev.watchers) == (42, 77, "/z", [])


# ------------------------------------------------------------------------------------------------ removal


def core_with_watches() -> SessionCore[object, str]:
    core: SessionCore[object, str] = SessionCore([HostPort("zk1", 2181)], rng=random.Random(1))
    for kind in WatchKind:
        core.watches.add(kind, "/a", kind.value)
    core.watches.add(WatchKind.DATA, "/a", "data-2")
    core.watches.add(WatchKind.DATA, "/b", "other path")
    return core


def test_removing_data_watches_wakes_data_and_exist_watchers_only() -> None:
    core = core_with_watches()
    removed = core.remove_watches("/a", WatcherType.DATA)
    assert removed == [
        (EventType.DATA_WATCH_REMOVED, "data"),
        (EventType.DATA_WATCH_REMOVED, "data-2"),
        (EventType.DATA_WATCH_REMOVED, "exist"),
    ]
    assert core.watches.has(WatchKind.CHILD, "/a") and core.watches.has(WatchKind.DATA, "/b")
    assert core.remove_watches("/a", WatcherType.DATA) == []


def test_removing_any_empties_every_table_of_the_path() -> None:
    core = core_with_watches()
    removed = core.remove_watches("/a", WatcherType.ANY)
    assert [w for _, w in removed] == ["data", "data-2", "exist", "child", "persistent", "recursive"]
    assert {e for e, _ in removed[3:]} == {EventType.CHILD_WATCH_REMOVED, EventType.PERSISTENT_WATCH_REMOVED}
    assert not core.watches.has_any("/a") and core.watches.has_any("/b")


def test_watches_beyond_one_path() -> None:
    """The fast path's question: is any watch registered on a path other than the config node's."""
    registry: WatchRegistry[str] = WatchRegistry()
    assert not registry.beyond("/zookeeper/config")
    registry.add(WatchKind.DATA, "/zookeeper/config", "follower")
    assert registry and not registry.beyond("/zookeeper/config")
    registry.add(WatchKind.CHILD, "/app", "app")
    assert registry.beyond("/zookeeper/config")
    registry.discard(WatchKind.CHILD, "/app", "app")
    registry.add(WatchKind.DATA, "/app", "app")
    assert registry.beyond("/zookeeper/config")
