"""What a ZooKeeper 3.8.0 server really does on the wire, pinned byte by byte.

These tests talk to the server through :mod:`rawwire` (a plain socket and zkwire's record codec, with no
session logic), so they see exactly what a client library would have to cope with.  Each one asserts the
behaviour observed against the real server; where that differs from what the server source was
believed to do, the test says so.  protocol-notes/quirks-3.8.0.md describes each quirk by test name.

The raw driver is synchronous: each test runs its body in a worker thread, bounded by ``trio.fail_after``
(and every socket call has its own timeout).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
import trio
from helpers.addresses import first_server
from helpers.rawwire import Frame, RawConn, open_session

from zkwire.acl import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, digest_acl
from zkwire.constants import EventType, KeeperState, OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse
from zkwire.protocol.records import (
    ACL,
    AddWatchRequest,
    AuthPacket,
    CheckVersionRequest,
    CheckWatchesRequest,
    ClientInfo,
    ConnectRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ExistsRequest,
    ExistsResponse,
    GetACLRequest,
    GetACLResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    Id,
    MultiHeader,
    RemoveWatchesRequest,
    SetDataRequest,
    SetWatches,
    SetWatches2,
    Stat,
    SyncRequest,
    WatcherEvent,
    WhoAmIResponse,
)
from zkwire.testing.embedded import EmbeddedZooKeeper, ZooKeeperStartError
from zkwire.testing.handles import ServerHandle

T = TypeVar("T")
LIMIT = 15
ERR = struct.Struct(">iqi")
MAX_BUFFER = 0xFFFFF  # jute.maxbuffer default


async def in_thread(fn: Callable[[], T], limit: float = LIMIT) -> T:
    with trio.fail_after(limit):
        return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


class Session:
    """A raw session with its own xid counter and helpers for the common records."""

    def __init__(self, hosts: str, **kwargs: object) -> None:
        self.conn = open_session(hosts, **kwargs)  # type: ignore[arg-type]
        self.xid = 0

    def next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def call(self, op: int, record: object = None) -> Frame:
        return self.conn.call(self.next_xid(), op, record)  # type: ignore[arg-type]

    def ok(self, op: int, record: object = None) -> object:
        f = self.call(op, record)
        assert f.header.err == 0, f"{op}: error {f.header.err}"
        return f.decode(op)

    def create(self, path: str, data: bytes | None = b"", flags: int = 0, op: int = OpCode.CREATE) -> str:
        body = self.ok(op, CreateRequest(path, data, OPEN_ACL_UNSAFE, flags))
        assert isinstance(body, CreateResponse | Create2Response)
        assert body.path is not None
        return body.path

    def stat(self, path: str) -> Stat | None:
        f = self.call(OpCode.EXISTS, ExistsRequest(path, False))
        if f.header.err == -101:
            return None
        assert f.header.err == 0
        body = f.decode(OpCode.EXISTS)
        assert isinstance(body, ExistsResponse)
        return body.stat

    def children(self, path: str) -> list[str]:
        body = self.ok(OpCode.GET_CHILDREN, GetChildrenRequest(path, False))
        assert isinstance(body, GetChildrenResponse)
        return sorted(c for c in body.children or () if c is not None)

    def ensure(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            f = self.call(OpCode.CREATE, CreateRequest("/" + "/".join(parts[:i]), b"", OPEN_ACL_UNSAFE, 0))
            assert f.header.err in (0, -110)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def four_letter(hosts: str, word: bytes) -> bytes:
    with socket.create_connection(first_server(hosts), timeout=5) as s:
        s.sendall(word)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def server_conf(hosts: str) -> dict[str, str]:
    text = four_letter(hosts, b"conf").decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.fixture(autouse=True)
def _server_is_3_8_0(zk_hosts: str) -> None:
    """These pins describe 3.8.0 exactly; several of them changed in later 3.8.x and 3.9 releases."""
    version = four_letter(zk_hosts, b"srvr").split(b"\n", 1)[0]
    if not version.startswith(b"Zookeeper version: 3.8.0-"):
        pytest.skip(f"pins 3.8.0 behaviour; the server says {version.decode(errors='replace')!r}")


# ------------------------------------------------------------------------------------ reply shapes


async def test_error_reply_has_no_body(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            for op, rec in (
                (OpCode.GET_DATA, GetDataRequest(f"{zk_path}/none", False)),
                (OpCode.EXISTS, ExistsRequest(f"{zk_path}/none", False)),
                (OpCode.SET_DATA, SetDataRequest(zk_path, b"", 7)),
                (OpCode.CREATE, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0)),
                (OpCode.CREATE2, CreateRequest(zk_path, b"", OPEN_ACL_UNSAFE, 0)),
                (OpCode.GET_ACL, GetACLRequest(f"{zk_path}/none")),
            ):
                f = s.call(op, rec)
                assert len(f.raw) == 4 + 16, f.raw.hex()
                assert f.raw[:4] == b"\x00\x00\x00\x10"
                assert f.header.err in (-101, -103, -110)
                assert f.payload == ERR.pack(s.xid, f.header.zxid, f.header.err)

    await in_thread(body)


async def test_add_watch_reply_has_4_byte_error_response_body(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            for mode in (0, 1):
                f = s.call(OpCode.ADD_WATCH, AddWatchRequest(zk_path, mode))
                assert f.header.err == 0
                assert len(f.payload) == 20 and f.body == b"\x00\x00\x00\x00"
            # a node that does not exist is fine too: addWatch has no NoNode
            f = s.call(OpCode.ADD_WATCH, AddWatchRequest(f"{zk_path}/none", 0))
            assert f.header.err == 0 and f.body == bytes(4)
            # an unknown mode is a marshalling error (header only)
            f = s.call(OpCode.ADD_WATCH, AddWatchRequest(zk_path, 7))
            assert f.header.err == -5 and len(f.payload) == 16

    await in_thread(body)


async def test_ping_reply_xid_is_always_minus_2(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            written = s.call(OpCode.SET_DATA, SetDataRequest(zk_path, b"x", -1)).header.zxid
            for xid in (7, -2, 0, -4):
                s.conn.send(xid, OpCode.PING)
                f = s.conn.recv()
                assert len(f.payload) == 16
                xid_back, zxid, err = ERR.unpack(f.payload)
                assert (xid_back, err) == (-2, 0), f"ping sent with xid {xid}"
                # zxid: the server's last processed zxid
                assert zxid >= written
            # the session is undisturbed: the xid counter of real requests is ours to choose
            assert s.stat(zk_path) is not None

    await in_thread(body)


async def test_who_am_i_is_implemented(zk_server: ServerHandle, zk_hosts: str) -> None:
    ip = zk_server.client_address  # 127.0.0.1, or the container network's gateway

    def body() -> None:
        with Session(zk_hosts) as s:
            f = s.call(OpCode.WHO_AM_I)
            assert f.header.err == 0
            # one ClientInfo: ("ip", "127.0.0.1")
            assert f.body == bytes.fromhex("00000001 00000002 6970") + len(ip).to_bytes(4, "big") + ip.encode()
            assert f.decode(OpCode.WHO_AM_I) == WhoAmIResponse((ClientInfo("ip", ip),))
            assert s.conn.call(-4, OpCode.AUTH, AuthPacket(0, "digest", b"eve:pw")).header.err == 0
            info = s.ok(OpCode.WHO_AM_I)
            assert isinstance(info, WhoAmIResponse)
            assert sorted(info.client_info or ()) == [("digest", "eve"), ("ip", ip)]

    await in_thread(body)


async def test_auth_reply_echoes_xid_with_zxid_0(zk_hosts: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            f = s.conn.call(-4, OpCode.AUTH, AuthPacket(0, "digest", b"u:p"))
            assert f.raw == bytes.fromhex("00000010 fffffffc 0000000000000000 00000000")
            # any xid works and is echoed
            f = s.conn.call(9, OpCode.AUTH, AuthPacket(0, "digest", b"u:p"))
            assert f.raw == bytes.fromhex("00000010 00000009 0000000000000000 00000000")
            # the digest provider accepts a credential without a colon
            assert s.conn.call(-4, OpCode.AUTH, AuthPacket(0, "digest", b"nocolon")).header.err == 0
            assert not s.conn.is_closed_by_server(0.3)
        with Session(zk_hosts) as s:
            f = s.conn.call(-4, OpCode.AUTH, AuthPacket(0, "nosuchscheme", b"x"))
            assert f.raw == bytes.fromhex("00000010 fffffffc 0000000000000000 ffffff8d")  # -115
            assert s.conn.is_closed_by_server()

    await in_thread(body)


async def test_get_acl_masks_digest_without_admin(zk_hosts: str, zk_path: str) -> None:
    alice = digest_acl("alice", "pw")

    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            rec = CreateRequest(f"{zk_path}/n", b"", (alice, READ_ACL_UNSAFE[0]), 0)
            assert s.call(OpCode.CREATE, rec).header.err == 0
            acl = s.ok(OpCode.GET_ACL, GetACLRequest(f"{zk_path}/n"))
            assert isinstance(acl, GetACLResponse)
            assert acl.acl == (ACL(31, Id("digest", "alice:x")), READ_ACL_UNSAFE[0])
            assert s.conn.call(-4, OpCode.AUTH, AuthPacket(0, "digest", b"alice:pw")).header.err == 0
            acl = s.ok(OpCode.GET_ACL, GetACLRequest(f"{zk_path}/n"))
            assert isinstance(acl, GetACLResponse)
            assert acl.acl == (alice, READ_ACL_UNSAFE[0])

    await in_thread(body)


async def test_exists_has_no_acl_check(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            rec = CreateRequest(f"{zk_path}/n", b"secret", (digest_acl("alice", "pw"),), 0)
            assert s.call(OpCode.CREATE, rec).header.err == 0
            assert s.call(OpCode.GET_DATA, GetDataRequest(f"{zk_path}/n", False)).header.err == -102
            stat = s.stat(f"{zk_path}/n")
            assert stat is not None and stat.data_length == 6

    await in_thread(body)


# --------------------------------------------------------------------------------- containers & TTL


async def test_container_needs_op_19(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts, timeout_ms=10000) as s:
            s.ensure(zk_path)
            made = {
                "op19": s.create(f"{zk_path}/op19", flags=4, op=OpCode.CREATE_CONTAINER),
                "op19-flags0": s.create(f"{zk_path}/op19-flags0", flags=0, op=OpCode.CREATE_CONTAINER),
                "op1-flags4": s.create(f"{zk_path}/op1-flags4", flags=4, op=OpCode.CREATE),
                "op15-flags4": s.create(f"{zk_path}/op15-flags4", flags=4, op=OpCode.CREATE2),
            }
            for path in made.values():
                stat = s.stat(path)
                assert stat is not None and stat.ephemeral_owner == 0  # for all four, containers included
                s.create(f"{path}/child")
                s.ok(OpCode.DELETE, DeleteRequest(f"{path}/child", -1))
            s.create(f"{zk_path}/never-used", flags=4, op=OpCode.CREATE_CONTAINER)
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                if s.children(zk_path) == ["never-used", "op1-flags4", "op15-flags4"]:
                    break
                time.sleep(0.1)
            # op 19 made containers (whatever the flags said); op 1/15 with flags 4 made plain nodes; a container
            # that never had a child is kept
            assert s.children(zk_path) == ["never-used", "op1-flags4", "op15-flags4"]

    await in_thread(body)


async def test_ttl_nodes_expire(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts, timeout_ms=10000) as s:
            s.ensure(zk_path)
            short = s.ok(OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/short", b"", OPEN_ACL_UNSAFE, 5, 100))
            assert isinstance(short, Create2Response) and short.stat.ephemeral_owner == 0
            seq = s.ok(OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/seq-", b"", OPEN_ACL_UNSAFE, 6, 100))
            assert isinstance(seq, Create2Response) and seq.path == f"{zk_path}/seq-0000000001"
            s.ok(OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/parent", b"", OPEN_ACL_UNSAFE, 5, 100))
            s.create(f"{zk_path}/parent/child")
            s.ok(OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/long", b"", OPEN_ACL_UNSAFE, 5, 600_000))
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline and s.children(zk_path) != ["long", "parent"]:
                time.sleep(0.1)
            assert s.children(zk_path) == ["long", "parent"]  # a TTL node with a child stays

    await in_thread(body)


async def test_ttl_flags_need_op_21_and_a_valid_ttl(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            cases = [
                (OpCode.CREATE, CreateRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 5)),  # TTL flag, op 1
                (OpCode.CREATE2, CreateRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 6)),
                (OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 0, 100)),
                (OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 5, 0)),
                (OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 5, 1 << 40)),
                (OpCode.CREATE, CreateRequest(f"{zk_path}/a", b"", OPEN_ACL_UNSAFE, 9)),  # no such mode
            ]
            for op, rec in cases:
                f = s.call(op, rec)
                assert (f.header.err, len(f.payload)) == (-8, 16), rec
            assert s.children(zk_path) == []

    await in_thread(body)


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


# ---------------------------------------------------------------------------------------- handshake


EXPIRED_37 = bytes.fromhex("00000025 00000000 00000000 0000000000000000 00000010") + bytes(16) + b"\x00"


async def test_expired_connect_response(zk_hosts: str) -> None:
    def body() -> None:
        without_ro = b"\x00\x00\x00\x24" + EXPIRED_37[4:-1]
        for read_only, expected in ((False, EXPIRED_37), (True, EXPIRED_37), (None, without_ro)):
            with RawConn(zk_hosts) as c:
                resp = c.handshake(session_id=0x0123456789ABCDEF, passwd=b"not-the-password", read_only=read_only)
                assert c.connect_raw == expected, (read_only, c.connect_raw.hex())
                assert resp.expired and resp.session_id == 0 and resp.passwd == bytes(16)
                # the RO byte is false even when the client asked for read-only
                assert resp.read_only is (None if read_only is None else False)
                assert c.is_closed_by_server()

    await in_thread(body)


async def test_wrong_password_looks_like_expiry(zk_hosts: str) -> None:
    def body() -> None:
        with open_session(zk_hosts) as live:
            assert live.connect_response is not None
            sid = live.connect_response.session_id
            with RawConn(zk_hosts) as c:
                c.handshake(session_id=sid, passwd=bytes(16))
                assert c.connect_raw == EXPIRED_37
                assert c.is_closed_by_server()
            # the real session is untouched, and reattaching with the right password works
            with RawConn(zk_hosts) as c:
                resp = c.handshake(session_id=sid, passwd=live.connect_response.passwd)
                assert resp.session_id == sid and resp.timeout == live.connect_response.timeout

    await in_thread(body)


async def test_connect_response_length_follows_read_only_byte(zk_hosts: str) -> None:
    def body() -> None:
        for read_only, length in ((False, 37), (None, 36), (True, 37)):
            with RawConn(zk_hosts) as c:
                resp = c.handshake(read_only=read_only)
                assert len(c.connect_raw) == 4 + length
                assert c.connect_raw[:4] == struct.pack(">i", length)
                assert resp.protocol_version == 0 and resp.session_id != 0 and resp.timeout > 0
                assert resp.passwd is not None and len(resp.passwd) == 16
                assert resp.read_only is (None if read_only is None else False)
                # the session works either way
                f = c.call(1, OpCode.EXISTS, ExistsRequest("/", False))
                assert f.header.err == 0

    await in_thread(body)


async def test_session_timeout_is_clamped(zk_hosts: str) -> None:
    def body() -> None:
        conf = server_conf(zk_hosts)
        tick = int(conf["tickTime"])
        low = int(conf.get("minSessionTimeout", 2 * tick))
        high = int(conf.get("maxSessionTimeout", 20 * tick))
        assert low == 2 * tick  # the default: two ticks
        got = {}
        for asked in (1, low + 1, high + 1_000_000):
            with RawConn(zk_hosts) as c:
                got[asked] = c.handshake(timeout_ms=asked).timeout
        assert got == {1: low, low + 1: low + 1, high + 1_000_000: high}

    await in_thread(body)


async def test_client_ahead_of_server_gets_no_answer(zk_hosts: str) -> None:
    def body() -> None:
        with RawConn(zk_hosts) as c:
            c.send_raw(encode_connect_request(ConnectRequest(0, 1 << 50, 4000, 0, bytes(16), False)))
            assert c.is_closed_by_server()

    await in_thread(body)


async def test_requests_pipelined_behind_connect_wait(zk_hosts: str) -> None:
    def body() -> None:
        with RawConn(zk_hosts) as c:
            req = ConnectRequest(0, 0, 4000, 0, bytes(16), False)
            c.send_raw(encode_connect_request(req) + encode_request(1, OpCode.EXISTS, ExistsRequest("/", False)))
            first = c.recv_raw()
            assert len(first) == 4 + 37
            f = c.recv()
            assert f.header.xid == 1 and f.header.err == 0

    await in_thread(body)


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


# ----------------------------------------------------------------------------------------- sequential


async def test_sequential_suffix_counts_creates_cversion_counts_both(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            assert s.create(f"{zk_path}/q-", flags=2) == f"{zk_path}/q-0000000000"
            s.create(f"{zk_path}/plain")
            s.ok(OpCode.DELETE, DeleteRequest(f"{zk_path}/plain", -1))
            stat = s.stat(zk_path)
            assert stat is not None
            # the visible cversion went up for the delete too...
            assert (stat.cversion, stat.num_children) == (3, 1)
            # ...but the suffix only counts creations: (cversion + children) / 2
            assert s.create(f"{zk_path}/q-", flags=2) == f"{zk_path}/q-0000000002"
            s.ok(OpCode.DELETE, DeleteRequest(f"{zk_path}/q-0000000000", -1))
            s.ok(OpCode.DELETE, DeleteRequest(f"{zk_path}/q-0000000002", -1))
            stat = s.stat(zk_path)
            assert stat is not None and (stat.cversion, stat.num_children) == (6, 0)
            # ephemeral sequential, and "parent/" alone, share the counter
            assert s.create(f"{zk_path}/", flags=3) == f"{zk_path}/0000000003"
            stat = s.stat(zk_path)
            assert stat is not None and (stat.cversion + stat.num_children) // 2 == 4

    await in_thread(body)


async def test_null_and_empty_data_differ_on_the_wire(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            s.ensure(zk_path)
            s.create(f"{zk_path}/null", None)
            s.create(f"{zk_path}/empty", b"")
            null = s.call(OpCode.GET_DATA, GetDataRequest(f"{zk_path}/null", False))
            empty = s.call(OpCode.GET_DATA, GetDataRequest(f"{zk_path}/empty", False))
            assert null.body[:4] == b"\xff\xff\xff\xff" and len(null.body) == 4 + 68
            assert empty.body[:4] == b"\x00\x00\x00\x00" and len(empty.body) == 4 + 68
            n, e = null.decode(OpCode.GET_DATA), empty.decode(OpCode.GET_DATA)
            assert isinstance(n, GetDataResponse) and isinstance(e, GetDataResponse)
            assert (n.data, e.data) == (None, b"")
            assert n.stat.data_length == e.stat.data_length == 0

    await in_thread(body)


async def test_ephemeral_owner_of_special_nodes(zk_hosts: str, zk_path: str) -> None:
    def body() -> None:
        with Session(zk_hosts) as s:
            assert s.conn.connect_response is not None
            sid = s.conn.connect_response.session_id
            s.ensure(zk_path)
            s.create(f"{zk_path}/e", flags=1)
            s.create(f"{zk_path}/box", op=OpCode.CREATE_CONTAINER, flags=4)
            s.ok(OpCode.CREATE_TTL, CreateTTLRequest(f"{zk_path}/ttl", b"", OPEN_ACL_UNSAFE, 5, 123456))
            owners = {}
            for name in ("e", "box", "ttl"):
                stat = s.stat(f"{zk_path}/{name}")
                assert stat is not None
                owners[name] = stat.ephemeral_owner
            # the server keeps a marker internally, but a client sees 0 for containers and TTL nodes
            assert owners == {"e": sid, "box": 0, "ttl": 0}
            # only an ordinary ephemeral refuses children
            for name, err in (("e", -108), ("box", 0), ("ttl", 0)):
                f = s.call(OpCode.CREATE, CreateRequest(f"{zk_path}/{name}/k", b"", OPEN_ACL_UNSAFE, 0))
                assert f.header.err == err

    await in_thread(body)
