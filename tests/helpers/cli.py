"""Running the ``zkwire`` command line as a subprocess, for its tests (tests/tools/test_cli_zkwire_*.py): one
command or several side by side, a shell script on stdin, an interactive run read as it goes, a port nothing
listens on."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass

import trio


@dataclass
class Result:
    code: int
    out: str
    err: str


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZKWIRE_SASL", "ZKWIRE_AUTH"))}
    env.pop("ZKWIRE_SERVER", None)
    env.update(extra or {})
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def zkw(
    hosts: str,
    *args: str,
    stdin: bytes = b"",
    limit: float = 20.0,
    options: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Result:
    """Run ``python -m zkwire --server HOSTS [options] ARGS...`` to completion (``env``: more variables)."""
    cmd = [sys.executable, "-m", "zkwire", "--server", hosts, *options, *args]
    with trio.fail_after(limit):
        done = await trio.run_process(
            cmd, stdin=stdin, capture_stdout=True, capture_stderr=True, check=False, env=_env(env)
        )
    result = Result(done.returncode, done.stdout.decode(), done.stderr.decode())
    assert "Traceback" not in result.err, result.err
    return result


async def zkw_all(hosts: str, cases: list[list[str]], options: tuple[str, ...] = ()) -> list[Result]:
    """Run independent one-shot invocations a few at a time; results in the order of ``cases``."""
    results: list[Result | None] = [None] * len(cases)
    limiter = trio.CapacityLimiter(4)

    async def one(i: int, args: list[str]) -> None:
        async with limiter:
            results[i] = await zkw(hosts, *args, options=options)

    async with trio.open_nursery() as nursery:
        for i, args in enumerate(cases):
            nursery.start_soon(one, i, args)
    return [r for r in results if r is not None]


async def shell_script(hosts: str, lines: list[str], *options: str) -> list[str]:
    """Feed ``lines`` to the shell through a pipe; its output lines (stderr merged, in order)."""
    shell = await start_interactive(hosts, *options)
    for line in lines:
        await shell.send(line)
    code, rest = await shell.finish(limit=30)
    assert code == 0, rest
    return rest.splitlines()


class Interactive:
    """A running ``zkwire`` process whose stdin we write line by line (stderr merged into stdout)."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.output = b""
        self.seen = 0

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(line.encode() + b"\n")

    async def expect(self, text: str, limit: float = 10.0) -> str:
        """Wait until ``text`` appears after what earlier expects consumed; return the output up to it."""
        assert self.process.stdout is not None
        with trio.fail_after(limit):
            while True:
                at = self.output.find(text.encode(), self.seen)
                if at != -1:
                    chunk = self.output[self.seen : at + len(text)].decode()
                    self.seen = at + len(text)
                    return chunk
                data = await self.process.stdout.receive_some(65536)
                if not data:
                    raise AssertionError(f"EOF before {text!r}; output:\n{self.output.decode()}")
                self.output += data

    async def finish(self, limit: float = 10.0) -> tuple[int, str]:
        """Close stdin (end of input) and collect the rest of the output and the exit code."""
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.aclose()
        with trio.fail_after(limit):
            while data := await self.process.stdout.receive_some(65536):
                self.output += data
            code = await self.process.wait()
        rest = self.output[self.seen :].decode()
        assert "Traceback" not in self.output.decode(), self.output.decode()
        return code, rest


async def start_interactive(hosts: str, *args: str) -> Interactive:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "zkwire", "--server", hosts, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_env(),
    )
    return Interactive(process)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
