"""Types an application sees: precise pipeline results, enum event types (unknown numbers included)."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

import pytest
import trio

import zkwire
from zkwire import EventType, KeeperState

SNIPPET = """
from typing import assert_type
import zkwire
from zkwire import Create, Delete, GetChildren, GetData, SetData, Stat, ZKError

async def check(zk: zkwire.Client) -> None:
    assert_type(await zk.pipeline([GetData("/a"), GetData("/b")]), list[tuple[bytes, Stat] | ZKError])
    assert_type(await zk.pipeline([GetChildren("/a")]), list[list[str] | tuple[list[str], Stat] | ZKError])
    assert_type(await zk.pipeline([Create("/a")]), list[tuple[str, Stat] | ZKError])
    assert_type(await zk.pipeline([SetData("/a", b"")]), list[Stat | ZKError])
    assert_type(await zk.pipeline([Delete("/a")]), list[ZKError | None])
    mixed = await zk.pipeline([Create("/a"), GetChildren("/")])
    _, _, watch = await zk.get_data("/a", watch=True)
    event = await watch.wait()
    assert_type(event.type, zkwire.EventType)
    assert_type(event.state, zkwire.KeeperState)
    assert_type(await zk.ensure_path("/a"), bool)
    assert_type(await zk.delete_recursive("/a"), int)
    node = await zkwire.watch_data(zk, "/a").__anext__()
    assert_type(node, zkwire.NodeData | None)
    assert_type(await zkwire.retry(zk.get_data, "/a"), tuple[bytes, Stat])
"""


def test_static_types_with_mypy(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    source = tmp_path / "typed_use.py"
    source.write_text(textwrap.dedent(SNIPPET))
    root = Path(__file__).resolve().parents[2]
    out, err, code = api.run(
        ["--strict", "--no-incremental", "--python-version", "3.11", "--follow-imports=silent", str(source)]
    )
    assert code == 0, out + err
    assert root  # mypy resolves zkwire from the installed (editable) package


def test_unknown_event_numbers_become_members() -> None:
    unknown = EventType(99)
    assert isinstance(unknown, EventType) and unknown.name == "UNKNOWN_99" and unknown == 99
    assert EventType(99) is unknown and unknown not in list(EventType)
    assert pickle.loads(pickle.dumps(unknown)) is unknown
    assert KeeperState(42).name == "UNKNOWN_42"
    assert EventType(3) is EventType.NODE_DATA_CHANGED
    with pytest.raises(ValueError):
        EventType("x")  # not a number: still an error


def test_a_notification_with_an_unknown_type_is_delivered() -> None:
    from zkwire.client.api import Client
    from zkwire.sansio.session import WatchNotification

    client = Client("127.0.0.1:1")
    watch = zkwire.Watch("/a")
    client._driver.dispatch([WatchNotification(77, 99, "/a", [watch])])
    assert watch.triggered
    event = watch._event
    assert event is not None and event.type.name == "UNKNOWN_77" and event.state.name == "UNKNOWN_99"


async def test_real_events_are_enum_members(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        _, _, watch = await zk.get_data(zk_path, watch=True)
        await zk.set_data(zk_path, b"x")
        with trio.fail_after(5):
            event = await watch.wait()
        assert event.type is EventType.NODE_DATA_CHANGED and event.state is KeeperState.SYNC_CONNECTED
