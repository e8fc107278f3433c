"""What a ZooKeeper 3.8.0 server really does with watches: events before the reply of the write that fired them,
SetWatches' catch-up events, persistent watches and one-shot ones on the same path.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

import struct

from helpers.quirks import Session, in_thread
from helpers.rawwire import Frame

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import EventType, KeeperState, OpCode
from zkwire.protocol.records import (
    AddWatchRequest,
    CheckWatchesRequest,
    CreateRequest,
    DeleteRequest,
    ExistsRequest,
    GetChildrenRequest,
    GetDataRequest,
    SetDataRequest,
    SetWatches,
    SetWatches2,
    WatcherEvent,
)

# -------------------------------------------------------------------------------------------- watches


async def test_watch_event_precedes_write_reply(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            assert s.call(OpCode.GET_DATA, GetDataRequest(zk_path, True)).header.err == 0
            assert s.call(OpCode.EXISTS, ExistsRequest(f"{zk_path}/new", True)).header.err == -101
            path = zk_path.encode()

            def write_then_two_frames(op: int, record: object) -> tuple[Frame, Frame]:
                xid = s.next_xid()
                s.conn.send(xid, op, record)  # type: ignore[arg-type]
                first, second = s.conn.recv(), s.conn.recv()
                assert first.header.xid == -1 and second.header.xid == xid
                return first, second

            ev, reply = write_then_two_frames(OpCode.SET_DATA, SetDataRequest(zk_path, b"x", -1))
            # 3.8.0 notifications carry zxid -1
            header = bytes.fromhex("ffffffff ffffffffffffffff 00000000")
            event = bytes.fromhex("00000003 00000003") + struct.pack(">i", len(path)) + path  # changed, connected
            assert ev.raw == struct.pack(">i", 16 + len(event)) + header + event
            assert reply.header.zxid > 0
            ev, _ = write_then_two_frames(OpCode.CREATE, CreateRequest(f"{zk_path}/new", b"", OPEN_ACL_UNSAFE, 0))
            assert ev.event() == WatcherEvent(EventType.NODE_CREATED, KeeperState.SYNC_CONNECTED, f"{zk_path}/new")

    await in_thread(body)


async def test_one_write_fires_all_watches_before_its_reply(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            assert s.call(OpCode.GET_CHILDREN, GetChildrenRequest(zk_path, True)).header.err == 0
            assert s.call(OpCode.EXISTS, ExistsRequest(f"{zk_path}/new", True)).header.err == -101
            xid = s.next_xid()
            s.conn.send(xid, OpCode.CREATE, CreateRequest(f"{zk_path}/new", b"", OPEN_ACL_UNSAFE, 0))
            frames = [s.conn.recv() for _ in range(3)]
            assert [f.header.xid for f in frames] == [-1, -1, xid]
            assert sorted((f.event().type, f.event().path) for f in frames[:2]) == [
                (EventType.NODE_CREATED, f"{zk_path}/new"),
                (EventType.NODE_CHILDREN_CHANGED, zk_path),
            ]
            # a node with a data and a child watch from one connection: one NodeDeleted
            assert s.call(OpCode.GET_DATA, GetDataRequest(f"{zk_path}/new", True)).header.err == 0
            assert s.call(OpCode.GET_CHILDREN, GetChildrenRequest(f"{zk_path}/new", True)).header.err == 0
            xid = s.next_xid()
            s.conn.send(xid, OpCode.DELETE, DeleteRequest(f"{zk_path}/new", -1))
            first, second = s.conn.recv(), s.conn.recv()
            assert (first.event().type, first.event().path) == (EventType.NODE_DELETED, f"{zk_path}/new")
            assert second.header.xid == xid

    await in_thread(body)


async def test_set_watches_catch_up_events(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s, Session(zk_hosts) as other:
            s.ensure(f"{zk_path}/kept")
            s.create(f"{zk_path}/changed")
            rel = s.call(OpCode.EXISTS, ExistsRequest(zk_path, False)).header.zxid
            s.ok(OpCode.SET_DATA, SetDataRequest(f"{zk_path}/changed", b"new", -1))
            s.create(f"{zk_path}/kept/child")  # pzxid of kept moves past rel
            sw = SetWatches(
                rel,
                (f"{zk_path}/changed", f"{zk_path}/gone", zk_path),
                (f"{zk_path}/changed", f"{zk_path}/notyet"),
                (f"{zk_path}/kept", f"{zk_path}/gone2", f"{zk_path}/changed"),
            )
            xid = other.next_xid()
            other.conn.send(xid, OpCode.SET_WATCHES, sw)
            events = []
            while True:
                f = other.conn.recv()
                if f.header.xid == xid:
                    assert f.header.err == 0 and len(f.payload) == 16
                    break
                assert f.header.xid == -1 and f.header.zxid == -1
                events.append((f.event().type, f.event().path))
            assert sorted(events) == sorted(
                [
                    (EventType.NODE_DATA_CHANGED, f"{zk_path}/changed"),  # data: mzxid > rel
                    (EventType.NODE_DELETED, f"{zk_path}/gone"),  # data: node missing
                    (EventType.NODE_CREATED, f"{zk_path}/changed"),  # exist: node exists now
                    (EventType.NODE_CHILDREN_CHANGED, f"{zk_path}/kept"),  # child: pzxid > rel
                    (EventType.NODE_DELETED, f"{zk_path}/gone2"),  # child: node missing
                ]
            )
            # the rest were re-armed: zk_path (data), notyet (exist), changed (child)
            for path, t in ((zk_path, 2), (f"{zk_path}/notyet", 2), (f"{zk_path}/changed", 1)):
                assert other.call(OpCode.CHECK_WATCHES, CheckWatchesRequest(path, t)).header.err == 0
            # the same xid rule as any request: -8 is just echoed
            f = other.conn.call(-8, OpCode.SET_WATCHES, SetWatches(0, (), (), ()))
            assert f.header.xid == -8 and f.header.err == 0

    await in_thread(body)


async def test_set_watches2_persistent_has_no_catch_up(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s, Session(zk_hosts) as other:
            s.ensure(zk_path)
            s.create(f"{zk_path}/c")
            sw = SetWatches2(0, (), (), (), (zk_path,), (f"{zk_path}/c",))
            f = other.call(OpCode.SET_WATCHES2, sw)
            assert f.header.xid == other.xid and f.header.err == 0 and len(f.payload) == 16
            assert other.call(OpCode.CHECK_WATCHES, CheckWatchesRequest(zk_path, 3)).header.err == 0
            # and they work: the recursive one sees a grandchild
            xid = s.next_xid()
            s.conn.send(xid, OpCode.CREATE, CreateRequest(f"{zk_path}/c/g", b"", OPEN_ACL_UNSAFE, 0))
            assert s.conn.recv().header.xid == xid
            ev = other.conn.recv().event()
            assert (ev.type, ev.path) == (EventType.NODE_CREATED, f"{zk_path}/c/g")

    await in_thread(body)


async def test_persistent_watch_reset_by_one_shot(zk_hosts: str, zk_path: str) -> None:
    """3.8 keeps one mode per (connection, path, table): a getData watch turns a persistent watch into a
    one-shot one."""

    def body() -> None:
        with Session(zk_hosts) as s, Session(zk_hosts) as writer:
            s.ensure(zk_path)
            s.ok(OpCode.ADD_WATCH, AddWatchRequest(zk_path, 0))
            assert s.call(OpCode.GET_DATA, GetDataRequest(zk_path, True)).header.err == 0
            for i in range(2):
                xid = writer.next_xid()
                writer.conn.send(xid, OpCode.SET_DATA, SetDataRequest(zk_path, str(i).encode(), -1))
                assert writer.conn.recv().header.xid == xid
            ev = s.conn.recv().event()
            assert ev.type == EventType.NODE_DATA_CHANGED
            # no second event, and the data table no longer has a watch; the child table still does
            f = s.call(OpCode.CHECK_WATCHES, CheckWatchesRequest(zk_path, 2))
            assert f.header.err == -121
            assert s.call(OpCode.CHECK_WATCHES, CheckWatchesRequest(zk_path, 1)).header.err == 0

    await in_thread(body)
