"""What a ZooKeeper 3.8.0 server really does with container and TTL nodes: the opcodes they need, the TTLs
it accepts, and when they go.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

import time

from helpers.quirks import Session, in_thread

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import OpCode
from zkwire.protocol.records import Create2Response, CreateRequest, CreateTTLRequest, DeleteRequest

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
