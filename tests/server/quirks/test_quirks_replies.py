"""What a ZooKeeper 3.8.0 server really does on the wire, pinned byte by byte: the shapes of its replies (error
replies, addWatch, ping, auth, whoAmI) and what getACL and exists check.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

from helpers.quirks import ERR, Session, in_thread

from zkwire.acl import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, digest_acl
from zkwire.constants import OpCode
from zkwire.protocol.records import (
    ACL,
    AddWatchRequest,
    AuthPacket,
    ClientInfo,
    CreateRequest,
    ExistsRequest,
    GetACLRequest,
    GetACLResponse,
    GetDataRequest,
    Id,
    SetDataRequest,
    WhoAmIResponse,
)
from zkwire.testing.handles import ServerHandle

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
