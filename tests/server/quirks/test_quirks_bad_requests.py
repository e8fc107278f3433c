"""What a ZooKeeper 3.8.0 server really does with requests it cannot serve: unknown opcodes, malformed bodies,
short and oversize frames, four-letter words, bad paths and watch types.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

import struct

from helpers.quirks import ERR, Session, four_letter, in_thread

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_request
from zkwire.protocol.records import (
    AddWatchRequest,
    CheckWatchesRequest,
    CreateRequest,
    DeleteRequest,
    ExistsRequest,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    RemoveWatchesRequest,
    SetDataRequest,
    SyncRequest,
)

MAX_BUFFER = 0xFFFFF  # jute.maxbuffer default


# ------------------------------------------------------------------------------------- bad requests


async def test_unknown_opcode_gets_minus_6_then_close(zk_hosts: str) -> None:
    def body() -> None:
        for op in (10, 0, -1, 23, 200):
            with Session(zk_hosts) as s:
                s.conn.send_payload(struct.pack(">ii", 5, op))
                f = s.conn.recv()
                # note the zxid: -1, not the server's last zxid
                assert f.raw == bytes.fromhex("00000010 00000005 ffffffffffffffff fffffffa"), op
                assert s.conn.is_closed_by_server()

    await in_thread(body)


async def test_malformed_body_gets_minus_5_and_connection_stays(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            bad = [
                struct.pack(">ii", 50, OpCode.GET_DATA) + struct.pack(">i", 100) + b"/ab",  # truncated string
                struct.pack(">ii", 51, OpCode.CREATE),  # no body at all
                struct.pack(">ii", 52, OpCode.GET_DATA) + struct.pack(">i", -5) + b"\x00",  # negative length
                struct.pack(">ii", 53, OpCode.REMOVE_WATCHES) + bytes(remove_watches_body(zk_path, 4)),
            ]
            for payload in bad:
                s.conn.send_payload(payload)
                f = s.conn.recv()
                xid = struct.unpack_from(">i", payload)[0]
                assert f.payload == ERR.pack(xid, f.header.zxid, -5)
            # trailing bytes after a valid record are ignored
            raw = bytearray(encode_request(54, OpCode.EXISTS, ExistsRequest(zk_path, False))) + b"\x01\x02\x03"
            struct.pack_into(">i", raw, 0, len(raw) - 4)
            s.conn.send_raw(raw)
            f = s.conn.recv()
            assert f.header.xid == 54 and f.header.err == 0
            assert not s.conn.is_closed_by_server(0.2)
            assert s.stat(zk_path) is not None

    await in_thread(body)


def remove_watches_body(path: str, watcher_type: int) -> bytearray:
    out = bytearray()
    RemoveWatchesRequest(path, watcher_type).write(out)
    return out


async def test_short_frame_closes_connection(zk_hosts: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.conn.send_payload(struct.pack(">i", 8))  # 4 bytes: no room for a RequestHeader
            assert s.conn.is_closed_by_server()

    await in_thread(body)


async def test_frame_length_limits(zk_hosts: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.conn.send_raw(struct.pack(">i", MAX_BUFFER + 1) + bytes(64))
            assert s.conn.is_closed_by_server()
        with Session(zk_hosts) as s:
            s.conn.send_raw(struct.pack(">i", -1))
            assert s.conn.is_closed_by_server()
        with Session(zk_hosts) as s:
            # exactly jute.maxbuffer is accepted: the server waits for the rest
            s.conn.send_raw(struct.pack(">i", MAX_BUFFER) + struct.pack(">ii", 9, OpCode.EXISTS))
            assert not s.conn.is_closed_by_server(0.5)
        with Session(zk_hosts) as s:
            # a four-letter word after the handshake is just an oversize length
            s.conn.send_raw(b"ruok")
            assert s.conn.is_closed_by_server()

    await in_thread(body)


async def test_four_letter_words(zk_hosts: str) -> None:
    def body() -> None:
        assert four_letter(zk_hosts, b"ruok") == b"imok"
        assert four_letter(zk_hosts, b"isro") == b"rw"
        assert four_letter(zk_hosts, b"srvr").startswith(b"Zookeeper version: 3.8.0")
        assert four_letter(zk_hosts, b"abcd") == b""  # unknown word: closed, nothing said

    await in_thread(body)


async def test_path_checks_differ_between_reads_and_writes(zk_hosts: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            # reads do not validate: a malformed path simply names no node...
            for p in ("noslash", "/a//b", "/a/", "/.", "/\x01"):
                assert s.call(OpCode.GET_DATA, GetDataRequest(p, False)).header.err == -101
                assert s.call(OpCode.GET_CHILDREN, GetChildrenRequest(p, False)).header.err == -101
                assert s.call(OpCode.SYNC, SyncRequest(p)).header.err == 0
                # ...and setData validates first
                assert s.call(OpCode.SET_DATA, SetDataRequest(p, b"", -1)).header.err == -8
            # "" names the root for reads
            root = s.ok(OpCode.GET_CHILDREN, GetChildrenRequest("", False))
            assert isinstance(root, GetChildrenResponse) and "zookeeper" in (root.children or ())
            assert s.stat("") == s.stat("/")
            # exists rejects NUL only
            assert s.call(OpCode.EXISTS, ExistsRequest("/a\x00b", False)).header.err == -8
            # create: the parent lookup comes before full validation
            assert s.call(OpCode.CREATE, CreateRequest("/nonexistent//b", b"", OPEN_ACL_UNSAFE, 0)).header.err == -101
            assert s.call(OpCode.CREATE, CreateRequest("noslash", b"", OPEN_ACL_UNSAFE, 0)).header.err == -8
            for special in ("/", "/zookeeper", "noslash", ""):
                assert s.call(OpCode.DELETE, DeleteRequest(special, -1)).header.err == -8
            # an empty or null ACL list
            for acl in ((), None):
                f = s.call(OpCode.CREATE, CreateRequest("/zkwire-acl-test", b"", acl, 0))
                assert f.header.err == -114

    await in_thread(body)


async def test_watch_type_4_is_a_marshalling_error(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            s.ok(OpCode.ADD_WATCH, AddWatchRequest(zk_path, 0))
            for op in (OpCode.CHECK_WATCHES, OpCode.REMOVE_WATCHES):
                for t in (4, 5):
                    assert s.call(op, CheckWatchesRequest(zk_path, t)).header.err == -5
            # type 3 (any) sees and removes the persistent watch
            assert s.call(OpCode.CHECK_WATCHES, CheckWatchesRequest(zk_path, 3)).header.err == 0
            assert s.call(OpCode.REMOVE_WATCHES, RemoveWatchesRequest(zk_path, 3)).header.err == 0
            assert s.call(OpCode.CHECK_WATCHES, CheckWatchesRequest(zk_path, 3)).header.err == -121

    await in_thread(body)
