"""Capture the fuzz corpus: real conversations with a real ZooKeeper server, byte for byte.

::

    .venv/bin/python tests/helpers/capture_corpus.py                 # starts a local ZooKeeper 3.8 for the capture
    .venv/bin/python tests/helpers/capture_corpus.py --server H:P    # or uses a running one

Clients talk to the server through a recording TCP proxy that keeps what each side of each connection sent.
The clients: zkwire (every op it has: the create modes, reads and writes with and without watches, ACLs,
auth, multi and multiRead with failures, listings of 40 and 80 names (the decoder's fast paths), persistent and
recursive watches, watch removal, the ops of 3.7+,
error replies, pings, a severed connection re-attached with SetWatches2, and one with SetWatches), a raw
socket (a handshake without the read-only byte, an expired session, a top-level check, SASL on a server
without it), four-letter words, and kazoo (a client we did not write).  Every op's request and reply,
watch notifications and both handshakes end up in ``tests/corpus/conversations.json`` (hex), which the fuzz
tests and ``python -m tests.fuzz`` read.  The auth credential is a throwaway one (:data:`CREDENTIAL`); the
session passwords are those the capture's server handed out.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from zkwire.sansio.hosts import parse_host_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import zkwire
from helpers.rawwire import RawConn
from zkwire.acl import digest_id
from zkwire.client.fourletter import four_letter_word
from zkwire.constants import EventType, OpCode, Perm, WatcherType
from zkwire.protocol.records import ACL, CheckVersionRequest, GetSASLRequest, SetWatches
from zkwire.sansio.ops import Check, Create, Delete, GetChildren, GetData, SetData

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "conversations.json"
BASE = "/fuzz-corpus"
#: A throwaway digest credential, unlike anything else in the corpus (the fuzz tests look for its pieces).
CREDENTIAL = "zq7:Xk2-Vb9p-Lm4!"
SASL_TOKEN = b"Qz8!Wr5#Tn2%Jd6&"


class Recorder:
    """A TCP proxy that records both directions of every connection, labelled by what is running."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.label = "unlabelled"
        self.conversations: list[dict[str, Any]] = []
        self._open: list[tuple[trio.SocketStream, trio.SocketStream]] = []
        self.port = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            task_status.started()
            await trio.serve_listeners(self._handle, listeners, handler_nursery=nursery)

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _handle(self, client: trio.SocketStream) -> None:
        record = {"name": self.label, "client": bytearray(), "server": bytearray()}
        self.conversations.append(record)
        upstream = await trio.open_tcp_stream(*self.upstream)
        pair = (client, upstream)
        self._open.append(pair)

        async def pump(src: trio.SocketStream, dst: trio.SocketStream, into: bytearray) -> None:
            try:
                while data := await src.receive_some(65536):
                    into += data
                    await dst.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            finally:
                nursery.cancel_scope.cancel()

        async with client, upstream, trio.open_nursery() as nursery:
            nursery.start_soon(pump, client, upstream, record["client"])
            nursery.start_soon(pump, upstream, client, record["server"])
        self._open.remove(pair)

    async def sever(self) -> None:
        """Close every open connection (the clients reconnect through the proxy)."""
        for client, upstream in list(self._open):
            await trio.aclose_forcefully(client)
            await trio.aclose_forcefully(upstream)


async def _ignore(call: Callable[[], Any], *errors: type[BaseException]) -> None:
    try:
        await call()
    except errors:
        pass


async def every_op(rec: Recorder) -> None:
    rec.label = "zkwire-ops"
    async with zkwire.open_client(rec.hosts, session_timeout=2.0) as zk:
        await _ignore(lambda: zk.create(BASE, b"corpus root"), zkwire.NodeExistsError)
        a = f"{BASE}/a"
        await zk.create(a, b"hello \xe2\x9c\x93")
        await _ignore(lambda: zk.create(a), zkwire.NodeExistsError)
        await zk.create(f"{BASE}/eph", b"e", ephemeral=True)
        await zk.create(f"{BASE}/seq-", b"s", sequential=True)
        await zk.create(f"{BASE}/container", container=True)
        await zk.create(f"{BASE}/ttl", b"t", ttl=60_000)
        await zk.create_with_stat(f"{BASE}/with-stat", b"w" * 300)
        stat, exists_watch = await zk.exists(f"{BASE}/later", watch=True)
        assert stat is None
        await zk.exists(a)
        _data, stat, data_watch = await zk.get_data(a, watch=True)
        _children, child_watch = await zk.get_children(BASE, watch=True)
        await zk.get_children_with_stat(BASE)
        await zk.create(f"{BASE}/later", b"")  # NodeCreated, NodeChildrenChanged
        await zk.set_data(a, b"changed", version=stat.version)  # NodeDataChanged
        await _ignore(lambda: zk.set_data(a, b"stale", version=stat.version), zkwire.BadVersionError)
        await _ignore(lambda: zk.get_data(f"{BASE}/missing"), zkwire.NoNodeError)
        await exists_watch.wait()
        await data_watch.wait()
        await child_watch.wait()
        await zk.add_auth("digest", CREDENTIAL)
        await zk.who_am_i()
        secured = f"{BASE}/secured"
        await zk.create(secured, b"s", acl=[ACL(Perm.ALL, digest_id(*CREDENTIAL.split(":")))])
        await zk.get_acl(secured)
        await zk.set_acl(secured, [ACL(Perm.READ | Perm.WRITE, digest_id(*CREDENTIAL.split(":")))])
        await zk.sync(BASE)
        await zk.get_ephemerals(BASE)
        await zk.get_all_children_number(BASE)
        _, _, _watch = await zk.get_data(a, watch=True)
        await zk.check_watches(a, WatcherType.DATA)
        await zk.remove_watches(a, WatcherType.DATA)  # DataWatchRemoved
        await _ignore(lambda: zk.check_watches(a, WatcherType.DATA), zkwire.NoWatcherError)
        await zk.multi([Create(f"{BASE}/m1", b"1"), SetData(a, b"m"), Check(a, -1), Delete(f"{BASE}/m1")])
        await _ignore(lambda: zk.multi([Create(f"{BASE}/m2"), Check(a, 999)]), zkwire.BadVersionError)
        await zk.multi_read([GetData(a), GetChildren(BASE), GetData(f"{BASE}/missing")])
        await _ignore(lambda: zk.delete(BASE), zkwire.NotEmptyError)
        await _ignore(lambda: zk.reconfig(joining="server.9=127.0.0.1:1:2;3"), zkwire.ZKError)
        async with zk.add_watch(BASE, recursive=True) as events, zk.add_watch(a):
            await zk.create(f"{BASE}/deep", b"")
            await zk.set_data(f"{BASE}/deep", b"x")
            await zk.delete(f"{BASE}/deep")
            with trio.move_on_after(2):
                async for event in events:
                    if event.type == EventType.NODE_DELETED:
                        break
            await trio.sleep(1.0)  # pings (the session timeout is 2 s)
            await rec.sever()  # re-attach with the same session: SetWatches2 for the persistent watches
            await zk.wait_connected()
            await zk.exists(a)
        # Listings long enough for the decoder's fast paths (32 names or more): names of one length (the
        # stride path), then of several lengths (the split path); getChildren2 puts a Stat after them.
        listing = f"{BASE}/listing"
        await zk.create(listing)
        await zk.multi([Create(f"{listing}/job-{i:010d}") for i in range(40)])
        await zk.get_children(listing)
        await zk.multi([Create(f"{listing}/n{i}") for i in range(40)])
        await zk.get_children(listing)
        names, _ = await zk.get_children_with_stat(listing)
        await zk.multi([*(Delete(f"{listing}/{name}") for name in names), Delete(listing)])
        for child in await zk.get_children(BASE):
            if child not in ("a", "secured"):
                await _ignore(lambda child=child: zk.delete(f"{BASE}/{child}"), zkwire.ZKError)


async def one_shot_watches_across_a_reconnect(rec: Recorder) -> None:
    rec.label = "zkwire-setwatches"
    async with zkwire.open_client(rec.hosts, session_timeout=4.0, allow_read_only=True) as zk:
        a = f"{BASE}/a"
        _, _, w1 = await zk.get_data(a, watch=True)
        _, w2 = await zk.exists(f"{BASE}/not-yet", watch=True)
        _, w3 = await zk.get_children(BASE, watch=True)
        await rec.sever()  # re-attach: SetWatches with the three one-shot watches
        await zk.wait_connected()
        await zk.set_data(a, b"after reconnect")
        await w1.wait()
        await zk.create(f"{BASE}/not-yet")
        await w2.wait()
        await w3.wait()
        await zk.delete(f"{BASE}/not-yet")


def raw_conversations(rec: Recorder) -> None:
    def closes(call: Callable[[], object]) -> None:
        try:
            call()
        except (EOFError, OSError):
            pass  # the server closes the connection on some requests (3.8: top-level check, SASL unset)

    rec.label = "raw-no-read-only-byte"
    with RawConn(rec.hosts) as conn:
        conn.handshake(read_only=None)
        conn.call(1, OpCode.SET_WATCHES, SetWatches(0, (f"{BASE}/a",), (), (BASE,)))
        conn.call(2, OpCode.PING)
        closes(lambda: conn.call(3, OpCode.CHECK, CheckVersionRequest(f"{BASE}/a", -1)))
    rec.label = "raw-sasl"
    with RawConn(rec.hosts) as conn:
        conn.handshake()
        closes(lambda: conn.call(1, OpCode.SASL, GetSASLRequest(SASL_TOKEN)))
    rec.label = "raw-expired-session"
    with RawConn(rec.hosts) as conn:
        closes(lambda: conn.handshake(session_id=0x7E57_0000_0000_0001, passwd=bytes(range(16)), last_zxid=5))


async def four_letter_words(rec: Recorder) -> None:
    for word in ("ruok", "srvr", "stat"):
        rec.label = f"four-letter-{word}"
        with trio.fail_after(10):
            await four_letter_word("127.0.0.1", rec.port, word)


def kazoo_session(rec: Recorder) -> None:
    from kazoo.client import KazooClient

    rec.label = "kazoo"
    kz = KazooClient(hosts=rec.hosts)
    kz.start(timeout=10)
    try:
        fired = threading.Event()
        path = f"{BASE}/kazoo"
        kz.create(path, b"k", makepath=True)
        kz.get(path, watch=lambda event: fired.set())
        kz.set(path, b"k2")
        fired.wait(5)
        kz.get_children(BASE)
        kz.exists(f"{BASE}/nope")
        kz.delete(path)
    finally:
        kz.stop()
        kz.close()


async def capture(upstream: tuple[str, int]) -> list[dict[str, Any]]:
    rec = Recorder(upstream)
    async with trio.open_nursery() as nursery:
        await nursery.start(rec.serve)
        await every_op(rec)
        await one_shot_watches_across_a_reconnect(rec)
        await trio.to_thread.run_sync(raw_conversations, rec)
        await four_letter_words(rec)
        await trio.to_thread.run_sync(kazoo_session, rec)
        await trio.sleep(0.5)
        nursery.cancel_scope.cancel()
    return rec.conversations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", metavar="HOST:PORT", help="a running ZooKeeper 3.8 (default: start one)")
    parser.add_argument("--out", type=Path, default=CORPUS)
    args = parser.parse_args()
    server = None
    if args.server:
        server_address = parse_host_port(args.server, default_port=None)
        upstream = (server_address.host, server_address.port)
        version = "as found at " + args.server
    else:
        from zkwire.testing.embedded import EmbeddedZooKeeper

        server = EmbeddedZooKeeper(extended_types=True, four_letter_words="*")
        server.start()
        upstream = ("127.0.0.1", server.port)
        version = "3.8 (local, started by the capture)"
    try:
        conversations = trio.run(capture, upstream)
    finally:
        if server is not None:
            server.stop()
    out = {
        "about": "Conversations with a real ZooKeeper server, captured by tests/helpers/capture_corpus.py; hex bytes.",
        "zookeeper": version,
        "conversations": [
            {"name": c["name"], "client": bytes(c["client"]).hex(), "server": bytes(c["server"]).hex()}
            for c in conversations
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    sizes = sum(len(c["client"]) + len(c["server"]) for c in conversations)
    print(f"{len(conversations)} conversations, {sizes} bytes -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
