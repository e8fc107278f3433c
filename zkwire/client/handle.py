"""What a :class:`~zkwire.Client` is apart from its ops: the session handle.

:class:`SessionHandle` is the base of :class:`~zkwire.Client`.  It checks the options and builds the
session's parts (the sans-I/O :class:`~zkwire.sansio.session.SessionCore`, the
:class:`~zkwire.sansio.requests.RequestBuilder` and the :class:`~zkwire.client.connection.ConnectionDriver`),
shows the session's state (``state``, ``session_id``, ``ended``...), runs its life (state streams and
listeners, background tasks, waiting for a state, closing), queues its credentials, and owns the one
path every request takes to the server: :meth:`SessionHandle._send` for one built request,
:meth:`SessionHandle._pipeline` for a burst.

:class:`~zkwire.Client` (:mod:`zkwire.client.api`) adds the ops, each a request built by the builder and
sent here; the whole-path helpers (:mod:`zkwire.client.nodes`) build and send their requests the same
way.  A base class rather than a member object, so that ``client.state`` and ``client.close()`` stay
the client's own attributes and the helpers can take any client without importing the op API (which
delegates to them).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import trio

from ..errors import ClientClosedError, InvalidArgumentError, ZKError
from ..sansio.hosts import parse_connect_string
from ..sansio.moves import DEFAULT_MOVE_SPREAD
from ..sansio.observing import Observer, RecipeEvent
from ..sansio.ops import ReadOp, WriteOp
from ..sansio.options import check_max_frame, check_session_timeout
from ..sansio.paths import strip_chroot, with_chroot_hint
from ..sansio.requests import Request, RequestBuilder, encodable
from ..sansio.session import HostPort, SessionCore, SessionState
from ..sasl.mechanism import SaslMechanism
from .calls import ClientCore, PendingCall
from .connection import Connect, tcp_connector
from .ensemble import EnsembleFollower
from .fastpath import connection_driver
from .observers import ObserverHub
from .watchers import StateStream, Watcher

__all__ = ["SessionHandle"]

log = logging.getLogger("zkwire.client")

T = TypeVar("T")


class SessionHandle:
    """A ZooKeeper session's state, life and send path: the base of :class:`~zkwire.Client` (see the
    module's documentation); create a client with :func:`~zkwire.open_client`."""

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout: float = 10.0,
        allow_read_only: bool = False,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslMechanism | None = None,
        max_frame: int | None = None,
        connect: Connect | None = None,
        follow_ensemble: bool | None = None,
        move_spread: float = DEFAULT_MOVE_SPREAD,
        observers: Sequence[Observer] = (),
    ) -> None:
        host_list, chroot = parse_connect_string(hosts)
        if follow_ensemble is not None and not isinstance(follow_ensemble, bool):
            raise InvalidArgumentError(f"follow_ensemble must be a bool or None, not {type(follow_ensemble).__name__}")
        if isinstance(move_spread, bool) or not isinstance(move_spread, int | float) or not 0 <= move_spread <= 3600:
            raise InvalidArgumentError(f"move_spread must be a number of seconds from 0 to 3600, not {move_spread!r}")
        session_timeout = check_session_timeout(session_timeout)
        kwargs: dict[str, Any] = {}
        if max_frame is not None:
            kwargs["max_frame"] = check_max_frame(max_frame)
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise InvalidArgumentError(f"ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}")
        if sasl is not None and not (
            callable(getattr(sasl, "exchange", None)) and isinstance(getattr(sasl, "name", None), str)
        ):
            raise InvalidArgumentError(f"sasl must be a SASL mechanism (zkwire.sasl), not {type(sasl).__name__}")
        if connect is not None and not callable(connect):
            raise InvalidArgumentError(f"connect must be an async function, not {type(connect).__name__}")
        self._core: ClientCore = SessionCore(
            host_list,
            session_timeout=session_timeout,
            chroot=chroot,
            allow_read_only=allow_read_only,
            sasl=sasl,
            **kwargs,
        )
        self._chroot = chroot
        self._requests: RequestBuilder[Watcher] = RequestBuilder(chroot, self._core.watches, self._core.max_frame)
        self._driver = connection_driver(self._core, connect or tcp_connector(ssl_context))
        #: Follows the ensemble's configuration (None: not following; see :mod:`zkwire.client.ensemble`).
        #: Off by default under TLS: a configuration names plain client ports.
        follow = ssl_context is None if follow_ensemble is None else follow_ensemble
        self._follower = EnsembleFollower(self, host_list, float(move_spread)) if follow else None
        self._move_spread = float(move_spread)
        #: The observers and their delivery thread (:mod:`zkwire.client.observers`).
        self._observers = ObserverHub(self._core)
        if isinstance(observers, str | bytes) or not isinstance(observers, Sequence):
            raise InvalidArgumentError("observers must be a sequence of observers")
        for observer in observers:
            self._observers.add(observer)

    # ------------------------------------------------------------------ public attributes

    @property
    def state(self) -> SessionState:
        return self._core.state

    @property
    def session_id(self) -> int:
        return self._core.session_id

    @property
    def session_timeout(self) -> float | None:
        """The negotiated session timeout in seconds (None before the first connection)."""
        return self._core.negotiated_timeout

    @property
    def last_zxid(self) -> int:
        return self._core.last_zxid

    @property
    def connected_host(self) -> HostPort | None:
        return self._core.current_host if self._core.state.is_connected else None

    @property
    def chroot(self) -> str:
        return self._chroot

    @property
    def ended(self) -> ZKError | None:
        """Why the session has ended (the error its requests now raise: :class:`SessionExpiredError`,
        :class:`AuthFailedError` or :class:`ClientClosedError`), or None while it lives."""
        return self._core.terminal_error() if self._core.state.is_terminal else None

    @property
    def max_in_flight(self) -> int:
        """Requests in flight on one connection at most (1000 by default; settable); more wait in order
        in the client (in their caller's cancel scope: a request given up before it was sent is never
        sent) and go out as replies make room.  The server stops reading a connection with ~1,000
        requests outstanding and buffers every reply it owes, so an unbounded burst costs it memory and
        the client liveness."""
        return self._driver.max_in_flight

    @max_in_flight.setter
    def max_in_flight(self, value: int) -> None:
        self._driver.max_in_flight = value

    @property
    def in_flight(self) -> int:
        """Requests sent on the current connection and not answered yet."""
        return self._core.outstanding

    @property
    def backlogged(self) -> int:
        """Requests waiting for room under :attr:`max_in_flight` (not sent yet)."""
        return len(self._driver._backlog)

    @property
    def expiry_deadline(self) -> float | None:
        """The earliest moment, on trio's clock, the servers may expire the session: the last moment a
        server is known to have heard from the client, plus the session timeout (None before the
        session first opened).  The lock recipes report how long before it they told a
        holder of a loss (after an expiry it is in the past)."""
        return self._core.expiry_deadline

    # ------------------------------------------------------------------ observers

    def add_observer(self, observer: Observer) -> None:
        """Tell ``observer`` (``observer.on_event(event)``) what this session does from now on: every
        request, connection and state change, watch notification and recipe event
        (:mod:`zkwire.observing`).  It is called in a thread of its own, never holding up the client:
        see :mod:`zkwire.client.observers`.

        Raises:
            InvalidArgumentError: ``observer`` has no ``on_event`` method.
        """
        self._observers.add(observer)

    def remove_observer(self, observer: Observer) -> None:
        """Stop telling ``observer`` (events not delivered yet no longer reach it: :meth:`flush_observers`
        first for those); unknown ones are ignored."""
        self._observers.remove(observer)

    @property
    def observed(self) -> bool:
        """Some observer is attached: a recipe reports its events only then."""
        return self._core.observed is not None

    def report(self, event: RecipeEvent) -> None:
        """Hand a recipe's event to this session's observers (nothing happens when none is attached).

        Raises:
            InvalidArgumentError: ``event`` is not a :class:`~zkwire.observing.RecipeEvent`.
        """
        self._observers.report(event)

    async def flush_observers(self, limit: float = 5.0) -> bool:
        """Wait (at most ``limit`` seconds) until every event so far has reached every observer; True if
        it has (an observer that is stuck in a call keeps it False).  It never raises."""
        return await self._observers.flush(limit)

    def states(self) -> StateStream:
        """An async iterator of session states, starting with the current one; ends after a terminal one."""
        stream = StateStream(self._core.state)
        if not self._core.state.is_terminal:
            self._driver.state_streams.append(stream)
        return stream

    def add_state_listener(self, listener: Callable[[SessionState], None]) -> None:
        """Call ``listener(new_state)`` on every state change, synchronously, from the task that saw it.

        For code that must react before anything else runs (the lock recipes cancel a lock holder's work
        this way).  The listener must not block or raise.  Most applications want :meth:`states`.
        """
        self._driver.state_listeners.append(listener)

    def remove_state_listener(self, listener: Callable[[SessionState], None]) -> None:
        """Stop calling ``listener`` (see :meth:`add_state_listener`); unknown listeners are ignored."""
        try:
            self._driver.state_listeners.remove(listener)
        except ValueError:
            pass

    def spawn(self, async_fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        """Run ``async_fn()`` in the client's own task group; it is cancelled when the client closes.

        Its exceptions are logged, never propagated (the client's tasks must not fail).

        Raises:
            ClientClosedError: the client is closing or not running.
        """
        driver = self._driver
        if driver.nursery is None or driver.closing:
            raise ClientClosedError("client is not running")

        async def guarded() -> None:
            scope = driver.task_scope()
            try:
                with scope:
                    await async_fn()
            except ZKError as e:
                log.debug("background task %s ended: %r", name or async_fn, e)
            except Exception:
                log.exception("background task %s failed", name or async_fn)
            finally:
                driver.forget_task_scope(scope)

        driver.nursery.start_soon(guarded, name=name)

    async def wait_for_state(self, *states: SessionState) -> SessionState:
        """Wait until the session is in one of ``states``; return it.

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session ended first (unless that
                terminal state is one of ``states``).
        """
        return await self._driver.wait_for_state(*states)

    async def wait_connected(self) -> None:
        """Wait until the session is connected (read-write, or read-only when allowed).

        Raises:
            SessionExpiredError, AuthFailedError, ClientClosedError: the session ended first.
        """
        await self.wait_for_state(SessionState.CONNECTED, SessionState.READ_ONLY)

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Close the session (closeSession) and stop all tasks.  Idempotent; never raises."""
        await self._driver.close()
        await self._observers.aclose()

    # ------------------------------------------------------------------ credentials

    def _queue_auth(self, scheme: str, credential: bytes | str, *, required: bool = False) -> PendingCall:
        """Check, encode and hand a credential to the core; it raises here or never (the reader never
        meets a credential it cannot send).  Messages never show the credential itself."""
        if not isinstance(scheme, str) or not scheme:
            raise InvalidArgumentError(f"auth scheme must be a non-empty str, not {scheme!r}")
        if not encodable(scheme):
            raise InvalidArgumentError("auth scheme is not encodable as UTF-8")
        if isinstance(credential, str):
            if not encodable(credential):
                raise InvalidArgumentError("auth credential is not encodable as UTF-8")
            auth = credential.encode()
        elif isinstance(credential, bytes | bytearray | memoryview):
            auth = bytes(credential)
        else:
            raise InvalidArgumentError(f"auth credential must be str or bytes, not {type(credential).__name__}")
        call = PendingCall()
        self._core.add_auth(scheme, auth, call, trio.current_time(), required=required)
        return call

    async def add_auth(self, scheme: str, credential: bytes | str) -> None:
        """Authenticate this session (e.g. ``add_auth("digest", "user:password")``).

        The credential is re-sent on every reconnect.  A rejected credential raises
        :class:`~zkwire.errors.AuthFailedError` (the server then drops the connection; the client
        reconnects without it).

        Raises:
            AuthFailedError: the server rejected the credential.
            InvalidArgumentError: an empty scheme or a credential that cannot be sent.
            SessionExpiredError, ClientClosedError: the session has ended.
        """
        call = self._queue_auth(scheme, credential)
        await self._driver.flush()
        await call.wait()
        error = call.take_auth_result().error
        if error is not None:
            raise error

    # ------------------------------------------------------------------ the send path

    async def _send(self, request: Request[T, Watcher]) -> T:
        """Send a built request (``request.path``: the server path); its converted result, or its error
        raised: the error names the path as the caller knows it, and under a chroot a NoNode error says
        whether the chroot itself is missing (:func:`~zkwire.sansio.paths.with_chroot_hint`, no extra
        round trip).  Kept to one coroutine: it is the request path of every op."""
        path = request.path
        if path is not None and self._chroot:
            path = strip_chroot(self._chroot, path)
        reply = await self._driver.call(request.op, request.record, path, request.watch)
        if reply.error is not None:
            raise with_chroot_hint(reply.error, self._chroot, request.op) if self._chroot else reply.error
        return request.convert(reply.body)

    async def _pipeline(self, ops: Iterable[WriteOp | ReadOp]) -> list[Any]:
        """Send ``ops`` back to back (built by the builder's ``pipelined``), then wait for all replies:
        each slot holds its op's converted result or its error (returned, not raised)."""
        requests = [self._requests.pipelined(op) for op in ops]
        replies = await self._driver.call_burst([(r.op, r.record, r.path) for r in requests])
        return [
            reply.error if reply.error is not None else request.convert(reply.body)
            for request, reply in zip(requests, replies, strict=True)
        ]
