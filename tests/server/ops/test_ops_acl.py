"""ACLs and authentication against a real ZooKeeper 3.8.0 server: digest ACLs, addAuth, the credentials of
``open_client`` and whoAmI, an unknown scheme."""

from __future__ import annotations

import trio
from helpers.ops import LIMIT, ensure_path

import zkwire
from zkwire import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, Id, Perm, SessionState, digest_acl, digest_id
from zkwire.testing.handles import ServerHandle

# --------------------------------------------------------------------------------------------- ACLs


async def test_acl_digest_and_auth(zk_hosts: str, zk_path: str) -> None:
    alice = digest_acl("alice", "secret")
    assert alice.id == Id("digest", "alice:" + digest_id("alice", "secret").id.split(":", 1)[1])
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            node = f"{zk_path}/locked"
            acl, stat = await zk.get_acl(zk_path)
            assert acl == list(OPEN_ACL_UNSAFE) and stat.aversion == 0
            await zk.create(node, b"private", acl=[alice, READ_ACL_UNSAFE[0]])
            acl, stat = await zk.get_acl(node)
            # without ADMIN on the node the digest hash is masked
            assert acl == [ACL(Perm.ALL, Id("digest", "alice:x")), ACL(Perm.READ, Id("world", "anyone"))]
            assert stat.aversion == 0
            # read is open, write is not
            assert (await zk.get_data(node))[0] == b"private"
            try:
                await zk.set_data(node, b"x")
            except zkwire.NoAuthError as e:
                assert e.code == -102 and e.path == node
            else:
                raise AssertionError("NoAuthError expected")
            try:
                await zk.set_acl(node, [alice])
            except zkwire.NoAuthError:
                pass
            else:
                raise AssertionError("NoAuthError expected")

            await zk.add_auth("digest", "alice:secret")
            stat = await zk.set_data(node, b"mine")
            assert stat.version == 1
            try:
                await zk.set_acl(node, [alice], version=5)
            except zkwire.BadVersionError:
                pass
            else:
                raise AssertionError("BadVersionError expected")
            acl, _ = await zk.get_acl(node)
            assert acl == [alice, ACL(Perm.READ, Id("world", "anyone"))]
            stat = await zk.set_acl(node, [alice], version=0)
            assert stat.aversion == 1 and stat.version == 1
            # "auth" ACL: the server writes the session's authenticated ids in its place
            await zk.create(f"{zk_path}/creator", acl=CREATOR_ALL_ACL)
            acl, _ = await zk.get_acl(f"{zk_path}/creator")
            assert acl == [ACL(Perm.ALL, digest_id("alice", "secret"))]

        async with zkwire.open_client(zk_hosts) as other:
            try:
                await other.get_data(node)
            except zkwire.NoAuthError:
                pass
            else:
                raise AssertionError("NoAuthError expected")
            # exists needs no permission on 3.8.0
            seen = await other.exists(node)
            assert seen is not None and seen.aversion == 1
            await other.add_auth("digest", "alice:secret")
            assert (await other.get_data(node))[0] == b"mine"
            await other.delete(f"{zk_path}/creator")  # DELETE on the parent is open


async def test_auth_via_open_client_and_who_am_i(zk_server: ServerHandle, zk_hosts: str) -> None:
    ip = zk_server.client_address  # 127.0.0.1, or the container network's gateway
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            # 3.8.0 does implement whoAmI: the connection's ip is always there
            assert await zk.who_am_i() == [("ip", ip)]
            await zk.add_auth("digest", "bob:pw")
            assert sorted(await zk.who_am_i()) == [("digest", "bob"), ("ip", ip)]
        async with zkwire.open_client(zk_hosts, auth=[("digest", "carol:pw"), ("digest", "dave:pw")]) as zk:
            assert sorted(await zk.who_am_i()) == [("digest", "carol"), ("digest", "dave"), ("ip", ip)]


async def test_add_auth_unknown_scheme(zk_server: ServerHandle, zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            sid = zk.session_id
            try:
                await zk.add_auth("nosuchscheme", "x")
            except zkwire.AuthFailedError as e:
                assert e.code == -115
            else:
                raise AssertionError("AuthFailedError expected")
            # the server dropped the connection; the session itself lives on, without the credential
            assert await zk.exists(zk_path) is not None
            assert zk.state is SessionState.CONNECTED and zk.session_id == sid
            assert await zk.who_am_i() == [("ip", zk_server.client_address)]
