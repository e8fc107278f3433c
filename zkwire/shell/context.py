"""The session context of the ``zkwire`` shell: what every command runs against.

:class:`Context` holds the session (opened by :meth:`Context.connect`, replaced by the shell's
``connect``, ended by ``close``), the output streams (everything printed has its control characters
escaped), the one-shot and persistent watches whose events it prints, and the interactive shell's state
(history, ``printwatches``, ``quit``, and the counters of what its sessions did: one
:class:`~zkwire.observing.SessionCounters` attached to every session the shell opens, shown by
``session``).  Running a command line against it is :mod:`zkwire.shell.dispatch`.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Callable
from typing import TextIO

import trio

from ..client.api import Client, open_client
from ..client.fourletter import connect_error_reason
from ..client.watchers import Watch, WatchedEvent
from ..constants import EventType
from ..errors import AuthFailedError, NoWatcherError, ZKError
from ..observing.counters import SessionCounters
from ..sansio.hosts import parse_connect_string
from ..sansio.session import SessionState
from ..sasl import SaslMechanism
from ..terminal import escape_controls
from . import format as fmt
from .outcomes import ConnectError

__all__ = ["Context"]


class Context:
    """What commands run against: the session (if any), output streams, shell state."""

    def __init__(
        self,
        *,
        hosts: str,
        session_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        auth: list[tuple[str, str]] | None = None,
        sasl: SaslMechanism | None = None,
        ssl_context: ssl.SSLContext | None = None,
        hosts_note: str = "",
        interactive: bool = False,
        out: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.hosts = hosts
        #: Added to connection errors while ``hosts`` is the tool's default, not a server the user named
        #: (see :func:`zkwire.shell.runtime.choose_server`).
        self.hosts_note = hosts_note
        self.session_timeout = session_timeout
        self.connect_timeout = connect_timeout
        self.auth = list(auth or ())
        #: The SASL mechanism every session of the shell authenticates with (``--sasl``).
        self.sasl = sasl
        #: TLS for every session (``--tls...``); None: plain TCP.
        self.ssl_context = ssl_context
        self.interactive = interactive
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.client: Client | None = None
        self.nursery: trio.Nursery | None = None
        self.print_watches = True
        self.history: dict[int, str] = {}
        self.command_number = 0
        self.quit_requested = False
        #: The interactive shell's counters, attached to every session it opens (kept across
        #: ``connect``: they count all of them); their gauges are the current session's.  One-shot runs
        #: have none (their session makes no event).
        self.counters: SessionCounters | None = SessionCounters() if interactive else None
        #: One-shot watches and persistent watches registered, and whether an event has arrived.
        self.watches_set = 0
        self.persistent_watches = 0
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

    def explain_hosts(self, message: str) -> str:
        """A connection error about :attr:`hosts`, with the note saying they are the default, if they are."""
        return f"{message} {self.hosts_note}" if self.hosts_note else message

    def require_client(self) -> Client:
        client = self.client
        if client is None:
            raise ConnectError("Not connected (use: connect HOST:PORT)")
        return client

    async def connect(self, hosts: str | None = None) -> None:
        """Close the current session (if any) and open one to ``hosts``; raises :class:`ConnectError`."""
        explain: Callable[[str], str] = self.explain_hosts if hosts is None else str
        hosts = hosts if hosts is not None else self.hosts
        parse_connect_string(hosts)  # InvalidArgumentError (usage) before anything else
        await self.close()
        assert self.nursery is not None
        done, finished = trio.Event(), trio.Event()
        client: Client = await self.nursery.start(self._run_connection, hosts, done, finished)
        self.client, self._conn_done, self._conn_finished = client, done, finished
        if self.counters is not None:
            self.counters.client = client
        try:
            with trio.fail_after(self.connect_timeout):
                await client.wait_connected()
        except trio.TooSlowError:
            await self.close()
            raise ConnectError(explain(await _connect_failure(hosts, self.connect_timeout))) from None
        except AuthFailedError as e:  # a certificate, a credential or SASL refused: the message says which
            await self.close()
            raise ConnectError(f"Cannot connect to {hosts}: {e}") from None
        except ZKError as e:
            await self.close()
            raise ConnectError(explain(f"Cannot connect to {hosts}: {e}")) from None
        except BaseException:
            await self.close()
            raise
        if hosts != self.hosts:
            self.hosts, self.hosts_note = hosts, ""

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
                hosts,
                session_timeout=self.session_timeout,
                auth=self.auth,
                sasl=self.sasl,
                ssl_context=self.ssl_context,
                wait_connected=False,
                observers=[self.counters] if self.counters is not None else (),
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
        if self.counters is not None:
            self.counters.client = None
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

    # ------------------------------------------------------------------ history

    def record(self, line: str) -> None:
        """Add a shell line to the history, under the next command number."""
        self.history[self.command_number] = line
        self.command_number += 1


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
