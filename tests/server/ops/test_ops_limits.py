"""The limits of operations against a real ZooKeeper 3.8.0 server: reconfig refused by a standalone server,
data too large to read back (the frame limit), bad input refused by the client before anything is sent."""

from __future__ import annotations

import trio
from helpers.ops import LIMIT, ensure_path

import zkwire
from zkwire import SessionState
from zkwire.constants import MAX_TTL_MS

# ------------------------------------------------------------------------------------------ reconfig


async def test_reconfig_disabled_on_standalone(zk_hosts: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            try:
                await zk.reconfig(joining="server.9=127.0.0.1:1:2:participant;127.0.0.1:3")
            except zkwire.ReconfigDisabledError as e:
                assert e.code == -123
            else:
                raise AssertionError("ReconfigDisabledError expected")
            # the session is unharmed
            assert zk.state is SessionState.CONNECTED
            assert await zk.exists("/") is not None


async def test_unreadable_data(zk_hosts: str, zk_path: str) -> None:
    """Both ends limit frames to jute.maxbuffer (1 MiB - 1).  A getData reply is 88 bytes longer than the
    data, a setData request only 20 + path bytes longer: with a short path, data that fits a request
    cannot come back.  The server sends the reply anyway; the client skips it and fails only that
    request (ReplyTooLargeError, the connection is kept), and only a client with a larger ``max_frame``
    can read the node."""
    n = 0xFFFFF - 88 + 1  # the getData reply is one byte over the limit
    assert 8 + (4 + len(zk_path.encode())) + (4 + n) + 4 <= 0xFFFFF, "zk_path too long for this test"
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            sid = zk.session_id
            stat = await zk.set_data(zk_path, b"z" * n)
            assert stat.data_length == n
            try:
                await zk.get_data(zk_path)
            except zkwire.ReplyTooLargeError as e:
                assert e.size == 0xFFFFF + 1 and e.max_frame == 0xFFFFF
            else:
                raise AssertionError("ReplyTooLargeError expected")
            stat2 = await zk.exists(zk_path)  # on the same connection
            assert stat2 == stat and zk.session_id == sid and zk.state is zkwire.SessionState.CONNECTED
        async with zkwire.open_client(zk_hosts, max_frame=2 << 20) as big:
            data, stat3 = await big.get_data(zk_path)
            assert len(data) == n and stat3 == stat
            await big.set_data(zk_path, b"")


# ----------------------------------------------------------------------------------------- bad input


async def test_bad_input_is_rejected_before_sending(zk_hosts: str, zk_path: str) -> None:
    with trio.fail_after(LIMIT):
        async with zkwire.open_client(zk_hosts) as zk:
            await ensure_path(zk, zk_path)
            sid = zk.session_id
            zxid = zk.last_zxid
            bad_paths = ["", "a", f"{zk_path}/", f"{zk_path}//x", f"{zk_path}/./x", f"{zk_path}/..", f"{zk_path}/\x00"]
            for p in bad_paths:
                for call in (zk.create(p), zk.get_data(p), zk.delete(p), zk.exists(p)):
                    try:
                        await call
                    except zkwire.InvalidPathError:
                        pass
                    else:
                        raise AssertionError(f"InvalidPathError expected for {p!r}")
            try:
                await zk.create(f"{zk_path}/big", b"x" * (1 << 20))
            except zkwire.DataTooLargeError:
                pass
            else:
                raise AssertionError("DataTooLargeError expected")
            try:
                await zk.set_data(zk_path, b"x" * (1 << 20))
            except zkwire.DataTooLargeError:
                pass
            else:
                raise AssertionError("DataTooLargeError expected")
            for kwargs in (
                {"ttl": 1000, "ephemeral": True},
                {"ttl": 0},
                {"ttl": MAX_TTL_MS + 1},
                {"container": True, "sequential": True},
                {"container": True, "ephemeral": True},
            ):
                try:
                    await zk.create(f"{zk_path}/bad", **kwargs)  # type: ignore[arg-type]
                except zkwire.InvalidArgumentError:
                    pass
                else:
                    raise AssertionError(f"InvalidArgumentError expected for {kwargs}")
            for version in (-2, 1 << 31):
                try:
                    await zk.set_data(zk_path, b"", version=version)
                except zkwire.InvalidArgumentError:
                    pass
                else:
                    raise AssertionError("InvalidArgumentError expected")
            try:
                await zk.create(f"{zk_path}/bad", acl=[])
            except zkwire.InvalidArgumentError:
                pass
            else:
                raise AssertionError("InvalidArgumentError expected")
            # nothing reached the server: same session, no write happened, and it still works
            assert zk.state is SessionState.CONNECTED and zk.session_id == sid
            assert zk.last_zxid == zxid
            assert await zk.get_children(zk_path) == []
            assert await zk.create(f"{zk_path}/ok") == f"{zk_path}/ok"
