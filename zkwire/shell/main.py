"""``zkwire``: a ZooKeeper shell and one-shot command runner.

::

    zkwire --server HOSTS COMMAND ARGS...   run one command and exit
    zkwire --server HOSTS                   interactive shell (line editing, history, watch events)
    zkwire --server HOSTS four srvr         a four-letter word
    zkwire trace ... / zkwire decode FILE   traffic decoding (see zkwire.trace.tracer)

Without ``--server``, the server is ``$ZKWIRE_SERVER``, else ``localhost:2181`` (a connection error then
says it was the default).

Commands are those of ZooKeeper's own shell (``ls``, ``create``, ``get``, ``set``, ``stat``, ``delete``,
``deleteall``, ``getAcl``, ``setAcl``, ``addauth``, ``sync``, ``setquota``, ``listquota``, ``delquota``,
``getEphemerals``, ``getAllChildrenNumber``, ``addWatch``, ``removewatches``, ``whoami``, ...), defined
in :mod:`zkwire.shell.commands` (their arguments are parsed by :mod:`zkwire.shell.registry`); ``help``
lists them.

One-shot mode (:mod:`zkwire.shell.one_shot`) and watches: with ``-w`` (``get -w``, ``ls -w``,
``stat -w``) the result is printed, then the command waits up to ``--timeout`` seconds for the watch to
fire, prints the event and exits 0, or exits 4 if it did not fire.  ``addWatch`` prints events as they
arrive for ``--timeout`` seconds, then exits 0.  ``stat -w`` on a missing node prints "Node does not
exist" and still waits for the creation.

Exit codes: 0 success; 1 the operation failed (the one-line reason is on stderr, e.g.
``Node does not exist: /x``); 2 usage error (one line on stderr: a bad option, a number out of range,
an argument that is not valid UTF-8); 3 no usable session (cannot connect within ``--timeout``,
connection lost, session expired); 4 a one-shot watch did not fire in time; 130 interrupted (Ctrl-C,
without a traceback); 141 the output pipe was closed (``| head``), quietly.  The interactive shell
(:mod:`zkwire.shell.interactive`) exits 0 on ``quit`` or end of input (3 if it cannot connect at all); on a
terminal, Ctrl-C there drops the line being typed or interrupts the running command, and keeps the session.

Everything printed that came from the server (paths, node data, ACL ids, four-letter-word answers, watch
events) has its control characters escaped (:func:`zkwire.terminal.escape_controls`).

Top-level subcommands that are whole programs of their own (``trace``, ``decode``) are looked up in
:data:`SUBPROGRAMS`: ``argv[0]`` names one, and its module's ``main(argv)`` gets the whole argument list.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

import trio

from ..errors import InvalidArgumentError
from ..terminal import escape_controls
from .commands import COMMANDS
from .context import Context
from .interactive import run_shell
from .one_shot import run_one_shot
from .outcomes import EXIT_CODES, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .runtime import (
    DEFAULT_SERVER,
    SERVER_VARIABLE,
    OneLineArgumentParser,
    choose_server,
    run_cli,
    seconds,
    session_timeout,
)
from .security import add_security_options, security_options

__all__ = ["main", "SUBPROGRAMS", "build_parser"]


def _run_module_main(module_name: str) -> Callable[[list[str]], int]:
    """A subprogram implemented by ``module_name.main(argv)`` (imported when it is run)."""

    def run(argv: list[str]) -> int:
        result = importlib.import_module(module_name).main(argv)
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
        metavar="HOSTS",
        help=f"connect string host:port[,host:port...][/chroot] (default: ${SERVER_VARIABLE}, else {DEFAULT_SERVER})",
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
    parser.add_argument("--verbose", "-v", action="count", default=0, help="log the client's activity to stderr")
    add_security_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments (see below)")
    return parser


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
        security = security_options(opts)
    except InvalidArgumentError as e:
        print(escape_controls(f"zkwire: {e}"), file=sys.stderr)
        return EXIT_USAGE
    server = choose_server(opts.server)
    ctx_args = {
        "hosts": server.hosts,
        "hosts_note": server.note,
        "session_timeout": opts.session_timeout,
        "connect_timeout": opts.timeout,
        "auth": security.auth,
        "sasl": security.sasl,
        "ssl_context": security.ssl_context,
    }
    try:
        if opts.command:
            return trio.run(run_one_shot, Context(interactive=False, **ctx_args), opts.command, opts.timeout)
        return trio.run(run_shell, Context(interactive=True, **ctx_args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
