"""What a ZooKeeper 3.8.0 server really does with multi: the results of create2 inside it, the wire layout of
a failed one, its edge cases, the standalone check op, and the zxids failed writes use up.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

import struct

import pytest
import trio
from helpers.quirks import Session, in_thread

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import OpCode
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse
from zkwire.protocol.records import (
    CheckVersionRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ExistsRequest,
    GetDataRequest,
    MultiHeader,
    SetDataRequest,
)
from zkwire.testing.embedded import EmbeddedZooKeeper, ZooKeeperStartError

# -------------------------------------------------------------------------------------------- multi


async def test_create2_in_multi_gives_plain_create_result(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            req = MultiRequest(
                (
                    MultiOp(OpCode.CREATE2, CreateRequest(f"{zk_path}/c2", b"", OPEN_ACL_UNSAFE, 0)),
                    MultiOp(OpCode.CREATE_CONTAINER, CreateRequest(f"{zk_path}/box", b"", OPEN_ACL_UNSAFE, 4)),
                    MultiOp(OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/ttl", b"", OPEN_ACL_UNSAFE, 5, 60000)),
                    MultiOp(OpCode.CREATE, CreateRequest(f"{zk_path}/c1", b"", OPEN_ACL_UNSAFE, 0)),
                )
            )
            f = s.call(OpCode.MULTI, req)
            assert f.header.err == 0
            resp = f.decode(OpCode.MULTI)
            assert isinstance(resp, MultiResponse)
            assert [r.op for r in resp.results] == [1, 15, 15, 1]
            assert resp.results[0].body == CreateResponse(f"{zk_path}/c2")
            box = resp.results[1].body
            assert isinstance(box, Create2Response) and box.stat.czxid == f.header.zxid
            assert box.stat.ephemeral_owner == 0
            # the first result on the wire: MultiHeader(1, false, 0) + path only
            path = f"{zk_path}/c2".encode()
            assert f.body.startswith(bytes.fromhex("00000001 00 00000000") + struct.pack(">i", len(path)) + path)

    await in_thread(body)


async def test_failed_multi_wire_layout(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            req = MultiRequest(
                (
                    MultiOp(OpCode.CREATE, CreateRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 0)),
                    MultiOp(OpCode.CHECK, CheckVersionRequest(zk_path, 5)),
                    MultiOp(OpCode.DELETE, DeleteRequest(f"{zk_path}/a", -1)),
                )
            )
            f = s.call(OpCode.MULTI, req)
            # header err 0; each op an error result: 0 before, the real code, -2 after
            assert f.header.err == 0
            err_result = struct.Struct(">i?ii")
            assert f.body == b"".join(
                [
                    err_result.pack(-1, False, 0, 0),
                    err_result.pack(-1, False, -103, -103),
                    err_result.pack(-1, False, -2, -2),
                    bytes.fromhex("ffffffff 01 ffffffff"),
                ]
            )
            assert s.children(zk_path) == []

    await in_thread(body)


async def test_multi_edge_cases(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            end = bytes.fromhex("ffffffff 01 ffffffff")
            # empty multi and multiRead: success, body = the terminator alone
            for op in (OpCode.MULTI, OpCode.MULTI_READ):
                f = s.call(op, MultiRequest(()))
                assert f.header.err == 0 and f.body == end
            # a read op inside multi: -5, header only
            payload = bytearray(struct.pack(">ii", s.next_xid(), OpCode.MULTI))
            MultiHeader(OpCode.GET_DATA, False, -1).write(payload)
            GetDataRequest(zk_path, False).write(payload)
            payload += end
            s.conn.send_payload(payload)
            f = s.conn.recv()
            assert f.header.err == -5 and len(f.payload) == 16
            # a write op inside multiRead: -5 *with* a body (an empty result list) -- the one error reply
            # seen carrying a body
            payload = bytearray(struct.pack(">ii", s.next_xid(), OpCode.MULTI_READ))
            MultiHeader(OpCode.DELETE, False, -1).write(payload)
            DeleteRequest(f"{zk_path}/x", -1).write(payload)
            payload += end
            s.conn.send_payload(payload)
            f = s.conn.recv()
            assert f.header.err == -5 and f.body == end
            # the connection survives both
            assert s.stat(zk_path) is not None

    await in_thread(body)


async def test_standalone_check_op(zk_path: str) -> None:
    """A check sent on its own (not inside a multi), on a server of its own: a passing one is logged as
    a transaction (type 13) that 3.8.0 cannot read back, so that server can never start again from its
    data ("Unsupported Txn with type=%d13"); the suite's shared server must never see one."""
    server = EmbeddedZooKeeper()
    server.start()
    zk_hosts = server.hosts

    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            f = s.call(OpCode.CHECK, CheckVersionRequest(zk_path, 3))
            assert (f.header.err, len(f.payload)) == (-103, 16)
            f = s.call(OpCode.CHECK, CheckVersionRequest(f"{zk_path}/none", 0))
            assert (f.header.err, len(f.payload)) == (-101, 16)
            # a check that passes is never answered at all, yet it used up a zxid; the connection stays open
            # and the next request's reply comes first (a client matching replies to requests in order
            # would see an out-of-order xid)
            before = s.call(OpCode.EXISTS, ExistsRequest(zk_path, False)).header.zxid
            check_xid = s.next_xid()
            s.conn.send(check_xid, OpCode.CHECK, CheckVersionRequest(zk_path, 0))
            f = s.call(OpCode.EXISTS, ExistsRequest(zk_path, False))
            assert f.header.xid == s.xid != check_xid
            assert f.header.zxid > before
            s.conn.sock.settimeout(0.5)
            try:
                late = s.conn.recv()
            except TimeoutError:
                pass
            else:
                raise AssertionError(f"unexpected frame {late.raw.hex()}")
            finally:
                s.conn.sock.settimeout(5)

    try:
        await in_thread(body)
        server.stop(keep_data=True)
        with pytest.raises(ZooKeeperStartError):
            await trio.to_thread.run_sync(lambda: server.start(timeout=20))
        assert "Unsupported Txn with type=%d13" in server.log_tail(400)
    finally:
        server.stop()


async def test_failed_writes_use_up_a_zxid(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            failing = [
                (OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0), -110),
                (OpCode.SET_DATA, SetDataRequest(f"{zk_path}/none", b"", -1), -101),
                (OpCode.SET_DATA, SetDataRequest("bad", b"", -1), -8),
                (OpCode.DELETE, DeleteRequest(zk_path, 9), -103),
                (OpCode.MULTI, MultiRequest((MultiOp(OpCode.CHECK, CheckVersionRequest(zk_path, 9)),)), 0),
            ]
            for op, rec, err in failing:
                before = s.call(OpCode.EXISTS, ExistsRequest("/", False)).header.zxid
                f = s.call(op, rec)
                assert f.header.err == err
                # the failure went through the transaction log as an error transaction with its own zxid
                assert f.header.zxid > before
                # reads report the last processed zxid, which is now at least that one
                assert s.call(OpCode.EXISTS, ExistsRequest("/", False)).header.zxid >= f.header.zxid

    await in_thread(body)
