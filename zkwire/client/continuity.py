"""Continuity across session expiry: a new session after each expiry, handed to the application.

A :class:`~zkwire.Client` is one session, and its expiry is final (its ephemeral nodes and watches are
gone; pretending otherwise would hide that).  Applications that must keep running open a new session
and re-establish what they had.  :func:`sessions` does the opening, with back-off, and tells the
application about each new session::

    async with zkwire.sessions("127.0.0.1:2181/app", session_timeout=10) as stream:
        async for zk in stream:               # a connected Client; the next one after each expiry
            try:
                await zk.ensure_ephemeral("/workers/me")   # parents too; a lost reply is no error
                await serve(zk)
            except zkwire.SessionExpiredError:
                continue                      # ephemerals and watches are gone: start over

The stream is also a *session source* for the helpers that carry on across expiry by themselves:
:func:`zkwire.watch_data`, :func:`zkwire.watch_children` and :func:`zkwire.open_tree_cache` accept it in
place of a client.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Self

import trio

from ..errors import AuthFailedError, ClientClosedError, InvalidInputError, SessionExpiredError, ZKError
from ..sansio.backoff import Backoff
from ..sansio.hosts import parse_connect_string
from ..sansio.session import SessionState
from .aio import require_trio
from .api import Client, make_client, open_client, running
from .groups import task_nursery

__all__ = ["Sessions", "sessions", "SessionSource", "current_client"]

log = logging.getLogger("zkwire.sessions")


class Sessions:
    """The sessions opened one after another by :func:`sessions`; an async iterator of clients.

    Iterating yields each new connected :class:`~zkwire.Client` once, in order, skipping one that ended
    before it was asked for.  Iteration ends when the ``async with sessions(...)`` block is left, and
    raises if a session could not be opened for good (rejected credentials).
    """

    def __init__(self) -> None:
        #: The newest client (None before the first session); it may have ended already.
        self.current: Client | None = None
        #: How many sessions have been opened so far.
        self.generation = 0
        self._yielded = 0
        self._changed = trio.Event()
        self._error: BaseException | None = None
        self._closed = False

    def _publish(self, client: Client) -> None:
        self.current = client
        self.generation += 1
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _finish(self, error: BaseException | None) -> None:
        self._error = error
        self._closed = True
        self._wake()

    async def client(self, after: Client | None = None) -> Client:
        """The current live client; waits for a new session if it has ended (or is ``after``).

        Raises:
            ClientClosedError: the ``sessions`` block has been left.
            AuthFailedError: a new session could not be opened (credentials rejected).
        """
        zk = await self._live_client(lambda zk: zk is not after)
        if zk is None:
            raise ClientClosedError("the sessions block has ended")
        return zk

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Client:
        zk = await self._live_client(lambda _: self.generation > self._yielded)
        if zk is None:
            raise StopAsyncIteration
        self._yielded = self.generation
        await trio.lowlevel.checkpoint()
        return zk

    async def _live_client(self, wanted: Callable[[Client], bool]) -> Client | None:
        """The current client once it is live and ``wanted``; None once the block has been left.

        Raises:
            AuthFailedError: a new session could not be opened (credentials rejected).
        """
        while True:
            if self._error is not None:
                raise self._error
            if self._closed:
                return None
            zk = self.current
            if zk is not None and not zk.state.is_terminal and wanted(zk):
                return zk
            await self._changed.wait()

    async def _run(self, hosts: str, min_delay: float, max_delay: float, options: dict[str, Any]) -> None:
        failures = 0
        waits = Backoff(min_delay, max_delay)
        abandoned: tuple[int, bytes] | None = None
        while True:
            opened_at = trio.current_time()
            try:
                if abandoned is not None:
                    await close_abandoned(hosts, abandoned, options)
                    abandoned = None
                async with open_client(hosts, **options) as zk:
                    seeds = hosts
                    self._publish(zk)
                    lived = trio.current_time()
                    async for _ in zk.states():
                        pass  # ends after a terminal state
                    if zk.state is SessionState.AUTH_FAILED:
                        ended = zk.ended  # the refusal as the session saw it: a credential, SASL, TLS
                        raise ended if isinstance(ended, AuthFailedError) else AuthFailedError(detail="rejected")
                    log.warning("session 0x%x %s; opening a new one", zk.session_id, zk.state.value)
                    hosts = followed_hosts(seeds, zk)
                    abandoned = zk._core.abandoned
                    timeout = zk.session_timeout or options.get("session_timeout", 10.0)
                    if trio.current_time() - lived >= max(float(timeout), 1.0):
                        failures = 0  # it lived: the next one opens at once
            except (AuthFailedError, InvalidInputError) as e:
                self._finish(e)  # opening again would fail the same way
                return
            except ZKError as e:
                log.warning("could not open a session: %s", e)
            failures += 1
            if failures > 1 or trio.current_time() - opened_at < min_delay:
                await trio.sleep(waits.delay(failures - 1))


def followed_hosts(given: str, zk: Client) -> str:
    """The connect string for the session after ``zk``'s: ``given`` plus the servers ``zk`` learnt while
    following its ensemble (the ones ``given`` named may all have left it since), with its chroot."""
    if zk.ensemble is None:
        return given
    seeds, chroot = parse_connect_string(given)
    learnt = [h for h in zk._core.hosts if h not in seeds]
    return ",".join(str(h) for h in [*seeds, *learnt]) + chroot


async def close_abandoned(hosts: str, session: tuple[int, bytes], options: dict[str, Any]) -> None:
    """Close a session the client declared expired by itself, before the next session is opened.

    Such a session may still live on the server, with its ephemeral nodes, until the server expires it:
    a new session's ``create(path, ephemeral=True)`` of the same path would then fail with
    ``NodeExistsError``, and its lock contenders would queue behind the old session's nodes.  So it is
    presented again (its id and password) and, if the server re-attaches it, closed (closeSession
    removes its ephemeral nodes before the reply comes).  If the server answers that it has expired, its
    removal has been queued by then, ahead of anything the next session sends.  This waits, as opening a
    session does, as long as no server answers; a refusal of any other kind is logged and the next
    session opened anyway.
    """
    # A read-only server cannot close it: only read-write servers are asked.
    given = {k: v for k, v in options.items() if k != "wait_connected"}
    client = make_client(hosts, **{**given, "allow_read_only": False})
    client._core.resume(*session)
    try:
        async with running(client, wait_connected=True):
            log.info("session 0x%x: still held by the server; closing it", session[0])
    except SessionExpiredError:
        log.info("session 0x%x: expired on the server", session[0])
    except ZKError as e:
        log.warning("session 0x%x could not be closed (%s); opening the next one", session[0], e)


@asynccontextmanager
async def sessions(
    hosts: str,
    *,
    min_delay: float = 0.1,
    max_delay: float = 10.0,
    **client_options: Any,
) -> AsyncIterator[Sessions]:
    """Open a session now and a new one after each expiry, until the block is left.

    Each new session is opened on ``hosts``'s servers and the ones the session before it followed (the
    ensemble's members may have changed since ``hosts`` was written: see docs/reconfig.rst).

    ``client_options`` go to :func:`~zkwire.open_client` (``session_timeout``, ``auth``, ``ssl_context``
    ...).  A session that ends (expired, or closed by the application with ``zk.close()``) is replaced at
    once; when sessions end in quick succession the next opening waits, with exponential back-off from
    ``min_delay`` to ``max_delay`` seconds and jitter.  Reaching a server at all is the client's own
    reconnect loop: opening waits as long as no server answers.

    A session the client declared expired by itself (no server reached for its timeout) may still be
    held by the server, with its ephemeral nodes and lock contenders: it is closed on the server before
    the next session is opened (:func:`close_abandoned`), so the next session never collides with its
    own leftovers.

    Raises:
        AuthFailedError: from iteration and :meth:`Sessions.client` once the server rejected the
            credentials (no further session is attempted).
        InvalidInputError: from iteration and :meth:`Sessions.client`: ``hosts`` or an option is invalid.
        NotInTrioError: called outside trio.
    """
    require_trio("zkwire.sessions")
    stream = Sessions()
    # The opening task is shielded from the cancel scopes around the block, like a client's own tasks:
    # when a deadline cancels the block, the body's shielded clean-up (a lock release) still has its
    # session; the current session is closed once the block has been left.
    keeper = trio.CancelScope(shield=True)

    async def run() -> None:
        with keeper:
            await stream._run(hosts, min_delay, max_delay, dict(client_options))

    async with task_nursery("zkwire.sessions") as nursery:  # one exception out, never a group
        nursery.start_soon(run, name="zkwire.sessions")
        try:
            yield stream
        finally:
            stream._finish(stream._error)
            keeper.cancel()


#: What the helpers that follow a node accept: one client (they stop at its expiry) or a
#: :class:`Sessions` stream (they carry on with each new session).
SessionSource = Client | Sessions


async def current_client(source: SessionSource, after: Client | None = None) -> Client:
    """The client to use now: ``source`` itself, or the current session of a :class:`Sessions` stream.

    Raises:
        SessionExpiredError, AuthFailedError, ClientClosedError: ``source`` is a client that has ended,
            or a stream that has.
    """
    if isinstance(source, Client):
        ended = source.ended
        if ended is not None:
            raise ended
        return source
    return await source.client(after)
