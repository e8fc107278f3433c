"""Decode throughput of the tracer, in frames per second of CPU time, the fast codec beside the construct
schemas in the same run.

The capture decoded is either made from real traffic (``--real SECONDS``: a local ZooKeeper, a zkwire
client of ``--tasks`` tasks pipelining getData, getChildren and setData, tcpdump writing it on lo) or
synthetic (``--exchanges`` request/reply pairs of one conversation: getData of 100 bytes, setData,
create, exists, pings and watch events now and then; one frame per segment of up to ``--mss`` bytes),
or a capture file given with ``--capture``.  Rows, as ``zkwire decode`` reads it (packet reading, TCP
reassembly, the conversation decoder, the writer into a null sink):

* ``--stats``, the text view and ``--json``, each read by the construct schemas (the previous reading)
  and by the fast codec (``--stats``: the header facts alone), with their ratio;
* ``--verify`` (both readings compared), the pcap reading and reassembly alone, and the proxy's path
  (forwarded chunks of ``--chunk`` bytes into the conversation decoder);
* ``--big``: replies of about 1 MiB (a multi of 116,000 results, a multiRead, getACL, whoAmI), each
  record read alone, by each reading;
* ``--tcpdump``: tcpdump reading the capture and writing it again (``-r`` to ``-w``), for scale.
* ``--command``: ``zkwire decode`` itself in a child process writing its output to a file (what a user
  sees), its CPU time with and without the run's start-up.

Paths take turns in ``--repeat`` rounds; the best CPU time of each is kept.  ``--rss-gb G`` writes a
synthetic capture of G GB of large getData replies to ``--tmp``, reads it with ``zkwire decode --stats``
in a child process (its peak RSS beside that of a capture a hundredth the size), and deletes it.

    python bench/decode_bench.py [--real SECONDS | --capture PCAP | --exchanges N] [--repeat N] [--big]
        [--tcpdump] [--command] [--rss-gb G] [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.framing import frame
from zkwire.protocol.records import (
    ConnectRequest,
    ConnectResponse,
    CreateRequest,
    CreateResponse,
    ExistsRequest,
    ExistsResponse,
    GetDataRequest,
    GetDataResponse,
    ReplyHeader,
    SetDataRequest,
    SetDataResponse,
    Stat,
    WatcherEvent,
)
from zkwire.trace.capture import StreamData, TcpReassembler, read_packets
from zkwire.trace.conversations import CaptureDecoder
from zkwire.trace.decoder import ConversationDecoder, body_decoder
from zkwire.trace.output import TraceOptions, show_event
from zkwire.trace.resync import FrameTracker
from zkwire.trace.stats import TraceStats

CLIENT, SERVER = ("127.0.0.1", 40000), ("127.0.0.1", 2181)
STAT = Stat(0x100000002, 0x100000005, 1_700_000_000_000, 1_700_000_001_000, 3, 0, 0, 0, 100, 0, 0x100000002)


class _Null(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


def _body(record: Any) -> bytes:
    out = bytearray()
    record.write(out)
    return bytes(out)


def _reply(xid: int, zxid: int, err: int, body: bytes = b"") -> bytes:
    return frame(_body(ReplyHeader(xid, zxid, err)) + body)


def conversation(exchanges: int) -> list[tuple[str, bytes]]:
    out = [
        ("client", bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))),
        ("server", frame(_body(ConnectResponse(0, 10000, 0x1234, bytes(16), False)))),
    ]
    for i in range(1, exchanges + 1):
        path = f"/bench/node-{i % 100}"
        kind = i % 4
        if kind == 0:
            req = encode_request(i, OpCode.GET_DATA, GetDataRequest(path, False))
            rep = _reply(i, 0x100 + i, 0, _body(GetDataResponse(b"d" * 100, STAT)))
        elif kind == 1:
            req = encode_request(i, OpCode.SET_DATA, SetDataRequest(path, b"v" * 50, -1))
            rep = _reply(i, 0x100 + i, 0, _body(SetDataResponse(STAT)))
        elif kind == 2:
            req = encode_request(i, OpCode.CREATE, CreateRequest(path + "-", b"", None, 2))
            rep = _reply(i, 0x100 + i, 0, _body(CreateResponse(f"{path}-{i:010d}")))
        else:
            req = encode_request(i, OpCode.EXISTS, ExistsRequest(path, True))
            rep = _reply(i, 0x100 + i, 0, _body(ExistsResponse(STAT)))
        out += [("client", bytes(req)), ("server", rep)]
        if i % 50 == 0:
            out += [("client", bytes(encode_request(-2, OpCode.PING))), ("server", _reply(-2, 0x100 + i, 0))]
        if i % 200 == 0:
            out.append(("server", _reply(-1, -1, 0, _body(WatcherEvent(3, 3, path)))))
    return out


def _ipv4_tcp(src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    tcp = struct.pack(">HHIIHHHH", src[1], dst[1], seq, ack, (5 << 12) | flags, 65535, 0, 0) + payload
    addr = bytes([127, 0, 0, 1])
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, addr, addr)
    return b"\x00" * 12 + b"\x08\x00" + ip + tcp


def write_pcap(path: Path, conv: list[tuple[str, bytes]], mss: int) -> int:
    """The conversation as an Ethernet pcap with segments of ``mss`` bytes; returns the packet count."""
    seq = {"client": 1000, "server": 5000}
    ends = {"client": (CLIENT, SERVER), "server": (SERVER, CLIENT)}
    other = {"client": "server", "server": "client"}
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    packets = 0
    t = 1_700_000_000.0

    def packet(data: bytes) -> None:
        nonlocal packets
        sec = int(t)
        out.extend(struct.pack("<IIII", sec, int((t - sec) * 1e6), len(data), len(data)))
        out.extend(data)
        packets += 1

    packet(_ipv4_tcp(CLIENT, SERVER, seq["client"] - 1, 0, 0x02, b""))
    packet(_ipv4_tcp(SERVER, CLIENT, seq["server"] - 1, seq["client"], 0x12, b""))
    for direction, data in conv:
        src, dst = ends[direction]
        for pos in range(0, len(data), mss):
            t += 0.00001
            chunk = data[pos : pos + mss]
            packet(_ipv4_tcp(src, dst, seq[direction], seq[other[direction]], 0x18, chunk))
            seq[direction] += len(chunk)
    path.write_bytes(out)
    return packets


def _null_options(view: str) -> TraceOptions:
    """What ``zkwire decode`` shows for ``view`` ("stats", "text", "json"), written to a null sink."""
    return TraceOptions(out=_Null(), json_lines=view == "json", show_frames=view != "stats", stats=TraceStats())


def decode_capture(pcap: Path, view: str, reading: str, compiled: bool = False) -> Callable[[], int]:
    """``zkwire decode pcap`` with ``view`` and ``reading``: the frames it shows."""

    def go() -> int:
        options = _null_options(view)
        n = 0
        for event in CaptureDecoder(reading=reading, compiled=compiled).add_all(read_packets(str(pcap))):
            show_event(options, event)
            n += event.frame is not None
        options.summary()
        return n

    return go


def reassembly_only(pcap: Path) -> Callable[[], int]:
    def go() -> int:
        reasm = TcpReassembler()
        n = 0
        for seg in read_packets(str(pcap)):
            n += sum(1 for ev in reasm.add(seg) if isinstance(ev, StreamData))
        return n

    return go


def proxy_path(chunks: list[tuple[str, bytes]], reading: str) -> Callable[[], int]:
    """The proxy's decoding path: chunks as the pumps forward them, in the order they went."""

    def go() -> int:
        options = TraceOptions(out=_Null(), max_line=4096)
        decoder = ConversationDecoder(reading=reading)
        bounds = {"client": FrameTracker(decoder.max_frame), "server": FrameTracker(decoder.max_frame)}
        n = 0
        now = 0.0
        for direction, data in chunks:
            bounds[direction].feed(data)  # the forwarding side's share
            now += 0.00001
            for f in decoder.feed(direction, data, now):
                n += 1
                options.emit(1, f, now)
        return n

    return go


def _chunks(conv: list[tuple[str, bytes]], chunk: int) -> list[tuple[str, bytes]]:
    chunks: list[tuple[str, bytes]] = []
    for direction, data in conv:
        if chunks and chunks[-1][0] == direction and len(chunks[-1][1]) + len(data) <= chunk:
            chunks[-1] = (direction, chunks[-1][1] + data)
        else:
            chunks.append((direction, data))
    return chunks


def _cpu(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.process_time()
    n = fn()
    return time.process_time() - start, n


def measure(paths: dict[str, Callable[[], int]], repeat: int) -> dict[str, tuple[float, int]]:
    """The best CPU time of each path and what it counted; the paths take turns in each round, so that a
    busy moment of the machine does not fall on one path only."""
    rows = {name: (float("inf"), 0) for name in paths}
    for _ in range(repeat):
        for name, fn in paths.items():
            secs, n = _cpu(fn)
            rows[name] = (min(rows[name][0], secs), n)
    return rows


#: (row, view, previous reading, new reading): the views of zkwire decode, construct beside fast.
VIEWS = (
    ("--stats", "stats", "schemas", "headers"),
    ("text view", "text", "schemas", "notes"),
    ("--json", "json", "schemas", "fast"),
)


def run_views(pcap: Path, repeat: int, frames: int) -> dict[str, Any]:
    paths: dict[str, Callable[[], int]] = {"pcap read + TCP reassembly": reassembly_only(pcap)}
    for row, view, before, after in VIEWS:
        paths[f"{row}, construct schemas"] = decode_capture(pcap, view, before)
        paths[f"{row}, fast codec"] = decode_capture(pcap, view, after)
    paths["text view, every record read (as -v reads)"] = decode_capture(pcap, "text", "fast")
    paths["text view, --verify"] = decode_capture(pcap, "text", "verify")
    rows = measure(paths, repeat)
    out: dict[str, Any] = {}
    for name, (secs, n) in rows.items():
        out[name] = {"seconds": secs, "frames": n, "frames_per_second": frames / secs}
    for row, _, _, _ in VIEWS:
        out[f"{row}, fast codec"]["ratio"] = (
            out[f"{row}, construct schemas"]["seconds"] / out[f"{row}, fast codec"]["seconds"]
        )
    return out


def run_big(repeat: int) -> dict[str, Any]:
    """Replies of about 1 MiB, each record read alone by each reading (milliseconds of CPU)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.unit.test_fast_bodies import big_replies

    readings = {
        "fast": body_decoder("fast"),
        "construct": body_decoder("schemas"),
        "construct, compiled": body_decoder("schemas", compiled=True),
        "verify": body_decoder("verify", compiled=False),
    }
    out: dict[str, Any] = {}
    for name, (op, payload) in big_replies().items():
        paths = {reading: (lambda b=b, op=op, p=payload: (b.reply(op, p), 1)[1]) for reading, b in readings.items()}
        rows = measure(paths, repeat)
        out[name] = {"bytes": len(payload), **{reading: secs * 1000 for reading, (secs, _) in rows.items()}}
    return out


def run_tcpdump(pcap: Path, repeat: int, frames: int) -> dict[str, Any] | None:
    """tcpdump reading the capture and writing it again: its CPU time (user + system, of the child)."""
    if shutil.which("tcpdump") is None:
        return None
    best = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(["tcpdump", "-r", str(pcap), "-w", f"{tmp}/copy.pcap"], capture_output=True, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {"seconds": best, "frames_per_second": frames / best if best else None}


def _child_cpu(argv: list[str], out: Path) -> float:
    """CPU seconds (user + system) of the child running ``argv``, its stdout written to ``out``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "wb") as f:
        subprocess.run(argv, stdout=f, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def run_command(pcap: Path, repeat: int, frames: int) -> dict[str, Any]:
    """``zkwire decode`` itself in a child process, its output written to a file (what a user sees):
    CPU seconds of the whole run, and less the run's start-up (the same command on an empty capture)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.pcap"
        empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # a pcap of no packets
        for label, view in (("--stats", ["--stats"]), ("text view", []), ("--json", ["--json"])):
            argv = [sys.executable, "-m", "zkwire", "decode", *view]
            whole = min(_child_cpu([*argv, str(pcap)], Path(tmp) / "out") for _ in range(repeat))
            start = min(_child_cpu([*argv, str(empty)], Path(tmp) / "out") for _ in range(repeat))
            out[f"zkwire decode {label}, the command"] = {
                "seconds": whole,
                "startup_seconds": start,
                "frames_per_second": frames / whole,
                "frames_per_second_after_startup": frames / max(whole - start, 1e-9),
            }
    return out


# ------------------------------------------------------------------------------------ real traffic


def capture_real_traffic(pcap: Path, seconds: float, tasks: int) -> dict[str, Any]:
    """A local ZooKeeper, tcpdump on lo for its port, and a zkwire client pipelining requests for
    ``seconds`` with ``tasks`` tasks; the capture is left in ``pcap``."""
    import trio

    import zkwire
    from zkwire.testing.embedded import EmbeddedZooKeeper

    zk = EmbeddedZooKeeper(tick_time_ms=2000, extra_config={"forceSync": "no"})
    zk.start()
    try:
        port = int(zk.hosts.rsplit(":", 1)[1])
        dump = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-U", "-B", "65536", "-s", "0", "-w", str(pcap), f"tcp port {port}"],
            stderr=subprocess.PIPE,
        )
        assert dump.stderr is not None
        seen = b""
        while b"listening on" not in seen:
            line = dump.stderr.readline()
            if not line:
                raise RuntimeError(f"tcpdump did not start: {seen!r}")
            seen += line
        requests = 0

        async def drive() -> None:
            nonlocal requests
            async with zkwire.open_client(zk.hosts) as client:
                base = "/decode-bench"
                if await client.exists(base) is None:
                    await client.create(base)
                for i in range(100):
                    path = f"{base}/n{i}"
                    if await client.exists(path) is None:
                        await client.create(path, b"d" * 100)
                deadline = trio.current_time() + seconds

                async def worker(k: int) -> None:
                    nonlocal requests
                    i = k
                    while trio.current_time() < deadline:
                        path = f"{base}/n{i % 100}"
                        kind = i % 4
                        if kind == 0:
                            await client.set_data(path, b"v" * 50)
                        elif kind == 1:
                            await client.get_children(base)
                        else:
                            await client.get_data(path)
                        requests += 1
                        i += tasks

                async with trio.open_nursery() as nursery:
                    for k in range(tasks):
                        nursery.start_soon(worker, k)

        trio.run(drive)
        time.sleep(1.0)  # what tcpdump still holds
        dump.send_signal(signal.SIGINT)
        _, said = dump.communicate(timeout=30)
    finally:
        zk.stop()
    return {"seconds": seconds, "tasks": tasks, "requests": requests, "tcpdump": said.decode(errors="replace").strip()}


# --------------------------------------------------------------------------------------------- RSS


def write_big_capture(path: Path, target_bytes: int) -> tuple[int, int]:
    """A synthetic capture of getData replies of 16 KiB, about ``target_bytes`` long, written as it is
    made (never held whole); returns its frames and bytes."""
    data = b"x" * 16384
    out = open(path, "wb")  # noqa: SIM115  (closed below)
    frames = 0
    try:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        seq = {"client": 1000, "server": 5000}
        ends = {"client": (CLIENT, SERVER), "server": (SERVER, CLIENT)}
        t = 1_700_000_000.0
        i = 0
        while out.tell() < target_bytes:
            i += 1
            conv = [
                ("client", bytes(encode_request(i, OpCode.GET_DATA, GetDataRequest(f"/big/n{i % 100}", False)))),
                ("server", _reply(i, 0x100 + i, 0, _body(GetDataResponse(data, STAT)))),
            ]
            if i == 1:
                conv = conversation(0) + conv
            for direction, blob in conv:
                src, dst = ends[direction]
                other = "server" if direction == "client" else "client"
                for pos in range(0, len(blob), 65000):
                    t += 0.00001
                    chunk = blob[pos : pos + 65000]
                    packet = _ipv4_tcp(src, dst, seq[direction], seq[other], 0x18, chunk)
                    sec = int(t)
                    out.write(struct.pack("<IIII", sec, int((t - sec) * 1e6), len(packet), len(packet)))
                    out.write(packet)
                    seq[direction] = (seq[direction] + len(chunk)) % (1 << 32)
                frames += 1
        return frames, out.tell()
    finally:
        out.close()


def _decode_rss(path: Path) -> tuple[float, float]:
    """``zkwire decode --stats`` of ``path`` in a child process: its peak RSS (MiB) and CPU seconds."""
    code = (
        "import resource, subprocess, sys;"
        "p = subprocess.run([sys.executable, '-m', 'zkwire', 'decode', '--stats', sys.argv[1]],"
        " stdout=subprocess.DEVNULL);"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(u.ru_maxrss, u.ru_utime + u.ru_stime)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    rss_kib, cpu = done.stdout.split()
    return int(rss_kib) / 1024, float(cpu)


def run_rss(gigabytes: float, tmp: Path) -> dict[str, Any]:
    need = int(gigabytes * 1e9)
    free = shutil.disk_usage(tmp).free
    if free < need * 1.5:
        raise SystemExit(f"--rss-gb {gigabytes}: {free / 1e9:.1f} GB free in {tmp}, want {need * 1.5 / 1e9:.1f}")
    out: dict[str, Any] = {"disk_free_gb": free / 1e9}
    for label, size in (("small", need // 100), ("large", need)):
        path = tmp / f"decode-bench-{os.getpid()}-{label}.pcap"
        try:
            frames, written = write_big_capture(path, size)
            rss, cpu = _decode_rss(path)
        finally:
            path.unlink(missing_ok=True)
        out[label] = {"bytes": written, "frames": frames, "peak_rss_mib": rss, "cpu_seconds": cpu}
    return out


# -------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--real", type=float, metavar="SECONDS", help="capture real traffic for this long")
    source.add_argument("--capture", type=Path, metavar="PCAP", help="decode this capture")
    parser.add_argument("--tasks", type=int, default=64, help="client tasks with --real (default: %(default)s)")
    parser.add_argument(
        "--exchanges", type=int, default=20000, help="synthetic request/reply pairs (default: %(default)s)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds, best kept (default: %(default)s)")
    parser.add_argument("--mss", type=int, default=1448, help="synthetic TCP payload per packet (default: %(default)s)")
    parser.add_argument("--chunk", type=int, default=65536, help="proxy read size (default: %(default)s)")
    parser.add_argument("--big", action="store_true", help="also the replies of about 1 MiB")
    parser.add_argument("--tcpdump", action="store_true", help="also tcpdump rewriting the capture")
    parser.add_argument(
        "--command", action="store_true", help="also `zkwire decode` itself (a child process writing a file)"
    )
    parser.add_argument("--rss-gb", type=float, metavar="G", help="also the peak RSS decoding a capture of G GB")
    parser.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()), help="where --rss-gb writes")
    parser.add_argument("--keep", type=Path, metavar="PCAP", help="keep the capture decoded there")
    parser.add_argument("--json", type=Path, help="write the figures there too")
    args = parser.parse_args()
    if args.exchanges < 1 or args.repeat < 1 or args.mss < 1 or args.chunk < 1 or args.tasks < 1:
        parser.error("--exchanges, --repeat, --mss, --chunk and --tasks must be at least 1")
    result: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine(), "repeat": args.repeat}
    with tempfile.TemporaryDirectory() as tmp:
        pcap = Path(tmp) / "bench.pcap"
        if args.capture:
            pcap = args.capture
            result["source"] = f"capture {args.capture}"
        elif args.real:
            result["source"] = "real traffic"
            result["traffic"] = capture_real_traffic(pcap, args.real, args.tasks)
        else:
            conv = conversation(args.exchanges)
            result["source"] = f"synthetic, {args.exchanges} exchanges, segments of up to {args.mss} bytes"
            write_pcap(pcap, conv, args.mss)
            result["proxy"] = {
                name: {"frames_per_second": len(conv) / secs}
                for name, (secs, _) in measure(
                    {f"proxy path, {r}": proxy_path(_chunks(conv, args.chunk), r) for r in ("schemas", "fast")},
                    args.repeat,
                ).items()
            }
        frames = decode_capture(pcap, "stats", "headers")()
        result["frames"] = frames
        result["capture_bytes"] = pcap.stat().st_size
        result["views"] = run_views(pcap, args.repeat, frames)
        if args.tcpdump:
            result["tcpdump"] = run_tcpdump(pcap, args.repeat, frames)
        if args.command:
            result["command"] = run_command(pcap, args.repeat, frames)
        if args.keep:
            shutil.copyfile(pcap, args.keep)
    if args.big:
        result["big"] = run_big(args.repeat)
    if args.rss_gb:
        result["rss"] = run_rss(args.rss_gb, args.tmp)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def report(result: dict[str, Any]) -> None:
    print(
        f"{result['source']}: {result['frames']} frames, {result['capture_bytes']:,} bytes of capture; "
        f"Python {result['python']}, best CPU time of {result['repeat']}"
    )
    if "traffic" in result:
        t = result["traffic"]
        print(f"traffic: {t['requests']} requests in {t['seconds']} s from {t['tasks']} tasks; {t['tcpdump']!r}")
    print("\n| zkwire decode | frames/s | CPU s | fast / construct |")
    print("|---|---:|---:|---:|")
    for name, row in result["views"].items():
        ratio = f"{row['ratio']:.1f}x" if "ratio" in row else ""
        print(f"| {name} | {row['frames_per_second']:,.0f} | {row['seconds']:.3f} | {ratio} |")
    for name, row in result.get("proxy", {}).items():
        print(f"| {name} | {row['frames_per_second']:,.0f} | | |")
    if result.get("tcpdump"):
        dump = result["tcpdump"]
        print(f"| tcpdump -r capture -w copy | {dump['frames_per_second']:,.0f} | {dump['seconds']:.3f} | |")
    if "command" in result:
        print(
            "\n| the command (child process, output to a file) | frames/s | CPU s | start-up CPU s "
            "| frames/s after start-up |"
        )
        print("|---|---:|---:|---:|---:|")
        for name, row in result["command"].items():
            print(
                f"| {name} | {row['frames_per_second']:,.0f} | {row['seconds']:.3f} | {row['startup_seconds']:.3f} | "
                f"{row['frames_per_second_after_startup']:,.0f} |"
            )
    if "big" in result:
        print("\n| reply of about 1 MiB | bytes | fast ms | construct ms | construct compiled ms | verify ms |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, row in result["big"].items():
            print(
                f"| {name} | {row['bytes']:,} | {row['fast']:.0f} | {row['construct']:.0f} | "
                f"{row['construct, compiled']:.0f} | {row['verify']:.0f} |"
            )
    if "rss" in result:
        print("\n| zkwire decode --stats of | frames | peak RSS MiB | CPU s |")
        print("|---|---:|---:|---:|")
        for label in ("small", "large"):
            row = result["rss"][label]
            size = f"{row['bytes'] / 1e9:.2f} GB capture"
            print(f"| {size} | {row['frames']:,} | {row['peak_rss_mib']:.1f} | {row['cpu_seconds']:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
