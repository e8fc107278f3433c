"""The command lines' own faults: every bad argument is one clear line and exit 2, Ctrl-C is exit 130 without
a traceback, a closed pipe ends the program quietly, and nothing read from the wire reaches the terminal
raw (a scripted server sends what a real one would refuse to store)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trio
from helpers.fakeserver import STAT, ClientRequest, FakeServer

import zkwire
from zkwire.constants import EventType, OpCode
from zkwire.protocol.records import (
    ACL,
    ClientInfo,
    ConnectRequest,
    Create2Response,
    CreateResponse,
    ErrorResponse,
    ExistsResponse,
    GetACLResponse,
    GetChildren2Response,
    GetChildrenResponse,
    GetDataResponse,
    GetEphemeralsResponse,
    Id,
    WhoAmIResponse,
)
from zkwire.sansio.ops import Create

EVIL = "/\x1b]0;pwned\x07\x1b[2J"
EVIL_NAME = "a\x1b[31mred\u202eexe.txt"
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Result:
    code: int
    out: str
    err: str


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("ZKWIRE_SERVER", "ZKLOCK_SERVER"):
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def run(program: str, *args: str | bytes, stdin: bytes = b"", limit: float = 30.0) -> Result:
    """``python -m PROGRAM ARGS...`` to completion (arguments may be bytes: not valid UTF-8)."""
    with trio.fail_after(limit):
        done = await trio.run_process(
            [sys.executable, "-m", program, *args],
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=_env(),
        )
    result = Result(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))
    assert "Traceback" not in result.err, result.err
    return result


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_line(r: Result) -> str:
    assert r.err.count("\n") == 1 and r.err.endswith("\n"), r
    return r.err


def _no_raw_controls(text: str) -> None:
    found = _RAW_CONTROL.findall(text)
    assert not found, f"raw control characters {found!r} in {text!r}"


# ------------------------------------------------------------------------------- a scripted server


Answer = Callable[[FakeServer, ClientRequest], bytes]


async def serve_scripted(
    answer: Answer, four: dict[bytes, bytes | None], *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """A TCP server speaking ZooKeeper's protocol with canned answers; ``four`` answers four-letter words
    (None: never answers)."""

    async def handle(stream: trio.SocketStream) -> None:
        server = FakeServer()
        async with stream:
            head = b""
            while len(head) < 4:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                head += chunk
            if head[:4] in four:
                reply = four[head[:4]]
                if reply is None:
                    await trio.sleep_forever()
                else:
                    await stream.send_all(reply)
                return
            data = head
            while data:
                for item in server.receive(data):
                    if isinstance(item, ConnectRequest):
                        await stream.send_all(server.accept())
                    elif item.op == OpCode.PING:
                        await stream.send_all(server.pong())
                    elif item.op == OpCode.CLOSE_SESSION:
                        await stream.send_all(server.reply(item))
                        return
                    else:
                        await stream.send_all(answer(server, item))
                try:
                    data = await stream.receive_some(65536)
                except trio.BrokenResourceError:
                    return

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with trio.open_nursery() as nursery:
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(handle, listeners, handler_nursery=nursery)


def _evil_answers(server: FakeServer, req: ClientRequest) -> bytes:
    op = req.op
    if op == OpCode.CREATE:
        return server.reply(req, CreateResponse(EVIL))
    if op in (OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL):
        return server.reply(req, Create2Response(EVIL, STAT))
    if op == OpCode.GET_CHILDREN:
        return server.reply(req, GetChildrenResponse((EVIL_NAME, "plain")))
    if op == OpCode.ADD_WATCH:  # a recursive watch on /: events name the server's paths
        return server.reply(req, ErrorResponse(0)) + server.event(EventType.NODE_CREATED, EVIL)
    if op == OpCode.GET_CHILDREN2:
        return server.reply(req, GetChildren2Response((EVIL_NAME,), STAT))
    if op == OpCode.GET_DATA:
        return server.reply(req, GetDataResponse(b"looks fine\rspoofed", STAT))
    if op == OpCode.EXISTS:
        return server.reply(req, ExistsResponse(STAT))
    if op == OpCode.GET_ACL:
        return server.reply(req, GetACLResponse((ACL(31, Id("digest", "u\x1b[2J:hash")),), STAT))
    if op == OpCode.WHO_AM_I:
        return server.reply(req, WhoAmIResponse((ClientInfo("digest", "\x1b]0;owned\x07"),)))
    if op == OpCode.GET_EPHEMERALS:
        return server.reply(req, GetEphemeralsResponse((EVIL,)))
    return server.reply(req, err=-101)


async def test_shell_escapes_control_characters_from_the_wire() -> None:
    four: dict[bytes, bytes | None] = {
        b"srvr": b"Zookeeper version: \x1b]0;pwned\x07\x1b[2J3.8\nMode: standalone\tok\n",
        b"ruok": b"",
    }
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_scripted, _evil_answers, four)
        hosts = f"127.0.0.1:{port}"
        cases = [
            ["ls", "/"],
            ["ls", "-s", "/"],
            ["addWatch", "/"],
            ["create", "/a", "x"],
            ["get", "/a"],
            ["getAcl", "/a"],
            ["whoami"],
            ["getEphemerals"],
            ["four", "srvr"],
        ]
        results = []
        for args in cases:
            results.append(await run("zkwire", "--server", hosts, "--timeout", "2", *args))
        shell = await run("zkwire", "--server", hosts, stdin=b"ls /\naddWatch /\nget /a\nwhoami\n")
        nursery.cancel_scope.cancel()
    for args, r in zip(cases, results, strict=True):
        _no_raw_controls(r.out)
        _no_raw_controls(r.err)
        assert r.code == 0, (args, r)
    assert "[a\\x1b[31mred\\u202eexe.txt, plain]" in results[0].out
    assert "path:/\\x1b]0;pwned\\x07\\x1b[2J" in results[2].out  # the watch event
    assert results[4].out == "looks fine\\rspoofed\n"
    assert "\tok" in results[8].out  # tabs and newlines of a four-letter word's answer are kept
    _no_raw_controls(shell.out)
    _no_raw_controls(shell.err)


async def test_four_rejects_unknown_words_and_reports_an_empty_answer() -> None:
    nowhere = f"127.0.0.1:{closed_port()}"
    r = await run("zkwire", "--server", nowhere, "four", "zzzz")
    assert r.code == 2 and r.out == ""
    assert "zzzz" in _one_line(r)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_scripted, _evil_answers, {b"ruok": b"", b"srvr": None})
        r = await run("zkwire", "--server", f"127.0.0.1:{port}", "four", "ruok")
        slow = await run("zkwire", "--server", f"127.0.0.1:{port}", "--timeout", "1", "four", "srvr")
        nursery.cancel_scope.cancel()
    assert r.code == 1 and r.out == ""
    assert "no answer" in _one_line(r)
    assert slow.code == 3 and "within 1s" in _one_line(slow)  # a server that says nothing in time


# ------------------------------------------------------------------------------- bad arguments


async def test_invalid_utf8_arguments_exit_2_with_one_line(zk_hosts: str, zk_path: str) -> None:
    r = await run("zkwire", "--server", zk_hosts, "create", zk_path, b"\xff")
    assert r.code == 2 and r.out == "" and "UTF-8" in _one_line(r)
    r = await run("zkwire", "--server", zk_hosts, "create", zk_path.encode() + b"\xff")
    assert r.code == 2 and r.out == "" and "UTF-8" in _one_line(r)
    async with zkwire.open_client(zk_hosts) as zk:
        assert await zk.exists(zk_path) is None  # nothing was sent
    # The credential is neither sent nor shown.
    r = await run("zkwire", "--server", zk_hosts, "--auth", b"digest:user:s3cr\xffet", "ls", "/")
    assert r.code == 2 and r.out == "" and "UTF-8" in _one_line(r)
    assert "s3cr" not in r.err and "user" not in r.err
    r = await run("zkwire", "--server", zk_hosts, "--auth", "s3cretonly", "ls", "/")
    assert r.code == 2 and "s3cretonly" not in _one_line(r)
    # The shell reads the same arguments from its input: one line per bad command, and it goes on.
    shell = await run(
        "zkwire",
        "--server",
        zk_hosts,
        stdin=b"create " + zk_path.encode() + b" \xff\naddauth digest u:s3cr\xffet\nls /zkwire-tests\n",
    )
    assert shell.code == 0, shell
    assert shell.err.count("\n") == 2 and "UTF-8" in shell.err and "s3cr" not in shell.err
    assert "[" in shell.out


async def test_bad_numbers_exit_2_with_one_line() -> None:
    nowhere = f"127.0.0.1:{closed_port()}"
    for option in ("--session-timeout", "--timeout"):
        for value in ("inf", "-inf", "nan", "0", "-1", "1e12", "soon"):
            if option == "--timeout" and value == "1e12":
                continue  # a long wait is fine
            r = await run("zkwire", "--server", nowhere, option, value, "ls", "/", limit=10)
            assert r.code == 2 and r.out == "", (option, value, r)
            assert option in _one_line(r), (option, value, r)
            assert "usage:" not in r.err
    r = await run("zkwire", "--server", nowhere, "--session-timeout", "2147483.648", "ls", "/")
    assert r.code == 2 and "--session-timeout" in _one_line(r)


async def test_zklock_bad_arguments_exit_2_with_one_line_without_connecting() -> None:
    nowhere = f"127.0.0.1:{closed_port()}"
    cases: list[list[str | bytes]] = [
        ["status", "--server", nowhere, "--session-timeout", "inf", "/l"],
        ["status", "--server", nowhere, "--session-timeout", "1e12", "/l"],
        ["status", "--server", nowhere, "--timeout", "nan", "/l"],
        ["status", "--server", nowhere, "relative"],
        ["status", "--server", nowhere, b"/l\xff"],
        ["run", "--server", nowhere, "--wait", "inf", "/l", "--", "true"],
        ["run", "--server", nowhere, "--grace", "-1", "/l", "--", "true"],
        ["run", "--server", nowhere, "/double//slash", "--", "true"],
        ["run", "--server", nowhere, "--identifier", b"\xff", "/l", "--", "true"],
        ["run", "--server", nowhere, b"/l\xff", "--", "true"],
        ["status", "--server", "not a:connect:string", "/l"],
    ]
    for args in cases:
        start = time.monotonic()
        r = await run("zklock", *args, limit=10)
        assert r.code == 2 and r.out == "", (args, r)
        _one_line(r)
        assert "usage:" not in r.err, (args, r)
        assert time.monotonic() - start < 5


# ------------------------------------------------------------------------------- Ctrl-C and pipes


def _wait_listening(port: int, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_ctrl_c_in_trace_exits_130_quietly(zk_hosts: str) -> None:
    port = closed_port()
    server = zk_hosts.split(",")[0]
    proc = subprocess.Popen(
        [sys.executable, "-m", "zkwire", "trace", "--listen", f"127.0.0.1:{port}", "--server", server],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        _wait_listening(port)
        client = socket.create_connection(("127.0.0.1", port))  # a connection open through the proxy
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        client.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err.decode()
    assert err == b"", err.decode()


def test_ctrl_c_in_a_one_shot_watch_and_in_the_shell_exits_130_quietly(zk_hosts: str, zk_path: str) -> None:
    # Each waits once it has shown it is connected: stat -w says the node does not exist (and waits for
    # it), the shell answers a first command (and waits for the next).
    for args, stdin, ready in (
        (["--timeout", "60", "stat", "-w", zk_path], b"", ("stderr", b"Node does not exist")),
        ([], b"ls /\n", ("stdout", b"]")),
    ):
        proc = subprocess.Popen(
            [sys.executable, "-m", "zkwire", "--server", zk_hosts, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            if stdin:
                proc.stdin.write(stdin)
                proc.stdin.flush()
            stream = proc.stderr if ready[0] == "stderr" else proc.stdout
            seen = stream.readline()
            assert ready[1] in seen, seen
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, (args, out, err)
        assert b"Traceback" not in err and err.count(b"\n") <= 1, err


async def _many_children(hosts: str, path: str, n: int) -> None:
    async with zkwire.open_client(hosts) as zk:
        await zk.create(path)
        for start in range(0, n, 500):
            await zk.multi([Create(f"{path}/child-{i:05d}-{'x' * 40}") for i in range(start, start + 500)])


def _first_line_then_close(cmd: list[str]) -> tuple[int, bytes]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -n 1`
    err = proc.stderr.read()
    return proc.wait(timeout=30), err


async def test_a_closed_pipe_ends_quietly(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    await _many_children(zk_hosts, zk_path, 2000)
    code, err = await trio.to_thread.run_sync(
        _first_line_then_close, [sys.executable, "-m", "zkwire", "--server", zk_hosts, "ls", "-R", zk_path]
    )
    assert err == b"", err.decode()
    assert code == 141
    # zkwire decode of a long capture
    from zkwire.protocol.codec import encode_connect_request, encode_request
    from zkwire.protocol.records import ConnectRequest as CR
    from zkwire.protocol.records import GetDataRequest

    capture = bytearray(encode_connect_request(CR(0, 0, 10000, 0, bytes(16), False)))
    for xid in range(1, 5000):
        capture += encode_request(xid, OpCode.GET_DATA, GetDataRequest(f"/node/{xid}", False))
    path = str(tmp_path / "capture.bin")
    (tmp_path / "capture.bin").write_bytes(capture)
    code, err = await trio.to_thread.run_sync(_first_line_then_close, [sys.executable, "-m", "zkwire", "decode", path])
    assert err == b"", err.decode()
    assert code == 141
