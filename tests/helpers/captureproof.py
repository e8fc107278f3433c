"""Capture proofs for any client: the client talks to the real server through the tracing proxy (and a
fault proxy behind it, to cut the upstream side) while tcpdump captures the client<->proxy port on lo;
what ``zkwire decode --json`` makes of the capture is then compared with what the proxy printed.

::

    async with traced_capture(zk_hosts, tmp_path / "x.pcap", connections=2) as run:   # cli=True: a process
        ... a client connects to run.hosts; run.fault.sever() cuts the tracer's upstream side ...
    proxy_frames = run.proxy_frames()
    decoded = await decode_cli(run.pcap)
    assert_same_frames(proxy_frames, frames_of(decoded))

:func:`drop_packet` rewrites a classic pcap file without one packet (a segment lost by the capture).
Every wait here is bounded in time.
"""

from __future__ import annotations

import io
import json
import re
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from helpers.addresses import first_server
from helpers.faultproxy import FaultProxy, open_fault_proxy
from zkwire.trace.capture import CaptureError, TcpSegment, read_packets, tcp_segment
from zkwire.trace.conversations import CaptureDecoder
from zkwire.trace.tracer import TraceOptions, serve_trace

__all__ = [
    "COMPARED",
    "TracedCapture",
    "assert_same_frames",
    "decode_cli",
    "drop_packet",
    "frame_key",
    "frames_of",
    "kernel_drops",
    "notes_of",
    "packets",
    "start_tcpdump",
    "stop_tcpdump",
    "traced_capture",
    "until_captured",
]

#: What must agree between the proxy's view of a frame and the capture's (not times or latencies):
#: the record carries the session id, timeout and password length of the handshake.
COMPARED = ("conn", "direction", "index", "offset", "kind", "xid", "op", "op_name", "path", "err", "err_name")
COMPARED_MORE = ("zxid", "size", "note", "error", "payload", "record")


def frame_key(o: dict[str, Any], *, without: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """The compared fields of one JSON frame."""
    return tuple(o.get(name) for name in COMPARED + COMPARED_MORE if name not in without)


def frames_of(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames of ``zkwire trace/decode --json`` output (not connection notes, not the summary)."""
    return [o for o in objs if o["kind"] not in ("connection", "summary")]


def notes_of(objs: list[dict[str, Any]]) -> list[str]:
    return [str(o["note"]) for o in objs if o["kind"] == "connection"]


def assert_same_frames(proxy: list[dict[str, Any]], capture: list[dict[str, Any]]) -> None:
    """Frame for frame, in each direction of each connection (the merge of the two directions may
    differ by capture timing)."""
    assert proxy, "the proxy printed no frame"
    for direction in ("client", "server"):
        ours = [frame_key(o) for o in proxy if o["direction"] == direction]
        theirs = [frame_key(o) for o in capture if o["direction"] == direction]
        for n, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            assert a == b, (direction, n, a, b)
        assert len(ours) == len(theirs), (direction, len(ours), len(theirs))


@dataclass
class TracedCapture:
    """A tracing proxy on ``port`` (clients connect to :attr:`hosts`), its JSON lines in ``shown``,
    ``fault`` between it and the server, tcpdump writing ``pcap``."""

    port: int
    fault: FaultProxy
    pcap: Path
    shown: io.StringIO = field(default_factory=io.StringIO)
    #: What tcpdump said when it stopped.
    tcpdump_report: str = ""
    #: Where a ``zkwire trace`` process writes its output (instead of ``shown``).
    out_file: Path | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def proxy_objs(self) -> list[dict[str, Any]]:
        text = self.shown.getvalue() if self.out_file is None else self.out_file.read_text()
        return [json.loads(line) for line in text.splitlines() if line.endswith("}")]

    def proxy_frames(self) -> list[dict[str, Any]]:
        return frames_of(self.proxy_objs())


@asynccontextmanager
async def traced_capture(
    zk_hosts: str, pcap: Path, *, connections: int, cli: bool = False
) -> AsyncIterator[TracedCapture]:
    """Tracer (``cli``: a ``zkwire trace --json`` process, else :func:`serve_trace` in this process),
    fault proxy and tcpdump for the block; on leaving it, waits (bounded) until the proxy has printed
    the end of ``connections`` connections and tcpdump has written them, then stops both."""
    async with trio.open_nursery() as nursery, open_fault_proxy(*first_server(zk_hosts)) as fault:
        upstream = first_server(fault.hosts)
        run = TracedCapture(0, fault, pcap)
        tracer: trio.Process | None = None
        if cli:
            run.port, run.out_file = _free_port(), pcap.with_suffix(".trace.jsonl")
            tracer = await _start_trace_cli(run.port, upstream, run.out_file)
        else:
            options = TraceOptions(json_lines=True, out=run.shown, max_line=0)
            run.port = await nursery.start(serve_trace, ("127.0.0.1", 0), upstream, options)
        try:
            tcpdump = await start_tcpdump(run.port, pcap)
            try:
                yield run
                with trio.fail_after(15):
                    while sum(1 for n in notes_of(run.proxy_objs()) if n.startswith("closed")) < connections:
                        await trio.sleep(0.05)
                await until_captured(pcap, connections)
            finally:
                run.tcpdump_report = await stop_tcpdump(tcpdump)
        finally:
            if tracer is not None:
                with trio.CancelScope(shield=True):
                    await _interrupt(tracer)
        nursery.cancel_scope.cancel()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port`` (from /proc, without connecting to it)."""
    local = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        return any(f[1] == local and f[3] == "0A" for f in (line.split() for line in table.readlines()[1:]))


async def _start_trace_cli(port: int, upstream: tuple[str, int], out: Path) -> trio.Process:
    command = [sys.executable, "-m", "zkwire", "trace", "--json", "--max-line", "0"]
    command += ["--listen", f"127.0.0.1:{port}", "--server", f"{upstream[0]}:{upstream[1]}"]
    with out.open("wb") as stdout:
        proc = await trio.lowlevel.open_process(command, stdout=stdout)
    with trio.fail_after(20):
        while not _listening(port):
            assert proc.poll() is None, f"zkwire trace exited with {proc.returncode}"
            await trio.sleep(0.05)
    return proc


async def _interrupt(proc: trio.Process) -> None:
    """Ctrl-C to a process, then waits for it (bounded; killed if it does not stop)."""
    if proc.returncode is None:
        proc.send_signal(signal.SIGINT)
    with trio.move_on_after(10):
        await proc.wait()
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def start_tcpdump(port: int, out: Path, *options: str, immediate: bool = True) -> trio.Process:
    """tcpdump writing the traffic of ``port`` on lo to ``out`` (``options`` go before the filter), once
    it says it listens.  ``immediate=False`` suits bursts: packets wait in blocks of tcpdump's ring
    (handed over when full or after a timeout) instead of a frame each, so the buffer holds many more;
    stop it only after the traffic has been quiet for a second."""
    # --immediate-mode: without it, packets still in the capture ring when tcpdump stops are lost;
    # -B: with --immediate-mode every packet takes a frame sized for -s 0 (256 KiB), so the default
    # 2 MiB buffer holds about eight packets while tcpdump waits for a core; this one holds ~128
    mode = ["-U", "--immediate-mode"] if immediate else []
    args = ["tcpdump", "-Z", "root", "-i", "lo", *mode, "-B", str(BUFFER_KIB), "-s", "0", *options]
    proc = await trio.lowlevel.open_process([*args, "-w", str(out), f"tcp port {port}"], stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = b""
    with trio.fail_after(10):
        while b"listening on" not in seen:
            chunk = await proc.stderr.receive_some()
            assert chunk, seen
            seen += chunk
    return proc


async def stop_tcpdump(proc: trio.Process) -> str:
    """Stops tcpdump; returns what it said on the way out (its packet counts)."""
    said = b""
    assert proc.stderr is not None
    with trio.CancelScope(shield=True):
        proc.send_signal(signal.SIGINT)
        with trio.move_on_after(10):
            while chunk := await proc.stderr.receive_some():
                said += chunk
        await _interrupt(proc)
    return said.decode(errors="replace")


def closed_connections(pcap: Path) -> int:
    """Connections seen to close in the capture so far (a file still being written may end mid-packet)."""
    decoder = CaptureDecoder()
    count = 0
    try:
        for seg in read_packets(str(pcap)):
            count += sum(1 for event in decoder.add(seg) if event.kind == "close")
    except CaptureError:
        pass
    return count


async def until_captured(pcap: Path, connections: int) -> None:
    """Wait (up to 15 s) until tcpdump has written the end of ``connections`` connections: under load it
    may lag behind the traffic, and what it has not read when it stops is lost."""
    with trio.move_on_after(15):
        while await trio.to_thread.run_sync(closed_connections, pcap) < connections:
            await trio.sleep(0.1)


def kernel_drops(report: str) -> int:
    """Packets tcpdump says the kernel dropped (its buffer was full) in its closing report."""
    found = re.search(r"(\d+) packets? dropped by kernel", report)
    return int(found.group(1)) if found else 0


async def decode_cli(pcap: Path, *extra: str) -> list[dict[str, Any]]:
    """``zkwire decode --json --verify pcap``'s objects (it must succeed quietly, the fast codec and the
    construct schemas agreeing on every record)."""
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "zkwire", "decode", "--json", "--verify", "--max-line", "0", *extra, str(pcap)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode(errors="replace")[-2000:]
    objs = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert not [o for o in objs if "disagreement" in o], [o for o in objs if "disagreement" in o][:3]
    assert all(o["disagreements"] == 0 and o["verified"] for o in objs if o.get("kind") == "summary")
    return objs


#: tcpdump's kernel buffer (KiB).
BUFFER_KIB = 32768

_PCAP_LE = b"\xd4\xc3\xb2\xa1"
_RECORD = struct.Struct("<IIII")


def packets(pcap: Path) -> list[tuple[int, TcpSegment | None]]:
    """Every packet of a little-endian microsecond pcap file (tcpdump's ``-w`` on this machine): its
    byte offset in the file and its TCP segment (None for other packets)."""
    data = pcap.read_bytes()
    assert data[:4] == _PCAP_LE, data[:4].hex()
    linktype = struct.unpack_from("<I", data, 20)[0] & 0x0FFFFFFF
    out: list[tuple[int, TcpSegment | None]] = []
    pos = 24
    while pos + 16 <= len(data):
        sec, usec, incl, _ = _RECORD.unpack_from(data, pos)
        body = data[pos + 16 : pos + 16 + incl]
        out.append((pos, tcp_segment(linktype, sec + usec * 1e-6, body)))
        pos += 16 + incl
    return out


def drop_packet(pcap: Path, out: Path, choose: Callable[[list[TcpSegment | None]], int]) -> TcpSegment:
    """Writes ``pcap`` to ``out`` without the packet whose index ``choose`` picks among all packets'
    segments; returns the dropped segment."""
    data = pcap.read_bytes()
    found = packets(pcap)
    victim = choose([seg for _, seg in found])
    start = found[victim][0]
    end = found[victim + 1][0] if victim + 1 < len(found) else len(data)
    out.write_bytes(data[:start] + data[end:])
    segment = found[victim][1]
    assert segment is not None
    return segment
