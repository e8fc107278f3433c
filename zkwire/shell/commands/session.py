"""Commands of the interactive shell's session: ``history``, ``redo``, ``connect``, ``close``, ``quit``,
and ``help``."""

from __future__ import annotations

from dataclasses import dataclass

from ..argument_types import integer
from ..context import Context
from ..dispatch import execute_line
from ..outcomes import UsageError
from ..registry import COMMANDS, NoArguments, command, lookup, optional_positional, positional, split_line

__all__ = ["RedoArguments", "ConnectArguments", "HelpArguments"]

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
