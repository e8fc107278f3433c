"""What a ZooKeeper 3.8.0 server really does with nodes: sequential suffixes and cversion, null and empty data
on the wire, the ephemeral owner of its special nodes.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

from helpers.quirks import Session, in_thread

from zkwire.acl import OPEN_ACL_UNSAFE
from zkwire.constants import OpCode
from zkwire.protocol.records import CreateRequest, CreateTTLRequest, DeleteRequest, GetDataRequest, GetDataResponse

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
