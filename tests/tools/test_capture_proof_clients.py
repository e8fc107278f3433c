"""The capture proof for every client: zkwire (with a reconnect that re-registers a persistent recursive
watch with SetWatches2), kazoo (with a reconnect that re-attaches its session; kazoo 2.11 has no
persistent watches and does not re-register watches: it ends them when the connection is lost), zkCli
(the Java client) and Curator (these two through a ``zkwire trace --json`` process, the others through
the same proxy run in the test) go through the tracing proxy while tcpdump captures the client<->proxy
port on lo; ``zkwire decode --json`` of the capture gives the same frames as the proxy printed, frame
for frame.

Then a lost packet: the capture rewritten without one segment (one inside a large reply, or one that
carried a whole request) decodes with a note that bytes are missing and one skipped frame where it
resumed on a frame boundary, and every frame outside the damaged span still matches the proxy's, in
order (the reply to a lost request is there, unpaired).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from helpers.captureproof import (
    TracedCapture,
    assert_same_frames,
    decode_cli,
    drop_packet,
    frame_key,
    frames_of,
    kernel_drops,
    notes_of,
    traced_capture,
)

import zkwire
from zkwire.trace.capture import SYN, TcpSegment

Chooser = Callable[[list[TcpSegment | None]], int]

pytestmark = pytest.mark.skipif(
    shutil.which("tcpdump") is None or os.geteuid() != 0,
    reason="needs tcpdump and root (CAP_NET_RAW) to capture on lo",
)
ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"
BIG = 150_000  # a reply that lo carries in several segments


def _no_gaps(objs: list[dict[str, Any]]) -> None:
    notes = notes_of(objs)
    assert not any("missing" in n or "resynchronised" in n or "mid-connection" in n for n in notes), notes
    assert not [o for o in frames_of(objs) if o["kind"] in ("malformed", "skipped")]


async def _prove(run: TracedCapture) -> list[dict[str, Any]]:
    """The capture decodes to the proxy's frames; returns them."""
    assert kernel_drops(run.tcpdump_report) == 0, run.tcpdump_report
    decoded = await decode_cli(run.pcap)
    _no_gaps(decoded)
    _no_gaps(run.proxy_objs())
    assert decoded[-1]["kind"] == "summary"
    proxy = run.proxy_frames()
    assert_same_frames(proxy, frames_of(decoded))
    return proxy


async def _until_reconnected(zk: zkwire.Client, path: str, data: bytes) -> None:
    with trio.fail_after(20):
        while True:  # the first attempts may meet the cut connection
            try:
                await zk.set_data(path, data)
                return
            except zkwire.ConnectionLossError:
                await trio.sleep(0.05)


async def test_zkwire_reconnect_with_setwatches2(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    async with traced_capture(zk_hosts, tmp_path / "zkwire.pcap", connections=2) as run:
        async with zkwire.open_client(run.hosts) as zk:
            await zk.create(zk_path, b"base")
            async with zk.add_watch(zk_path, recursive=True) as events:
                assert await run.fault.sever() == 1
                await _until_reconnected(zk, zk_path, b"after")
                await zk.create(f"{zk_path}/child", b"c")
                seen = []
                with trio.fail_after(10):
                    async for event in events:
                        seen.append((event.type.name, event.path))
                        if len(seen) == 2:
                            break
            await zk.delete(f"{zk_path}/child")
            await zk.delete(zk_path)
    assert seen == [("NODE_DATA_CHANGED", zk_path), ("NODE_CREATED", f"{zk_path}/child")]
    frames = await _prove(run)
    sent = [o for o in frames if o["direction"] == "client"]
    set_watches = [o for o in sent if o["op_name"] in ("setWatches", "setWatches2")]
    assert [(o["conn"], o["op_name"]) for o in set_watches] == [(2, "setWatches2")]
    assert zk_path in set_watches[0]["note"] and "recursive" in set_watches[0]["note"], set_watches[0]["note"]
    assert (2, "connect") in [(o["conn"], o["kind"]) for o in sent]
    events_seen = [o for o in frames if o["kind"] == "event"]
    assert [o["conn"] for o in events_seen] == [2, 2]


def _kazoo_session(hosts: str, base: str, sever: Any) -> list[tuple[str, str | None]]:
    """kazoo: a data watch, the connection cut, the session re-attached on a new connection."""
    import threading

    from kazoo.client import KazooClient
    from kazoo.protocol.states import KazooState

    kz = KazooClient(hosts=hosts, timeout=10)
    kz.start(timeout=10)
    try:
        events: list[tuple[str, str | None]] = []
        lost = threading.Event()
        again = threading.Event()

        def listener(state: str) -> None:
            if state == KazooState.SUSPENDED:
                lost.set()
            elif state == KazooState.CONNECTED and lost.is_set():
                again.set()

        kz.add_listener(listener)
        kz.create(base, b"root")
        kz.get(base, watch=lambda event: events.append((event.type, event.path)))
        assert trio.from_thread.run(sever) == 1
        assert again.wait(20), "kazoo did not reconnect"
        kz.set(base, b"after the reconnect")
        kz.get_children(base)
        kz.delete(base)
        return events
    finally:
        kz.stop()
        kz.close()


async def test_kazoo_through_the_tracer_with_a_reconnect(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    async with traced_capture(zk_hosts, tmp_path / "kazoo.pcap", connections=2) as run:
        with trio.fail_after(45):
            events = await trio.to_thread.run_sync(_kazoo_session, run.hosts, zk_path, run.fault.sever)
    # kazoo 2.11 does not re-register watches: it ends them (an event of type NONE) when the
    # connection is lost, so the second connection carries no SetWatches
    assert events == [("NONE", None)]
    frames = await _prove(run)
    assert not [o for o in frames if o["op_name"] in ("setWatches", "setWatches2")]
    handshakes = [o for o in frames if o["kind"] == "connect_response"]
    assert [o["conn"] for o in handshakes] == [1, 2]
    assert handshakes[0]["record"]["session_id"] == handshakes[1]["record"]["session_id"] != 0, handshakes
    requests = [(o["conn"], o["op_name"]) for o in frames if o["kind"] == "request"]
    for op in ("setData", "getChildren", "delete", "closeSession"):
        assert (2, op) in requests, (op, requests)
    assert (1, "getData") in requests


@pytest.mark.skipif(not os.path.exists(ZKCLI), reason="zkCli.sh (Debian's zookeeper package) is not installed")
@pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")
async def test_zkcli_through_the_tracer(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    commands = (["create", zk_path, "from-zkcli"], ["get", zk_path], ["delete", zk_path])
    async with traced_capture(zk_hosts, tmp_path / "zkcli.pcap", connections=len(commands), cli=True) as run:
        for command in commands:
            with trio.fail_after(60):
                done = await trio.run_process(
                    [ZKCLI, "-server", run.hosts, *command], capture_stdout=True, capture_stderr=True, check=False
                )
            assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    frames = await _prove(run)
    requests = [(o["conn"], o["op_name"], o["path"]) for o in frames if o["kind"] == "request"]
    for n, command in enumerate(commands, start=1):
        name = {"get": "getData"}.get(command[0], command[0])
        assert (n, name, zk_path) in requests, requests
    created = [o for o in frames if o["kind"] == "reply" and o["op_name"] == "create"]
    assert [o["note"] for o in created] == [f"created {zk_path}"]


async def test_curator_through_the_tracer(
    zk_hosts: str, zk_path: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from helpers.curator import CuratorPeer, compile_worker

    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    classes = compile_worker(tmp_path_factory)
    async with traced_capture(zk_hosts, tmp_path / "curator.pcap", connections=1, cli=True) as run:
        with trio.fail_after(60):
            peer = await trio.to_thread.run_sync(CuratorPeer, classes, run.hosts)
            try:
                for _ in range(2):
                    assert await peer.try_("mutex", f"{zk_path}/lock", 5000)
                    await peer.release()
            finally:
                await trio.to_thread.run_sync(peer.close)
    frames = await _prove(run)
    created = [o for o in frames if o["kind"] == "reply" and str(o["op_name"]).startswith("create")]
    assert sum(1 for o in created if o["err"] == 0 and str(o["note"]).startswith(f"created {zk_path}/lock/")) == 2


# ---------------------------------------------------------------------------------------------- lost packet


def _span_chooser(port: int, direction: str, proxy: list[dict[str, Any]], whole: bool) -> Chooser:
    """Picks the first segment of ``direction`` (the server side is on ``port``) whose bytes lie
    strictly inside one large frame (``whole``: whose bytes are exactly one setData request), and that
    no other segment (a retransmission) repeats."""
    frames = [(o["offset"], o["offset"] + 4 + o["size"], o) for o in proxy if o["direction"] == direction]

    def fits(at: int, end: int) -> bool:
        if whole:
            return any((start, stop) == (at, end) and o["op_name"] == "setData" for start, stop, o in frames)
        return any(start < at and end < stop and stop - start > BIG for start, stop, _ in frames)

    def choose(segments: list[TcpSegment | None]) -> int:
        ours = [
            (i, s)
            for i, s in enumerate(segments)
            if s is not None and (s.src[1] if direction == "server" else s.dst[1]) == port
        ]
        isn = next(s.seq for _, s in ours if s.flags & SYN)
        spans = [((s.seq - isn - 1) % (1 << 32), len(s.payload)) for _, s in ours]
        for (i, _), (at, n) in zip(ours, spans, strict=True):
            repeated = sum(1 for a, m in spans if m and a < at + n and at < a + m) > 1
            if n and not repeated and fits(at, at + n):
                return i
        raise AssertionError(f"no segment to drop in {spans}")

    return choose


@pytest.mark.parametrize(
    ("direction", "whole", "why"),
    [("server", False, "lost in the capture"), ("client", True, "before the first frame boundary found")],
    ids=["inside-a-large-reply", "a-whole-request"],
)
async def test_a_lost_packet_resynchronises_and_the_rest_still_matches(
    zk_hosts: str, zk_path: str, tmp_path: Path, direction: str, whole: bool, why: str
) -> None:
    async with traced_capture(zk_hosts, tmp_path / "whole.pcap", connections=1) as run:
        async with zkwire.open_client(run.hosts) as zk:
            await zk.create(zk_path, b"x" * BIG)
            for _ in range(2):
                data, _ = await zk.get_data(zk_path)
                assert len(data) == BIG
            await zk.set_data(zk_path, b"small")
            await zk.exists(f"{zk_path}/none")
            await zk.delete(zk_path)
    proxy = await _prove(run)

    damaged = tmp_path / "damaged.pcap"
    lost = drop_packet(run.pcap, damaged, _span_chooser(run.port, direction, proxy, whole))
    objs = await decode_cli(damaged)
    notes = notes_of(objs)
    assert f"{direction} side: {len(lost.payload)} bytes missing from the capture" in notes, notes
    frames = frames_of(objs)
    assert not [o for o in frames if o["kind"] == "malformed"]
    # where it resumed: one frame standing for the bytes it could not decode
    skipped = [o for o in frames if o["kind"] == "skipped"]
    assert [(o["direction"], o["note"]) for o in skipped] == [
        (direction, f"{skipped[0]['size']} bytes not decoded: {why}")
    ]

    # the damaged span: the proxy's frames whose bytes overlap the skipped ones: exactly one frame
    start, end = skipped[0]["offset"], skipped[0]["offset"] + skipped[0]["size"]
    hit = [
        o for o in proxy if o["direction"] == direction and o["offset"] < end and o["offset"] + 4 + o["size"] > start
    ]
    assert len(hit) == 1 and (hit[0]["offset"], 4 + hit[0]["size"]) == (start, skipped[0]["size"]), hit
    assert hit[0]["op_name"] == ("setData" if whole else "getData")

    # everything outside it matches, in order; a reply whose request was lost is there, unpaired
    same = [frame_key(o) for o in frames if o["direction"] == direction and o["kind"] != "skipped"]
    assert same == [frame_key(o) for o in proxy if o["direction"] == direction and o is not hit[0]]
    other = "client" if direction == "server" else "server"
    unpaired = [o for o in frames if o["direction"] == other and o["kind"] == "reply" and o["op_name"] is None]
    answer = [o for o in proxy if whole and o["kind"] == "reply" and o["xid"] == hit[0]["xid"]]
    assert [(o["xid"], o["zxid"], o["err"]) for o in unpaired] == [(o["xid"], o["zxid"], o["err"]) for o in answer]
    assert len(answer) == (1 if whole else 0)
    assert [frame_key(o) for o in frames if o["direction"] == other and o not in unpaired] == [
        frame_key(o) for o in proxy if o["direction"] == other and o not in answer
    ]
