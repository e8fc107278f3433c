"""The commands of the ``zkwire`` shell, and the session context they run in.

Every command is a :class:`Command` in :data:`COMMANDS`: its usage line, the options it takes, how many
positional arguments, an optional ``check`` that validates and converts arguments *before* any
connection is made, and an async handler.  Adding a command is one decorated function.

Options may come before or after the positional arguments (``removewatches /x -a``); ``--`` ends them,
and an argument that looks like a negative number (``-5``) is positional.  Text data is sent as UTF-8.

Outcomes map to exit codes (see :data:`EXIT_CODES`): 0 success, 1 the operation failed (the server
refused it: no node, bad version, no auth, ...), 2 usage (unknown command, wrong arguments, invalid path
or ACL text), 3 no usable session (cannot connect, connection lost, session expired), 4 a watch did not
fire within the timeout (one-shot mode only).
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TextIO

import trio

from ..acl import parse_acl
from ..client.api import Client, open_client
from ..client.fourletter import FOUR_LETTER_WORDS, FourLetterWordError, connect_error_reason, four_letter_word
from ..client.watchers import Watch, WatchedEvent
from ..constants import MAX_TTL_MS, EventType, WatcherType
from ..errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    InvalidInputError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    NoWatcherError,
    ServerError,
    SessionExpiredError,
    ZKError,
)
from ..protocol.records import ACL
from ..sansio.hosts import parse_connect_string
from ..sansio.ops import Create, Delete, GetChildren, create_op
from ..sansio.paths import validate_path
from ..sansio.session import SessionState
from ..terminal import escape_controls
from . import format as fmt
from .runtime import is_utf8

__all__ = [
    "Args",
    "Command",
    "COMMANDS",
    "Context",
    "UsageError",
    "CommandError",
    "ConnectError",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_CONNECTION",
    "EXIT_NO_EVENT",
    "EXIT_INTERRUPTED",
    "EXIT_PIPE_CLOSED",
    "EXIT_CODES",
    "command",
    "parse_command_line",
    "parse_quota",
    "format_limits",
    "QUOTA_ROOT",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CONNECTION = 3
EXIT_NO_EVENT = 4
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141

EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_FAILED: "the operation failed (e.g. node does not exist, version mismatch, not authorized)",
    EXIT_USAGE: "usage error (unknown command, bad option or argument, invalid path, invalid ACL text)",
    EXIT_CONNECTION: "no usable session (cannot connect within --timeout, connection lost, session expired)",
    EXIT_NO_EVENT: "one-shot -w / addWatch: the watch did not fire within --timeout",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_PIPE_CLOSED: "the output was closed (e.g. piped into head)",
}

QUOTA_ROOT = "/zookeeper/quota"
QUOTA_LIMITS = "zookeeper_limits"
QUOTA_STATS = "zookeeper_stats"


class UsageError(Exception):
    """The command line is wrong: exit code 2, nothing was sent."""


class CommandError(Exception):
    """The command could not do its work (a one-line reason): exit code 1."""


class ConnectError(Exception):
    """No usable session: exit code 3."""


@dataclass
class Args:
    """A parsed command line: option flags, option values, positionals, and values converted by checks."""

    command: str
    flags: set[str] = field(default_factory=set)
    values: dict[str, str] = field(default_factory=dict)
    pos: list[str] = field(default_factory=list)
    parsed: dict[str, object] = field(default_factory=dict)

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def arg(self, index: int, default: str | None = None) -> str | None:
        return self.pos[index] if index < len(self.pos) else default


Handler = Callable[["Context", Args], Awaitable[int | None]]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler
    flags: str = ""
    valued: str = ""
    min_args: int = 0
    max_args: int = 0
    session: bool = True
    shell_only: bool = False
    check: Callable[[Args], None] | None = None


COMMANDS: dict[str, Command] = {}
ALIASES = {"exit": "quit", "?": "help"}


def command(
    name: str,
    usage: str,
    summary: str,
    *,
    flags: str = "",
    valued: str = "",
    args: tuple[int, int] = (0, 0),
    session: bool = True,
    shell_only: bool = False,
    check: Callable[[Args], None] | None = None,
) -> Callable[[Handler], Handler]:
    """Register a command (the decorated handler)."""

    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(
            name, usage, summary, handler, flags, valued, args[0], args[1], session, shell_only, check
        )
        return handler

    return register


def lookup(name: str) -> Command:
    spec = COMMANDS.get(ALIASES.get(name, name))
    if spec is None:
        # Be forgiving about case (getacl, GETACL) when it is unambiguous.
        matches = [c for c in COMMANDS.values() if c.name.lower() == name.lower()]
        if len(matches) == 1:
            return matches[0]
        raise UsageError(f"Command not found: {name} (try help)")
    return spec


def parse_args(spec: Command, tokens: list[str]) -> Args:
    """Options and positionals of one command; raises :class:`UsageError`.

    An argument that is not valid UTF-8 is refused by position, never repeated (it may be a credential).
    """
    for n, token in enumerate(tokens, 1):
        if not is_utf8(token):
            raise UsageError(f"{spec.name}: argument {n} is not valid UTF-8 text")
    a = Args(spec.name)
    only_positional = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if only_positional or len(token) < 2 or token[0] != "-" or token[1].isdigit():
            a.pos.append(token)
            continue
        if token == "--":
            only_positional = True
            continue
        if token.startswith("--"):
            raise _usage(spec, f"unknown option {token} (zkwire's own options go before the command)")
        letters = token[1:]
        for j, letter in enumerate(letters):
            if letter in spec.valued:
                value: str | None = letters[j + 1 :] or None
                if value is None:
                    if i >= len(tokens):
                        raise _usage(spec, f"option -{letter} needs a value")
                    value = tokens[i]
                    i += 1
                a.values[letter] = value
                break
            if letter in spec.flags:
                a.flags.add(letter)
                continue
            raise _usage(spec, f"unknown option -{letter}")
    if not spec.min_args <= len(a.pos) <= spec.max_args:
        if len(a.pos) < spec.min_args:
            raise _usage(spec, "missing argument")
        raise _usage(spec, f"unexpected argument {a.pos[spec.max_args]!r}")
    if spec.check is not None:
        spec.check(a)
    return a


def _usage(spec: Command, message: str) -> UsageError:
    return UsageError(f"{spec.name}: {message}; usage: {spec.usage}")


def parse_command_line(line: str) -> list[str]:
    """Split a shell line into words (quotes group words: ``create /a "two words"``)."""
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError as e:
        raise UsageError(f"cannot parse the line: {e}") from None


# ---------------------------------------------------------------------------------------- checks


def _int(spec_name: str, text: str, what: str, minimum: int, maximum: int = (1 << 31) - 1) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise UsageError(f"{spec_name}: {what} must be a number, not {text!r}") from None
    if not minimum <= value <= maximum:
        raise UsageError(f"{spec_name}: {what} must be from {minimum} to {maximum}, not {value}")
    return value


def _path_at(index: int, *, sequential_flag: str | None = None) -> Callable[[Args], None]:
    def check(a: Args) -> None:
        if index < len(a.pos):
            validate_path(a.pos[index], sequential=sequential_flag is not None and a.has(sequential_flag))

    return check


def _version(a: Args) -> None:
    if "v" in a.values:
        a.parsed["version"] = _int(a.command, a.values["v"], "version", -1)


def _acl_at(index: int) -> Callable[[Args], None]:
    def check(a: Args) -> None:
        if index < len(a.pos):
            a.parsed["acl"] = parse_acl(a.pos[index])

    return check


def _all(*checks: Callable[[Args], None]) -> Callable[[Args], None]:
    def check(a: Args) -> None:
        for c in checks:
            c(a)

    return check


def _one_of(letters: str, *, required: bool) -> Callable[[Args], None]:
    def check(a: Args) -> None:
        given = [x for x in letters if x in a.flags or x in a.values]
        if len(given) > 1:
            raise UsageError(f"{a.command}: use only one of " + ", ".join(f"-{x}" for x in letters))
        if required and not given:
            raise UsageError(f"{a.command}: one of " + ", ".join(f"-{x}" for x in letters) + " is required")

    return check


# ---------------------------------------------------------------------------------------- context


class Context:
    """What commands run against: the session (if any), output streams, shell state."""

    def __init__(
        self,
        *,
        hosts: str,
        session_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        auth: list[tuple[str, str]] | None = None,
        interactive: bool = False,
        out: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.hosts = hosts
        self.session_timeout = session_timeout
        self.connect_timeout = connect_timeout
        self.auth = list(auth or ())
        self.interactive = interactive
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.client: Client | None = None
        self.nursery: trio.Nursery | None = None
        self.print_watches = True
        self.history: dict[int, str] = {}
        self.command_number = 0
        self.quit_requested = False
        #: One-shot watches and persistent watches registered, and events printed so far.
        self.watches_set = 0
        self.persistent_watches = 0
        self.events_seen = 0
        self.event_arrived = trio.Event()
        #: Called around output that arrives while the shell waits for input (to redraw the prompt).
        self.before_async_output: Callable[[], None] | None = None
        self.after_async_output: Callable[[], None] | None = None
        self._conn_done: trio.Event | None = None
        self._conn_finished: trio.Event | None = None

    # ------------------------------------------------------------------ output

    def print(self, text: str = "") -> None:
        """One line of output; control characters (from the wire or not) are shown escaped."""
        self.out.write(escape_controls(text, keep="\n\t") + "\n")
        self.out.flush()

    def error(self, text: str) -> None:
        self.out.flush()
        self.err.write(escape_controls(text, keep="\n\t") + "\n")
        self.err.flush()

    def print_async(self, text: str) -> None:
        """Output not caused by the current command (watch events, state changes)."""
        if self.before_async_output is not None:
            self.before_async_output()
        self.print(text)
        if self.after_async_output is not None:
            self.after_async_output()

    def emit_event(self, event: WatchedEvent) -> None:
        self.events_seen += 1
        self.event_arrived.set()
        if not self.print_watches:
            return
        if self.interactive:
            self.print_async(f"WATCHER::\n\n{fmt.format_event(event)}")
        else:
            self.print(fmt.format_event(event))

    # ------------------------------------------------------------------ session

    @property
    def state(self) -> SessionState | None:
        return self.client.state if self.client is not None else None

    def require_client(self) -> Client:
        client = self.client
        if client is None:
            raise ConnectError("Not connected (use: connect HOST:PORT)")
        return client

    async def connect(self, hosts: str | None = None) -> None:
        """Close the current session (if any) and open one to ``hosts``; raises :class:`ConnectError`."""
        hosts = hosts if hosts is not None else self.hosts
        parse_connect_string(hosts)  # InvalidArgumentError (usage) before anything else
        await self.close()
        assert self.nursery is not None
        done, finished = trio.Event(), trio.Event()
        client: Client = await self.nursery.start(self._run_connection, hosts, done, finished)
        self.client, self._conn_done, self._conn_finished = client, done, finished
        try:
            with trio.fail_after(self.connect_timeout):
                await client.wait_connected()
        except trio.TooSlowError:
            await self.close()
            raise ConnectError(await _connect_failure(hosts, self.connect_timeout)) from None
        except AuthFailedError:
            await self.close()
            raise ConnectError(f"Authentication failed for {hosts}") from None
        except ZKError as e:
            await self.close()
            raise ConnectError(f"Cannot connect to {hosts}: {e}") from None
        except BaseException:
            await self.close()
            raise
        self.hosts = hosts

    async def _run_connection(
        self,
        hosts: str,
        done: trio.Event,
        finished: trio.Event,
        task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        try:
            async with open_client(
                hosts, session_timeout=self.session_timeout, auth=self.auth, wait_connected=False
            ) as client:
                task_status.started(client)
                started = True
                if self.interactive:
                    client.spawn(lambda: self._report_states(client), name="zkwire shell states")
                await done.wait()
        except ZKError:
            if not started:
                raise
        finally:
            finished.set()

    async def _report_states(self, client: Client) -> None:
        """Shell: print session state changes like watch events (after the first connection)."""
        connected_once = False
        previous: SessionState | None = None
        async for state in client.states():
            if state.is_connected:
                if connected_once and state is not previous:
                    self._print_state(client, state)
                connected_once = True
            elif connected_once and state is not previous and state is not SessionState.CLOSED:
                self._print_state(client, state)
            previous = state

    def _print_state(self, client: Client, state: SessionState) -> None:
        if client is self.client and self.print_watches:
            self.print_async(f"WATCHER::\n\n{fmt.format_state_event(state)}")

    async def close(self) -> None:
        """Close the session, if one is open (waits for the server's answer, briefly)."""
        if self.client is None:
            return
        self.client = None
        assert self._conn_done is not None and self._conn_finished is not None
        self._conn_done.set()
        with trio.CancelScope(shield=True):
            await self._conn_finished.wait()

    # ------------------------------------------------------------------ watches

    def watch(self, w: Watch) -> None:
        """Print the event of a one-shot watch when it fires (while the session lives)."""
        client = self.require_client()
        self.watches_set += 1

        async def wait_and_print() -> None:
            try:
                event = await w.wait()
            except ZKError:
                return  # the session ended; its watches with it
            self.emit_event(event)

        client.spawn(wait_and_print, name=f"zkwire watch {w.path}")

    async def persistent_watch(self, path: str, recursive: bool) -> None:
        """addWatch: print every event until the watch is removed or the session ends."""
        client = self.require_client()
        ready = trio.Event()
        failure: list[BaseException] = []

        async def keep() -> None:
            try:
                async with client.add_watch(path, recursive=recursive) as pw:
                    ready.set()
                    async for event in pw:
                        self.emit_event(event)
            except NoWatcherError as e:
                if ready.is_set():
                    # removewatches took it away: say so, as the server's removal event would.
                    self.emit_event(WatchedEvent(EventType.PERSISTENT_WATCH_REMOVED, path))
                else:
                    failure.append(e)
            except ZKError as e:
                if not ready.is_set():
                    failure.append(e)
            finally:
                ready.set()

        client.spawn(keep, name=f"zkwire addWatch {path}")
        await ready.wait()
        if failure:
            raise failure[0]
        self.persistent_watches += 1

    # ------------------------------------------------------------------ running commands

    def record(self, line: str) -> None:
        self.history[self.command_number] = line
        self.command_number += 1

    async def execute_line(self, line: str) -> int:
        """Run one shell line; print its output or its one-line error; return its exit code."""
        try:
            words = parse_command_line(line)
        except UsageError as e:
            self.error(str(e))
            return EXIT_USAGE
        if not words:
            return EXIT_OK
        return await self.execute(words)

    async def execute(self, words: list[str]) -> int:
        try:
            spec = lookup(words[0])
            args = parse_args(spec, words[1:])
            if spec.shell_only and not self.interactive:
                raise UsageError(f"{spec.name}: only available in the interactive shell")
            if spec.session:
                self.require_client()
            code = await spec.handler(self, args)
            return EXIT_OK if code is None else code
        except UsageError as e:
            self.error(str(e))
            return EXIT_USAGE
        except InvalidInputError as e:
            self.error(str(e))
            return EXIT_USAGE
        except CommandError as e:
            self.error(str(e))
            return EXIT_FAILED
        except ConnectError as e:
            self.error(str(e))
            return EXIT_CONNECTION
        except (ConnectionLossError, SessionExpiredError, ClientClosedError) as e:
            self.error(_describe_error(e))
            return EXIT_CONNECTION
        except ZKError as e:
            self.error(_describe_error(e))
            return EXIT_FAILED


def _describe_error(e: ZKError) -> str:
    if isinstance(e, ServerError) or str(e):
        return str(e)
    return type(e).__name__


async def _connect_failure(hosts: str, waited: float) -> str:
    """Why nothing answered: try the first host once, for a reason such as "Connection refused"."""
    base = f"Cannot connect to {hosts} within {waited:g}s"
    try:
        host_list, _ = parse_connect_string(hosts)
    except ZKError:
        return base
    first = host_list[0]
    with trio.move_on_after(min(2.0, waited)):
        try:
            stream = await trio.open_tcp_stream(first.host, first.port)
        except OSError as e:
            return f"Cannot connect to {first.host}:{first.port}: {connect_error_reason(e)}"
        await stream.aclose()
    return base


def _join(parent: str, child: str) -> str:
    return f"/{child}" if parent == "/" else f"{parent}/{child}"


def _data(text: str | None) -> bytes:
    return (text or "").encode("utf-8")


async def _walk(client: Client, root: str) -> list[str]:
    """``root`` and all its descendants, breadth first (children sorted), a level per round trip."""
    out = [root]
    level = [root]
    first = True
    while level:
        next_level: list[str] = []
        for start in range(0, len(level), 1000):
            chunk = level[start : start + 1000]
            results = await client.pipeline([GetChildren(p) for p in chunk])
            for parent, result in zip(chunk, results, strict=True):
                if isinstance(result, NoNodeError) and not first:
                    continue  # removed meanwhile
                if isinstance(result, BaseException):
                    raise result
                assert isinstance(result, list)
                for child in result:
                    path = _join(parent, child)
                    out.append(path)
                    next_level.append(path)
        level = next_level
        first = False
    return out


# ---------------------------------------------------------------------------------------- commands


@command(
    "ls",
    "ls [-s] [-w] [-R] path",
    "list the children of a node (-s with its stat, -w watch for child changes, -R the whole subtree)",
    flags="swR",
    args=(1, 1),
    check=_path_at(0),
)
async def cmd_ls(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    path = a.pos[0]
    if a.has("R"):
        if a.has("s") or a.has("w"):
            raise UsageError("ls: -R cannot be combined with -s or -w")
        for p in await _walk(client, path):
            ctx.print(p)
        return
    if a.has("s"):
        if a.has("w"):
            children, stat, w = await client.get_children_with_stat(path, watch=True)
            ctx.watch(w)
        else:
            children, stat = await client.get_children_with_stat(path)
        ctx.print(fmt.format_list(children))
        ctx.print(fmt.format_stat(stat))
        return
    if a.has("w"):
        children, w = await client.get_children(path, watch=True)
        ctx.watch(w)
    else:
        children = await client.get_children(path)
    ctx.print(fmt.format_list(children))


def _check_create(a: Args) -> None:
    _path_at(0, sequential_flag="s")(a)
    ttl = None
    if "t" in a.values:
        ttl = _int("create", a.values["t"], "ttl (milliseconds)", 1, MAX_TTL_MS)
        a.parsed["ttl"] = ttl
    create_op(ephemeral=a.has("e"), sequential=a.has("s"), container=a.has("c"), ttl=ttl)
    _acl_at(2)(a)


@command(
    "create",
    "create [-s] [-e] [-c] [-t ttl] path [data] [acl]",
    "create a node (-s sequential, -e ephemeral, -c container, -t ttl in ms)",
    flags="sec",
    valued="t",
    args=(1, 3),
    check=_check_create,
)
async def cmd_create(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    ttl = a.parsed.get("ttl")
    acl = a.parsed.get("acl")
    created = await client.create(
        a.pos[0],
        _data(a.arg(1)),
        acl=acl if isinstance(acl, tuple) else None,
        ephemeral=a.has("e"),
        sequential=a.has("s"),
        container=a.has("c"),
        ttl=ttl if isinstance(ttl, int) else None,
    )
    ctx.print(f"Created {created}")


@command(
    "stat",
    "stat [-w] path",
    "show a node's stat (-w: watch for its creation, change or deletion)",
    flags="w",
    args=(1, 1),
    check=_path_at(0),
)
async def cmd_stat(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    path = a.pos[0]
    if a.has("w"):
        stat, w = await client.exists(path, watch=True)
        ctx.watch(w)
    else:
        stat = await client.exists(path)
    if stat is None:
        raise NoNodeError(path)
    ctx.print(fmt.format_stat(stat))


@command(
    "get",
    "get [-s] [-w] path",
    "show a node's data (-s with its stat, -w watch for changes)",
    flags="sw",
    args=(1, 1),
    check=_path_at(0),
)
async def cmd_get(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    path = a.pos[0]
    if a.has("w"):
        data, stat, w = await client.get_data(path, watch=True)
        ctx.watch(w)
    else:
        data, stat = await client.get_data(path)
    ctx.print(fmt.format_data(data))
    if a.has("s"):
        ctx.print(fmt.format_stat(stat))


@command(
    "set",
    "set [-s] [-v version] path data",
    "replace a node's data (-v only if its data version matches, -s show the new stat)",
    flags="s",
    valued="v",
    args=(2, 2),
    check=_all(_path_at(0), _version),
)
async def cmd_set(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    version = a.parsed.get("version", -1)
    assert isinstance(version, int)
    stat = await client.set_data(a.pos[0], _data(a.pos[1]), version)
    if a.has("s"):
        ctx.print(fmt.format_stat(stat))


@command(
    "delete",
    "delete [-v version] path",
    "delete a node without children (-v only if its data version matches)",
    valued="v",
    args=(1, 1),
    check=_all(_path_at(0), _version),
)
async def cmd_delete(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    version = a.parsed.get("version", -1)
    assert isinstance(version, int)
    await client.delete(a.pos[0], version)


def _check_deleteall(a: Args) -> None:
    _path_at(0)(a)
    if a.pos[0] == "/":
        raise UsageError("deleteall: refusing to delete everything under /")
    a.parsed["batch"] = _int("deleteall", a.values["b"], "batch size", 1, 100_000) if "b" in a.values else 1000


@command(
    "deleteall",
    "deleteall path [-b batch size]",
    "delete a node and all its descendants",
    valued="b",
    args=(1, 1),
    check=_check_deleteall,
)
async def cmd_deleteall(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    batch = a.parsed["batch"]
    assert isinstance(batch, int)
    root = a.pos[0]
    for _attempt in range(5):
        nodes = await _walk(client, root)
        retry = False
        ordered = list(reversed(nodes))  # deepest first: children before their parents
        for start in range(0, len(ordered), batch):
            chunk = ordered[start : start + batch]
            results = await client.pipeline([Delete(p) for p in chunk])
            for result in results:
                if isinstance(result, NoNodeError):
                    continue
                if isinstance(result, NotEmptyError):
                    retry = True  # a child was created meanwhile
                    continue
                if isinstance(result, BaseException):
                    raise result
        if not retry:
            return
    raise CommandError(f"deleteall: {root} keeps getting new children")


@command(
    "getAcl",
    "getAcl [-s] path",
    "show a node's ACL (-s with its stat)",
    flags="s",
    args=(1, 1),
    check=_path_at(0),
)
async def cmd_get_acl(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    acls, stat = await client.get_acl(a.pos[0])
    ctx.print(fmt.format_acl_entries(acls))
    if a.has("s"):
        ctx.print(fmt.format_stat(stat))


@command(
    "setAcl",
    "setAcl [-s] [-v version] [-R] path acl",
    "replace a node's ACL, e.g. world:anyone:cdrwa,digest:user:hash:r (-v acl version, -R recursive)",
    flags="sR",
    valued="v",
    args=(2, 2),
    check=_all(_path_at(0), _version, _acl_at(1)),
)
async def cmd_set_acl(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    version = a.parsed.get("version", -1)
    acl = a.parsed["acl"]
    assert isinstance(version, int) and isinstance(acl, tuple)
    acls: tuple[ACL, ...] = acl
    path = a.pos[0]
    stat = await client.set_acl(path, acls, version)
    if a.has("R"):
        for p in (await _walk(client, path))[1:]:
            try:
                await client.set_acl(p, acls)
            except NoNodeError:
                continue
    if a.has("s"):
        ctx.print(fmt.format_stat(stat))


def _check_addauth(a: Args) -> None:
    if not a.pos[0]:
        raise UsageError("addauth: the scheme must not be empty")


@command(
    "addauth",
    "addauth scheme auth",
    "authenticate the session (e.g. addauth digest user:password)",
    args=(2, 2),
    check=_check_addauth,
)
async def cmd_addauth(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    await client.add_auth(a.pos[0], a.pos[1])
    ctx.auth.append((a.pos[0], a.pos[1]))


@command("sync", "sync path", "wait until the server has caught up with the leader", args=(1, 1), check=_path_at(0))
async def cmd_sync(ctx: Context, a: Args) -> None:
    await ctx.require_client().sync(a.pos[0])
    ctx.print("Sync is OK")


@command(
    "getEphemerals",
    "getEphemerals [path]",
    "list this session's ephemeral nodes (under path)",
    args=(0, 1),
    check=_path_at(0),
)
async def cmd_get_ephemerals(ctx: Context, a: Args) -> None:
    ctx.print(fmt.format_list(await ctx.require_client().get_ephemerals(a.arg(0) or "/")))


@command(
    "getAllChildrenNumber",
    "getAllChildrenNumber path",
    "count all descendants of a node",
    args=(1, 1),
    check=_path_at(0),
)
async def cmd_get_all_children_number(ctx: Context, a: Args) -> None:
    ctx.print(str(await ctx.require_client().get_all_children_number(a.pos[0])))


def _check_add_watch(a: Args) -> None:
    _path_at(0)(a)
    mode = a.values.get("m", "PERSISTENT_RECURSIVE").upper()
    if mode not in ("PERSISTENT", "PERSISTENT_RECURSIVE"):
        raise UsageError(f"addWatch: mode must be PERSISTENT or PERSISTENT_RECURSIVE, not {a.values['m']!r}")
    a.parsed["recursive"] = mode == "PERSISTENT_RECURSIVE"


@command(
    "addWatch",
    "addWatch [-m mode] path",
    "persistent watch; mode PERSISTENT or PERSISTENT_RECURSIVE (the default)",
    valued="m",
    args=(1, 1),
    check=_check_add_watch,
)
async def cmd_add_watch(ctx: Context, a: Args) -> None:
    await ctx.persistent_watch(a.pos[0], bool(a.parsed["recursive"]))


@command(
    "removewatches",
    "removewatches path [-c|-d|-a]",
    "remove this session's watches on a node (-c child, -d data, -a any: the default)",
    flags="cda",
    args=(1, 1),
    check=_all(_path_at(0), _one_of("cda", required=False)),
)
async def cmd_remove_watches(ctx: Context, a: Args) -> None:
    kind = WatcherType.CHILDREN if a.has("c") else WatcherType.DATA if a.has("d") else WatcherType.ANY
    await ctx.require_client().remove_watches(a.pos[0], kind)


@command("whoami", "whoami", "show the identities the server gave this session")
async def cmd_whoami(ctx: Context, a: Args) -> None:
    ids = await ctx.require_client().who_am_i()
    ctx.print("Auth scheme: User")
    for scheme, user in ids:
        ctx.print(f"{scheme}: {user}")


# ---------------------------------------------------------------------------------------- quotas


def _quota_node(path: str, leaf: str | None = None) -> str:
    base = QUOTA_ROOT + path
    return f"{base}/{leaf}" if leaf else base


def parse_quota(text: str) -> dict[str, int]:
    """The numbers in a quota node's data.

    Accepts the forms ZooKeeper versions write: ``count=2,bytes=10`` (stats and older limits) and 3.8's
    ``count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1``.
    """
    out: dict[str, int] = {}
    for piece in re.split(r"[,;]", text):
        key, sep, rest = piece.partition("=")
        key = key.strip()
        if not sep or not key:
            continue
        try:
            out[key] = int(rest.split("=", 1)[0].strip())
        except ValueError:
            continue
    return out


def format_limits(q: dict[str, int]) -> str:
    """A limits node's data, byte for byte as ZooKeeper 3.8's shell writes it (and its server reads it)."""
    return (
        f"count={q.get('count', -1)},bytes={q.get('bytes', -1)}"
        f"=;byteHardLimit={q.get('byteHardLimit', -1)};countHardLimit={q.get('countHardLimit', -1)}"
    )


def _format_quota(q: dict[str, int], keys: tuple[str, ...]) -> str:
    return ",".join(f"{k}={q.get(k, -1)}" for k in keys)


_LIMIT_KEYS = ("count", "bytes", "countHardLimit", "byteHardLimit")
_STAT_KEYS = ("count", "bytes")
_QUOTA_OPTIONS = {"n": "count", "b": "bytes", "N": "countHardLimit", "B": "byteHardLimit"}


def _check_quota_path(a: Args) -> None:
    _path_at(0)(a)
    path = a.pos[0]
    if path == "/" or path == "/zookeeper" or path.startswith("/zookeeper/"):
        raise UsageError(f"{a.command}: quotas cannot be set on {path}")


def _check_setquota(a: Args) -> None:
    _one_of("nbNB", required=True)(a)
    _check_quota_path(a)
    (letter,) = a.values
    a.parsed["key"] = _QUOTA_OPTIONS[letter]
    a.parsed["value"] = _int("setquota", a.values[letter], "quota", 0, (1 << 63) - 1)


async def _subtree_usage(client: Client, path: str) -> tuple[int, int]:
    """Number of nodes (``path`` included) and bytes of data in the subtree, as the server counts them."""
    count = total = 0
    pending = [path]
    while pending:
        p = pending.pop()
        try:
            children, stat = await client.get_children_with_stat(p)
        except NoNodeError:
            continue
        count += 1
        total += stat.data_length
        pending.extend(_join(p, c) for c in children)
    return count, total


async def _quota_descendants(client: Client, path: str) -> list[str]:
    """Znode paths strictly below ``path`` that have a quota."""
    found: list[str] = []
    pending = [_quota_node(path)]
    while pending:
        node = pending.pop()
        try:
            children = await client.get_children(node)
        except NoNodeError:
            continue
        for c in children:
            if c == QUOTA_LIMITS and node != _quota_node(path):
                found.append(node[len(QUOTA_ROOT) :])
            elif c not in (QUOTA_LIMITS, QUOTA_STATS):
                pending.append(_join(node, c))
    return sorted(found)


@command(
    "setquota",
    "setquota -n|-b|-N|-B val path",
    "set a quota: -n node count, -b bytes (soft, logged); -N, -B hard limits",
    valued="nbNB",
    args=(1, 1),
    check=_check_setquota,
)
async def cmd_setquota(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    path = a.pos[0]
    key, value = a.parsed["key"], a.parsed["value"]
    assert isinstance(key, str) and isinstance(value, int)
    if await client.exists(path) is None:
        raise NoNodeError(path)
    limits_path = _quota_node(path, QUOTA_LIMITS)
    try:
        data, stat = await client.get_data(limits_path)
    except NoNodeError:
        data, stat = b"", None
    if stat is not None:
        limits = parse_quota(data.decode("utf-8", "replace"))
        limits[key] = value
        await client.set_data(limits_path, format_limits(limits).encode(), stat.version)
    else:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            ancestor = "/" + "/".join(parts[:i])
            if await client.exists(_quota_node(ancestor, QUOTA_LIMITS)) is not None:
                raise CommandError(f"{path} has a parent {ancestor} which has a quota")
        for below in await _quota_descendants(client, path):
            raise CommandError(f"{path} has a child {below} which has a quota")
        count, nbytes = await _subtree_usage(client, path)
        node = QUOTA_ROOT
        for part in parts:
            node = f"{node}/{part}"
            with contextlib.suppress(NodeExistsError):
                await client.create(node)
        limits = dict.fromkeys(_LIMIT_KEYS, -1)
        limits[key] = value
        try:
            await client.multi(
                [
                    Create(limits_path, format_limits(limits).encode()),
                    Create(_quota_node(path, QUOTA_STATS), f"count={count},bytes={nbytes}".encode()),
                ]
            )
        except NodeExistsError:
            raise CommandError(f"a quota for {path} was set meanwhile; try again") from None
    if key in ("count", "countHardLimit"):
        try:
            stats_data, _ = await client.get_data(_quota_node(path, QUOTA_STATS))
        except NoNodeError:
            return
        current = parse_quota(stats_data.decode("utf-8", "replace")).get("count", -1)
        if current > value:
            ctx.error(f"warning: {path} already has {current} nodes, more than the count quota {value}")


@command(
    "listquota",
    "listquota path",
    "show a node's quota and current usage",
    args=(1, 1),
    check=_check_quota_path,
)
async def cmd_listquota(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    path = a.pos[0]
    limits_path = _quota_node(path, QUOTA_LIMITS)
    try:
        data, _ = await client.get_data(limits_path)
    except NoNodeError:
        raise CommandError(f"quota for {path} does not exist.") from None
    ctx.print(f"absolute path is {limits_path}")
    ctx.print(f"Output quota for {path} {_format_quota(parse_quota(data.decode('utf-8', 'replace')), _LIMIT_KEYS)}")
    try:
        stats, _ = await client.get_data(_quota_node(path, QUOTA_STATS))
    except NoNodeError:
        ctx.print(f"Output stat for {path} (none)")
        return
    ctx.print(f"Output stat for {path} {_format_quota(parse_quota(stats.decode('utf-8', 'replace')), _STAT_KEYS)}")


@command(
    "delquota",
    "delquota [-n|-b|-N|-B] path",
    "remove a node's quota (or just one of its limits)",
    flags="nbNB",
    args=(1, 1),
    check=_all(_one_of("nbNB", required=False), _check_quota_path),
)
async def cmd_delquota(ctx: Context, a: Args) -> None:
    client = ctx.require_client()
    path = a.pos[0]
    limits_path = _quota_node(path, QUOTA_LIMITS)
    try:
        data, stat = await client.get_data(limits_path)
    except NoNodeError:
        raise CommandError(f"Quota does not exist for {path}") from None
    if a.flags:
        (letter,) = a.flags
        limits = parse_quota(data.decode("utf-8", "replace"))
        limits[_QUOTA_OPTIONS[letter]] = -1
        await client.set_data(limits_path, format_limits(limits).encode(), stat.version)
        return
    for leaf in (QUOTA_LIMITS, QUOTA_STATS):
        with contextlib.suppress(NoNodeError):
            await client.delete(_quota_node(path, leaf))
    # Remove the now empty quota directories, up to (not including) the quota root.
    node = _quota_node(path)
    while node != QUOTA_ROOT:
        try:
            await client.delete(node)
        except NotEmptyError:
            break
        except NoNodeError:
            pass
        node = node.rsplit("/", 1)[0]


# ---------------------------------------------------------------------------------------- shell commands


@command("history", "history", "list the recent commands", session=False, shell_only=True)
async def cmd_history(ctx: Context, a: Args) -> None:
    numbers = sorted(ctx.history)[-20:]
    for n in numbers:
        ctx.print(f"{n} - {ctx.history[n]}")


def _check_redo(a: Args) -> None:
    a.parsed["number"] = _int("redo", a.pos[0], "command number", 0)


@command(
    "redo",
    "redo cmdno",
    "run a command from the history again",
    args=(1, 1),
    session=False,
    shell_only=True,
    check=_check_redo,
)
async def cmd_redo(ctx: Context, a: Args) -> int:
    number = a.parsed["number"]
    assert isinstance(number, int)
    line = ctx.history.get(number)
    if line is None:
        raise UsageError(f"redo: no command {number} in the history")
    if parse_command_line(line)[:1] == ["redo"]:
        raise UsageError("redo: will not redo a redo")
    ctx.record(line)
    return await ctx.execute_line(line)


def _check_printwatches(a: Args) -> None:
    if a.pos and a.pos[0] not in ("on", "off"):
        raise UsageError("printwatches: say on or off")


@command(
    "printwatches",
    "printwatches on|off",
    "show watch events as they arrive (on) or not",
    args=(0, 1),
    session=False,
    check=_check_printwatches,
)
async def cmd_printwatches(ctx: Context, a: Args) -> None:
    if not a.pos:
        ctx.print(f"printwatches is {'on' if ctx.print_watches else 'off'}")
        return
    ctx.print_watches = a.pos[0] == "on"


@command(
    "connect",
    "connect [host:port[,host:port...][/chroot]]",
    "close the session and open one to these servers (default: the same ones)",
    args=(0, 1),
    session=False,
    shell_only=True,
)
async def cmd_connect(ctx: Context, a: Args) -> None:
    await ctx.connect(a.arg(0))


@command("close", "close", "close the session", session=False, shell_only=True)
async def cmd_close(ctx: Context, a: Args) -> None:
    await ctx.close()


@command("quit", "quit", "leave the shell", session=False, shell_only=True)
async def cmd_quit(ctx: Context, a: Args) -> None:
    ctx.quit_requested = True


def _check_four(a: Args) -> None:
    word = a.pos[0]
    if word not in FOUR_LETTER_WORDS:
        raise UsageError(f"four: unknown four-letter word {word!r} (one of {', '.join(FOUR_LETTER_WORDS)})")
    if len(a.pos) > 1:
        parse_connect_string(a.pos[1])


@command(
    "four",
    "four word [host:port]",
    "send a four-letter word (srvr, stat, mntr, ruok, cons, envi, conf, wchs, dump, isro, ...)",
    args=(1, 2),
    session=False,
    check=_check_four,
)
async def cmd_four(ctx: Context, a: Args) -> None:
    hosts, _ = parse_connect_string(a.arg(1) or ctx.hosts)
    if a.arg(1) is None and ctx.client is not None and ctx.client.connected_host is not None:
        hosts = [ctx.client.connected_host]
    failures: list[str] = []
    silent = 0
    for host in hosts:
        try:
            with trio.fail_after(ctx.connect_timeout):
                answer = await four_letter_word(host.host, host.port, a.pos[0])
        except FourLetterWordError as e:
            failures.append(str(e))
            continue
        except trio.TooSlowError:
            failures.append(f"{host.host}:{host.port}: no answer to {a.pos[0]} within {ctx.connect_timeout:g}s")
            continue
        if not answer:
            # 3.8 closes the connection without a word when the word is unknown to it.
            failures.append(f"{host.host}:{host.port}: no answer to {a.pos[0]} (the connection was closed)")
            silent += 1
            continue
        if len(hosts) > 1:
            ctx.print(f"== {host.host}:{host.port} ==")
        ctx.print(answer.removesuffix("\n"))
    if failures:
        if silent == len(failures):  # every server was reached, and none answered: exit 1, not 3
            raise CommandError("; ".join(failures))
        raise ConnectError("; ".join(failures))


@command("version", "version", "show zkwire's version", session=False)
async def cmd_version(ctx: Context, a: Args) -> None:
    from .. import __version__

    ctx.print(f"zkwire {__version__}")


@command("help", "help [command]", "list the commands, or show one command's usage", args=(0, 1), session=False)
async def cmd_help(ctx: Context, a: Args) -> None:
    if a.pos:
        spec = lookup(a.pos[0])
        ctx.print(f"{spec.usage}\n    {spec.summary}")
        return
    for name in sorted(COMMANDS, key=str.lower):
        spec = COMMANDS[name]
        ctx.print(f"\t{spec.usage}")
