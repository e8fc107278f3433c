"""The tracer's own faults: what it prints from the wire, captures it cannot read, secrets in frames that
do not decode, decoding that must never slow the traffic, and how it stops."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server
from helpers.rawwire import RawConn
from helpers.tracerproc import TracerProcess, decoding_processes

import zkwire
from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.framing import frame
from zkwire.protocol.multi import MultiOp, MultiRequest
from zkwire.protocol.records import (
    AuthPacket,
    CheckVersionRequest,
    ConnectRequest,
    ConnectResponse,
    Create2Response,
    CreateRequest,
    GetDataRequest,
    GetSASLRequest,
    ReplyHeader,
    Stat,
    WatcherEvent,
)
from zkwire.sansio.ops import GetData
from zkwire.shell.main import main as zkwire_main
from zkwire.trace.decoder import ConversationDecoder, DecodedFrame, decode_stream
from zkwire.trace.tracer import TraceOptions, serve_trace

#: A path that clears the screen and sets the terminal's title, if printed raw.
EVIL = "/\x1b]0;pwned\x07\x1b[2J"
STAT = Stat(1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1)

# Characters that must never reach a terminal from the wire: C0 controls (newline aside, it ends lines),
# DEL, C1 controls, bidi overrides and other format characters.
_RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _zkwire(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkwire", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``zkwire ARGS...`` run in this process (much faster than a subprocess), as a CompletedProcess."""
    capsys.readouterr()
    code = zkwire_main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def _body(record: object) -> bytes:
    out = bytearray()
    record.write(out)  # type: ignore[attr-defined]
    return bytes(out)


def _server_frame(xid: int, zxid: int, err: int, body: bytes = b"") -> bytes:
    return frame(_body(ReplyHeader(xid, zxid, err)) + body)


# ------------------------------------------------------------------------------------------- pcap


def _pcap(magic: bytes) -> bytes:
    order = "<" if magic in (bytes.fromhex("d4c3b2a1"), bytes.fromhex("4d3cb2a1")) else ">"
    header = magic + struct.pack(order + "HHiIII", 2, 4, 0, 0, 65535, 1)
    packet = bytes(54) + b"\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x0b"
    return header + struct.pack(order + "IIII", 1, 2, len(packet), len(packet)) + packet


def _pcapng() -> bytes:
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    return shb + bytes(64)


def test_decode_takes_captures_but_not_as_a_server_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = tmp_path / "raw.bin"
    raw.write_bytes(bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False))))
    captures = {
        "le.pcap": _pcap(bytes.fromhex("d4c3b2a1")),
        "be.pcap": _pcap(bytes.fromhex("a1b2c3d4")),
        "nanos.pcap": _pcap(bytes.fromhex("4d3cb2a1")),
        "nanos-be.pcap": _pcap(bytes.fromhex("a1b23c4d")),
        "capture.pcapng": _pcapng(),
    }
    for name, data in captures.items():
        path = tmp_path / name
        path.write_bytes(data)
        for args in (["decode", str(path)], ["decode", "--json", str(path)]):
            proc = _main(capsys, *args) if name != "le.pcap" else _zkwire(*args)
            if name.endswith(".pcapng"):  # a section header followed by zeros: damaged, said in one line
                assert proc.returncode == 1, (name, args, proc.stdout, proc.stderr)
                [line] = proc.stderr.splitlines()
                assert name in line and "Traceback" not in line
            else:  # one packet, not TCP: nothing to show
                assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), (name, args)
        # a capture holds both sides: as the server's side of a raw stream it is refused
        proc = _main(capsys, "decode", str(raw), "--server-file", str(path))
        assert proc.returncode == 2, (name, proc.stdout, proc.stderr)
        assert proc.stdout == ""
        [line] = proc.stderr.splitlines()
        assert "pcap" in line and name in line


# ------------------------------------------------------------------------------- terminal escapes


def _evil_conversation() -> tuple[bytes, bytes]:
    client = bytearray(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    client += encode_request(1, OpCode.CREATE2, CreateRequest(EVIL, EVIL.encode(), None, 0))
    client += encode_request(2, OpCode.GET_DATA, GetDataRequest(EVIL + "/\u202eevil", True))
    multi = MultiRequest((MultiOp(OpCode.CREATE, CreateRequest(EVIL + "/m", b"", None, 0)),))
    client += encode_request(3, OpCode.MULTI, multi)
    server = bytearray(frame(_body(ConnectResponse(0, 10000, 0x77, bytes(16), False))))
    server += _server_frame(1, 5, 0, _body(Create2Response(EVIL, STAT)))
    server += _server_frame(2, 5, -101)
    server += _server_frame(-1, -1, 0, _body(WatcherEvent(1, 3, EVIL + "\x9b2J")))
    server += _server_frame(3, 6, -110) + frame(b"\x00\x00\x00\x03\x1b[2J\x07")
    return bytes(client), bytes(server)


def _assert_no_raw_controls(text: str) -> None:
    found = _RAW_CONTROL.findall(text)
    assert not found, f"raw control characters {found!r} in:\n{text!r}"


def test_decode_escapes_control_characters_from_the_wire(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    client, server = _evil_conversation()
    (tmp_path / "c.bin").write_bytes(client)
    (tmp_path / "s.bin").write_bytes(server)
    for extra in ([], ["--verbose"], ["--json"]):
        proc = _main(capsys, "decode", str(tmp_path / "c.bin"), "--server-file", str(tmp_path / "s.bin"), *extra)
        assert "Traceback" not in proc.stderr
        _assert_no_raw_controls(proc.stdout)
        _assert_no_raw_controls(proc.stderr)
        if not extra:
            assert r"/\x1b]0;pwned\x07\x1b[2J" in proc.stdout  # shown, escaped
        if extra == ["--json"]:
            paths = {json.loads(line).get("path") for line in proc.stdout.splitlines()}
            assert EVIL in paths  # JSON keeps the exact value (escaped by JSON itself)
    # A four-letter word's answer is text from the server.
    answer = tmp_path / "answer.bin"
    answer.write_bytes(b"Zookeeper version: 3.8.0\x1b]0;pwned\x07\n\x1b[2Jclients:\n")
    for extra in ([], ["--verbose"]):
        proc = _main(capsys, "decode", "--side", "server", str(answer), *extra)
        _assert_no_raw_controls(proc.stdout)


async def test_trace_escapes_control_characters_from_a_raw_client(zk_hosts: str) -> None:
    host, port = first_server(zk_hosts)
    out = io.StringIO()
    options = TraceOptions(out=out, verbose=True)
    async with trio.open_nursery() as nursery:
        tport = await nursery.start(serve_trace, ("127.0.0.1", 0), (host, int(port)), options)

        def talk() -> None:
            with RawConn(f"127.0.0.1:{tport}") as conn:
                conn.handshake()
                conn.call(1, OpCode.GET_DATA, GetDataRequest(EVIL, False))
                conn.call(2, OpCode.EXISTS, GetDataRequest("/\u202egnp.exe", False))

        await trio.to_thread.run_sync(talk)
        with trio.fail_after(10):
            while "closed" not in out.getvalue():
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    text = out.getvalue()
    _assert_no_raw_controls(text)
    assert r"\x1b]0;pwned\x07\x1b[2J" in text and r"\u202e" in text


# ------------------------------------------------------------------------------------------ secrets

PASSWD = bytes.fromhex("a55ac33cf00fe11e5aa53cc30ff01ee1")
CREDENTIAL = b"u7:Hx9-s3cr3t-Qz"
SASL_TOKEN = b"Rz9#Qw7!Kp3%Vx5^Jm2&Lb8*Tg4(Yh6)"
SECRETS = (PASSWD, CREDENTIAL, SASL_TOKEN)


def _shows_secret(text: str, secrets: tuple[bytes, ...] = SECRETS) -> bytes | None:
    """A 4-byte piece of a secret, if ``text`` shows one: as text, as hex, or as a hex dump."""
    low = text.lower()
    for secret in secrets:
        for i in range(len(secret) - 3):
            piece = secret[i : i + 4]
            forms = [piece.hex(), " ".join(f"{b:02x}" for b in piece), repr(piece)[2:-1]]
            if all(32 <= b < 127 for b in piece):
                forms.append(piece.decode("ascii").lower())
            if any(form in low for form in forms):
                return piece
    return None


def _outputs(frames: list[DecodedFrame]) -> str:
    out = io.StringIO()
    for verbose, json_lines in ((True, False), (False, True)):
        options = TraceOptions(out=out, verbose=verbose, json_lines=json_lines)
        for f in frames:
            options.emit(1, f, 0.0)
    return out.getvalue()


def _reattach() -> bytes:
    return bytes(encode_connect_request(ConnectRequest(0, 0x55, 10000, 0x1234, PASSWD, False)))


def _auth() -> bytes:
    return bytes(encode_request(-4, OpCode.AUTH, AuthPacket(0, "digest", CREDENTIAL)))


def _sasl() -> bytes:
    return bytes(encode_request(7, OpCode.SASL, GetSASLRequest(SASL_TOKEN)))


def _connected() -> bytes:
    return frame(_body(ConnectResponse(0, 10000, 0x1234, PASSWD, False)))


def _with_trailing_byte(framed: bytes) -> bytes:
    return frame(framed[4:] + b"\x00")


def _with_length_field(framed: bytes, at: int, value: int) -> bytes:
    """``framed`` with the int32 at payload offset ``at`` replaced."""
    payload = bytearray(framed[4:])
    struct.pack_into(">i", payload, at, value)
    return frame(bytes(payload))


def _secret_cases() -> list[tuple[str, bytes, bytes, bytes]]:
    """(name, bytes before, the secret-bearing frame, bytes after) for one direction."""
    ping = bytes(encode_request(-2, OpCode.PING))
    get = bytes(encode_request(3, OpCode.GET_DATA, GetDataRequest("/a", False)))
    new = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    auth_reply = _server_frame(-4, 0, 0)
    cases = [
        ("reattach", b"", _reattach(), ping),
        ("reattach+1", b"", _with_trailing_byte(_reattach()), ping),
        ("reattach-long-passwd", b"", _with_length_field(_reattach(), 24, 17), ping),
        ("reattach-huge-passwd", b"", _with_length_field(_reattach(), 24, 1 << 30), ping),
        ("auth", new + ping, _auth(), get),
        ("auth+1", new + ping, _with_trailing_byte(_auth()), get),
        ("auth-long-scheme", new, _with_length_field(_auth(), 12, 9), get),
        ("auth-bad-scheme", new, _with_length_field(_auth(), 12, -7), get),
        ("auth-scheme-into-credential", new, _with_length_field(_auth(), 12, 14), get),  # found by the fuzzer
        ("auth-huge-scheme", new, _with_length_field(_auth(), 12, 1 << 30), get),
        ("auth-long-credential", new, _with_length_field(_auth(), 22, 40), get),
        ("auth-first-frame", b"", _auth(), get),
        ("sasl", new, _sasl(), get),
        ("sasl+1", new, _with_trailing_byte(_sasl()), get),
        ("connect-response", b"", _connected(), auth_reply),
        ("connect-response+1", b"", _with_trailing_byte(_connected()), auth_reply),
        ("connect-response-long-passwd", b"", _with_length_field(_connected(), 16, 99), auth_reply),
    ]
    return cases


def test_secrets_are_masked_at_every_truncation_point_and_in_malformed_frames() -> None:
    checked = 0
    for name, before, secret_frame, after in _secret_cases():
        side = "server" if name.startswith("connect-response") else "client"
        whole = before + secret_frame + after
        # The frame cut at every byte (a capture or connection ending there), then whole with what follows.
        cuts = [before + secret_frame[:k] for k in range(len(secret_frame) + 1)] + [whole]
        for stream in cuts:
            for handshake in (True, False):
                decoder = ConversationDecoder(handshake=handshake)
                frames = decoder.feed(side, stream) + decoder.eof(side)
                text = _outputs(frames)
                leaked = _shows_secret(text)
                assert leaked is None, (name, len(stream) - len(before), handshake, leaked, text)
                checked += 1
        # The length prefix broken (over the maximum): the preview of the rest must not show it either.
        broken = before + struct.pack(">i", 0x7FFFFFF0) + secret_frame[4:] + after
        frames = decode_stream(broken, side)
        assert _shows_secret(_outputs(frames)) is None, name
        # The whole frame with --reveal-secrets shows it: the check above is not vacuous.
        frames = decode_stream(whole, side)
        revealed = io.StringIO()
        for f in frames:
            TraceOptions(out=revealed, verbose=True, reveal_secrets=True).emit(1, f, 0.0)
        assert _shows_secret(revealed.getvalue()) is not None, name
    assert checked > 1000


async def test_trace_masks_secrets_of_connections_cut_mid_frame(zk_hosts: str) -> None:
    host, port = first_server(zk_hosts)
    out = io.StringIO()
    options = TraceOptions(out=out, verbose=True)
    json_out = io.StringIO()
    json_options = TraceOptions(out=json_out, json_lines=True)
    async with trio.open_nursery() as nursery:
        tport = await nursery.start(serve_trace, ("127.0.0.1", 0), (host, int(port)), options)
        jport = await nursery.start(serve_trace, ("127.0.0.1", 0), (host, int(port)), json_options)

        def talk(tracer_port: int) -> None:
            hosts = f"127.0.0.1:{tracer_port}"
            with RawConn(hosts) as conn:  # a session with a real password
                session = conn.handshake(timeout_ms=10000)
                conn.call(1, OpCode.EXISTS, GetDataRequest("/", False))
                conn.send_raw(_auth()[:-5])  # cut mid-credential
            with RawConn(hosts) as conn:  # a re-attach cut mid-password
                request = encode_connect_request(ConnectRequest(0, 0, 10000, session.session_id, session.passwd, False))
                conn.send_raw(bytes(request)[:40])
            assert session.passwd is not None
            passwords.append(session.passwd)

        passwords: list[bytes] = []
        for p in (tport, jport):
            await trio.to_thread.run_sync(talk, p)
        with trio.fail_after(10):
            while out.getvalue().count("closed") < 2 or json_out.getvalue().count('"closed"') < 2:
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    for text in (out.getvalue(), json_out.getvalue()):
        assert "malformed" in text
        assert _shows_secret(text, (CREDENTIAL, *passwords)) is None, text


# ------------------------------------------------------------------------------ decoding off the path


async def _pings_during(hosts: str, work: Callable[[], Awaitable[object]], path: str) -> list[float]:
    """Latencies of exists(path) calls made every 10 ms on their own session while ``work`` runs (and 0.5 s
    more)."""
    latencies: list[float] = []
    async with zkwire.open_client(hosts) as pinger:
        async with trio.open_nursery() as nursery:

            async def ping() -> None:
                while True:
                    start = time.perf_counter()
                    await pinger.exists(path)
                    latencies.append(time.perf_counter() - start)
                    await trio.sleep(0.01)

            nursery.start_soon(ping)
            await trio.sleep(0.2)
            await work()
            await trio.sleep(0.5)
            nursery.cancel_scope.cancel()
    return latencies


_BIG_MULTI_READS = """
import sys, trio, zkwire
from zkwire.sansio.ops import GetData

async def one(hosts: str, path: str) -> None:
    async with zkwire.open_client(hosts) as zk:
        assert len(await zk.multi_read([GetData(path)] * 10_000)) == 10_000

async def main(hosts: str, path: str) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(one, hosts, path)
        nursery.start_soon(one, hosts, path)

trio.run(main, sys.argv[1], sys.argv[2])
"""


async def test_decoding_never_stalls_forwarding(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"d" * 20)
    output = (tmp_path / "trace.out").open("w")
    tracer = TracerProcess(zk_hosts, "--verbose", stdout=output)
    try:

        async def big_multi_reads() -> None:
            # Two multiRead replies of about 1 MB each, on two other sessions (in a process of their own, so
            # that decoding them does not hold up our pings): seconds of decoding in the tracer.
            cmd = [sys.executable, "-c", _BIG_MULTI_READS, tracer.hosts, zk_path]
            with trio.fail_after(60):
                await trio.run_process(cmd)

        latencies = await _pings_during(tracer.hosts, big_multi_reads, zk_path)

        def decoded() -> int:
            text = (tmp_path / "trace.out").read_text()
            return text.count("10000 ops ok") + text.count("decoding fell behind")

        with trio.move_on_after(60):  # the decoder catches up, later
            while decoded() < 2:
                await trio.sleep(0.1)
    finally:
        code, err = tracer.stop()
        output.close()
    assert code == 130 and err == b"", err.decode()
    assert len(latencies) > 20
    assert max(latencies) < 0.5, sorted(latencies)[-5:]
    lines = (tmp_path / "trace.out").read_text().splitlines()
    # Both big replies were decoded (or said to be skipped), and no line is longer than the cap.
    assert decoded() >= 2, lines[-20:]
    assert max(len(line) for line in lines) <= 4096


async def test_a_stalled_output_never_stalls_forwarding(zk_hosts: str, zk_path: str) -> None:
    # Nobody reads the tracer's output: once the pipe is full its writes block, and traffic must not.
    tracer = TracerProcess(zk_hosts, "--verbose", stdout=subprocess.PIPE)
    try:
        with trio.fail_after(30):
            async with zkwire.open_client(tracer.hosts) as zk:
                await zk.create(zk_path, b"x" * 500)
                for _ in range(300):
                    await zk.get_data(zk_path)  # about 2 kB of output each
        _, err = tracer.stop()
    finally:
        if tracer.proc.poll() is None:
            tracer.proc.kill()
            tracer.proc.wait()
    assert b"Traceback" not in err


def test_a_closed_output_ends_the_tracer_quietly(zk_hosts: str, zk_path: str) -> None:
    tracer = TracerProcess(zk_hosts, stdout=subprocess.PIPE)
    assert tracer.proc.stdout is not None
    try:
        with RawConn(tracer.hosts) as conn:
            conn.handshake()
            tracer.proc.stdout.readline()
            tracer.proc.stdout.close()  # like `zkwire trace ... | head -n 1`
            deadline = time.monotonic() + 10
            while tracer.proc.poll() is None and time.monotonic() < deadline:
                try:
                    conn.call(1, OpCode.EXISTS, GetDataRequest(zk_path, False))
                except (OSError, EOFError):
                    break  # the tracer has gone
                time.sleep(0.01)
        tracer.proc.wait(timeout=10)
        code, err = tracer.stop()
    finally:
        if tracer.proc.poll() is None:
            tracer.proc.kill()
            tracer.proc.wait()
    assert (code, err) == (141, b"")


async def test_decoding_that_falls_behind_skips_and_picks_up_again(zk_hosts: str, zk_path: str) -> None:
    host, port = first_server(zk_hosts)
    out = io.StringIO()
    options = TraceOptions(out=out, max_queued_bytes=256 * 1024)
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path, b"d" * 20)
    async with trio.open_nursery() as nursery:
        tport = await nursery.start(serve_trace, ("127.0.0.1", 0), (host, int(port)), options)
        [decoding] = decoding_processes()
        async with zkwire.open_client(f"127.0.0.1:{tport}") as zk:
            # The decoding process is held still, so that the 4 MB below outgrow its pipe (1 MiB) and
            # the queue (256 KiB) whatever the machine's speed: decoding falls behind for certain.
            os.kill(decoding, signal.SIGSTOP)
            try:
                for _ in range(3):
                    await zk.multi_read([GetData(zk_path)] * 10_000)  # 1 MB replies
            finally:
                os.kill(decoding, signal.SIGCONT)
            # Until the decoder has caught up, the probes' bytes are skipped; after, one is decoded.
            with trio.fail_after(60):
                probe = 0
                while f"{zk_path}/probe-{probe}" not in out.getvalue():
                    probe += 1
                    assert await zk.exists(f"{zk_path}/probe-{probe}") is None
                    await trio.sleep(0.2)
            data, _ = await zk.get_data(zk_path)
            assert data == b"d" * 20
        with trio.fail_after(30):
            while "closed" not in out.getvalue():
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    text = out.getvalue()
    assert "decoding fell behind" in text
    # After the skipped bytes, frames decode again, replies paired with their requests.
    get_data = [line for line in text.splitlines() if "getData" in line and zk_path in line]
    assert any("<- reply" in line for line in get_data), text[-3000:]
    assert any("closeSession" in line for line in text.splitlines())


def test_one_frame_prints_a_bounded_line() -> None:
    paths = [f"/a/very/long/path/number/{i:05d}" for i in range(10_000)]
    multi = MultiRequest(tuple(MultiOp(OpCode.CHECK, CheckVersionRequest(p, 1)) for p in paths))
    client = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    client += bytes(encode_request(1, OpCode.MULTI, multi))
    [_, frame_] = decode_stream(client)
    assert frame_.kind == "request" and frame_.size > 300_000
    for verbose, json_lines in ((False, False), (True, False), (False, True)):
        out = io.StringIO()
        TraceOptions(out=out, verbose=verbose, json_lines=json_lines).emit(1, frame_, 0.0)
        lines = out.getvalue().splitlines()
        assert max(len(line) for line in lines) <= 4096, (verbose, json_lines)
        assert len(lines) <= 100
        if json_lines:
            obj = json.loads(lines[0])
            assert obj["op_name"] == "multi" and obj["size"] == frame_.size
        else:
            assert ("multi" in lines[0] and "10000 more" in lines[0]) or "more" in lines[0]
    out = io.StringIO()
    TraceOptions(out=out, verbose=True, max_line=0).emit(1, frame_, 0.0)  # no limit
    assert len(out.getvalue()) > 1_000_000


def test_the_cap_holds_with_the_tracers_own_columns() -> None:
    # Found by the fuzzer: the time and connection columns came on top of a line already cut to the cap.
    client = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    client += bytes(encode_request(1, OpCode.GET_DATA, GetDataRequest("/" + "p" * 2000, False)))
    frames = decode_stream(client)
    for max_line in (80, 300, 4096):
        for verbose in (False, True):
            out = io.StringIO()
            for f in frames:
                TraceOptions(out=out, verbose=verbose, max_line=max_line).emit(12345, f, 1e9)
            assert max(len(line) for line in out.getvalue().splitlines()) <= max_line, (max_line, verbose)


@pytest.mark.parametrize("err", [-115, -124])
def test_a_sasl_refusal_with_its_null_token_is_a_reply_not_malformed(err: int) -> None:
    # Observed on 3.8.0: a refused SASL token is answered with the error and a null token (length -1).
    decoder = ConversationDecoder(handshake=True)
    new = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    decoder.feed("client", new + _sasl())
    frames = decoder.feed("server", _connected() + _server_frame(7, 0, err, b"\xff\xff\xff\xff"))
    reply = frames[-1]
    assert (reply.kind, reply.op_name, reply.err, reply.error) == ("reply", "sasl", err, None), reply
    assert reply.note == "null token" and "malformed" not in _outputs([reply])
