"""Watch removal in the session core, beside registration: a removeWatches answered without error makes the
core forget the local watchers of the tables it empties and say what each is woken with."""

from __future__ import annotations

import random

from zkwire.constants import EventType, WatcherType
from zkwire.sansio.hosts import HostPort
from zkwire.sansio.session import SessionCore
from zkwire.sansio.watches import WatchKind


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
