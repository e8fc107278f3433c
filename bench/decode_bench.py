"""Decode throughput of the tracer: a pcap capture against the proxy's decoding path, in frames per second.

The same conversation (a handshake, then ``--exchanges`` request/reply pairs: getData of 100 bytes,
setData, create with its created path, exists; with pings and a watch event now and then) is decoded

* from a pcap file, as ``zkwire decode capture.pcap`` does: reading packets, TCP reassembly per
  connection (segments of ``--mss`` bytes, replies interleaved with requests in capture order), the
  conversation decoder;
* as the tracing proxy's worker thread does: the forwarded chunks (``--chunk`` bytes, as read from the
  sockets) fed to the conversation decoder, with the forwarding path's frame-boundary tracking;

each without output and with one-line formatting to a null sink (``+ format`` rows), and with the
compiled construct schemas (``compiled`` rows; the tools default to the interpreted ones), plus the pcap
reading and reassembly alone.  The best of ``--repeat`` rounds (each runs every path once) is shown.

    python bench/decode_bench.py [--exchanges N] [--repeat N] [--mss BYTES] [--chunk BYTES] [--json PATH]
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import struct
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
from zkwire.trace.decoder import ConversationDecoder
from zkwire.trace.output import TraceOptions
from zkwire.trace.resync import FrameTracker

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


def _best(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def run(exchanges: int, repeat: int, mss: int, chunk: int) -> dict[str, Any]:
    conv = conversation(exchanges)
    total_frames = len(conv)
    with tempfile.TemporaryDirectory() as tmp:
        pcap = Path(tmp) / "bench.pcap"
        packets = write_pcap(pcap, conv, mss)

        def reassembly_only() -> int:
            reasm = TcpReassembler()
            n = 0
            for seg in read_packets(str(pcap)):
                n += sum(1 for ev in reasm.add(seg) if isinstance(ev, StreamData))
            return total_frames

        def capture(format_lines: bool, compiled: bool = False) -> Callable[[], int]:
            def go() -> int:
                options = TraceOptions(out=_Null(), max_line=4096)
                n = 0
                for event in CaptureDecoder(compiled=compiled).add_all(read_packets(str(pcap))):
                    if event.frame is not None:
                        n += 1
                        if format_lines:
                            options.emit(event.conn, event.frame, event.ts)
                return n

            return go

        # The proxy's decoding path: chunks as the pumps forward them, in the order they went.
        chunks: list[tuple[str, bytes]] = []
        for direction, data in conv:
            if chunks and chunks[-1][0] == direction and len(chunks[-1][1]) + len(data) <= chunk:
                chunks[-1] = (direction, chunks[-1][1] + data)
            else:
                chunks.append((direction, data))

        def proxy(format_lines: bool, compiled: bool = False) -> Callable[[], int]:
            def go() -> int:
                options = TraceOptions(out=_Null(), max_line=4096)
                decoder = ConversationDecoder(compiled=compiled)
                bounds = {"client": FrameTracker(decoder.max_frame), "server": FrameTracker(decoder.max_frame)}
                n = 0
                now = 0.0
                for direction, data in chunks:
                    bounds[direction].feed(data)  # the forwarding side's share
                    now += 0.00001
                    for f in decoder.feed(direction, data, now):
                        n += 1
                        if format_lines:
                            options.emit(1, f, now)
                return n

            return go

        paths: dict[str, Callable[[], int]] = {
            "pcap read + TCP reassembly": reassembly_only,
            "capture decode": capture(False),
            "capture decode + format": capture(True),
            "proxy path decode": proxy(False),
            "proxy path decode + format": proxy(True),
            "capture decode, compiled schemas": capture(False, compiled=True),
            "proxy path decode, compiled schemas": proxy(False, compiled=True),
        }
        rows = {name: (float("inf"), 0) for name in paths}
        for _ in range(repeat):  # rounds over every path, so that a busy moment does not hit one path only
            for name, fn in paths.items():
                secs, n = _best(fn, 1)
                rows[name] = (min(rows[name][0], secs), n)
    for name, (_, n) in rows.items():
        if n != total_frames:
            raise SystemExit(f"{name}: decoded {n} frames, expected {total_frames}")
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "frames": total_frames,
        "packets": packets,
        "bytes": sum(len(d) for _, d in conv),
        "mss": mss,
        "chunk": chunk,
        "repeat": repeat,
        "results": {
            name: {"seconds": secs, "frames_per_second": total_frames / secs} for name, (secs, _) in rows.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchanges", type=int, default=20000, help="request/reply pairs (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, best kept (default: %(default)s)")
    parser.add_argument("--mss", type=int, default=1448, help="TCP payload per packet (default: %(default)s)")
    parser.add_argument("--chunk", type=int, default=65536, help="proxy read size (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="write the figures there too")
    args = parser.parse_args()
    if args.exchanges < 1 or args.repeat < 1 or args.mss < 1 or args.chunk < 1:
        parser.error("--exchanges, --repeat, --mss and --chunk must be at least 1")
    result = run(args.exchanges, args.repeat, args.mss, args.chunk)
    print(
        f"{result['frames']} frames, {result['bytes']} bytes, {result['packets']} packets of up to {args.mss} bytes; "
        f"Python {result['python']}, best of {args.repeat}\n"
    )
    print("| path | frames/s | seconds |")
    print("|---|---:|---:|")
    for name, row in result["results"].items():
        print(f"| {name} | {row['frames_per_second']:,.0f} | {row['seconds']:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
