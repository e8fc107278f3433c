"""Filters, statistics, the session view and --save, for decode (captures), sniff and the proxy: on
synthetic captures of known conversations (counts known exactly) and through the proxy against the real
server."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server
from test_capture_decode import _reply, _write_pcap, segments

import zkwire
from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.framing import frame
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    ConnectRequest,
    ConnectResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    ErrorResponse,
    GetDataRequest,
    GetDataResponse,
    ReplyHeader,
    SetDataRequest,
    SetDataResponse,
    Stat,
    WatcherEvent,
)
from zkwire.shell.main import main as zkwire_main
from zkwire.trace.capture import TcpSegment
from zkwire.trace.decoder import DecodedFrame
from zkwire.trace.filters import ConnectionInfo, FrameFilter, parse_op, parse_session_id
from zkwire.trace.stats import TraceStats, path_at_depth, percentile
from zkwire.trace.tracer import TraceOptions, serve_trace

STAT = Stat(1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1)
SID_A, SID_B = 0xABC0001, 0xDEF0002


def _body(record: object) -> bytes:
    out = bytearray()
    record.write(out)  # type: ignore[attr-defined]
    return bytes(out)


def _handshake(asked: int, granted: int, timeout: int = 10000) -> list[tuple[str, bytes]]:
    return [
        ("client", bytes(encode_connect_request(ConnectRequest(0, 0, 10000, asked, b"s" * 16, False)))),
        ("server", frame(_body(ConnectResponse(0, timeout, granted, b"p" * 16, False)))),
    ]


def _exchange(xid: int, op: int, request: object, err: int = 0, body: bytes = b"") -> list[tuple[str, bytes]]:
    return [("client", bytes(encode_request(xid, op, request))), ("server", _reply(xid, 100 + xid, err, body))]  # type: ignore[arg-type]


def first_connection() -> list[tuple[str, bytes]]:
    """Session A is created: 3 creates (one under /app/b), a getData that fails, a watch event."""
    conv = _handshake(0, SID_A)
    conv += _exchange(1, OpCode.CREATE, CreateRequest("/app", b"", None, 0), body=_body(CreateResponse("/app")))
    conv += _exchange(2, OpCode.CREATE, CreateRequest("/app/a", b"1", None, 0), body=_body(CreateResponse("/app/a")))
    conv += _exchange(3, OpCode.CREATE, CreateRequest("/app/b/c", b"", None, 0), err=-101)
    conv += _exchange(4, OpCode.GET_DATA, GetDataRequest("/app/a", True), body=_body(GetDataResponse(b"1", STAT)))
    conv += [("server", _reply(-1, -1, 0, _body(WatcherEvent(3, 3, "/app/a"))))]
    return conv


def second_connection() -> list[tuple[str, bytes]]:
    """Session A re-attaches: a setData, a multi whose second op fails, then closeSession."""
    conv = _handshake(SID_A, SID_A)
    conv += _exchange(5, OpCode.SET_DATA, SetDataRequest("/app/a", b"2", -1), body=_body(SetDataResponse(STAT)))
    multi = MultiRequest(
        (MultiOp(OpCode.CREATE, CreateRequest("/app/m", b"", None, 0)), MultiOp(OpCode.DELETE, DeleteRequest("/x", -1)))
    )
    results = MultiResponse((MultiResult(-1, 0, ErrorResponse(0)), MultiResult(-1, -101, ErrorResponse(-101))))
    conv += _exchange(6, OpCode.MULTI, multi, body=_body(results))  # a failed multi: err 0, error results
    conv += _exchange(7, OpCode.CLOSE_SESSION, None)
    return conv


def other_session() -> list[tuple[str, bytes]]:
    """Session B: one create elsewhere; and a connection whose session had expired."""
    conv = _handshake(0, SID_B)
    conv += _exchange(1, OpCode.CREATE, CreateRequest("/other/x", b"", None, 0), body=_body(CreateResponse("/other/x")))
    return conv


def capture(tmp_path: Path) -> Path:
    segs: list[TcpSegment] = []
    segs += segments(first_connection(), client=("10.0.0.1", 40001), t0=1000.0)
    segs += segments(other_session(), client=("10.0.0.7", 40002), t0=1001.0)
    segs += segments(second_connection(), client=("10.0.0.1", 40003), t0=1002.0)
    segs += segments(_handshake(SID_A, 0, timeout=0), client=("10.0.0.1", 40004), t0=1003.0)  # expired
    path = tmp_path / "sessions.pcap"
    _write_pcap(path, segs)
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = zkwire_main(list(args))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _frames(out: str) -> list[dict[str, object]]:
    return [o for o in map(json.loads, out.splitlines()) if o["kind"] not in ("connection", "summary")]


def _summary(out: str) -> dict[str, object]:
    [summary] = [o for o in map(json.loads, out.splitlines()) if o["kind"] == "summary"]
    return summary


# ----------------------------------------------------------------------------------------------- units


def test_parsing_of_ops_and_session_ids() -> None:
    assert parse_op("getdata") == parse_op("GetData") == parse_op("4") == "getData"
    assert parse_session_id("0xabc0001") == parse_session_id(str(SID_A)) == SID_A
    with pytest.raises(ValueError, match="unknown op"):
        parse_op("frobnicate")
    with pytest.raises(ValueError, match="session id"):
        parse_session_id("0xnope")


def test_percentiles_and_depth() -> None:
    values = sorted(float(i) for i in range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 0.5) == 7.0
    assert path_at_depth("/a/b/c", 2) == "/a/b" and path_at_depth("/a", 3) == "/a" and path_at_depth("/", 1) == "/"


def test_path_filters_are_prefixes_on_component_boundaries_or_globs() -> None:
    f = DecodedFrame(direction="client", kind="request", index=0, offset=0, size=0, payload=b"", path="/app/a")
    info = ConnectionInfo("10.0.0.1:4000", SID_A)
    assert FrameFilter(paths=("/app",)).passes(f, info)
    assert FrameFilter(paths=("/app/",)).passes(f, info)
    assert not FrameFilter(paths=("/ap",)).passes(f, info)
    assert FrameFilter(paths=("/app/*",)).passes(f, info)
    assert not FrameFilter(paths=("/other/*",)).passes(f, info)
    assert FrameFilter(clients=("10.0.0.1",)).passes(f, info)
    assert FrameFilter(clients=(":4000",)).passes(f, info)
    assert not FrameFilter(clients=("10.0.0.2",)).passes(f, info)
    assert not FrameFilter(sessions=frozenset({SID_B})).passes(f, info)


# ----------------------------------------------------------------------------------------------- decode


def test_filters_on_a_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(capture(tmp_path))
    code, out, _ = _run(capsys, "decode", "--json", path, "--path", "/app/a")
    got = {(o["direction"], o["op_name"]) for o in _frames(out)}
    assert got == {(d, op) for d in ("client", "server") for op in ("create", "getData", "setData")} | {
        ("server", "notification")
    }
    code, out, _ = _run(capsys, "decode", "--json", path, "--path", "/app/m")  # a multi's own paths count
    assert {o["op_name"] for o in _frames(out)} == {"multi"}
    code, out, _ = _run(capsys, "decode", "--json", path, "--op", "create,setData", "--client", "10.0.0.7")
    assert [(o["direction"], o["path"]) for o in _frames(out)] == [("client", "/other/x"), ("server", "/other/x")]
    code, out, _ = _run(capsys, "decode", "--json", path, "--errors")
    errs = [(o["direction"], o["op_name"], o["err_name"]) for o in _frames(out)]
    assert errs == [("server", "create", "NONODE"), ("server", "multi", "OK")]  # the multi's second op failed
    code, out, _ = _run(capsys, "decode", "--json", path, "--slower", "0.5")  # replies come 1 ms after requests
    assert {o["kind"] for o in _frames(out)} == {"reply"}
    code, out, _ = _run(capsys, "decode", "--json", path, "--slower", "5000")
    assert _frames(out) == []
    code, out, err = _run(capsys, "decode", path, "--op", "frobnicate")
    assert code == 2 and "frobnicate" in err and len(err.splitlines()) == 1


def test_stats_count_what_the_capture_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(capture(tmp_path))
    code, out, _ = _run(capsys, "decode", "--json", "--stats", "--depth", "1", path)
    assert code == 0
    summary = _summary(out)
    assert _frames(out) == []  # --stats: no frames
    assert summary["requests"] == {"create": 4, "getData": 1, "setData": 1, "multi": 1, "closeSession": 1}
    assert summary["paths"] == {"/app": 5, "/other": 1}  # the multi has no path of its own
    assert summary["errors"] == {"NONODE": 2}
    assert summary["errors_by_op"] == {"create NONODE": 1, "multi NONODE": 1}
    assert summary["events"] == {"NODE_DATA_CHANGED": 1}
    assert summary["sessions"] == {"opened": 2, "reattached": 1, "closed": 1, "expired": 1}
    assert summary["connections"] == 4
    latency = summary["latency"]
    assert isinstance(latency, dict) and latency["create"]["count"] == 4
    assert all(0.5 < row["p50_ms"] <= row["p99_ms"] <= row["max_ms"] < 5 for row in latency.values())
    assert isinstance(summary["bytes"], dict) and summary["bytes"]["client"] > 0
    # the text form
    code, out, _ = _run(capsys, "decode", "--stats", path)
    lines = out.splitlines()
    assert all(line.startswith("== ") for line in lines)
    assert "== sessions: 2 opened, 1 re-attached, 1 closed, 1 expired" in lines
    assert any(line.startswith("== latency create: n=4 p50=") for line in lines)
    # filters apply to the statistics too
    code, out, _ = _run(capsys, "decode", "--json", "--stats", "--path", "/other", path)
    assert _summary(out)["requests"] == {"create": 1}


def test_the_session_view_follows_a_session_across_reconnects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(capture(tmp_path))
    _, out, _ = _run(capsys, "decode", "--json", "--session-view", hex(SID_A), path)
    objs = [json.loads(line) for line in out.splitlines()]
    requests = [(o["conn"], o["op_name"]) for o in objs if o["kind"] in ("request",) and o["direction"] == "client"]
    assert requests == [
        (1, "create"),
        (1, "create"),
        (1, "create"),
        (1, "getData"),
        (3, "setData"),
        (3, "multi"),
        (3, "closeSession"),
    ]
    notes = [o["note"] for o in objs if o["kind"] == "connection"]
    assert notes == [
        f"session {hex(SID_A)} on this connection (client 10.0.0.1:40001)",
        "closed",
        f"session {hex(SID_A)} on this connection (client 10.0.0.1:40003)",
        "closed",
        # a client that asked for session A again, after it was closed: expired
        f"session {hex(SID_A)} on this connection (client 10.0.0.1:40004)",
        "closed",
    ]
    assert not any(o.get("path") == "/other/x" for o in objs)
    # --session is the same filter, without the notes
    _, out, _ = _run(capsys, "decode", "--json", "--session", str(SID_B), path)
    assert {o["path"] for o in _frames(out) if o["path"]} == {"/other/x"}


# ----------------------------------------------------------------------------------------------- proxy


def _server(zk_hosts: str) -> tuple[str, int]:
    return first_server(zk_hosts)


async def test_the_proxy_saves_raw_streams_that_decode_to_what_it_showed(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    out = io.StringIO()
    stats = TraceStats()
    options = TraceOptions(json_lines=True, out=out, stats=stats)
    save = tmp_path / "saved"
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_trace, save=save), ("127.0.0.1", 0), _server(zk_hosts), options)
        with trio.fail_after(30):
            async with zkwire.open_client(f"127.0.0.1:{port}") as zk:
                await zk.create(zk_path, b"saved")
                for i in range(5):
                    await zk.set_data(zk_path, str(i).encode())
                await zk.delete(zk_path)
        with trio.fail_after(10):
            while '"closed"' not in out.getvalue():
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    shown = [o for o in map(json.loads, out.getvalue().splitlines()) if o["kind"] != "connection"]
    files = sorted(p.name for p in save.iterdir())
    assert files == ["conn-1-client.bin", "conn-1-server.bin"]
    proc = await trio.to_thread.run_sync(
        partial(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "zkwire",
                "decode",
                "--json",
                str(save / "conn-1-client.bin"),
                "--server-file",
                str(save / "conn-1-server.bin"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    )
    assert proc.returncode == 0, proc.stderr
    decoded = _frames(proc.stdout)
    key = lambda o: (o["direction"], o["index"], o["kind"], o["xid"], o["op_name"], o["payload"])  # noqa: E731
    assert sorted(map(key, decoded)) == sorted(map(key, shown))
    assert stats.requests["setData"] == 5 and stats.sessions_opened == 1 and stats.sessions_closed == 1


async def test_zkwire_trace_prints_the_summary_on_sigusr1_and_on_exit_and_saves(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    import signal

    from helpers.tracerproc import TracerProcess

    out = (tmp_path / "trace.out").open("w")
    save = tmp_path / "raw"
    tracer = TracerProcess(zk_hosts, "--json", "--save", str(save), "--hide-pings", stdout=out)
    try:
        with trio.fail_after(30):
            async with zkwire.open_client(tracer.hosts, follow_ensemble=False) as zk:
                await zk.create(zk_path, b"x")
                for _ in range(3):
                    await zk.get_data(zk_path)
                await zk.delete(zk_path)
            text = ""
            while text.count('"closed"') < 1:  # (the port probe's connection has no frames)
                await trio.sleep(0.05)
                text = (tmp_path / "trace.out").read_text()
        tracer.proc.send_signal(signal.SIGUSR1)
        with trio.fail_after(10):
            while '"summary"' not in (tmp_path / "trace.out").read_text():
                await trio.sleep(0.05)
    finally:
        code, err = tracer.stop()
        out.close()
    assert code == 130 and err == b"", err
    objs = [json.loads(line) for line in (tmp_path / "trace.out").read_text().splitlines()]
    summaries = [o for o in objs if o["kind"] == "summary"]
    assert len(summaries) == 2
    for s in summaries:
        assert s["requests"] == {"create": 1, "getData": 3, "delete": 1, "closeSession": 1}
        assert s["sessions"]["opened"] == 1 and s["sessions"]["closed"] == 1
    # the saved streams of the connection that carried the session decode to the same requests
    saved = sorted(p.name for p in save.iterdir())
    assert "conn-2-client.bin" in saved and "conn-2-server.bin" in saved  # conn 1: the port probe
    with trio.fail_after(60):
        done = await trio.run_process(
            [
                sys.executable,
                "-m",
                "zkwire",
                "decode",
                "--stats",
                "--json",
                str(save / "conn-2-client.bin"),
                "--server-file",
                str(save / "conn-2-server.bin"),
            ],
            capture_stdout=True,
            check=False,
        )
    assert done.returncode == 0
    assert json.loads(done.stdout)["requests"] == summaries[-1]["requests"]


# ------------------------------------------------------------------------------- reconfiguration


def _config_conversation(data: list[bytes | None]) -> tuple[bytes, bytes]:
    """A reconfig (members and ids, some null, some not what they should be), then getData replies of
    /zookeeper/config holding each of ``data``."""
    from zkwire.protocol.records.access import ReconfigRequest

    client = bytearray(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    server = bytearray(frame(_body(ConnectResponse(0, 10000, 0x77, bytes(16), False))))
    client += encode_request(
        1, OpCode.RECONFIG, ReconfigRequest("server.4=h:1:2;3, 5=h:1:2;4", "3,x,", None, 0x10000000A)
    )
    config = b"server.1=h:1:2:participant;h:2181\nserver.2=h:3:4:observer\nversion=10000000b"
    server += frame(_body(ReplyHeader(1, 0x10000000B, 0)) + _body(GetDataResponse(config, STAT)))
    client += encode_request(2, OpCode.RECONFIG, ReconfigRequest(None, "", "server.1=h:1:2;3", -1))
    server += frame(_body(ReplyHeader(2, 0x10000000C, -123)))
    for xid, d in enumerate(data, 3):
        client += encode_request(xid, OpCode.GET_DATA, GetDataRequest("/zookeeper/config", False))
        server += frame(_body(ReplyHeader(xid, 0x10000000C, 0)) + _body(GetDataResponse(d, STAT)))
    client += encode_request(99, OpCode.GET_DATA, GetDataRequest("/other", False))
    server += frame(_body(ReplyHeader(99, 0x10000000C, 0)) + _body(GetDataResponse(config, STAT)))
    return bytes(client), bytes(server)


def test_reconfigurations_are_shown_readably_and_configurations_by_version() -> None:
    from zkwire.trace.decoder import decode_conversation, format_frame, frame_to_json

    hostile = [b"", b"version=zz", b"\xff\xfe", None, b"server.1=" + b"x" * 5000, b"version=1\n" * 3, b"version=1f"]
    client, server = _config_conversation(hostile)
    for compiled in (False, True):
        frames = decode_conversation(client, server, compiled=compiled)
        assert not [f for f in frames if f.kind == "malformed"]
        lines = [format_frame(f) for f in frames]
        notes = [f.note for f in frames if f.op_name in ("reconfig", "getData") and f.kind in ("request", "reply")]
        assert notes == [
            "joining 2 [server.4=h:1:2;3, 5=h:1:2;4]; leaving 2 [3, x]; from config 0x10000000a",
            "members 1 [server.1=h:1:2;3]; from any config",
            *[None] * 8,  # the getData requests
            "config version 0x10000000b, members 1, 2",
            None,  # the refused reconfig
            "config empty (a standalone server)",
            *[None] * 5,  # data that is not a configuration: shown as any other reply
            "config version 0x1f, members none",
            None,  # getData of /other: its data is not a configuration's, whatever it holds
        ]
        assert any(line.endswith("[config version 0x10000000b, members 1, 2]") for line in lines)
        configs = [frame_to_json(f)["config"] for f in frames if f.kind in ("request", "reply")]
        assert [c for c in configs if c is not None] == [
            {
                "joining": ["server.4=h:1:2;3", "5=h:1:2;4"],
                "leaving": [3, "x"],
                "members": None,
                "from_config": 0x10000000A,
            },
            {"joining": None, "leaving": None, "members": ["server.1=h:1:2;3"], "from_config": -1},
            {"version": 0x10000000B, "members": [1, 2]},
            {"version": 0, "members": []},
            {"version": 0x1F, "members": []},
        ]
        assert json.dumps(frame_to_json(frames[2], max_line=200))  # cut to the budget, still JSON


def test_the_op_codes_of_a_filter_on_ops() -> None:
    assert FrameFilter().op_codes() is None  # every op passes
    names = frozenset(parse_op(text) for text in ("getdata", "CREATE2", "connect", "999"))
    # connect has no op code (its records are always read); a code without a name is itself
    assert FrameFilter(ops=names).op_codes() == {OpCode.GET_DATA, OpCode.CREATE2, 999}
