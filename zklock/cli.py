"""``zklock``: a distributed flock(1) on ZooKeeper.

::

    zklock run --server HOSTS [--nowait | --wait SECONDS] [--shared | --semaphore N] [--naming NAMING]
               [--identifier TEXT] LOCKPATH -- COMMAND ARGS...
    zklock status --server HOSTS [--json] LOCKPATH

Without ``--server``, the server is ``$ZKWIRE_SERVER``, else the deprecated ``$ZKLOCK_SERVER``, else
``localhost:2181`` (a connection error then says it was the default).

``run`` takes the :class:`zklock.Mutex` on ``LOCKPATH`` -- or with ``--shared`` the read side of the
:class:`zklock.ReadWriteLock` there (like ``flock -s``: shared runs overlap, an exclusive run excludes
them all), or with ``--semaphore N`` one of the N leases of the :class:`zklock.Semaphore` there -- runs
``COMMAND`` while holding it and releases it when ``COMMAND`` ends.  ``--naming kazoo`` writes kazoo's
node names instead of Curator's (the README's interoperability matrix says which peers each excludes).
``COMMAND`` gets ``ZKLOCK_FENCING_TOKEN`` (the lease's fencing token: it grows with every grant, so the
protected resource can refuse a stale holder), ``ZKLOCK_PATH`` and ``ZKLOCK_NODE`` in its environment.

``COMMAND`` runs in its own process group (unless ``--foreground``), so a terminal's Ctrl-C reaches it
once, through zklock: SIGTERM, SIGINT and SIGHUP sent to ``zklock run`` are forwarded to that group.
If the lock is lost while ``COMMAND`` runs (the lock node was deleted, the connection was lost -- another
contender may be granted the lock once our session expires -- or the session expired), ``COMMAND``'s
group gets SIGTERM, then SIGKILL after ``--grace`` seconds, and ``zklock run`` exits 70.

Exit codes of ``zklock run``:

* ``COMMAND``'s exit code; ``128 + N`` when it was killed by signal N;
* 75 (EX_TEMPFAIL): the lock is held by someone else (``--nowait``) or was not granted within ``--wait``;
* 70 (EX_SOFTWARE): the lock was lost while ``COMMAND`` ran; ``COMMAND`` was terminated;
* 69 (EX_UNAVAILABLE): no ZooKeeper session within ``--timeout``, or ZooKeeper refused the lock
  (for example no permission on ``LOCKPATH``);
* 126 / 127: ``COMMAND`` could not be executed / was not found;
* 128 + N: signal N arrived while waiting for the lock (``COMMAND`` was never started);
* 2: usage error (one line on stderr; a bad lock path or number is refused before connecting).

``zklock status`` reads any lock of zklock, Curator or kazoo at ``LOCKPATH`` (mutex, read/write lock,
semaphore, election; see :mod:`zklock.status`) and prints its holders and the waiting contenders
(identifier and node name of each), and a warning on stderr when the path holds nodes of both naming
families.  A path of the coordination toolbox (a queue, a party, a partitioner, a timed lease, a double
barrier, service discovery, a counter; see :mod:`zklock.toolstatus`) is described instead.  Exit codes
of ``zklock status``:

* 0: the state is known: free, or held;
* 65 (EX_DATAERR): unknown -- nothing at ``LOCKPATH`` is understood as a holder, but it has children
  that no known recipe wrote (they are listed);
* 69: ZooKeeper cannot be reached; 2: usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import trio

from zkwire import Client, InvalidInputError, ZKError, open_client, validate_path
from zkwire.shell.runtime import (
    DEFAULT_SERVER,
    SERVER_VARIABLE,
    OneLineArgumentParser,
    ServerChoice,
    choose_server,
    is_utf8,
    run_cli,
    seconds,
    session_timeout,
)
from zkwire.shell.security import add_security_options, security_options
from zkwire.terminal import escape_controls

from .errors import LockError
from .lease import Lease
from .mutex import Mutex
from .naming import NAMINGS
from .recipe import LockRecipe
from .rwlock import ReadWriteLock
from .semaphore import Semaphore
from .status import lock_status, status_json, status_lines
from .toolstatus import toolbox_status

__all__ = [
    "main",
    "EXIT_LOCK_BUSY",
    "EXIT_LOCK_LOST",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "EXIT_CANNOT_EXECUTE",
    "EXIT_NOT_FOUND",
    "EXIT_UNKNOWN",
]

EXIT_USAGE = 2
EXIT_UNKNOWN = 65
EXIT_UNAVAILABLE = 69
EXIT_LOCK_LOST = 70
EXIT_LOCK_BUSY = 75
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: zklock's former name for $ZKWIRE_SERVER: read when that is unset, deprecated.
DEPRECATED_SERVER_VARIABLE = "ZKLOCK_SERVER"


def _say(message: str) -> None:
    sys.stdout.flush()
    print(escape_controls(f"zklock: {message}"), file=sys.stderr, flush=True)


_positive_float = seconds(allow_minimum=True)


def _lease_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="zklock",
        description="Distributed locks on ZooKeeper: run a command while holding a lock, or show a lock.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "exit codes of run: COMMAND's own (128+N if killed by signal N); 75 lock busy (--nowait) or\n"
            "not granted within --wait; 70 lock lost while COMMAND ran; 69 ZooKeeper unreachable or\n"
            "refused the lock; 126/127 COMMAND not executable / not found; 2 usage error.\n"
            "exit codes of status: 0 free or held; 65 unknown (children no known recipe wrote); 69\n"
            "ZooKeeper unreachable; 2 usage error."
        ),
    )
    sub = parser.add_subparsers(dest="action", required=True, metavar="{run,status}")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--server",
            metavar="HOSTS",
            help=f"connect string host:port[,...][/chroot] (default: ${SERVER_VARIABLE}, else the deprecated "
            f"${DEPRECATED_SERVER_VARIABLE}, else {DEFAULT_SERVER})",
        )
        p.add_argument(
            "--timeout",
            type=_positive_float,
            default=10.0,
            metavar="SECONDS",
            help="how long to wait for a ZooKeeper session (default: %(default)s)",
        )
        p.add_argument("--verbose", "-v", action="count", default=0, help="log the client's activity to stderr")
        p.add_argument(
            "--session-timeout",
            type=session_timeout,
            default=10.0,
            metavar="SECONDS",
            help="session timeout: how soon others may take the lock if this host dies (default: %(default)s)",
        )
        add_security_options(p)

    run = sub.add_parser(
        "run",
        help="run COMMAND while holding the lock",
        usage="zklock run [options] LOCKPATH -- COMMAND [ARGS...]",
        description="Run COMMAND while holding the mutex on LOCKPATH (or a shared lock, or a semaphore's lease "
        "there); exit with COMMAND's exit code.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "COMMAND's environment: ZKLOCK_FENCING_TOKEN (grows with every grant of the lock), ZKLOCK_PATH,\n"
            "ZKLOCK_NODE.  SIGTERM, SIGINT and SIGHUP are forwarded to COMMAND's process group.\n\n"
            "exit codes: COMMAND's own (128+N if killed by signal N)\n"
            "  75  the lock is held (--nowait) or was not granted within --wait\n"
            "  70  the lock was lost while COMMAND ran (COMMAND got SIGTERM, SIGKILL after --grace)\n"
            "  69  no ZooKeeper session within --timeout, or ZooKeeper refused the lock\n"
            "  126 / 127  COMMAND could not be executed / was not found\n"
            "  128+N  signal N arrived while waiting for the lock (COMMAND not run)\n"
            "  2   usage error"
        ),
    )
    common(run)
    wait = run.add_mutually_exclusive_group()
    wait.add_argument("--nowait", "-n", action="store_true", help="fail at once (exit 75) if the lock is held")
    wait.add_argument(
        "--wait",
        "-w",
        type=_positive_float,
        metavar="SECONDS",
        help="give up (exit 75) if the lock is not granted within SECONDS (default: wait forever)",
    )
    kind = run.add_mutually_exclusive_group()
    kind.add_argument(
        "--shared",
        "-s",
        action="store_true",
        help="take the read side of the read/write lock on LOCKPATH: shared runs overlap, an exclusive run "
        "(no --shared) excludes them (like flock -s)",
    )
    kind.add_argument(
        "--semaphore",
        type=_lease_count,
        metavar="N",
        help="hold one of the N leases of the semaphore on LOCKPATH: at most N runs at once (every user of "
        "the semaphore must give the same N)",
    )
    run.add_argument(
        "--naming",
        choices=NAMINGS,
        default="curator",
        help="node names to write: curator (default; excludes Curator's recipes) or kazoo (excludes kazoo's "
        "default recipes); see the README's interoperability matrix",
    )
    run.add_argument("--identifier", metavar="TEXT", help="what others see as the holder (default: hostname:pid)")
    run.add_argument(
        "--grace",
        type=_positive_float,
        default=5.0,
        metavar="SECONDS",
        help="after losing the lock: time between SIGTERM and SIGKILL for COMMAND (default: %(default)s)",
    )
    run.add_argument(
        "--foreground",
        action="store_true",
        help="keep COMMAND in zklock's process group (it may read the terminal; the terminal's Ctrl-C "
        "reaches it directly, so SIGINT is not forwarded)",
    )
    run.add_argument("lockpath", metavar="LOCKPATH", help="the lock's znode path, e.g. /locks/backup")
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments")

    status = sub.add_parser(
        "status",
        help="show the holders and the queue of a lock",
        description="Show the holders and the queue of any zklock, Curator or kazoo lock, read/write lock, "
        "semaphore or election at LOCKPATH.",
        epilog="exit codes: 0 free or held; 65 unknown (children no known recipe wrote); 69 ZooKeeper "
        "unreachable; 2 usage error",
    )
    common(status)
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.add_argument("lockpath", metavar="LOCKPATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    opts = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if not is_utf8(opts.lockpath):
            raise InvalidInputError("LOCKPATH is not valid UTF-8 text")
        validate_path(opts.lockpath)
        if getattr(opts, "identifier", None) is not None and not is_utf8(opts.identifier):
            raise InvalidInputError("--identifier is not valid UTF-8 text")
        opts.security = security_options(opts)
    except InvalidInputError as e:
        parser.error(str(e))
    opts.server = choose_server(opts.server, deprecated=[DEPRECATED_SERVER_VARIABLE])
    # zklock reports what matters itself; the libraries' own warnings only with --verbose.
    logging.basicConfig(
        level=(logging.ERROR, logging.INFO, logging.DEBUG)[min(opts.verbose, 2)],
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )
    if opts.action == "run":
        command = list(opts.command)
        if command and command[0] == "--":
            command = command[1:]
        if not command:
            parser.error("run: no COMMAND given (zklock run LOCKPATH -- COMMAND ARGS...)")
        opts.command = command
        runner = _Runner(opts)
        try:
            return trio.run(runner.run)
        except KeyboardInterrupt:  # pragma: no cover - SIGINT is handled by the runner
            return 128 + signal.SIGINT
    try:
        return trio.run(_status, opts)
    except KeyboardInterrupt:
        return 128 + signal.SIGINT


class _Unavailable(Exception):
    """No session, or ZooKeeper refused what we need: exit 69 with this message."""


def _open_client(opts: argparse.Namespace) -> AbstractAsyncContextManager[Client]:
    """The session of ``run`` and ``status``, with the options of the command line (waited for by
    :func:`_connected`)."""
    return open_client(
        opts.server.hosts,
        session_timeout=opts.session_timeout,
        wait_connected=False,
        **opts.security.client_options(),
    )


async def _connected(client: Client, server: ServerChoice, limit: float) -> None:
    try:
        with trio.fail_after(limit):
            await client.wait_connected()
    except trio.TooSlowError:
        raise _Unavailable(server.explain(f"cannot connect to ZooKeeper at {server.hosts} within {limit:g}s")) from None
    except ZKError as e:
        raise _Unavailable(server.explain(f"cannot connect to ZooKeeper at {server.hosts}: {e}")) from None


@dataclass
class _Child:
    process: trio.Process
    own_group: bool

    def signal(self, signum: int) -> None:
        if self.process.returncode is not None:
            return
        try:
            if self.own_group:
                os.killpg(self.process.pid, signum)
            else:
                self.process.send_signal(signum)
        except ProcessLookupError:
            pass


class _Runner:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.child: _Child | None = None
        #: COMMAND is being started (signals are held back until it exists) or has run (they are ignored).
        self.launching = False
        self.launched = False
        self.held_signals: list[int] = []
        self.signal_before_start: int | None = None
        self.work_scope = trio.CancelScope()

    async def run(self) -> int:
        with trio.open_signal_receiver(*FORWARDED_SIGNALS) as signals:
            code = EXIT_UNAVAILABLE
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._dispatch_signals, signals)
                with self.work_scope:
                    code = await self._run()
                nursery.cancel_scope.cancel()
            if self.work_scope.cancelled_caught and self.signal_before_start is not None:
                _say(f"{signal.Signals(self.signal_before_start).name} while waiting for the lock; COMMAND not run")
                code = 128 + self.signal_before_start
            return code

    async def _dispatch_signals(self, signals: AsyncIterator[int]) -> None:
        async for signum in signals:
            child = self.child
            if child is not None:
                self._forward(child, signum)
            elif self.launching:
                self.held_signals.append(signum)
            elif self.launched:
                continue  # COMMAND has ended; the lock is being released
            elif self.signal_before_start is None:
                self.signal_before_start = signum
                self.work_scope.cancel()

    @staticmethod
    def _forward(child: _Child, signum: int) -> None:
        if signum == signal.SIGINT and not child.own_group:
            return  # the terminal sent it to COMMAND already
        child.signal(signum)

    async def _run(self) -> int:
        opts = self.opts
        try:
            async with _open_client(opts) as client:
                await _connected(client, opts.server, opts.timeout)
                mutex = _recipe(client, opts)
                if not await self._acquire(mutex):
                    if opts.semaphore:
                        busy = f"all {opts.semaphore} leases are taken"
                        if opts.nowait:
                            _say(f"{opts.lockpath}: {busy}")
                        else:
                            _say(f"{opts.lockpath}: no lease was granted within {opts.wait:g}s ({busy})")
                        return EXIT_LOCK_BUSY
                    holder = None
                    with trio.move_on_after(opts.timeout):
                        try:
                            holder = await mutex.holder()
                        except ZKError:
                            pass
                    by = f" by {holder}" if holder else ""
                    if opts.nowait:
                        _say(f"{opts.lockpath} is locked{by}")
                    else:
                        _say(f"{opts.lockpath} was not granted within {opts.wait:g}s (locked{by})")
                    return EXIT_LOCK_BUSY
                lease = mutex.lease
                assert lease is not None
                try:
                    return await self._run_command(lease)
                finally:
                    with trio.CancelScope(shield=True), trio.move_on_after(opts.timeout):
                        try:
                            await mutex.release()
                        except (ZKError, LockError) as e:
                            _say(f"releasing {opts.lockpath}: {e}")
        except _Unavailable as e:
            _say(str(e))
            return EXIT_UNAVAILABLE
        except InvalidInputError as e:
            _say(str(e))
            return EXIT_USAGE
        except ZKError as e:
            _say(f"{opts.lockpath}: {e}")
            return EXIT_UNAVAILABLE

    async def _acquire(self, mutex: LockRecipe) -> bool:
        opts = self.opts
        if opts.nowait:
            return await mutex.acquire(blocking=False)
        if opts.wait is not None:
            with trio.move_on_after(opts.wait):
                return await mutex.acquire()
            return False
        return await mutex.acquire()

    async def _run_command(self, lease: Lease) -> int:
        opts = self.opts
        if lease.lost:
            _say(f"lock {opts.lockpath} lost before COMMAND started ({lease.lost_reason})")
            return EXIT_LOCK_LOST
        env = dict(os.environ)
        env["ZKLOCK_FENCING_TOKEN"] = str(lease.fencing_token)
        env["ZKLOCK_PATH"] = lease.path
        env["ZKLOCK_NODE"] = lease.node
        own_group = not opts.foreground
        # From here on a signal is meant for COMMAND: the process may run (and be signalled by someone who
        # saw its output) before open_process returns, so signals are held until it does.
        self.launching = True
        try:
            process = await trio.lowlevel.open_process(opts.command, env=env, process_group=0 if own_group else None)
        except FileNotFoundError:
            _say(f"{opts.command[0]}: command not found")
            return EXIT_NOT_FOUND
        except OSError as e:
            _say(f"{opts.command[0]}: cannot execute: {e.strerror or e}")
            return EXIT_CANNOT_EXECUTE
        finally:
            self.launching = False
            self.launched = True
        child = _Child(process, own_group)
        self.child = child
        for signum in self.held_signals:
            self._forward(child, signum)
        self.held_signals.clear()
        lost_reason: str | None = None
        try:
            async with trio.open_nursery() as nursery:

                async def terminate_on_loss() -> None:
                    nonlocal lost_reason
                    lost_reason = await lease.wait_lost()
                    _say(f"lock {opts.lockpath} lost ({lost_reason}); terminating COMMAND")
                    child.signal(signal.SIGTERM)
                    with trio.move_on_after(opts.grace):
                        await process.wait()
                        return
                    _say(f"COMMAND still running {opts.grace:g}s after SIGTERM; killing it")
                    child.signal(signal.SIGKILL)

                nursery.start_soon(terminate_on_loss)
                await process.wait()
                nursery.cancel_scope.cancel()
        finally:
            if process.returncode is None:
                child.signal(signal.SIGKILL)
                with trio.CancelScope(shield=True):
                    await process.wait()
            self.child = None
        if lost_reason is not None:
            return EXIT_LOCK_LOST
        returncode: int | None = process.returncode
        assert returncode is not None
        return 128 - returncode if returncode < 0 else returncode


def _recipe(client: Client, opts: argparse.Namespace) -> LockRecipe:
    """The lock ``zklock run`` takes: the mutex, the read side of the read/write lock, or a lease."""
    if opts.semaphore:
        return Semaphore(
            client, opts.lockpath, opts.semaphore, identifier=opts.identifier, cancel_on_loss=False, naming=opts.naming
        )
    if opts.shared:
        rw = ReadWriteLock(client, opts.lockpath, identifier=opts.identifier, cancel_on_loss=False, naming=opts.naming)
        return rw.read_lock
    return Mutex(client, opts.lockpath, identifier=opts.identifier, cancel_on_loss=False, naming=opts.naming)


async def _status(opts: argparse.Namespace) -> int:
    try:
        async with _open_client(opts) as client:
            await _connected(client, opts.server, opts.timeout)
            status = await lock_status(client, opts.lockpath)
            toolbox = None if status.state == "held" else await toolbox_status(client, opts.lockpath)
    except _Unavailable as e:
        _say(str(e))
        return EXIT_UNAVAILABLE
    except InvalidInputError as e:
        _say(str(e))
        return EXIT_USAGE
    except ZKError as e:
        _say(f"{opts.lockpath}: {e}")
        return EXIT_UNAVAILABLE
    if toolbox is not None:
        print(json.dumps(toolbox.json()) if opts.json else escape_controls("\n".join(toolbox.lines), keep="\n"))
        return 0
    code = EXIT_UNKNOWN if status.state == "unknown" else 0
    if opts.json:
        print(json.dumps(status_json(status)))
        return code
    for warning in status.warnings:
        _say(f"warning: {warning}")
    print(escape_controls("\n".join(status_lines(status)), keep="\n"))
    return code
