"""zkwire.trace.conversations and ``zkwire decode CAPTURE``: synthetic captures of a known conversation cut
into TCP segments that arrive reordered, retransmitted, lost or caught mid-connection; server-port
detection; the command line.  (Real captures of real traffic: tests/test_capture_proof.py.)"""

from __future__ import annotations

import io
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_capture import ACK, FIN, SYN, ethernet, ipv4_tcp, pcap, pcapng

from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.framing import frame
from zkwire.protocol.records import (
    ConnectRequest,
    ConnectResponse,
    CreateRequest,
    CreateResponse,
    GetDataRequest,
    ReplyHeader,
    SetDataRequest,
    SetDataResponse,
    Stat,
    WatcherEvent,
)
from zkwire.shell.main import main as zkwire_main
from zkwire.trace.capture import TcpSegment
from zkwire.trace.conversations import CaptureDecoder, CaptureEvent
from zkwire.trace.resync import find_boundary

STAT = Stat(1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1)
CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 2181)


def _body(record: object) -> bytes:
    out = bytearray()
    record.write(out)  # type: ignore[attr-defined]
    return bytes(out)


def _reply(xid: int, zxid: int, err: int, body: bytes = b"") -> bytes:
    return frame(_body(ReplyHeader(xid, zxid, err)) + body)


def conversation(n: int = 30) -> list[tuple[str, bytes]]:
    """A conversation as (direction, frame bytes) in the order they went: handshake, creates, getData,
    setData (with a watch event), each request answered before the next."""
    out = [
        ("client", bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, b"s" * 16, False)))),
        ("server", frame(_body(ConnectResponse(0, 10000, 0x1234, b"p" * 16, False)))),
    ]
    zxid = 100
    for i in range(1, n + 1):
        path = f"/node-{i}"
        if i % 3 == 1:
            req = encode_request(i, OpCode.CREATE, CreateRequest(path, b"x" * (i * 7), None, 0))
            rep = _reply(i, zxid, 0, _body(CreateResponse(path)))
        elif i % 3 == 2:
            req = encode_request(i, OpCode.GET_DATA, GetDataRequest(path, True))
            rep = _reply(i, zxid, -101)
        else:
            req = encode_request(i, OpCode.SET_DATA, SetDataRequest(path, b"y" * 300, -1))
            rep = _reply(i, zxid, 0, _body(SetDataResponse(STAT)))
        out.append(("client", bytes(req)))
        out.append(("server", rep))
        if i % 10 == 0:
            out.append(("server", _reply(-1, -1, 0, _body(WatcherEvent(3, 3, path)))))
        zxid += 1
    return out


def segments(
    conv: list[tuple[str, bytes]],
    *,
    mss: int = 97,
    handshake: bool = True,
    fin: bool = True,
    t0: float = 1000.0,
    client: tuple[str, int] = CLIENT,
    server: tuple[str, int] = SERVER,
) -> list[TcpSegment]:
    """The conversation as TCP segments of at most ``mss`` payload bytes (frames cut across segments)."""
    seq = {"client": 1000, "server": 5000}
    ends = {"client": (client, server), "server": (server, client)}
    out: list[TcpSegment] = []
    t = t0
    if handshake:
        out.append(TcpSegment(t, client, server, seq["client"] - 1, 0, SYN, b""))
        out.append(TcpSegment(t, server, client, seq["server"] - 1, 0, SYN | ACK, b""))
    for direction, data in conv:
        for pos in range(0, len(data), mss):
            t += 0.001
            src, dst = ends[direction]
            chunk = data[pos : pos + mss]
            ack = seq["server" if direction == "client" else "client"]
            out.append(TcpSegment(t, src, dst, seq[direction], ack, ACK, chunk))
            seq[direction] += len(chunk)
    if fin:
        for direction in ("client", "server"):
            src, dst = ends[direction]
            ack = seq["server" if direction == "client" else "client"]
            out.append(TcpSegment(t + 0.01, src, dst, seq[direction], ack, FIN | ACK, b""))
    return out


def decode(segs: list[TcpSegment], ports: tuple[int, ...] = ()) -> list[CaptureEvent]:
    decoder = CaptureDecoder(ports)
    return list(decoder.add_all(segs))


def summary(events: list[CaptureEvent]) -> list[tuple[str, str, int | None, str | None, str | None]]:
    return [
        (e.frame.direction, e.frame.kind, e.frame.xid, e.frame.op_name, e.frame.err_name)
        for e in events
        if e.frame is not None
    ]


def notes(events: list[CaptureEvent]) -> list[str]:
    return [e.note for e in events if e.note is not None]


def test_a_whole_conversation_decodes_in_capture_order_with_capture_times() -> None:
    conv = conversation()
    events = decode(segments(conv))
    frames = [e.frame for e in events if e.frame is not None]
    assert len(frames) == len(conv)
    assert [f.direction for f in frames] == [d for d, _ in conv]  # both directions merged in capture order
    assert frames[0].kind == "connect" and frames[1].kind == "connect_response"
    assert all(f.kind != "malformed" for f in frames)
    replies = [f for f in frames if f.kind == "reply"]
    assert len(replies) == 30 and all(f.latency is not None and 0 < f.latency < 1 for f in replies)
    assert all(e.ts >= 1000.0 for e in events)
    assert notes(events)[0] == "open: client 10.0.0.1:40000 -> server 10.0.0.2:2181"
    assert notes(events)[-1] == "closed"
    assert [f.op_name for f in replies[:3]] == ["create", "getData", "setData"]
    assert replies[1].err_name == "NONODE"


def test_reordered_and_retransmitted_segments_decode_the_same() -> None:
    conv = conversation()
    segs = segments(conv)
    expected = summary(decode(segs))
    rng = random.Random(7)
    for _ in range(20):
        mixed = list(segs[:2])  # the handshake first
        body = segs[2:-2]
        # swap neighbours of the same direction and retransmit some segments
        for s in body:
            mixed.append(s)
            if rng.random() < 0.2:
                mixed.append(s)
        for i in range(2, len(mixed) - 1):
            if rng.random() < 0.3 and mixed[i].src == mixed[i + 1].src:
                mixed[i], mixed[i + 1] = mixed[i + 1], mixed[i]
        mixed += segs[-2:]
        got = decode(mixed)
        assert summary(got) == expected
        assert not any("missing" in n or "resynchronised" in n for n in notes(got))


@pytest.mark.parametrize("cut", [0, 1, 5, 37, 96, 97, 121, 150])
def test_a_capture_that_starts_mid_connection_resynchronises_on_a_frame_boundary(cut: int) -> None:
    conv = conversation()
    full = summary(decode(segments(conv)))
    segs = segments(conv, mss=50, handshake=False)
    events = decode(segs[cut:])
    got = summary(events)
    text = notes(events)
    assert "already open when the capture began" in text[0]
    assert any("the capture starts mid-connection" in n for n in text)
    # After the resynchronisation, every frame is one of the full decode, in the same order, and the
    # decode reaches the end of the conversation.
    decoded = [g for g in got if g[1] not in ("skipped",)]
    assert decoded, text
    tail = decoded
    client_tail = [t for t in tail if t[0] == "client"]
    full_client = [f for f in full if f[0] == "client"]
    assert client_tail == full_client[len(full_client) - len(client_tail) :]
    assert got[-1] == full[-1]
    # replies whose requests were seen are paired (op named)
    server_tail = [t for t in tail if t[0] == "server" and t[1] == "reply"]
    full_replies = [f for f in full if f[1] == "reply"]
    assert server_tail and server_tail[1:] == full_replies[len(full_replies) - len(server_tail) + 1 :]


def test_a_lost_segment_inside_a_frame_resumes_at_the_next_frame() -> None:
    conv = conversation()
    full = summary(decode(segments(conv)))
    segs = segments(conv, mss=40)
    # drop a segment of the client's stream from the middle of the conversation
    client_segs = [i for i, s in enumerate(segs) if s.src == CLIENT and s.payload]
    lost = client_segs[len(client_segs) // 2]
    events = decode(segs[:lost] + segs[lost + 1 :])
    text = notes(events)
    assert any("40 bytes missing" in n for n in text), text
    got = summary(events)
    kinds = [g[1] for g in got]
    assert "skipped" in kinds
    # everything but the frame the lost bytes were in (and the reply it had) decodes as before
    assert len([g for g in got if g[1] not in ("skipped", "malformed")]) >= len(full) - 4
    assert got[-1] == full[-1]


def test_the_server_port_is_detected_from_the_side_that_answered_a_connect_request() -> None:
    conv = conversation(3)
    client, server = ("10.0.0.1", 50000), ("10.0.0.2", 12345)

    def moved(segs: list[TcpSegment], c: tuple[str, int], s: tuple[str, int]) -> list[TcpSegment]:
        mapping = {CLIENT: c, SERVER: s}
        return [TcpSegment(x.ts, mapping[x.src], mapping[x.dst], x.seq, x.ack, x.flags, x.payload) for x in segs]

    # no SYN, and the server's port is above the client's: only the ConnectRequest tells
    segs = moved(segments(conv, handshake=False), ("10.0.0.1", 50000), ("10.0.0.2", 60000))
    events = decode(segs)
    assert notes(events)[0].startswith("open: client 10.0.0.1:50000 -> server 10.0.0.2:60000")
    assert [d for d, *_ in summary(events)] == [d for d, _ in conv]
    # other TCP traffic in the capture is not decoded; a later connection to a learned port is
    noise = [TcpSegment(1.0, ("10.0.0.9", 80), ("10.0.0.8", 3333), 1, 0, ACK, b"GET / HTTP/1.1\r\n\r\n")]
    decoder = CaptureDecoder()
    evs = list(decoder.add_all(noise + moved(segments(conv), client, server)))
    assert decoder.ignored == 1 and 12345 in decoder.learned_ports
    assert len(summary(evs)) == len(conv)
    # with --port, only that port's connections are decoded
    decoder = CaptureDecoder([2181])
    assert not summary(list(decoder.add_all(moved(segments(conv), client, server))))
    assert decoder.ignored == 1


def _write_pcap(path: Path, segs: list[TcpSegment], ng: bool = False) -> None:
    packets = [(s.ts, ethernet(ipv4_tcp(s.src, s.dst, s.seq, s.flags, s.payload))) for s in segs]
    path.write_bytes(pcapng(packets) if ng else pcap(packets, nano=True))


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    capsys.readouterr()
    try:
        code = zkwire_main(list(args))
    except SystemExit as e:  # a usage error in the subcommand's own arguments
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


@pytest.mark.parametrize("ng", [False, True])
def test_zkwire_decode_of_a_capture_prints_every_frame_with_its_capture_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ng: bool
) -> None:
    import time

    conv = conversation(6)
    t0 = 1_700_000_000.25
    path = tmp_path / ("c.pcapng" if ng else "c.pcap")
    _write_pcap(path, segments(conv, t0=t0), ng)
    proc = _run(capsys, "decode", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("== ")]  # the summary aside
    stamp = time.strftime("%H:%M:%S", time.localtime(t0))
    assert all(line.startswith(stamp) for line in lines), lines
    framed = [line for line in lines if " -- " not in line]
    assert len(framed) == len(conv)
    assert " -> connect " in framed[0] and "#1" in framed[0]
    assert "create /node-1" in framed[2] and "create /node-1" in framed[3] and "ms" in framed[3]
    # JSON lines carry the capture time
    import json

    proc = _run(capsys, "decode", "--json", str(path))
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert objs.pop()["kind"] == "summary"
    assert all(abs(o["wall_time"] - t0) < 1 for o in objs)
    assert sum(1 for o in objs if o["kind"] != "connection") == len(conv)


def test_zkwire_decode_of_captures_refuses_server_file_and_reports_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.pcap"
    _write_pcap(path, segments(conversation(3)))
    proc = _run(capsys, "decode", str(path), "--server-file", str(path))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "--server-file" in proc.stderr
    raw = tmp_path / "raw.bin"
    raw.write_bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    proc = _run(capsys, "decode", str(raw), "--port", "2181")
    assert proc.returncode == 2 and "--port" in proc.stderr
    # a capture cut short: what was complete is shown, then one line saying what is wrong
    blob = path.read_bytes()
    (tmp_path / "cut.pcap").write_bytes(blob[: len(blob) - 30])
    proc = _run(capsys, "decode", str(tmp_path / "cut.pcap"))
    assert proc.returncode == 1
    assert "connect" in proc.stdout
    assert len(proc.stderr.splitlines()) == 1 and "cut.pcap" in proc.stderr
    assert "Traceback" not in proc.stderr
    # a bad port
    proc = _run(capsys, "decode", str(path), "--port", "70000")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


def test_a_capture_with_only_other_traffic_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "web.pcap"
    segs = [TcpSegment(1.0, ("10.0.0.9", 80), ("10.0.0.8", 3333), 1, 0, ACK, b"HTTP/1.1 200 OK\r\n\r\n")]
    _write_pcap(path, segs)
    proc = _run(capsys, "decode", str(path))
    assert proc.returncode == 0
    assert "not ZooKeeper" in proc.stdout and "--port" in proc.stdout


# ---------------------------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data())
def test_any_loss_reordering_or_duplication_never_breaks_decoding(data: st.DataObject) -> None:
    """Segments dropped, duplicated, reordered, corrupted: decoding never raises, every event names a
    known connection, and once the damage is over (none corrupted) the last frame decodes as it was."""
    conv = conversation(12)
    full = summary(decode(segments(conv)))
    mss, handshake = data.draw(st.integers(7, 120)), data.draw(st.booleans())
    segs, corrupted = damage(data, segments(conv, mss=mss, handshake=handshake))
    events = decode(segs)
    assert {e.conn for e in events} <= {1}
    got = summary(events)
    if not corrupted:  # (a corrupted length prefix may leave its direction undecodable: said, not raised)
        assert got and got[-1][:3] == full[-1][:3]


def damage(data: st.DataObject, segs: list[TcpSegment]) -> tuple[list[TcpSegment], bool]:
    """``segs`` dropped, duplicated, reordered and corrupted at random, but for the last 12; and whether
    any was corrupted."""
    damaged: list[TcpSegment] = []
    corrupted = False
    body, tail = segs[:-12], segs[-12:]  # the last segments reach the decoder undamaged
    for s in body:
        action = data.draw(st.sampled_from(["keep", "keep", "keep", "drop", "twice", "corrupt", "swap"]))
        if action == "drop":
            continue
        if action == "corrupt" and s.payload:
            i = data.draw(st.integers(0, len(s.payload) - 1))
            s = TcpSegment(s.ts, s.src, s.dst, s.seq, s.ack, s.flags, s.payload[:i] + b"\xff" + s.payload[i + 1 :])
            corrupted = True
        damaged.append(s)
        if action == "twice":
            damaged.append(s)
        if action == "swap" and len(damaged) >= 2:
            damaged[-1], damaged[-2] = damaged[-2], damaged[-1]
    return damaged + tail, corrupted


class _NoPlainDecoder(CaptureDecoder):
    """The capture decoder without its quick path for the plain case: the design it must agree with."""

    def _plain(self, conv: object, ev: object, out: object) -> bool:
        return False


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data())
def test_decoding_is_the_same_without_the_plain_path(data: st.DataObject) -> None:
    """Whatever the loss, reordering, duplication or damage, and with or without the handshake or the
    server port, the plain path of CaptureDecoder changes none of its events."""
    conv = conversation(12)
    handshake, fin = data.draw(st.booleans()), data.draw(st.booleans())
    segs = segments(conv, mss=data.draw(st.integers(7, 120)), handshake=handshake, fin=fin)
    segs, _ = damage(data, segs)
    ports = data.draw(st.sampled_from([(), (2181,), (40000,)]))
    plain, layered = CaptureDecoder(ports), _NoPlainDecoder(ports)
    assert [repr(e) for e in plain.add_all(segs)] == [repr(e) for e in layered.add_all(segs)]
    assert (plain.ignored, plain.learned_ports) == (layered.ignored, layered.learned_ports)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=400), st.sampled_from(["client", "server"]), st.booleans())
def test_finding_a_frame_boundary_in_any_bytes_never_raises(blob: bytes, direction: str, final: bool) -> None:
    k = find_boundary(direction, blob, max_frame=0xFFFFF, final=final)
    assert k is None or 0 <= k <= len(blob) - 4


def test_connections_open_at_the_end_of_the_capture_close_at_its_last_time() -> None:
    events = decode(segments(conversation(3), fin=False, t0=5000.0))
    assert events[-1].kind == "close" and events[-1].note == "still open at the end of the capture"
    assert events[-1].ts == max(e.ts for e in events) > 5000.0


def test_decoding_a_long_capture_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.pcap"
    _write_pcap(path, segments(conversation(300)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "zkwire", "decode", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()
    try:
        err = proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (code, err) == (141, b"")


class _CountingOut(io.StringIO):
    """stdout that counts its flushes and says how much was written at each."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        self.flushed_at.append(len(self.getvalue()))
        super().flush()


def test_decoding_a_file_writes_lines_a_buffer_at_a_time_and_all_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A flush for each frame costs a system call for each: reading a file, the lines are flushed with the
    # notes and at the end, and none is lost.
    conv = conversation(200)
    path = tmp_path / "c.pcap"
    _write_pcap(path, segments(conv))
    out = _CountingOut()
    monkeypatch.setattr(sys, "stdout", out)
    assert zkwire_main(["decode", str(path)]) == 0
    lines = out.getvalue().splitlines()
    assert sum(1 for line in lines if " -- " not in line and not line.startswith("== ")) == len(conv)
    assert len(out.flushed_at) < len(conv) // 10, len(out.flushed_at)
    assert out.flushed_at[-1] == len(out.getvalue())  # flushed at the end, whole


_COUNT_WRITES = """
import sys
from zkwire.shell.main import main
code = main(["decode", sys.argv[1]])
for line in open("/proc/self/io"):
    if line.startswith("syscw:"):
        print(line.split()[1], file=sys.stderr)
raise SystemExit(code)
"""


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts system calls in /proc/self/io (Linux)")
def test_an_unbuffered_interpreter_still_writes_the_lines_a_buffer_at_a_time(tmp_path: Path) -> None:
    # With PYTHONUNBUFFERED (many container images set it) or python -u, the interpreter's stdout writes
    # each line with a system call of its own: decode writes through a buffer of its own instead.
    conv = conversation(0)  # the handshake, then many exchanges of a getData
    request = bytes(encode_request(7, OpCode.GET_DATA, GetDataRequest("/node", False)))
    conv += [("client", request), ("server", _reply(7, 100, -101))] * 1000
    path = tmp_path / "c.pcap"
    _write_pcap(path, segments(conv))
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        proc = subprocess.run(
            [sys.executable, "-u", "-c", _COUNT_WRITES, str(path)], stdout=f, stderr=subprocess.PIPE, timeout=120
        )
    assert proc.returncode == 0, proc.stderr
    writes = int(proc.stderr.decode().split()[-1])
    lines = out.read_text().splitlines()
    assert sum(1 for line in lines if " -- " not in line and not line.startswith("== ")) == len(conv)
    assert writes < len(conv) // 10, (writes, len(conv))


def test_on_a_terminal_decode_writes_through_the_interpreters_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    # A terminal is written line by line: the 64 KiB buffer of buffered_stdout would print in bursts cut
    # in the middle of a line (and the progress line on stderr would land inside one).
    import os

    from zkwire.trace.output import buffered_stdout

    leader, follower = os.openpty()
    try:
        with open(follower, "w", closefd=False) as tty:
            monkeypatch.setattr(sys, "stdout", tty)
            assert buffered_stdout() is tty
    finally:
        os.close(leader)
        os.close(follower)


def test_the_live_views_flush_each_frame_as_it_is_written() -> None:
    from zkwire.trace.frames import DecodedFrame
    from zkwire.trace.output import TraceOptions

    out = _CountingOut()
    options = TraceOptions(out=out)
    for i in range(5):
        options.emit(1, DecodedFrame("client", "request", i, i * 16, 12, bytes(12), i, 4, "getData", "/a"), 0.0)
    assert len(out.flushed_at) == 5 and out.flushed_at[-1] == len(out.getvalue())


@pytest.mark.parametrize("view", [["--stats"], []])
def test_sigusr1_during_a_decode_prints_summaries_and_the_decode_goes_on(tmp_path: Path, view: list[str]) -> None:
    # The summary is printed between two events: printed by the signal handler, a signal coming while a
    # frame was counted waited forever for the statistics' lock (and one while a line was written would
    # have written into it).
    import os
    import signal
    import time

    conv = conversation(0)  # the handshake, then many exchanges of a getData
    request = bytes(encode_request(7, OpCode.GET_DATA, GetDataRequest("/node", False)))
    reply = _reply(7, 100, -101)
    conv += [("client", request), ("server", reply)] * 40000
    packets = [(s.ts, ethernet(ipv4_tcp(s.src, s.dst, s.seq, s.flags, s.payload))) for s in segments(conv, mss=1400)]
    path = tmp_path / "c.pcap"
    path.write_bytes(
        pcap(packets[:1])
        + b"".join(struct.pack("<IIII", int(ts), 0, len(data), len(data)) + data for ts, data in packets[1:])
    )
    out = tmp_path / "out.txt"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    with open(out, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "zkwire", "decode", *view, str(path)], stdout=f, env=env)
        try:
            # Signals are sent once the handler is in place (before, SIGUSR1 would end the process), a few
            # dozen while the frames are decoded: each one has a fair chance of coming while a frame is
            # counted.
            deadline = time.monotonic() + 60
            while not _catches(proc.pid, signal.SIGUSR1) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            for _ in range(40):
                if proc.poll() is not None:
                    break
                proc.send_signal(signal.SIGUSR1)
                time.sleep(0.003)
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"zkwire decode {' '.join(view)} hung after SIGUSR1")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = out.read_text()
    assert proc.returncode == 0, text[-2000:]
    lines = text.splitlines()
    summaries = [line for line in lines if line.startswith("== summary:")]
    assert len(summaries) >= 2  # one asked for at least (the first signal comes before the end), and the last
    assert summaries[-1].startswith(f"== summary: 1 connections, {len(conv)} frames")
    if not view:  # every frame's line whole, none cut by a summary
        framed = [line for line in lines if not line.startswith("== ") and " -- " not in line]
        assert len(framed) == len(conv) and all(" len=" in line for line in framed)


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (Linux: SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)
    return bool(mask >> (signum - 1) & 1)
