"""Captures of clients we did not write, decoded: kazoo and zkCli (the Java client) against the real server,
captured with tcpdump on lo, decoded with the server port found from the handshake."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server
from helpers.captureproof import start_tcpdump, stop_tcpdump, until_captured
from test_tracer import _kazoo_session

from zkwire.trace.capture import read_packets
from zkwire.trace.conversations import CaptureDecoder
from zkwire.trace.stats import TraceStats
from zkwire.trace.tracer import TraceOptions, show_event

pytestmark = pytest.mark.skipif(
    shutil.which("tcpdump") is None or os.geteuid() != 0,
    reason="needs tcpdump and root (CAP_NET_RAW) to capture on lo",
)
ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"


def _port(zk_hosts: str) -> int:
    return first_server(zk_hosts)[1]


def _decode(pcap: Path) -> tuple[list[dict[str, object]], dict[str, object]]:
    out = io.StringIO()
    stats = TraceStats()
    stats.verified = 0
    options = TraceOptions(json_lines=True, out=out, stats=stats)
    for event in CaptureDecoder(reading="verify").add_all(read_packets(str(pcap))):
        show_event(options, event)
    # Read by the fast codec and by the construct schemas: the two agree on every record.
    assert stats.verified and stats.disagreements == 0
    return [json.loads(line) for line in out.getvalue().splitlines()], stats.to_json()


async def test_a_capture_of_kazoo_decodes(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    pcap = tmp_path / "kazoo.pcap"
    tcpdump = await start_tcpdump(_port(zk_hosts), pcap)
    try:
        with trio.fail_after(60):
            seen = await trio.to_thread.run_sync(_kazoo_session, zk_hosts, zk_path)
        await until_captured(pcap, 1)
    finally:
        await stop_tcpdump(tcpdump)
    assert seen["event"] == [("CHANGED", "/a")]
    objs, summary = _decode(pcap)
    frames = [o for o in objs if o["kind"] != "connection"]
    assert frames and not [o for o in frames if o["kind"] == "malformed"]
    requests = summary["requests"]
    notes = [o["note"] for o in objs if o["kind"] == "connection"]
    assert requests == {
        "create": 2,
        "getData": 1,
        "setData": 1,
        "getChildren": 1,
        "delete": 2,
        "exists": 1,
        "closeSession": 1,
    }, (requests, notes)
    assert summary["events"] == {"NODE_DATA_CHANGED": 1}
    assert summary["sessions"] == {"opened": 1, "reattached": 0, "closed": 1, "expired": 0}
    # every reply is paired with its request
    replies = [o for o in frames if o["kind"] == "reply"]
    assert replies and all(o["op_name"] is not None for o in replies)


@pytest.mark.skipif(not os.path.exists(ZKCLI), reason="zkCli.sh (Debian's zookeeper package) is not installed")
async def test_a_capture_of_zkcli_decodes(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    pcap = tmp_path / "zkcli.pcap"
    server = zk_hosts.split(",")[0].split("/")[0]
    tcpdump = await start_tcpdump(_port(zk_hosts), pcap)
    try:
        for command in (["create", zk_path, "from-zkcli"], ["get", zk_path], ["delete", zk_path]):
            with trio.fail_after(60):
                done = await trio.run_process(
                    [ZKCLI, "-server", server, *command], capture_stdout=True, capture_stderr=True, check=False
                )
            assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        await until_captured(pcap, 3)
    finally:
        await stop_tcpdump(tcpdump)
    objs, summary = _decode(pcap)
    frames = [o for o in objs if o["kind"] != "connection"]
    assert frames and not [o for o in frames if o["kind"] == "malformed"]
    requests = summary["requests"]
    assert isinstance(requests, dict)
    assert requests.get("create") == 1 and requests.get("getData") == 1 and requests.get("delete") == 1
    created = [o for o in frames if o["kind"] == "reply" and o["op_name"] == "create"]
    assert created and created[0]["note"] == f"created {zk_path}"
    sessions = summary["sessions"]
    assert isinstance(sessions, dict) and sessions["opened"] == 3


async def test_a_capture_of_curator_decodes(
    zk_hosts: str, zk_path: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from helpers.curator import CuratorPeer, compile_worker

    classes = compile_worker(tmp_path_factory)
    pcap = tmp_path / "curator.pcap"
    tcpdump = await start_tcpdump(_port(zk_hosts), pcap)
    try:
        with trio.fail_after(60):
            peer = await trio.to_thread.run_sync(CuratorPeer, classes, zk_hosts)
            try:
                for _ in range(3):
                    assert await peer.try_("mutex", f"{zk_path}/lock", 5000)
                    await peer.release()
            finally:
                await trio.to_thread.run_sync(peer.close)
        await until_captured(pcap, 1)
    finally:
        await stop_tcpdump(tcpdump)
    objs, summary = _decode(pcap)
    frames = [o for o in objs if o["kind"] != "connection"]
    assert frames and not [o for o in frames if o["kind"] == "malformed"]
    replies = [o for o in frames if o["kind"] == "reply"]
    assert replies and all(o["op_name"] is not None for o in replies)
    # each acquisition created an ephemeral sequential lock node (Curator's protected mode); the first
    # one failed with NoNode, then the parents were created as containers and it was tried again
    creates = [o for o in frames if o["direction"] == "client" and str(o["op_name"]).startswith("create")]
    modes = [o["note"] for o in creates]
    assert modes.count("mode ephemeral sequential") == 4 and "mode container" in modes, modes
    created = [o for o in replies if str(o["op_name"]).startswith("create") and o["err"] == 0]
    assert sum(1 for o in created if str(o["note"]).startswith(f"created {zk_path}/lock/")) == 3
    sessions = summary["sessions"]
    assert isinstance(sessions, dict) and sessions["opened"] == 1
