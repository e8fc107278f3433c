"""Live sniffing at a given frame rate on loopback: what ``zkwire sniff --stats`` reads and what the kernel
drops, beside tcpdump capturing the same traffic, for the plain reader and for the ring, in the same run.

A real ZooKeeper server (the project's embedded one) receives pipelined getData requests paced to
``--rate`` frames a second (requests and their replies; each request sent on its own, so that most
travel in a packet of their own) for ``--seconds``, from a process of its own.  For each reader in
turn:

* ``plain``: one ``recvmsg`` per packet, no kernel filter (every packet of lo reaches Python, as the
  sniffer did before the ring);
* ``ring``: the TPACKET_V3 ring with the BPF port filter;

a sniffer process decodes as ``zkwire sniff --stats`` does (the capture decoder and the statistics)
while tcpdump writes the same port's traffic to a file.  After the traffic, the sniffer reads what the
kernel still holds (until idle, bounded), and the rows say: frames offered, packets tcpdump captured and
dropped, packets the sniffer read, packets the kernel dropped for it, frames decoded, requests decoded.

    python bench/sniff_bench.py [--rate FRAMES] [--seconds S] [--repeat N] [--json PATH]   (root)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.records import ConnectRequest, GetDataRequest

READERS = ("plain", "ring")


# ---------------------------------------------------------------------------------------------- traffic


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            raise ConnectionError(f"the server closed the connection ({len(data)} of {n} bytes read)")
        data += more
    return data


def _read_frame(sock: socket.socket) -> bytes:
    return _read_exactly(sock, int.from_bytes(_read_exactly(sock, 4), "big"))


def traffic(port: int, path: str, rate: float, seconds: float) -> dict[str, Any]:
    """Pipelined getData requests at ``rate / 2`` a second (their replies make the other half)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False))))
    _read_frame(sock)
    received = [0]

    def drain() -> None:
        while True:
            try:
                data = sock.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            received[0] += len(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    per_second = rate / 2
    requests = int(per_second * seconds)
    frames = [bytes(encode_request(xid, OpCode.GET_DATA, GetDataRequest(path, False))) for xid in range(1, 1001)]
    start = time.monotonic()
    for n in range(requests):
        due = start + n / per_second
        late = due - time.monotonic()
        if late > 0.0005:
            time.sleep(late)
        sock.sendall(frames[n % 1000])
    elapsed = time.monotonic() - start
    reply = 4 + 16 + 4 + 64 + 68  # length, ReplyHeader, the 64 bytes of data, Stat
    deadline = time.monotonic() + 30
    while received[0] < requests * reply and time.monotonic() < deadline:  # the last replies
        time.sleep(0.05)
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    replies = received[0] // reply
    return {
        "requests": requests,
        "replies": replies,
        "seconds": elapsed,
        "offered_frames_per_s": 2 * requests / elapsed,
    }


# ---------------------------------------------------------------------------------------------- sniffer


def sniffer_child(reader: str, port: int, reading: str) -> int:
    """The sniffer process: decode as ``zkwire sniff --stats`` does until SIGINT, then read what the kernel
    still holds (until idle), then print its counts as JSON."""
    import io

    import trio

    from zkwire.trace.conversations import CaptureDecoder
    from zkwire.trace.output import TraceOptions
    from zkwire.trace.sniff import open_sniffer
    from zkwire.trace.sniffing import sniff_into
    from zkwire.trace.stats import TraceStats

    async def run() -> dict[str, Any]:
        ring = reader == "ring"
        stats = TraceStats()
        options = TraceOptions(stats=stats, show_frames=False, out=io.StringIO())
        with open_sniffer("lo", [port], ring=ring, kernel_filter=ring) as sniffer:
            decoder = CaptureDecoder([port], reading=reading)
            with trio.open_signal_receiver(signal.SIGINT) as signals:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(sniff_into, sniffer, decoder, options)
                    print("ready", flush=True)
                    async for _ in signals:
                        break
                    nursery.cancel_scope.cancel()
            started = time.monotonic()
            with trio.move_on_after(60):
                await sniff_into(sniffer, decoder, options, idle=0.5)
            sniffer.update_counts()
            return {
                "reader": reader,
                "packets_read": sniffer.packets,
                "segments": sniffer.matched,
                "kernel_dropped": sniffer.dropped,
                "frames_decoded": stats.frames,
                "requests_decoded": sum(stats.requests.values()),
                "drain_seconds": time.monotonic() - started,
                "getData_latency": stats.to_json()["latency"].get("getData"),
            }

    print(json.dumps(trio.run(run)), flush=True)
    return 0


def _tcpdump_counts(report: str) -> tuple[int, int]:
    captured = re.search(r"(\d+) packets captured", report)
    dropped = re.search(r"(\d+) packets dropped by kernel", report)
    return int(captured.group(1)) if captured else -1, int(dropped.group(1)) if dropped else -1


def _capture_latency(pcap: Path, port: int) -> dict[str, float] | None:
    """getData's latency figures in tcpdump's capture (as ``zkwire decode --stats`` gives them)."""
    from zkwire.trace.capture import read_packets
    from zkwire.trace.conversations import CaptureDecoder
    from zkwire.trace.output import TraceOptions, show_event
    from zkwire.trace.stats import TraceStats

    stats = TraceStats()
    options = TraceOptions(stats=stats, show_frames=False)
    for event in CaptureDecoder([port], reading="headers").add_all(read_packets(str(pcap))):
        show_event(options, event)
    latency: dict[str, float] | None = stats.to_json()["latency"].get("getData")
    return latency


def one_round(
    reader: str, port: int, path: str, rate: float, seconds: float, tmp: Path, nice: int, reading: str
) -> dict[str, Any]:
    pcap = tmp / f"{reader}.pcap"
    # tcpdump as one runs it to keep up: a 128 MiB buffer, whole packets, not --immediate-mode.
    tcpdump = subprocess.Popen(
        ["tcpdump", "-Z", "root", "-i", "lo", "-B", "131072", "-s", "0", "-w", str(pcap), f"tcp port {port}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert tcpdump.stderr is not None
    tcpdump.stderr.readline()  # "listening on ..."
    # The sniffer at a lower priority than the server and its clients, as one would run it beside them.
    child = subprocess.Popen(
        [
            "nice",
            "-n",
            str(nice),
            sys.executable,
            __file__,
            "--child",
            reader,
            "--port",
            str(port),
            "--reading",
            reading,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    sent = traffic(port, path, rate, seconds)
    child.send_signal(signal.SIGINT)
    counts = json.loads(child.stdout.readline())
    child.wait(timeout=30)
    tcpdump.send_signal(signal.SIGINT)
    _, report = tcpdump.communicate(timeout=30)
    captured, tcpdump_dropped = _tcpdump_counts(report)
    return (
        sent
        | counts
        | {
            "tcpdump_captured": captured,
            "tcpdump_dropped": tcpdump_dropped,
            "nice": nice,
            "reading": reading,
            "capture_getData_latency": _capture_latency(pcap, port),
        }
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=40_000, help="frames a second, requests and replies")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--nice", type=int, default=10, help="the sniffer's niceness (default: %(default)s)")
    p.add_argument(
        "--reading",
        default="headers",
        help="how the sniffer reads records (default: %(default)s, as zkwire sniff --stats; see zkwire.trace.decoder)",
    )
    p.add_argument("--readers", default=",".join(READERS), help="the readers to run (default: %(default)s)")
    p.add_argument("--json", type=Path)
    p.add_argument("--child", choices=READERS, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return sniffer_child(a.child, a.port, a.reading)
    if os.geteuid() != 0:
        print("sniff_bench: live capture needs root", file=sys.stderr)
        return 2
    from zkwire.testing.embedded import EmbeddedZooKeeper

    rows: list[dict[str, Any]] = []
    server = EmbeddedZooKeeper()
    server.start()
    try:
        port = int(server.hosts.rsplit(":", 1)[1])
        path = "/sniff-bench"
        _create(port, path)
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(a.repeat):
                for reader in a.readers.split(","):
                    row = one_round(reader, port, path, a.rate, a.seconds, Path(tmp), a.nice, a.reading)
                    rows.append(row)
                    print(_line(row), flush=True)
    finally:
        server.stop()
    if a.json:
        a.json.write_text(json.dumps({"rate": a.rate, "seconds": a.seconds, "rows": rows}, indent=1))
    return 0


def _create(port: int, path: str) -> None:
    import trio

    import zkwire
    from zkwire.errors import NodeExistsError

    async def create() -> None:
        async with zkwire.open_client(f"127.0.0.1:{port}") as zk:
            try:
                await zk.create(path, b"v" * 64)
            except NodeExistsError:
                pass

    trio.run(create)


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['reader']:5}  offered {row['offered_frames_per_s']:8.0f} frames/s  "
        f"tcpdump {row['tcpdump_captured']} packets ({row['tcpdump_dropped']} dropped)  "
        f"sniffer read {row['packets_read']} packets, kernel dropped {row['kernel_dropped']}, "
        f"decoded {row['frames_decoded']} frames ({row['requests_decoded']} requests of {row['requests']}, "
        f"{row['replies']} replies), "
        f"drained in {row['drain_seconds']:.1f} s; getData p50/p99 ms: sniffer {_percentiles(row['getData_latency'])}, "
        f"tcpdump's capture {_percentiles(row['capture_getData_latency'])}"
    )


def _percentiles(latency: dict[str, float] | None) -> str:
    return "-" if latency is None else f"{latency['p50_ms']:.2f}/{latency['p99_ms']:.2f}"


if __name__ == "__main__":
    sys.exit(main())
