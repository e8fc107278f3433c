"""``zkwire sniff`` at production rates, against the real server and tcpdump capturing the same traffic:
a burst of over 100k frames (a zkwire client pipelining from another process) is counted exactly (the
packets read and the packets the kernel says it dropped add up to tcpdump's), its requests equal the
capture's and its latency percentiles are those of the capture (kernel timestamps on both sides); a
starved sniffer (decoding slowed by the test's hook) says the kernel dropped, counts exactly what was
lost, and stays within its memory bound."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from helpers.addresses import first_server
from helpers.captureproof import kernel_drops, packets, start_tcpdump, stop_tcpdump

from zkwire.trace.capture import TcpSegment, read_packets
from zkwire.trace.conversations import CaptureDecoder
from zkwire.trace.output import TraceOptions, show_event
from zkwire.trace.sniff import open_sniffer
from zkwire.trace.sniffing import BehindWarning, DropWarning, sniff_into
from zkwire.trace.stats import TraceStats

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root or CAP_NET_RAW"),
    pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed"),
]

TESTS = Path(__file__).resolve().parents[1]
#: Requests of the burst: with their replies, over 100k frames.
REQUESTS = 50_000


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS), env.get("PYTHONPATH", "")])
    return env


async def _burst(zk_hosts: str, path: str, requests: int) -> dict[str, Any]:
    """The burst, from another process (bounded in time)."""
    command = [sys.executable, "-m", "helpers.burst", zk_hosts, path, str(requests)]
    with trio.fail_after(120):
        done = await trio.run_process(command, capture_stdout=True, env=_env())
    result: dict[str, Any] = json.loads(done.stdout.decode().splitlines()[-1])
    return result


def _pcap_summary(pcap: Path, port: int) -> dict[str, Any]:
    stats = TraceStats()
    options = TraceOptions(stats=stats, show_frames=False, out=io.StringIO())
    decoder = CaptureDecoder([port])
    for event in decoder.add_all(read_packets(str(pcap))):
        show_event(options, event)
    for event in decoder.finish():
        show_event(options, event)
    return stats.to_json()


def _summaries(out: Path) -> list[dict[str, Any]]:
    return [o for o in map(json.loads, out.read_text().splitlines()) if o.get("kind") == "summary"]


async def test_a_burst_of_100k_frames_is_counted_exactly_with_the_captures_latencies(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    port = first_server(zk_hosts)[1]
    pcap, out, err = tmp_path / "burst.pcap", tmp_path / "sniff.jsonl", tmp_path / "sniff.err"
    tcpdump = await start_tcpdump(port, pcap, immediate=False)  # stopped seconds after the burst
    try:
        with out.open("wb") as stdout, err.open("wb") as stderr:
            command = [sys.executable, "-m", "zkwire", "sniff", "--iface", "lo", "--port", str(port)]
            sniffer = await trio.lowlevel.open_process(
                [*command, "--stats", "--json"], stdout=stdout, stderr=stderr, env=_env()
            )
        try:
            with trio.fail_after(20):
                while b"sniffing" not in err.read_bytes():
                    assert sniffer.poll() is None, err.read_text()
                    await trio.sleep(0.05)
            sent = await _burst(zk_hosts, zk_path, REQUESTS)
            # Until the sniffer has read all the kernel holds: two summaries in a row with the same count.
            seen: list[int] = []
            with trio.fail_after(90):
                while len(seen) < 2 or seen[-1] != seen[-2]:
                    sniffer.send_signal(signal.SIGUSR1)
                    await trio.sleep(1.0)
                    summaries = _summaries(out)
                    if summaries:
                        seen.append(summaries[-1]["capture"]["packets"] + summaries[-1]["capture"]["kernel_dropped"])
        finally:
            sniffer.send_signal(signal.SIGINT)
            with trio.fail_after(30):
                await sniffer.wait()
    finally:
        report = await stop_tcpdump(tcpdump)
    assert kernel_drops(report) == 0, report
    final = (_summaries(out))[-1]
    capture = final["capture"]
    captured = len(packets(pcap))
    # Exact accounting: every packet tcpdump saw was either read by the sniffer or counted as dropped.
    assert capture["packets"] + capture["kernel_dropped"] == captured, (capture, captured)
    assert capture["ring"] == 1
    assert sum(sent["sent"].values()) >= REQUESTS
    theirs = await trio.to_thread.run_sync(_pcap_summary, pcap, port)
    assert theirs["frames"] >= 100_000
    if capture["kernel_dropped"]:
        # A machine too slow for the burst: the drops were said, and accounted for exactly above.
        assert "kernel dropped" in err.read_text()
        for op, count in theirs["requests"].items():
            assert final["requests"].get(op, 0) <= count
        return
    assert err.read_text().count("kernel dropped") == 0
    assert final["requests"] == theirs["requests"]
    assert final["frames"] == theirs["frames"]
    for op in ("getData", "setData"):
        ours, capture_latency = final["latency"][op], theirs["latency"][op]
        assert ours["count"] == capture_latency["count"]
        for key in ("p50_ms", "p99_ms"):
            assert abs(ours[key] - capture_latency[key]) <= 0.1 * capture_latency[key], (op, key, ours, capture_latency)


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


async def test_a_starved_sniffer_says_the_kernel_dropped_and_stays_within_its_memory(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    port = first_server(zk_hosts)[1]
    pcap = tmp_path / "starved.pcap"
    ring = 2 << 20
    stats = TraceStats()
    options = TraceOptions(stats=stats, show_frames=False, out=io.StringIO())
    warnings, behind = io.StringIO(), io.StringIO()
    starving = True
    peak = 0

    def slow(segment: TcpSegment) -> None:
        nonlocal peak
        if starving:
            time.sleep(0.002)  # the decoder cannot keep up: 500 segments a second at most
            peak = max(peak, _rss())

    tcpdump = await start_tcpdump(port, pcap, "-s", "96")  # headers only: counted, not decoded
    try:
        baseline = _rss()
        with open_sniffer("lo", [port], ring_bytes=ring) as sniffer:
            sniffer.on_drops = DropWarning(warnings)
            sniffer.on_behind = BehindWarning(behind)
            decoder = CaptureDecoder([port])
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sniff_into, sniffer, decoder, options, slow)
                await _burst(zk_hosts, zk_path, 20_000)
                nursery.cancel_scope.cancel()
            starving = False
            with trio.fail_after(60):  # what the ring still holds, read at full speed
                await sniff_into(sniffer, decoder, options, idle=1.0)
            sniffer.update_counts()
            read, dropped = sniffer.packets, sniffer.dropped
    finally:
        report = await stop_tcpdump(tcpdump)
    assert kernel_drops(report) == 0, report
    assert dropped > 0, "the starved sniffer dropped nothing"
    assert warnings.getvalue().startswith("zkwire sniff: kernel dropped ")
    assert "the figures below are partial" in warnings.getvalue()
    assert behind.getvalue().startswith("zkwire sniff: decoding is behind the capture: the ring is ")
    assert read + dropped == len(packets(pcap))
    assert peak - baseline < ring + (48 << 20), (peak, baseline)
