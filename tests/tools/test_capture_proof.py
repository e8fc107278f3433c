"""Proof that decoding a capture sees what the proxy saw: zkwire traffic to the real server goes through
the tracing proxy while tcpdump captures the proxy's client side on lo; the pcap, decoded with no port
given (the server side is found by its answer to the ConnectRequest), yields the same frames as the
proxy printed, frame for frame, and its statistics match what the test issued.

The session: create, a multi that succeeds and one that fails, digest auth, a data watch, a reconnect
(the connection cut by a fault proxy in front) after which the client re-attaches and re-registers the
watch with SetWatches, the watch firing, close.  Every step and the capture itself are bounded in time.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from helpers.addresses import first_server
from helpers.captureproof import start_tcpdump, stop_tcpdump, until_captured
from helpers.faultproxy import open_fault_proxy

import zkwire
from zkwire import Check, Create, Delete, SetData
from zkwire.trace.capture import read_packets
from zkwire.trace.conversations import CaptureDecoder
from zkwire.trace.stats import TraceStats
from zkwire.trace.tracer import TraceOptions, serve_trace, show_event

pytestmark = pytest.mark.skipif(
    shutil.which("tcpdump") is None or os.geteuid() != 0,
    reason="needs tcpdump and root (CAP_NET_RAW) to capture on lo",
)


def _server(zk_hosts: str) -> tuple[str, int]:
    return first_server(zk_hosts)


async def _session(hosts: str, base: str, proxy: Any) -> dict[str, int]:
    """The traffic; returns how many of each op the test issued."""
    async with zkwire.open_client(hosts, follow_ensemble=False) as zk:
        await zk.create(base, b"proof")
        await zk.multi([Create(f"{base}/a", b"1"), SetData(base, b"2"), Check(base, 1)])
        with pytest.raises(zkwire.NoNodeError):
            await zk.multi([Create(f"{base}/b"), Delete(f"{base}/missing")])
        await zk.add_auth("digest", "proof-user:proof-secret")
        _, _, watch = await zk.get_data(f"{base}/a", watch=True)
        assert await proxy.sever() == 1
        with trio.fail_after(20):
            while True:  # the first attempts may meet the cut connection
                try:
                    await zk.set_data(f"{base}/a", b"after the reconnect")
                    break
                except zkwire.ConnectionLossError:
                    await trio.sleep(0.05)
        await watch.wait()
        await zk.delete(f"{base}/a")
        await zk.delete(base)
    return {"create": 1, "multi": 2, "getData": 1, "delete": 2, "closeSession": 1}


def _key(o: dict[str, Any]) -> tuple[Any, ...]:
    return (o["conn"], o["direction"], o["index"], o["kind"], o["xid"], o["op_name"], o["path"], o["err"], o["payload"])


async def test_decoding_the_capture_gives_the_frames_the_proxy_saw(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    shown = io.StringIO()
    pcap = tmp_path / "proof.pcap"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            tport = await nursery.start(
                serve_trace, ("127.0.0.1", 0), _server(zk_hosts), TraceOptions(json_lines=True, out=shown)
            )
            tcpdump = await start_tcpdump(tport, pcap)
            try:
                async with open_fault_proxy("127.0.0.1", tport) as proxy:
                    issued = await _session(proxy.hosts, zk_path, proxy)
                with trio.fail_after(10):  # the proxy has printed both connections' ends
                    while shown.getvalue().count('"closed"') < 2:
                        await trio.sleep(0.05)
                await until_captured(pcap, 2)
            finally:
                await stop_tcpdump(tcpdump)
            nursery.cancel_scope.cancel()

    proxy_frames = [o for o in map(json.loads, shown.getvalue().splitlines()) if o["kind"] != "connection"]
    decoded = io.StringIO()
    stats = TraceStats(depth=1)
    options = TraceOptions(json_lines=True, out=decoded, stats=stats)
    decoder = CaptureDecoder()  # no port: found from the ConnectRequest
    for event in decoder.add_all(read_packets(str(pcap))):
        show_event(options, event)
    assert tport in decoder.learned_ports
    objs = [json.loads(line) for line in decoded.getvalue().splitlines()]
    capture_frames = [o for o in objs if o["kind"] != "connection"]
    notes = [o["note"] for o in objs if o["kind"] == "connection"]
    assert not any("missing" in n or "resynchronised" in n or "mid-connection" in n for n in notes), notes

    # frame for frame, in each direction of each connection
    assert [_key(o) for o in capture_frames if o["direction"] == "client"] == [
        _key(o) for o in proxy_frames if o["direction"] == "client"
    ]
    assert [_key(o) for o in capture_frames if o["direction"] == "server"] == [
        _key(o) for o in proxy_frames if o["direction"] == "server"
    ]
    assert {o["conn"] for o in capture_frames} == {1, 2}

    # what the session did is there: the reconnect re-attached and re-registered the watch
    kinds = [(o["conn"], o["kind"], o["op_name"]) for o in capture_frames if o["direction"] == "client"]
    assert (2, "connect", "connect") in kinds
    set_watches = [
        o for o in capture_frames if o["op_name"] in ("setWatches", "setWatches2") and o["direction"] == "client"
    ]
    assert len(set_watches) == 1 and set_watches[0]["conn"] == 2
    assert f"data 1 [{zk_path}/a]" in set_watches[0]["note"]
    auths = [o for o in capture_frames if o["kind"] == "auth" and o["direction"] == "client"]
    assert [a["note"] for a in auths] == ["scheme digest", "scheme digest"]  # again after the reconnect
    assert "proof-secret" not in decoded.getvalue() and b"proof-secret".hex() not in decoded.getvalue()
    failed = [o for o in capture_frames if o["op_name"] == "multi" and o["direction"] == "server"]
    assert [f["note"].startswith("FAILED") for f in failed] == [False, True]

    # statistics against what was issued
    summary = stats.to_json()
    for op, count in issued.items():
        assert summary["requests"].get(op) == count, (op, summary["requests"])
    assert summary["requests"]["setData"] >= 1  # after the reconnect (retried while the connection was cut)
    assert summary["sessions"] == {"opened": 1, "reattached": 1, "closed": 1, "expired": 0}
    assert summary["events"] == {"NODE_DATA_CHANGED": 1}
    assert summary["errors_by_op"] == {"multi NONODE": 1}
    assert summary["connections"] == 2
    assert summary["latency"]["create"]["count"] == 1

    # the command line says the same
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "zkwire", "decode", "--json", str(pcap)], capture_stdout=True, capture_stderr=True
        )
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == 0 and done.stderr == b""
    assert [_key(o) for o in lines if o["kind"] not in ("connection", "summary")] == [_key(o) for o in capture_frames]
    assert lines[-1]["kind"] == "summary" and lines[-1]["requests"] == summary["requests"]
