"""The interactive ``zkwire`` shell on a real pseudo-terminal against the real server: Ctrl-C clears the
line or interrupts the running command and keeps the session, Ctrl-D leaves and closes it, Tab completes
command names, options and znode paths (never writing a name's control characters raw).

The shell runs as a session leader with the pseudo-terminal as its controlling terminal, so that a
``\\x03`` typed into it is the terminal's Ctrl-C (SIGINT to the shell when the line discipline sends one).
Every read has a deadline: a shell that hangs fails the test instead of blocking it.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import sys
import termios
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from helpers.faultproxy import open_fault_proxy

import zkwire
from zkwire.shell.completion import LISTING_WAIT, Completer, candidates
from zkwire.shell.context import Context

#: How long any one expected piece of output may take.
LIMIT = 15.0


def _controlling_terminal() -> None:
    """In the child, after setsid: make stdin (the pseudo-terminal) the controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """The master side of a shell's pseudo-terminal: what it printed, and what we type."""

    def __init__(self, process: trio.Process, master: trio.lowlevel.FdStream, hosts: str) -> None:
        self.process = process
        self.master = master
        self.hosts = hosts
        self.output = b""
        self.seen = 0

    def prompt(self, number: int, state: str = "CONNECTED") -> bytes:
        return f"[zk: {self.hosts}({state}) {number}] ".encode()

    async def type(self, keys: bytes) -> None:
        await self.master.send_all(keys)

    async def _read(self) -> bytes:
        try:
            return await self.master.receive_some(65536)
        except (OSError, trio.BrokenResourceError):  # EIO: the shell has closed its side
            return b""

    async def expect(self, text: bytes, limit: float = LIMIT) -> bytes:
        """Wait for ``text`` after what earlier expects consumed; the output up to and with it."""
        with trio.move_on_after(limit):
            while True:
                at = self.output.find(text, self.seen)
                if at != -1:
                    chunk = self.output[self.seen : at + len(text)]
                    self.seen = at + len(text)
                    return chunk
                data = await self._read()
                if not data:
                    raise AssertionError(f"the shell ended before {text!r}; it printed:\n{self.rest()!r}")
                self.output += data
        raise AssertionError(f"no {text!r} within {limit:g}s; the shell printed:\n{self.rest()!r}")

    def rest(self) -> bytes:
        return self.output[self.seen :]

    async def exit_code(self, limit: float = LIMIT) -> int:
        """Read to the end of the output and wait for the shell to exit."""
        with trio.fail_after(limit):
            while data := await self._read():
                self.output += data
            return await self.process.wait()


@asynccontextmanager
async def shell_on_a_terminal(hosts: str, tmp_path: Path) -> AsyncIterator[Terminal]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))  # no wrapping of long lines
    (tmp_path / "inputrc").write_text("set bell-style none\n")  # no BEL of readline's in the output
    env = dict(os.environ)
    env.pop("ZKWIRE_SERVER", None)
    env.update(
        PYTHONUNBUFFERED="1",
        TERM="dumb",
        INPUTRC=str(tmp_path / "inputrc"),
        ZKWIRE_HISTORY=str(tmp_path / "history"),
    )
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "zkwire", "--server", hosts, "--session-timeout", "30"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=_controlling_terminal,
        )
    finally:
        os.close(slave)
    async with trio.lowlevel.FdStream(master) as stream:
        terminal = Terminal(process, stream, hosts)
        try:
            await terminal.expect(terminal.prompt(0))
            yield terminal
        finally:
            if process.returncode is None:
                process.kill()
                with trio.move_on_after(LIMIT):
                    await process.wait()
    assert b"Traceback" not in terminal.output, terminal.output


async def _owner(hosts: str, path: str) -> int | None:
    """The session owning the ephemeral ``path``, or None when the node is gone (from a client of our own)."""
    async with zkwire.open_client(hosts) as zk:
        stat = await zk.exists(path)
    return None if stat is None else stat.ephemeral_owner


async def test_a_terminal_has_a_prompt_and_history(zk_hosts: str, tmp_path: Path) -> None:
    async with shell_on_a_terminal(zk_hosts, tmp_path) as term:
        await term.type(b"ls /zookeeper\r")
        await term.expect(b"[config, quota]")
        await term.expect(term.prompt(1))
        await term.type(b"quit\r")
        assert await term.exit_code() == 0, term.rest()
    assert (tmp_path / "history").read_text().splitlines()[-2:] == ["ls /zookeeper", "quit"]


async def test_ctrl_c_clears_the_line_and_keeps_the_session_ctrl_d_leaves(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    ephemeral = f"{zk_path}/mine"
    async with shell_on_a_terminal(zk_hosts, tmp_path) as term:
        await term.type(f"create -e {ephemeral} held\r".encode())
        await term.expect(f"Created {ephemeral}".encode())
        await term.expect(term.prompt(1))
        owner = await _owner(zk_hosts, ephemeral)
        assert owner, "the shell's ephemeral node was not created"

        # Ctrl-C with a half-typed line: the line is dropped, the prompt comes back (same number).
        await term.type(b"delete " + ephemeral.encode())
        await term.type(b"\x03")
        await term.expect(term.prompt(1))
        # What is typed next is a line of its own: had "delete ..." survived, this would delete the node.
        await term.type(b"keeper\r")
        await term.expect(b"Command not found: keeper")
        await term.expect(term.prompt(2))
        # Ctrl-C on an empty line: nothing either.
        await term.type(b"\x03")
        await term.expect(term.prompt(2))
        assert term.process.returncode is None

        # The same session lives on: the node is there, still owned by it, and the shell still uses it.
        assert await _owner(zk_hosts, ephemeral) == owner
        await term.type(f"get {ephemeral}\r".encode())
        await term.expect(b"held")
        await term.expect(term.prompt(3))

        # Ctrl-D on an empty line leaves (exit 0) and closes the session: the ephemeral node is gone.
        await term.type(b"\x04")
        assert await term.exit_code() == 0, term.rest()
    assert await _owner(zk_hosts, ephemeral) is None
    history = (tmp_path / "history").read_text().splitlines()
    assert history[-3:] == [f"create -e {ephemeral} held", "keeper", f"get {ephemeral}"], history


async def test_ctrl_c_interrupts_a_running_command_and_the_shell_carries_on(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        await zk.set_data(zk_path, b"reachable")
    ephemeral = f"{zk_path}/mine"
    async with open_fault_proxy(zk_hosts) as proxy, shell_on_a_terminal(proxy.hosts, tmp_path) as term:
        await term.type(f"create -e {ephemeral}\r".encode())
        await term.expect(term.prompt(1))
        owner = await _owner(zk_hosts, ephemeral)
        assert owner

        # Nothing gets through.  A Tab gives up on the listing within its bound and completes nothing.
        proxy.freeze()
        await term.type(f"get {zk_path}/mi\t".encode())
        await term.type(b"\x03")
        await term.expect(f"get {zk_path}/mi^C".encode(), limit=LISTING_WAIT + 5)
        await term.expect(term.prompt(1))
        # A command waits for its reply until Ctrl-C.
        await term.type(f"get {zk_path}\r".encode())
        await term.expect(f"get {zk_path}".encode())
        await trio.sleep(0.5)
        assert term.process.returncode is None
        await term.type(b"\x03")
        await term.expect(b"Interrupted")
        await term.expect(term.prompt(2))
        proxy.thaw()

        # A Ctrl-C at the prompt that came back does not end the shell either.
        await term.type(b"\x03")
        await term.expect(term.prompt(2))
        await term.type(f"get {zk_path}\r".encode())
        await term.expect(b"reachable")
        await term.expect(term.prompt(3))
        assert await _owner(zk_hosts, ephemeral) == owner

        await term.type(b"quit\r")
        assert await term.exit_code() == 0, term.rest()
    assert await _owner(zk_hosts, ephemeral) is None


async def test_tab_completes_commands_options_and_paths(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    # ZooKeeper refuses C0 and C1 controls in names, but not a bidi override or a line separator.
    hostile = "\u202ename\u2028x"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        for name, data in (("alpha-node", b"found it"), ("beta-node", b""), (hostile, b"")):
            await zk.create(f"{zk_path}/{name}", data)
    async with shell_on_a_terminal(zk_hosts, tmp_path) as term:
        # A command name: getAllC<Tab> is getAllChildrenNumber and a space.
        await term.type(f"getAllC\t{zk_path}\r".encode())
        chunk = await term.expect(term.prompt(1))
        assert re.search(rb"\r\n3\r\n", chunk), chunk

        # An option: getAcl's only one is -s.
        await term.type(f"getAcl -\t{zk_path}\r".encode())
        chunk = await term.expect(term.prompt(2))
        assert b"'world,'anyone" in chunk and b"cZxid = " in chunk, chunk

        # A path, from the live session's listing.
        await term.type(f"get {zk_path}/al\t\r".encode())
        chunk = await term.expect(term.prompt(3))
        assert b"found it" in chunk, chunk

        # Two candidates: Tab twice lists them; the hostile name is never written raw to the terminal.
        await term.type(f"stat {zk_path}/\t\t".encode())
        listing = await term.expect(f"{zk_path}/beta-node".encode())
        assert f"{zk_path}/alpha-node".encode() in listing, listing
        await term.type(b"beta-node\r")
        chunk = await term.expect(term.prompt(4))
        assert b"numChildren = 0" in chunk, chunk

        # A failed lookup (no such parent) completes nothing and leaves the prompt working.
        await term.type(f"ls {zk_path}/missing/x\t\x03".encode())
        await term.expect(term.prompt(4))
        await term.type(f"ls {zk_path}\r".encode())
        chunk = await term.expect(term.prompt(5))
        assert b"alpha-node, beta-node" in chunk and b"\\u202ename\\u2028x" in chunk, chunk

        await term.type(b"quit\r")
        assert await term.exit_code() == 0, term.rest()
    for raw in ("\u202e", "\u2028"):
        assert raw.encode() not in term.output, term.output


# ---------------------------------------------------------------------------------------- without a server


def _listing(children: dict[str, list[str]]) -> Callable[[str], list[str]]:
    def list_children(path: str) -> list[str]:
        if path not in children:
            raise zkwire.NoNodeError(path)
        return children[path]

    return list_children


def test_what_a_word_completes_to() -> None:
    tree = _listing({"/": ["app", "apple", "zookeeper"], "/app": ["a b", "it's", "x\u202ey", "ok"]})
    assert candidates("", "getA", tree) == ["getAcl ", "getAllChildrenNumber "]
    assert candidates("", "ex", tree) == ["exit "]
    assert candidates("", "nosuch", tree) == []
    assert candidates("help ", "who", tree) == ["whoami "]
    assert candidates("ls ", "-", tree) == ["-R ", "-s ", "-w "]
    assert candidates("set ", "-v", tree) == ["-v "]
    assert candidates("set -v ", "", tree) == []  # an option's value
    assert candidates("nosuch ", "/", tree) == []
    assert candidates("ls ", "/ap", tree) == ["/app", "/apple"]
    assert candidates("get -s ", "/app/", tree) == ["/app/a\\ b", "/app/it\\'s", "/app/ok"]
    with pytest.raises(zkwire.NoNodeError):  # the completer makes it no completion
        candidates("ls ", "/app/missing/", tree)
    assert candidates("connect ", "/", tree) == []  # not a path: connect needs no session
    assert candidates("ls ", "relative", tree) == []
    # Options named by a word (reconfig's, as ZooKeeper's shell spells them) complete whole.
    assert candidates("", "conf", tree) == ["config "]
    assert candidates("config ", "-", tree) == ["-c ", "-s ", "-w "]
    assert candidates("reconfig ", "-", tree) == ["-add ", "-file ", "-members ", "-remove ", "-s ", "-v "]
    assert candidates("reconfig ", "-re", tree) == ["-remove "]
    # A flag's long name completes too.
    assert candidates("session ", "-", tree) == ["-j ", "--json "]
    assert candidates("session ", "--", tree) == ["--json "]
    assert candidates("reconfig -remove ", "", tree) == []  # the option's value
    assert candidates("reconfig -add ", "-", tree) == []
    assert candidates("help ", "reco", tree) == ["reconfig "]


async def test_the_completer_never_raises_into_readline() -> None:
    ctx = Context(hosts="127.0.0.1:1", interactive=True)  # never connected: no listing to be had
    token = trio.lowlevel.current_trio_token()

    def broken() -> tuple[str, int]:
        raise RuntimeError("readline state unreadable")

    def complete(line: Callable[[], tuple[str, int]], text: str) -> list[str]:
        completer = Completer(ctx, token, line)
        out: list[str] = []
        while (match := completer(text, len(out))) is not None:  # readline asks until it gets None
            out.append(match)
        return out

    for line, text, expected in (
        (lambda: ("ls /zoo", 3), "/zoo", []),
        (broken, "/zoo", []),
        (lambda: ("ls -", 3), "-", ["-R ", "-s ", "-w "]),
    ):
        assert await trio.to_thread.run_sync(complete, line, text) == expected
