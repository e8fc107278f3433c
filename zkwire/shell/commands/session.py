"""Commands of the interactive shell's session: ``history``, ``redo``, ``connect``, ``close``, ``quit``,
``session`` and ``help``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...client.api import Client
from .. import format as fmt
from ..argument_types import integer
from ..context import Context
from ..dispatch import execute_line
from ..outcomes import UsageError
from ..registry import COMMANDS, NoArguments, command, flag, lookup, optional_positional, positional, split_line

__all__ = ["RedoArguments", "ConnectArguments", "HelpArguments", "SessionArguments"]

#: The longest ``session`` waits for the events of the commands before it to reach the counters (seconds).
_COUNTERS_FLUSH = 1.0

#: Lines that ``history`` shows.
_HISTORY_SHOWN = 20


@command("history", "history", "list the recent commands", NoArguments, session=False, shell_only=True)
async def cmd_history(ctx: Context, a: NoArguments) -> None:
    for n in sorted(ctx.history)[-_HISTORY_SHOWN:]:
        ctx.print(f"{n} - {ctx.history[n]}")


@dataclass(frozen=True, kw_only=True)
class RedoArguments:
    number: int = positional(integer("command number", 0))


@command(
    "redo",
    "redo cmdno",
    "run a command from the history again",
    RedoArguments,
    session=False,
    shell_only=True,
)
async def cmd_redo(ctx: Context, a: RedoArguments) -> int:
    line = ctx.history.get(a.number)
    if line is None:
        raise UsageError(f"redo: no command {a.number} in the history")
    if split_line(line)[:1] == ["redo"]:
        raise UsageError("redo: will not redo a redo")
    ctx.record(line)
    return await execute_line(ctx, line)


@dataclass(frozen=True, kw_only=True)
class ConnectArguments:
    #: None: the servers of the current (or last) session.
    hosts: str | None = optional_positional(str)


@command(
    "connect",
    "connect [host:port[,host:port...][/chroot]]",
    "close the session and open one to these servers (default: the same ones)",
    ConnectArguments,
    session=False,
    shell_only=True,
)
async def cmd_connect(ctx: Context, a: ConnectArguments) -> None:
    await ctx.connect(a.hosts)


@command("close", "close", "close the session", NoArguments, session=False, shell_only=True)
async def cmd_close(ctx: Context, a: NoArguments) -> None:
    await ctx.close()


@dataclass(frozen=True, kw_only=True)
class SessionArguments:
    json: bool = flag("j", long="json")


def _session_facts(client: Client | None) -> dict[str, Any]:
    """The current session: id, state, server, chroot, negotiated timeout (None where there is none)."""
    if client is None:
        return {"id": None, "state": None, "server": None, "chroot": None, "timeout_ms": None}
    host = client.connected_host
    timeout = client.session_timeout
    return {
        "id": fmt.format_zxid(client.session_id) if client.session_id else None,
        "state": client.state.value,
        "server": None if host is None else str(host),
        "chroot": client.chroot or None,
        "timeout_ms": None if timeout is None else round(timeout * 1000),
    }


@command(
    "session",
    "session [-j|--json]",
    "show the session (id, state, server, timeout, requests in flight) and what the shell's sessions did",
    SessionArguments,
    session=False,
    shell_only=True,
)
async def cmd_session(ctx: Context, a: SessionArguments) -> None:
    client, counters = ctx.client, ctx.counters
    assert counters is not None  # an interactive shell's context has them
    if client is not None:
        await client.flush_observers(_COUNTERS_FLUSH)  # the commands before this one, counted
    facts = _session_facts(client)
    if a.json:
        ctx.print(json.dumps({"session": facts, **counters.to_json()}))
        return
    if client is None:
        ctx.print("session id: none\nstate: not connected")
    else:
        ctx.print(f"session id: {facts['id'] or 'none'}\nstate: {facts['state']}\nserver: {facts['server'] or 'none'}")
        if facts["chroot"] is not None:
            ctx.print(f"chroot: {facts['chroot']}")
        timeout = facts["timeout_ms"]
        ctx.print(f"negotiated timeout: {'none' if timeout is None else f'{timeout}ms'}")
    ctx.print("\n".join(counters.lines()))


@command("quit", "quit", "leave the shell", NoArguments, session=False, shell_only=True)
async def cmd_quit(ctx: Context, a: NoArguments) -> None:
    ctx.quit_requested = True


@dataclass(frozen=True, kw_only=True)
class HelpArguments:
    #: None: list all commands.
    command: str | None = optional_positional(str)


@command("help", "help [command]", "list the commands, or show one command's usage", HelpArguments, session=False)
async def cmd_help(ctx: Context, a: HelpArguments) -> None:
    if a.command is not None:
        found = lookup(a.command)
        ctx.print(f"{found.usage}\n    {found.summary}")
        return
    for name in sorted(COMMANDS, key=str.lower):
        ctx.print(f"\t{COMMANDS[name].usage}")
