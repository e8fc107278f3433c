"""The tracing proxy's upstreams: several servers tried in order (unreachable ones skipped, said), TLS
towards a TLS-enabled real server (and a certificate it cannot verify refused), option errors."""

from __future__ import annotations

import io
import json
import socket
import ssl
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire.errors import InvalidArgumentError
from zkwire.shell.main import main as zkwire_main
from zkwire.testing.embedded import EmbeddedZooKeeper
from zkwire.trace.tracer import TraceOptions, serve_trace
from zkwire.trace.upstream import Upstreams, tls_context


def _server(hosts: str) -> tuple[str, int]:
    return first_server(hosts)


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _notes(out: io.StringIO) -> list[str]:
    return [o["note"] for o in map(json.loads, out.getvalue().splitlines()) if o["kind"] == "connection"]


def _ops(out: io.StringIO) -> list[str]:
    objs = map(json.loads, out.getvalue().splitlines())
    return [o["op_name"] for o in objs if o["kind"] == "request"]


async def _session_through(port: int, path: str) -> bytes:
    with trio.fail_after(30):
        async with zkwire.open_client(f"127.0.0.1:{port}", follow_ensemble=False) as zk:
            await zk.create(path, b"via proxy")
            data, _ = await zk.get_data(path)
            await zk.delete(path)
            return data


async def test_upstreams_are_tried_in_order(zk_hosts: str, zk_path: str) -> None:
    dead = ("127.0.0.1", _closed_port())
    out = io.StringIO()
    upstreams = Upstreams([dead, _server(zk_hosts)], connect_timeout=3)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), upstreams, TraceOptions(json_lines=True, out=out))
        assert await _session_through(port, zk_path) == b"via proxy"
        nursery.cancel_scope.cancel()
    [opened] = [n for n in _notes(out) if n.startswith("open:")]
    assert f"-> server {_server(zk_hosts)[0]}:{_server(zk_hosts)[1]} after 127.0.0.1:{dead[1]}: " in opened
    assert _ops(out).count("create") == 1


async def test_no_upstream_answering_closes_the_client_saying_why() -> None:
    dead = [("127.0.0.1", _closed_port()), ("127.0.0.1", _closed_port())]
    out = io.StringIO()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), Upstreams(dead), TraceOptions(out=out))
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            assert await stream.receive_some(10) == b""  # closed
        with trio.fail_after(5):
            while "no server could be reached" not in out.getvalue():
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    line = out.getvalue().strip()
    assert f"127.0.0.1:{dead[0][1]}" in line and f"127.0.0.1:{dead[1][1]}" in line


async def test_tls_towards_the_server(tls_server: tuple[EmbeddedZooKeeper, Path]) -> None:
    server, cert = tls_server
    out = io.StringIO()
    upstreams = Upstreams([_server(server.secure_hosts)], tls_context(str(cert)))
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), upstreams, TraceOptions(json_lines=True, out=out))
        assert await _session_through(port, "/through-tls-proxy") == b"via proxy"
        nursery.cancel_scope.cancel()
    assert any(n.startswith("open:") and n.endswith("(TLS)") for n in _notes(out))
    assert _ops(out) == ["create", "getData", "delete", "closeSession"]
    # A server certificate the proxy cannot verify (system CAs only): the client's connection is closed.
    out = io.StringIO()
    upstreams = Upstreams([_server(server.secure_hosts)], tls_context(), connect_timeout=3)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), upstreams, TraceOptions(out=out))
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            assert await stream.receive_some(10) == b""
        with trio.fail_after(5):
            while "no server could be reached" not in out.getvalue():
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    assert "CERTIFICATE_VERIFY_FAILED" in out.getvalue() or "certificate" in out.getvalue()


def test_tls_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidArgumentError, match=r"missing\.pem"):
        tls_context(str(tmp_path / "missing.pem"))
    with pytest.raises(InvalidArgumentError, match="--cert"):
        tls_context(None, None, str(tmp_path / "key.pem"))
    assert isinstance(tls_context(), ssl.SSLContext)
    for args in (
        ["trace", "--listen", "127.0.0.1:0"],  # no server
        ["trace", "--listen", "127.0.0.1:0", "--server", "127.0.0.1:2181", "--ca", "x.pem"],  # no --upstream-tls
        ["trace", "--listen", "127.0.0.1:0", "--upstream", "a:1,b:x"],  # a bad port
        ["trace", "--listen", "127.0.0.1:0", "--upstream", "a:1", "--upstream-tls", "--ca", str(tmp_path / "no.pem")],
    ):
        capsys.readouterr()
        try:
            code = zkwire_main(args)
        except SystemExit as e:
            code = int(e.code or 0)
        _, err = capsys.readouterr()
        assert code == 2, (args, err)
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
