"""The ``zkwire`` command line's usage and connection errors, run as a subprocess: usage errors exit 2
without connecting, a refused connection or credential exits 3; --help, --version and the console script."""

from __future__ import annotations

import sys
from pathlib import Path

import trio
from helpers.cli import Result, closed_port, zkw, zkw_all

import zkwire

# ---------------------------------------------------------------------------------------- usage and connection errors


async def test_usage_errors_exit_2_without_connecting() -> None:
    nowhere = f"127.0.0.1:{closed_port()}"  # proves that nothing tries to connect
    cases = [
        ["bogus"],
        ["ls"],
        ["ls", "/a", "/b"],
        ["ls", "-x", "/"],
        ["ls", "--long", "/"],
        ["get", "relative/path"],
        ["get", "/double//slash"],
        ["set", "-v", "abc", "/a", "x"],
        ["set", "-v"],
        ["delete", "-v", "99999999999", "/a"],
        ["addWatch", "-m", "SOMETIMES", "/a"],
        ["removewatches", "/a", "-c", "-d"],
        ["history"],
        ["connect", "h:1"],
        ["four", "RUOK"],
        ["create", "/a", "d", "world:anyone:q"],
        ["delquota", "-n", "-b", "/a"],
        ["ls", "-R", "-s", "/"],
    ]
    with trio.fail_after(40):
        results = await zkw_all(nowhere, cases)
    for args, r in zip(cases, results, strict=True):
        assert r.code == 2, (args, r)
        assert r.out == "" and r.err.count("\n") == 1, (args, r)
    assert results[0].err == "Command not found: bogus (try help)\n"
    assert results[5].err == "Invalid path 'relative/path': must start with \"/\"\n"
    assert results[7].err == "set: version must be a number, not 'abc'\n"
    assert results[17].err == "ls: -R cannot be combined with -s or -w\n"
    r = await zkw(nowhere, "ls", options=("--timeout", "soon"))
    assert r.code == 2 and "--timeout" in r.err
    r = await zkw("not a:connect:string", "ls", "/")
    assert r.code == 2 and r.err.count("\n") == 1


async def test_connection_refused_exits_3_quickly() -> None:
    port = closed_port()
    nowhere = f"127.0.0.1:{port}"
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        results: dict[str, Result] = {}

        async def run(name: str, stdin: bytes, *args: str) -> None:
            results[name] = await zkw(nowhere, *args, options=("--timeout", "1"), stdin=stdin)

        nursery.start_soon(run, "one-shot", b"", "ls", "/")
        nursery.start_soon(run, "shell", b"ls /\n")
        nursery.start_soon(run, "four", b"", "four", "ruok")
    assert trio.current_time() - start < 8
    r = results["one-shot"]
    assert (r.code, r.out, r.err) == (3, "", f"Cannot connect to 127.0.0.1:{port}: Connection refused\n")
    r = results["shell"]
    assert (r.code, r.err) == (3, f"Cannot connect to 127.0.0.1:{port}: Connection refused\n")
    r = results["four"]
    assert (r.code, r.err) == (3, f"127.0.0.1:{port}: Connection refused\n")


async def test_help_and_version(zk_hosts: str) -> None:
    help_, version, long_help = await zkw_all(zk_hosts, [["help"], ["version"], ["--help"]])
    assert help_.code == 0
    for usage in ("ls [-s] [-w] [-R] path", "create [-s] [-e] [-c] [-t ttl] path [data] [acl]", "setquota -n|-b"):
        assert usage in help_.out
    assert (version.code, version.out) == (0, f"zkwire {zkwire.__version__}\n")
    assert long_help.code == 0 and "exit codes:" in long_help.out


async def test_console_script_and_subprogram_hook(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("zkwire")
    if script.exists():
        with trio.fail_after(20):
            done = await trio.run_process([str(script), "version"], capture_stdout=True, check=False)
        assert done.returncode == 0 and done.stdout.startswith(b"zkwire ")
    # "decode" goes to the tracer module, which reads its own arguments.
    capture = tmp_path / "capture.bin"
    capture.write_bytes(b"")
    with trio.fail_after(20):
        done = await trio.run_process(
            [sys.executable, "-m", "zkwire", "decode", str(capture)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    with trio.fail_after(20):
        done = await trio.run_process(
            [sys.executable, "-m", "zkwire", "decode", str(tmp_path / "missing.bin")],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1 and b"Traceback" not in done.stderr


async def test_cli_with_a_refused_credential_exits_3(zk_hosts: str) -> None:
    r = await zkw(zk_hosts, "ls", "/", options=("--auth", "bogus:x"))
    assert r.code == 3, r
    assert "Authentication failed" in r.err
    assert "bogus" not in r.out
    r = await zkw(zk_hosts, "ls", "/", options=("--auth", "digest:u:pw"))
    assert r.code == 0 and "zookeeper" in r.out
