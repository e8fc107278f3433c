"""``zkwire``: a ZooKeeper shell and one-shot command runner.

::

    zkwire --server HOSTS COMMAND ARGS...   run one command and exit
    zkwire --server HOSTS                   interactive shell (line editing, history, watch events)
    zkwire --server HOSTS four srvr         a four-letter word
    zkwire trace ... / zkwire decode FILE   traffic decoding (see zkwire.trace.tracer)

Commands are those of ZooKeeper's own shell (``ls``, ``create``, ``get``, ``set``, ``stat``, ``delete``,
``deleteall``, ``getAcl``, ``setAcl``, ``addauth``, ``sync``, ``setquota``, ``listquota``, ``delquota``,
``getEphemerals``, ``getAllChildrenNumber``, ``addWatch``, ``removewatches``, ``whoami``, ...), defined
in :mod:`zkwire.shell.commands`; ``help`` lists them.

One-shot mode and watches: with ``-w`` (``get -w``, ``ls -w``, ``stat -w``) the result is printed, then
the command waits up to ``--timeout`` seconds for the watch to fire, prints the event and exits 0, or
exits 4 if it did not fire.  ``addWatch`` prints events as they arrive for ``--timeout`` seconds, then
exits 0.  ``stat -w`` on a missing node prints "Node does not exist" and still waits for the creation.

Exit codes: 0 success; 1 the operation failed (the one-line reason is on stderr, e.g.
``Node does not exist: /x``); 2 usage error (one line on stderr: a bad option, a number out of range,
an argument that is not valid UTF-8); 3 no usable session (cannot connect within ``--timeout``,
connection lost, session expired); 4 a one-shot watch did not fire in time; 130 interrupted (Ctrl-C,
without a traceback); 141 the output pipe was closed (``| head``), quietly.  The interactive shell exits
0 on ``quit`` or end of input (3 if it cannot connect at all).

Everything printed that came from the server (paths, node data, ACL ids, four-letter-word answers, watch
events) has its control characters escaped (:func:`zkwire.terminal.escape_controls`).

Top-level subcommands that are whole programs of their own (``trace``, ``decode``) are looked up in
:data:`SUBPROGRAMS`: ``argv[0]`` names one, and its module's ``main(argv)`` gets the whole argument list.
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from ..errors import InvalidInputError, ZKError
from ..sansio.session import SessionState
from ..terminal import escape_controls
from . import format as fmt
from .commands import (
    COMMANDS,
    EXIT_CODES,
    EXIT_CONNECTION,
    EXIT_INTERRUPTED,
    EXIT_NO_EVENT,
    EXIT_OK,
    EXIT_USAGE,
    ConnectError,
    Context,
    UsageError,
    lookup,
    parse_args,
    parse_command_line,
)
from .runtime import OneLineArgumentParser, is_utf8, run_cli, seconds, session_timeout

__all__ = ["main", "SUBPROGRAMS", "build_parser"]

DEFAULT_SERVER = "localhost:2181"


def _run_module_main(module_name: str) -> Callable[[list[str]], int]:
    """A subprogram implemented by ``module_name.main(argv)``; "not available yet" if it is missing."""

    def run(argv: list[str]) -> int:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            print(f"zkwire {argv[0]}: not available yet", file=sys.stderr)
            return EXIT_USAGE
        result = module.main(argv)
        return int(result) if result is not None else EXIT_OK

    return run


#: ``zkwire NAME ...`` where NAME is a key: the function gets the whole argv (``argv[0] == NAME``).
SUBPROGRAMS: dict[str, Callable[[list[str]], int]] = {
    "trace": _run_module_main("zkwire.trace.tracer"),
    "decode": _run_module_main("zkwire.trace.tracer"),
    "sniff": _run_module_main("zkwire.trace.tracer"),
}


def build_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {COMMANDS[n].usage}" for n in sorted(COMMANDS, key=str.lower))
    codes = "\n".join(f"  {code:>3}  {text}" for code, text in sorted(EXIT_CODES.items()))
    parser = OneLineArgumentParser(
        prog="zkwire",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A ZooKeeper shell: run one command, or an interactive session when no command is given.",
        epilog=(
            f"commands:\n{commands}\n\n"
            "  trace / decode: see 'zkwire trace --help', 'zkwire decode --help'\n\n"
            "one-shot watches: with -w the result is printed, then the command waits up to --timeout for\n"
            "the event (exit 0 when it fires, 4 if not); addWatch streams events for --timeout seconds.\n\n"
            f"exit codes:\n{codes}"
        ),
    )
    parser.add_argument(
        "--server",
        "-server",
        default=os.environ.get("ZKWIRE_SERVER", DEFAULT_SERVER),
        metavar="HOSTS",
        help="connect string host:port[,host:port...][/chroot] (default: $ZKWIRE_SERVER or %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds(),
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for a connection, and for a one-shot watch (default: %(default)s)",
    )
    parser.add_argument(
        "--session-timeout",
        type=session_timeout,
        default=30.0,
        metavar="SECONDS",
        help="session timeout to ask the server for, 0.001 to 2147483.647 (default: %(default)s)",
    )
    parser.add_argument(
        "--auth",
        action="append",
        default=[],
        metavar="SCHEME:CREDENTIAL",
        help="authenticate the session before the command, e.g. digest:user:password (repeatable)",
    )
    parser.add_argument("--verbose", "-v", action="count", default=0, help="log the client's activity to stderr")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments (see below)")
    return parser


def _parse_auth(items: Sequence[str]) -> list[tuple[str, str]]:
    """``SCHEME:CREDENTIAL`` pairs; the messages never repeat a credential."""
    out = []
    for n, item in enumerate(items, 1):
        scheme, sep, credential = item.partition(":")
        if not sep or not scheme:
            raise UsageError(f"--auth (#{n}): expected SCHEME:CREDENTIAL, e.g. digest:user:password")
        if not is_utf8(scheme) or not is_utf8(credential):
            raise UsageError(f"--auth (#{n}): not valid UTF-8 text")
        out.append((scheme, credential))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``zkwire ...``: see the module's documentation for the exit codes."""
    return run_cli(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in SUBPROGRAMS:
        return SUBPROGRAMS[args_list[0]](args_list)
    parser = build_parser()
    opts = parser.parse_args(args_list)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(opts.verbose, 2),
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        auth = _parse_auth(opts.auth)
    except UsageError as e:
        print(escape_controls(f"zkwire: {e}"), file=sys.stderr)
        return EXIT_USAGE
    ctx_args = {
        "hosts": opts.server,
        "session_timeout": opts.session_timeout,
        "connect_timeout": opts.timeout,
        "auth": auth,
    }
    try:
        if opts.command:
            return trio.run(_one_shot, Context(interactive=False, **ctx_args), opts.command, opts.timeout)
        return trio.run(_shell, Context(interactive=True, **ctx_args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


# ---------------------------------------------------------------------------------------- one-shot


async def _one_shot(ctx: Context, words: list[str], wait_seconds: float) -> int:
    # Everything that can be checked without a server is checked first: usage errors never wait.
    try:
        spec = lookup(words[0])
        parse_args(spec, words[1:])
        if spec.shell_only:
            raise UsageError(f"{spec.name}: only available in the interactive shell")
    except (UsageError, InvalidInputError) as e:
        ctx.error(str(e))
        return EXIT_USAGE

    code = EXIT_INTERRUPTED
    async with trio.open_nursery() as nursery:
        ctx.nursery = nursery
        nursery.start_soon(_cancel_on_sigint, nursery.cancel_scope)
        try:
            code = await _one_shot_connected(ctx, words, spec.session, wait_seconds)
        finally:
            await ctx.close()
            nursery.cancel_scope.cancel()
    return code


async def _one_shot_connected(ctx: Context, words: list[str], needs_session: bool, wait_seconds: float) -> int:
    if needs_session:
        try:
            await ctx.connect()
        except ConnectError as e:
            ctx.error(str(e))
            return EXIT_CONNECTION
        except InvalidInputError as e:
            ctx.error(str(e))
            return EXIT_USAGE
    code = EXIT_CONNECTION
    lost: list[str] = []
    async with trio.open_nursery() as inner:

        async def body() -> None:
            nonlocal code
            code = await ctx.execute(words)
            if ctx.watches_set or ctx.persistent_watches:
                code = await _wait_for_events(ctx, wait_seconds, code)
            inner.cancel_scope.cancel()

        if ctx.client is not None:
            inner.start_soon(_guard_session, ctx, wait_seconds, inner.cancel_scope, lost)
        inner.start_soon(body)
    if lost:
        ctx.error(lost[0])
        return EXIT_CONNECTION
    return code


async def _wait_for_events(ctx: Context, wait_seconds: float, code: int) -> int:
    if ctx.persistent_watches:
        await trio.sleep(wait_seconds)
        return code
    with trio.move_on_after(wait_seconds):
        await ctx.event_arrived.wait()
        return EXIT_OK
    client = ctx.client
    if client is not None and not client.state.is_connected:
        ctx.error(f"Connection lost: no watch event within {wait_seconds:g}s (session {client.state.value})")
        return EXIT_CONNECTION
    ctx.error(f"No watch event within {wait_seconds:g}s")
    return EXIT_NO_EVENT


async def _guard_session(ctx: Context, patience: float, scope: trio.CancelScope, lost: list[str]) -> None:
    """Give up (exit 3) when the connection stays lost for ``patience`` seconds."""
    client = ctx.client
    assert client is not None
    try:
        while True:
            await client.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
            with trio.move_on_after(patience) as waiting:
                await client.wait_connected()
            if waiting.cancelled_caught:
                lost.append(f"Connection lost: no server of {ctx.hosts} answered within {patience:g}s")
                scope.cancel()
                return
    except ZKError:
        return  # the session ended: the command's own request reports it


async def _cancel_on_sigint(scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


# ---------------------------------------------------------------------------------------- shell


class _LineReader:
    """Reads shell lines in a worker thread (so that watch events print meanwhile), with readline
    line editing and a history file when stdin is a terminal."""

    def __init__(self) -> None:
        if isinstance(sys.stdin, io.TextIOWrapper):
            # A line that is not valid UTF-8 becomes a usage error for that line, not the end of the shell.
            sys.stdin.reconfigure(errors="surrogateescape")
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self.reading = False
        self.prompt = ""
        self._readline: object | None = None
        self._history_file: Path | None = None
        self._terminal: list[Any] | None = None
        if self.tty:
            try:
                import termios

                self._terminal = termios.tcgetattr(sys.stdin.fileno())
            except (ImportError, OSError):
                pass
            try:
                import readline
            except ImportError:  # pragma: no cover - platforms without readline
                return
            self._readline = readline
            self._history_file = Path(os.environ.get("ZKWIRE_HISTORY", Path.home() / ".zkwire_history"))
            try:
                readline.read_history_file(self._history_file)
            except OSError:
                pass
            readline.set_history_length(1000)

    def _read(self, prompt: str) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            return None

    async def read(self, prompt: str) -> str | None:
        self.prompt = prompt if self.tty else ""
        self.reading = True
        try:
            return await trio.to_thread.run_sync(self._read, self.prompt, abandon_on_cancel=True)
        finally:
            self.reading = False

    def clear_prompt(self) -> None:
        if self.tty and self.reading:
            sys.stdout.write("\r\x1b[K")
            sys.stdout.flush()

    def redraw_prompt(self) -> None:
        if self.tty and self.reading:
            buffer = ""
            if self._readline is not None:
                buffer = self._readline.get_line_buffer()  # type: ignore[attr-defined]
            sys.stdout.write(self.prompt + buffer)
            sys.stdout.flush()

    def restore_terminal(self) -> None:
        """Leave the terminal as we found it (an abandoned readline call may have changed its modes)."""
        if self._terminal is not None:
            import termios

            try:
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._terminal)
            except OSError:
                pass

    def save(self) -> None:
        if self._readline is not None and self._history_file is not None:
            try:
                self._readline.write_history_file(self._history_file)  # type: ignore[attr-defined]
            except OSError:
                pass


async def _shell(ctx: Context) -> int:
    reader = _LineReader()
    ctx.before_async_output = reader.clear_prompt
    ctx.after_async_output = reader.redraw_prompt
    code = EXIT_OK
    async with trio.open_nursery() as nursery:
        ctx.nursery = nursery
        try:
            await ctx.connect()
        except ConnectError as e:
            ctx.error(str(e))
            nursery.cancel_scope.cancel()
            return EXIT_CONNECTION
        except InvalidInputError as e:
            ctx.error(str(e))
            nursery.cancel_scope.cancel()
            return EXIT_USAGE
        if reader.tty:
            ctx.print(f"Connected to {ctx.hosts}; type help for the commands, quit to leave.")
        running: list[trio.CancelScope] = []
        with trio.CancelScope() as shell_scope:

            async def on_sigint() -> None:
                nonlocal code
                with trio.open_signal_receiver(signal.SIGINT) as signals:
                    async for _ in signals:
                        if running:
                            running[-1].cancel()
                        else:
                            code = EXIT_INTERRUPTED
                            shell_scope.cancel()

            nursery.start_soon(on_sigint)
            while not ctx.quit_requested:
                prompt = f"[zk: {ctx.hosts}({fmt.state_label(ctx.state)}) {ctx.command_number}] "
                line = await reader.read(prompt)
                if line is None:
                    if reader.tty:
                        ctx.print()
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    first = parse_command_line(line)[:1]
                except UsageError:
                    first = []
                if first != ["redo"]:
                    ctx.record(line)
                with trio.CancelScope() as scope:
                    running.append(scope)
                    try:
                        await ctx.execute_line(line)
                    finally:
                        running.pop()
                if scope.cancelled_caught:
                    ctx.error("Interrupted")
        if shell_scope.cancelled_caught and reader.tty:
            reader.restore_terminal()
            ctx.print()
        reader.save()
        await ctx.close()
        nursery.cancel_scope.cancel()
    return code
