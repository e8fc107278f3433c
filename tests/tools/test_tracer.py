"""The tracing proxy in front of the real server, with kazoo (a client we did not write) as the client."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire.trace.tracer import TraceOptions, serve_trace


def _server(zk_hosts: str) -> tuple[str, int]:
    return first_server(zk_hosts)


def _kazoo_session(hosts: str, base: str) -> dict[str, object]:
    """A fixed sequence of kazoo calls; returns what kazoo saw."""
    import threading

    from kazoo.client import KazooClient

    kz = KazooClient(hosts=hosts)
    kz.start(timeout=10)
    try:
        seen: dict[str, object] = {}
        fired = threading.Event()
        events: list[tuple[str, str]] = []
        kz.create(base, b"root", makepath=True)
        kz.create(f"{base}/a", b"hello")
        data, stat = kz.get(f"{base}/a", watch=lambda ev: (events.append((ev.type, ev.path[len(base) :])), fired.set()))
        seen["get"] = (data, stat.version, stat.data_length)
        seen["set"] = kz.set(f"{base}/a", b"changed").version
        fired.wait(5)
        seen["event"] = events
        seen["children"] = sorted(kz.get_children(base))
        kz.delete(f"{base}/a")
        seen["exists_after"] = kz.exists(f"{base}/a")
        kz.delete(base)
        return seen
    finally:
        kz.stop()
        kz.close()


async def test_kazoo_through_tracer_is_decoded_and_unchanged(zk_hosts: str, zk_path: str) -> None:
    out = io.StringIO()
    options = TraceOptions(json_lines=True, out=out)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), _server(zk_hosts), options)
        traced = await trio.to_thread.run_sync(_kazoo_session, f"127.0.0.1:{port}", f"{zk_path}-t")
        nursery.cancel_scope.cancel()
    direct = await trio.to_thread.run_sync(_kazoo_session, zk_hosts, f"{zk_path}-d")
    assert traced == direct  # the proxy changed nothing kazoo can see
    assert traced["event"] == [("CHANGED", "/a")]

    frames = [json.loads(line) for line in out.getvalue().splitlines()]
    frames = [f for f in frames if f.get("kind") != "connection"]
    kinds = {f["kind"] for f in frames}
    assert {"connect", "connect_response", "request", "reply", "event"} <= kinds
    assert not any(f["kind"] == "malformed" for f in frames)
    requests = {f["xid"]: f for f in frames if f["kind"] == "request"}
    replies = [f for f in frames if f["kind"] == "reply"]
    # every reply is paired with its request: same xid, same op name
    for reply in replies:
        assert reply["xid"] in requests
        assert reply["op_name"] == requests[reply["xid"]]["op_name"]
    ops_with_paths = {(f["op_name"], f["path"]) for f in frames if f["kind"] == "request"}
    base = f"{zk_path}-t"
    for expected in [
        ("create", f"{base}/a"),
        ("getData", f"{base}/a"),
        ("setData", f"{base}/a"),
        ("getChildren", base),
        ("delete", f"{base}/a"),
    ]:
        assert any(op.lower().startswith(expected[0].lower()) and path == expected[1] for op, path in ops_with_paths), (
            expected
        )
    event = next(f for f in frames if f["kind"] == "event")
    assert event["path"] == f"{base}/a"
    get_reply = next(r for r in replies if requests[r["xid"]]["op_name"] == "getData")
    assert get_reply["record"]["data"] == b"hello".hex()


async def test_zkwire_through_tracer_text_output(zk_hosts: str, zk_path: str) -> None:
    out = io.StringIO()
    options = TraceOptions(out=out, hide_pings=True)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), _server(zk_hosts), options)
        async with zkwire.open_client(f"127.0.0.1:{port}") as zk:
            await zk.create(zk_path, b"x")
            try:
                await zk.get_data(zk_path + "/missing")
            except zkwire.NoNodeError:
                pass
        nursery.cancel_scope.cancel()
    text = out.getvalue()
    assert "create" in text and zk_path in text
    assert "NONODE" in text
    assert "closeSession" in text


def test_decode_file_cli(tmp_path: Path) -> None:
    from zkwire.constants import OpCode
    from zkwire.protocol.codec import encode_connect_request, encode_request
    from zkwire.protocol.records import ConnectRequest, GetDataRequest

    capture = tmp_path / "client.bin"
    capture.write_bytes(
        bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
        + bytes(encode_request(1, OpCode.GET_DATA, GetDataRequest("/some/path", True)))
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from zkwire.trace.tracer import main; sys.exit(main(sys.argv[1:]))",
            "decode",
            str(capture),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "getData" in proc.stdout and "/some/path" in proc.stdout
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x00\x00\x08" + b"\xff" * 8)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from zkwire.trace.tracer import main; sys.exit(main(sys.argv[1:]))",
            "decode",
            "--side",
            "client",
            str(garbage),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr


async def test_a_reply_forwarded_before_its_request_is_decoded_still_pairs(
    zk_hosts: str, zk_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pump towards the server resumes only after the server has answered (its send is slowed on
    purpose, as a busy machine does): the reply must still be paired with its request, never noted as
    'no pending request' (the request is queued for decoding before it is forwarded)."""
    server = _server(zk_hosts)
    real_send_all = trio.SocketStream.send_all

    async def slow_towards_server(self: trio.SocketStream, data: bytes | bytearray | memoryview) -> None:
        await real_send_all(self, data)
        if self.socket.getpeername()[1] == server[1]:
            await trio.sleep(0.2)  # the server answers in this time

    out = io.StringIO()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), server, TraceOptions(json_lines=True, out=out))
        monkeypatch.setattr(trio.SocketStream, "send_all", slow_towards_server)
        async with zkwire.open_client(f"127.0.0.1:{port}", follow_ensemble=False) as zk:
            await zk.create(zk_path, b"x")
            assert await zk.get_data(zk_path) == (b"x", (await zk.exists(zk_path)))
            await zk.delete(zk_path)
        monkeypatch.undo()
        nursery.cancel_scope.cancel()
    frames = [json.loads(line) for line in out.getvalue().splitlines()]
    replies = [f for f in frames if f["kind"] == "reply"]
    assert [f["op_name"] for f in replies] == ["create", "getData", "exists", "delete", "closeSession"]
    assert not [f for f in frames if "no pending request" in str(f.get("note"))], frames
