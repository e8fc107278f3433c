"""``zkwire sniff``: live decoding on lo against the real server (root), the error without CAP_NET_RAW,
Ctrl-C with the summary, SIGUSR1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire.shell.main import main as zkwire_main


def _port(zk_hosts: str) -> int:
    return first_server(zk_hosts)[1]


def test_sniff_without_the_capability_is_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket as socket_module

    real = socket_module.socket

    def refuse(family: int = -1, *args: object, **kwargs: object) -> socket_module.socket:
        if family == getattr(socket_module, "AF_PACKET", None):
            raise PermissionError(1, "Operation not permitted")
        return real(family, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket_module, "socket", refuse)
    code = zkwire_main(["sniff", "--iface", "lo", "--port", "2181"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    [line] = err.splitlines()
    assert line.startswith("zkwire sniff: ") and "CAP_NET_RAW" in line


@pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root or CAP_NET_RAW")
def test_sniff_on_an_unknown_interface_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = zkwire_main(["sniff", "--iface", "no-such-if0", "--duration", "1"])
    _, err = capsys.readouterr()
    assert code == 1 and "no-such-if0" in err and len(err.splitlines()) == 1


async def _sniffing(args: list[str]) -> trio.Process:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "zkwire", "sniff", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    seen = b""
    with trio.fail_after(20):
        while b"sniffing" not in seen:
            chunk = await proc.stdout.receive_some()
            assert chunk, seen
            seen += chunk
    return proc


async def _rest(stream: trio.abc.ReceiveStream) -> bytes:
    out = b""
    with trio.fail_after(20):
        while chunk := await stream.receive_some():
            out += chunk
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root or CAP_NET_RAW")
async def test_sniff_decodes_live_traffic_and_prints_the_summary_on_ctrl_c(zk_hosts: str, zk_path: str) -> None:
    port = _port(zk_hosts)
    proc = await _sniffing(["--iface", "lo", "--port", str(port), "--json"])
    try:
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.create(zk_path, b"sniffed")
            for i in range(7):
                await zk.set_data(zk_path, str(i).encode())
            await zk.exists(zk_path + "/missing")
            await zk.delete(zk_path)
        await trio.sleep(0.5)
        proc.send_signal(signal.SIGUSR1)
        await trio.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.stdout is not None and proc.stderr is not None
        out = await _rest(proc.stdout)
        err = await _rest(proc.stderr)
        with trio.fail_after(20):
            await proc.wait()
    assert proc.returncode == 130, err
    assert err == b""
    objs = [json.loads(line) for line in out.splitlines()]
    frames = [o for o in objs if o.get("kind") not in ("connection", "summary")]
    requests = [o["op_name"] for o in frames if o["direction"] == "client"]
    replies = [o["op_name"] for o in frames if o["direction"] == "server" and o["kind"] == "reply"]
    assert requests.count("setData") == 7 and replies.count("setData") == 7
    assert requests.count("create") == 1 and requests.count("delete") == 1
    assert all(o["wall_time"] > 1e9 for o in objs if "wall_time" in o)
    summaries = [o for o in objs if o.get("kind") == "summary"]
    assert len(summaries) == 2  # SIGUSR1, then Ctrl-C
    final = summaries[-1]
    assert final["requests"]["setData"] == 7 and final["requests"]["create"] == 1
    assert final["sessions"]["opened"] == 1 and final["sessions"]["closed"] == 1
    assert final["latency"]["setData"]["count"] == 7
    assert final["errors"] == {"NONODE": 1}  # exists on a missing node: the reply header says NoNode
