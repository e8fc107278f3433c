"""The session state machine, sans I/O: bytes and time in, events and bytes out.

One :class:`SessionCore` lives as long as a ZooKeeper session.  It owns everything that must survive a
broken TCP connection -- session id and password, the last zxid seen, auth credentials, the watch
registry -- and, for the connection currently in use, the handshake, the requests awaiting replies,
and the liveness clocks.  It composes one part per job, each a module of its own:

* :mod:`~zkwire.sansio.routing`: the incoming side, each frame the server sends routed to the part it
  answers (the core's ``receive_*`` methods hand the bytes to it);
* :mod:`~zkwire.sansio.hosts`: the servers, their order, and the back-off between attempts;
* :mod:`~zkwire.sansio.moves`: a planned move to another server when the host list changes
  (:meth:`SessionCore.update_hosts`), carried out without a state change or a failed request;
* :mod:`~zkwire.sansio.liveness`: ping, read timeout, suspension and client-side expiry, and what the
  timer is to do at a moment (the core carries it out);
* :mod:`~zkwire.sansio.handshake`: the connection's phases (ConnectRequest and its answer, auth,
  SetWatches) and the session's credentials;
* :mod:`~zkwire.sansio.matching`: the requests in flight, their xids, each reply checked against its
  request;
* :mod:`~zkwire.sansio.watches`: the watch registry (watches are registered and removed here, as the
  requests carrying them are answered or the application drops them: :meth:`SessionCore.forget_watch`);
* :mod:`~zkwire.sansio.events`: the state and the events handed to the I/O layer.

The I/O layer drives it like this::

    host = core.next_host()               # where to connect (after sleeping core.reconnect_delay())
    core.connection_made(host, now)       # TCP is up: a ConnectRequest is queued
    send(core.data_to_send())
    events = core.receive_data(chunk, now)    # for every chunk read
    events = core.handle_timer(now)       # at core.next_deadline()
    core.send_request(op, record, token)  # for each user request (state must be CONNECTED/READ_ONLY)
    if core.has_data_to_send: ...         # after events: write what a reply or the timer queued
    events = core.connection_lost(now)    # when the socket breaks or a DropConnection event asks for it
    core.connection_ended(now, answered)  # once the connection is gone: paces the next attempt
    raise core.terminal_error()           # to a caller, once core.state.is_terminal

Time is a float in seconds from any monotonic clock; the core never reads a clock itself.
Replies come back as :class:`Reply` events carrying the opaque ``token`` given with the request.
The core is generic in the I/O layer's token and watcher types (``SessionCore[Token, Watcher]``): a
:class:`Reply` carries the token's type and a :class:`WatchNotification` the watchers', so the I/O
layer needs no casts; the core never looks inside either.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from typing import Generic

from ..constants import DEFAULT_MAX_FRAME, PING_XID, EventType, OpCode, WatcherType
from ..errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    SessionExpiredError,
    ZKError,
    copy_error,
)
from ..protocol.codec import encode_request, op_name
from ..protocol.records import Record
from ..sasl.mechanism import SaslMechanism
from .backoff import SHARED_RNG
from .events import (
    AuthResult,
    DeadlineMoved,
    DropConnection,
    Event,
    Moved,
    Reply,
    SaslStep,
    SessionState,
    StateChanged,
    TokenT,
    WatcherT,
    WatchNotification,
    WatchRequest,
)
from .handshake import (
    MAX_PASSWORD,
    SET_WATCHES_BATCH_BYTES,
    TIMEOUT_CEILING,
    WATCH_FRAME_OVERHEAD,
    Handshake,
    Phase,
    connect_request,
)
from .hosts import HostPort, HostRotation
from .liveness import Liveness
from .matching import RequestQueue
from .moves import DEFAULT_MOVE_SPREAD, MoveSteps
from .observing import ConnectionEventKind, Observation
from .options import check_max_frame, check_session_timeout
from .routing import FrameRouter
from .watches import WatchKind, WatchRegistry

__all__ = [
    "TokenT",
    "WatcherT",
    "SessionState",
    "SessionCore",
    "Reply",
    "WatchNotification",
    "StateChanged",
    "DropConnection",
    "AuthResult",
    "SaslStep",
    "DeadlineMoved",
    "Moved",
    "WatchRequest",
    "Event",
    "HostPort",
    "MAX_PASSWORD",
    "TIMEOUT_CEILING",
    "SET_WATCHES_BATCH_BYTES",
    "WATCH_FRAME_OVERHEAD",
]

log = logging.getLogger("zkwire.session")

#: Connection attempts that fit in one session timeout at least (see ``SessionCore.connect_timeout``).
CONNECT_ATTEMPTS = 3


class SessionCore(Generic[TokenT, WatcherT]):
    """ZooKeeper session logic for one session across any number of connections: the session's identity
    and state, and the I/O layer's calls (connections, requests, timers) carried out on its parts (see the
    module); the frames a server sends go to its :class:`~zkwire.sansio.routing.FrameRouter`.  What a
    server says in its ConnectResponse is checked before the session uses it ("Server values" in
    :mod:`~zkwire.sansio.handshake`).
    """

    __slots__ = (
        "_clock",
        "_draining",
        "_ended_by",
        "_handshake",
        "_hosts",
        "_moves",
        "_out",
        "_passwd",
        "_pending",
        "_phase",
        "_router",
        "abandoned",
        "allow_read_only",
        "attachments",
        "chroot",
        "current_host",
        "last_zxid",
        "max_frame",
        "observed",
        "seen_read_write",
        "session_id",
        "state",
        "watches",
    )

    def __init__(
        self,
        hosts: Sequence[HostPort],
        *,
        session_timeout: float = 10.0,
        chroot: str = "",
        allow_read_only: bool = False,
        max_frame: int = DEFAULT_MAX_FRAME,
        rng: random.Random | None = None,
        sasl: SaslMechanism | None = None,
    ) -> None:
        session_timeout = check_session_timeout(session_timeout)
        max_frame = check_max_frame(max_frame)
        #: The servers, their order and the back-off between attempts.
        self._hosts = HostRotation(hosts, rng or SHARED_RNG)
        #: The move's draining step is under way: no new request is sent (mirrors ``_moves.move.draining``,
        #: read on every request).
        self._draining = False
        self._clock = Liveness(session_timeout)
        self.chroot = chroot
        self.allow_read_only = allow_read_only
        self.max_frame = max_frame

        self.state = SessionState.CONNECTING
        self.session_id = 0
        self._passwd = bytes(16)
        self.last_zxid = 0
        self.current_host: HostPort | None = None
        self.seen_read_write = False
        self.watches: WatchRegistry[WatcherT] = WatchRegistry()

        self._phase = Phase.IDLE
        self._out = bytearray()
        #: The requests in flight on this connection (a deque: ``len`` is on every request's path).
        self._pending: RequestQueue[TokenT, WatcherT] = RequestQueue()
        self._handshake: Handshake[TokenT, WatcherT] = Handshake(self._out, self._pending, max_frame, sasl)
        #: The incoming side: each frame the server sends, routed to the part it answers.
        self._router: FrameRouter[TokenT, WatcherT] = FrameRouter(
            self, self._pending, self._clock, self._handshake, self._hosts
        )
        #: Moves to another server decided by a host-list change (:mod:`~zkwire.sansio.moves`).
        self._moves: MoveSteps[TokenT, WatcherT] = MoveSteps(
            self, self._pending, self._clock, self._hosts, rng or SHARED_RNG
        )
        #: The id and password of the session once the client has declared it expired by itself (no
        #: server reached for the session timeout): the server may still hold it, and its ephemeral
        #: nodes, until it expires it there.  :func:`zkwire.sessions` closes such a session before it
        #: opens the next one.  None otherwise.
        self.abandoned: tuple[int, bytes] | None = None
        #: Why the session ended, when a server's answer or the client's own check ended it (a refused
        #: credential, a session that needs SASL): :meth:`terminal_error` raises copies of it.
        self._ended_by: ZKError | None = None
        #: Connections on which the session opened (the first, then one per re-attach: a reconnection
        #: or a planned move).
        self.attachments = 0
        #: The observers' link (:mod:`~zkwire.sansio.observing`), set by the I/O layer; None: unobserved.
        self.observed: Observation | None = None

    # ------------------------------------------------------------------ timeouts and deadlines

    @property
    def requested_timeout(self) -> float:
        """The session timeout asked for (seconds)."""
        return self._clock.requested

    @property
    def negotiated_timeout(self) -> float | None:
        """The session timeout the server granted (clamped: see "Server values" in
        :mod:`~zkwire.sansio.handshake`); None before."""
        return self._clock.negotiated

    @property
    def hosts(self) -> list[HostPort]:
        return self._hosts.hosts

    @property
    def connect_timeout(self) -> float:
        """How long one connection attempt may take to reach the handshake's answer: the session timeout
        shared among the servers, and at most a third of it, so that at least three attempts fit in a
        session timeout.  A server that accepts a connection and never answers it (ZooKeeper 3.8.0
        starting up can leave one hanging: its close fails while its database is not loaded) then does
        not cost a session given a single server its whole timeout."""
        return self._clock.timeout / max(len(self._hosts), CONNECT_ATTEMPTS)

    @property
    def read_timeout(self) -> float:
        return self._clock.read_timeout

    @property
    def session_timeout(self) -> float:
        """The negotiated session timeout (the requested one before any session): the longest a request
        may stay unanswered on a connection whose server answers later ones (then the connection is
        dropped as broken and the request fails with ConnectionLossError)."""
        return self._clock.timeout

    @property
    def liveness_deadline(self) -> float:
        """When the connection counts as dead unless the server answers something before then: the read
        timeout after the newest answer arrived (the connect timeout during the handshake; inf without a
        connection).  It moves only as answers arrive, so an I/O layer blocked in a write while the
        server keeps answering (busy, not dead) waits on."""
        return self._clock.liveness_deadline(self._phase)

    @property
    def expiry_deadline(self) -> float | None:
        """The earliest moment the servers may expire the session: the newest moment a server is known to
        have heard from the client (:attr:`~zkwire.sansio.liveness.Liveness.last_heard`) plus the
        session timeout; None before the session first opened."""
        return self._clock.server_expiry

    @property
    def ping_interval(self) -> float:
        return self._clock.ping_interval

    def prefer_host(self, host: HostPort) -> None:
        """Try ``host`` next (used when a read-write server is found while read-only)."""
        self._hosts.prefer(host)

    def next_host(self) -> HostPort:
        """The server to connect to next."""
        return self._hosts.next()

    def reconnect_delay(self) -> float:
        """How long to wait before the next connection attempt (see :class:`~zkwire.sansio.hosts.HostRotation`):
        0 after a success, a little jitter within a lap of failed attempts, a growing pause after each
        full lap (at most a tenth of the negotiated timeout) or after connections that keep ending at
        once (:meth:`connection_ended`)."""
        timeout = self.negotiated_timeout
        return self._hosts.delay(math.inf if timeout is None else timeout / 10)

    def next_deadline(self) -> float:
        """The next moment :meth:`handle_timer` has work to do (inf if none)."""
        if self.state.is_terminal:
            return math.inf
        oldest = self._pending[0].sent if self._pending else None
        deadline = self._clock.next_deadline(
            self._phase, self.state.is_connected, oldest, not self._handshake.sasl_running
        )
        return min(deadline, self._moves.move.deadline())

    def handle_timer(self, now: float) -> list[Event[TokenT, WatcherT]]:
        """The clocks' decisions at ``now`` (:meth:`~zkwire.sansio.liveness.Liveness.due`), carried out:
        the session expired, the connection dropped, the session suspended, a ping queued."""
        events: list[Event[TokenT, WatcherT]] = []
        if self.state.is_terminal:
            return events
        clock = self._clock
        oldest = self._pending[0] if self._pending else None
        sent = None if oldest is None else oldest.sent
        may_ping = not self._handshake.sasl_running  # nothing but SASL tokens until the exchange is over
        due = clock.due(now, self._phase, self.state.is_connected, sent, self.connect_timeout, may_ping)
        if due.expire is not None:
            log.warning("session 0x%x: %s, treating it as expired", self.session_id, due.expire)
            self.abandoned = (self.session_id, self._passwd)
            return self._expire(events, SessionExpiredError(detail="no server reachable for the session timeout"))
        if due.drop is not None:
            events.append(DropConnection(due.drop))
            return events
        if now >= self._moves.move.deadline():
            self._moves.advance(now, events)
        if due.suspend is not None:
            # Answers keep coming, but to requests sent before the read timeout (a deep pipeline
            # draining; our pings wait behind it).  The application is told now, as it would be by a
            # dropped connection; the connection stays, and the next newer answer confirms the session.
            log.info("session 0x%x: %s: suspended", self.session_id, due.suspend)
            self._set_state(events, SessionState.SUSPENDED)
        if due.lost and oldest is not None:
            reason = f"{op_name(oldest.op)} request (xid {oldest.xid}) unanswered for {now - oldest.sent:.2f}s"
            events.append(DropConnection(reason))
        elif due.ping:
            self._out += encode_request(PING_XID, OpCode.PING)
            clock.pinged(now)
        return events

    # ------------------------------------------------------------------ connection lifecycle

    def resume(self, session_id: int, passwd: bytes) -> None:
        """Present an existing session (its id and password) on the first connection instead of asking
        for a new one: the server re-attaches it or answers that it has expired.  Only before the first
        connection of a core that has no session yet.

        Raises:
            InvalidArgumentError: the core already has a session, or the id or password cannot be one.
        """
        if self.session_id or self._phase is not Phase.IDLE or self.state is not SessionState.CONNECTING:
            raise InvalidArgumentError("only a core without a session can resume one")
        if not 0 < session_id < 1 << 63:
            raise InvalidArgumentError(f"session id {session_id} is not a positive int64")
        if not 0 < len(passwd) <= MAX_PASSWORD:
            raise InvalidArgumentError(f"a session password has 1 to {MAX_PASSWORD} bytes")
        self.session_id = session_id
        self._passwd = bytes(passwd)
        self.seen_read_write = True  # a session to present (see connection_made)

    def connection_made(self, host: HostPort, now: float) -> None:
        """TCP (or TLS) is up to ``host``: queue the ConnectRequest."""
        if self.state.is_terminal:
            raise self.terminal_error()
        self.current_host = host
        self._hosts.opened(now)
        self._phase = Phase.HANDSHAKE
        self._router.connection_made()
        self._out.clear()
        self._clock.connection_made(now, self.connect_timeout)
        # A session only ever served by read-only servers is local to that server: a read-write server
        # would not know it, so it is not presented again (it has no ephemeral nodes to lose).
        attach = self.session_id if self.seen_read_write else 0
        self._out += connect_request(
            attach, self._passwd, self.last_zxid, self.requested_timeout, self.allow_read_only, self.max_frame
        )
        if self.observed is not None:
            self.observed.connection(ConnectionEventKind.CONNECTING, self.session_id, host, now)

    def connection_failed(
        self, reason: ZKError | None = None, *, cause: str | None = None
    ) -> list[Event[TokenT, WatcherT]]:
        """A connection attempt did not even reach the handshake.  ``reason``: why, when another attempt
        at that server would fail the same way (a :class:`~zkwire.errors.TLSError`: a certificate
        refused); None when the server may merely be down.

        Once a whole pass over the hosts has failed and some host for a reason, the session ends in
        ``AUTH_FAILED`` with that reason (:meth:`~zkwire.sansio.hosts.HostRotation.failed`): the events
        say so.  A session that was established keeps trying while some server is merely down (a
        rolling restart, a certificate rotation under way): it may come back, and the session with its
        ephemeral nodes lives until it expires; only when every server refuses does it end at once.
        ``cause``: what failed, for the observers (:mod:`~zkwire.sansio.observing`)."""
        events: list[Event[TokenT, WatcherT]] = []
        if self.observed is not None:
            why = cause or (str(reason) if reason is not None else "timed out")
            kind, server = ConnectionEventKind.ATTEMPT_FAILED, self._hosts.current
            self.observed.connection(kind, self.session_id, server, None, why)
        if not self._attempt_failed(events, reason) and self._moves.move.reattaching:
            self._moves.failed(events)
        return events

    def _attempt_failed(self, events: list[Event[TokenT, WatcherT]], reason: ZKError | None) -> bool:
        """Count a failed attempt; True when it ended the session (see :meth:`connection_failed`)."""
        verdict = self._hosts.failed(reason)
        if verdict is None or self.state.is_terminal:
            return False
        if self.session_id and self.seen_read_write and not self._hosts.every_host_refused:
            log.warning(
                "session 0x%x: %s; trying the other servers until the session expires", self.session_id, verdict
            )
            return False
        log.info("every server failed, some for a reason no retry cures: %s", verdict)
        self.auth_failed(events, verdict, drop=False)  # no connection to drop
        return True

    def connection_ended(self, now: float, answered: bool) -> None:
        """The connection made at :meth:`connection_made` is over (after :meth:`connection_lost`);
        ``answered``: the server answered some request on it.  One that ended within
        :data:`~zkwire.sansio.hosts.SHORT_CONNECTION` unanswered lengthens :meth:`reconnect_delay`, even
        if its handshake succeeded."""
        self._hosts.closed(now, answered)

    def connection_lost(
        self, now: float, error: ZKError | None = None, *, reason: ZKError | None = None, cause: str | None = None
    ) -> list[Event[TokenT, WatcherT]]:
        """The socket is gone.  Pending requests fail; the session is suspended, not ended.

        ``reason``: why the connection failed, when another attempt would fail the same way (as for
        :meth:`connection_failed`; a server that refuses the client's certificate only after the TLS
        handshake, as under TLS 1.3).  It counts only while the handshake was not answered: then the
        attempt is a failed one, and a pass of them may end the session.  ``cause``: why it ended, for
        the observers."""
        events: list[Event[TokenT, WatcherT]] = []
        if self.current_host is None:
            return events  # already handled
        phase = self._phase
        # A closing or ended session's connection ends with it: CLOSED or EXPIRED... says it all.
        if self.observed is not None and phase is not Phase.CLOSING and not self.state.is_terminal:
            self.observed.connection(ConnectionEventKind.LOST, self.session_id, self.current_host, now, cause)
        self._phase = Phase.IDLE
        self.current_host = None
        self._out.clear()
        if self._moves.closed_for_move(phase):
            # The move's own close (or the server's, at the moment the client was about to close):
            # nothing was in flight, nothing is lost; the state stays as it is.
            self._handshake.connection_lost()
            return events
        if (phase is Phase.IDLE or phase is Phase.HANDSHAKE) and self._attempt_failed(events, reason):
            return events
        if self._moves.move.active:
            self._moves.failed(events)
            if self._moves.move.reattaching:  # the move goes on to the next server, unreported
                self._fail_pending(events, error or ConnectionLossError())
                return events
        # The state change comes first: whoever watches the session (a lock's lease) has heard of the
        # loss before any caller's request fails with it.
        if phase is Phase.CLOSING:
            self._set_state(events, SessionState.CLOSED)
        elif self.state.is_connected:
            self._set_state(events, SessionState.SUSPENDED)
        self._fail_pending(events, error or ConnectionLossError())
        return events

    def _fail_pending(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> None:
        """Fail every outstanding request with a fresh copy of ``error`` (carrying the request's path)."""
        observed = self.observed
        if observed is not None:
            for p in self._pending:
                if p.token is not None:
                    observed.answered(p, self.session_id, self.current_host, 0, None, type(error))
        events.extend(self._pending.fail_all(error))
        self._handshake.connection_lost()

    # ------------------------------------------------------------------ host list and planned moves

    def update_hosts(self, hosts: Sequence[HostPort], now: float, spread: float = DEFAULT_MOVE_SPREAD) -> bool:
        """Install a new list of servers (the ensemble's configuration changed, or the application says
        so).  The session decides at random whether it moves, so that sessions spread evenly over the
        new list (:func:`~zkwire.sansio.hosts.move_decision`).  A session connected read-write that
        moves does so at a moment drawn from the next ``spread`` seconds (at once if its server left the
        list), as a planned move
        (:mod:`~zkwire.sansio.moves`: no request fails, the state stays CONNECTED); one not connected
        simply tries the move's targets first.  Returns whether the session moves (the I/O layer then
        reads :meth:`next_deadline` again).

        Raises:
            InvalidArgumentError: ``hosts`` is empty, or ``spread`` is not a number of seconds (nothing
                changes).
        """
        if not 0.0 <= spread < math.inf:
            raise InvalidArgumentError(f"spread must be a finite number of seconds >= 0, not {spread!r}")
        return self._moves.update_hosts(hosts, now, spread)

    @property
    def ready(self) -> bool:
        """Requests can be sent now (the connection is open and no move is draining it)."""
        return self._phase is Phase.OPEN and not self._draining

    @property
    def moving(self) -> bool:
        """A planned move is scheduled or under way."""
        return self._moves.move.active and not self.state.is_terminal

    def _opened(self, events: list[Event[TokenT, WatcherT]], state: SessionState) -> None:
        """The connection's handshake is over: the session is open (ends a planned move)."""
        self.attachments += 1
        if self.observed is not None:
            self._observe_opened()
        self._moves.opened(events)
        self._set_state(events, state)
        # The list changed while this connection was being made: the session is on a server no longer
        # in it, and moves at once.
        if (
            state is SessionState.CONNECTED
            and self.current_host not in self._hosts.hosts
            and self._moves.update_hosts(self._hosts.hosts, self._clock.answered_at, 0.0)
        ):
            events.append(DeadlineMoved())

    def _observe_opened(self) -> None:
        assert self.observed is not None
        move = self._moves.move
        if move.reattaching:
            kind, previous = ConnectionEventKind.MOVED, move.source
        else:
            kind = ConnectionEventKind.CONNECTED if self.attachments == 1 else ConnectionEventKind.REATTACHED
            previous = None
        self.observed.connection(kind, self.session_id, self.current_host, self._clock.answered_at, None, previous)

    @property
    def outstanding(self) -> int:
        """Requests sent (or queued) on this connection and not yet answered."""
        return len(self._pending)

    def push_front(self, data: bytes) -> None:
        """Give back the unsent tail of what :meth:`data_to_send` returned (a partial write)."""
        self._out[:0] = data

    @property
    def has_data_to_send(self) -> bool:
        """Whether :meth:`data_to_send` has bytes to hand out (a reply, a timer or a credential queued
        some: the I/O layer writes them before it waits again)."""
        return bool(self._out)

    def data_to_send(self) -> bytes:
        if not self._out:
            return b""
        data = bytes(self._out)
        self._out.clear()
        return data

    # ------------------------------------------------------------------ requests

    def send_request(
        self,
        op: int,
        record: Record | None,
        token: TokenT,
        now: float,
        *,
        path: str | None = None,
        watch: WatchRequest[WatcherT] | None = None,
        tag: tuple[int, object] | None = None,
    ) -> int:
        """Queue a request on the open connection; its Reply will carry ``token``.  Returns the xid.
        ``tag``: the request's attempt number and caller context for the observers, when the I/O layer
        captured them earlier (a request sent from another task than its caller's; see
        :class:`~zkwire.sansio.observing.Observation`)."""
        if self._phase is not Phase.OPEN or self._draining:
            if self.state.is_terminal:
                raise self.terminal_error()
            raise ConnectionLossError(path, "moving to another server" if self._draining else "not connected")
        if self.observed is None:
            xid = self._pending.send(self._out, op, record, token, now, self.max_frame, path, watch)
        else:
            before = len(self._out)
            xid = self._pending.send(self._out, op, record, token, now, self.max_frame, path, watch)
            self.observed.sent(xid, len(self._out) - before, len(self._pending), tag)
        self._clock.last_send = now
        return xid

    def add_auth(self, scheme: str, auth: bytes, token: TokenT, now: float, *, required: bool = False) -> None:
        """Remember a credential and send it now if connected, else with the next re-attach.

        An :class:`AuthResult` carrying ``token`` reports the server's verdict.  Accepted credentials are
        re-sent on every reconnect before the session reports connected; a rejected one is forgotten.
        A credential that cannot be encoded (over the frame limit, a string that is not UTF-8) raises
        here, in the caller, and is not remembered: nothing the caller gave is encoded later.

        ``required``: the session depends on this credential (``open_client(auth=...)``).  Its refusal
        ends the session in ``AUTH_FAILED`` instead of only reporting the refusal to ``token``.
        """
        cred = self._handshake.credential(scheme, auth, token, required)
        if self._handshake.sasl_running:
            pass  # sent with the others once the SASL exchange is over
        elif self._phase is Phase.OPEN or self._phase is Phase.SYNCING:
            # While re-attaching, the credentials known then were sent: this one is sent too, and holds
            # the session back from CONNECTED until it is answered, like the others.
            self._handshake.send_credential(cred, syncing=self._phase is Phase.SYNCING)
            self._clock.last_send = now

    @property
    def sasl(self) -> SaslMechanism | None:
        """The SASL mechanism the session authenticates with on every connection (None: none)."""
        return self._handshake.sasl

    def sasl_step_done(
        self, step: SaslStep, result: bytes | AuthFailedError | ConnectionLossError | None, now: float
    ) -> list[Event[TokenT, WatcherT]]:
        """A :class:`SaslStep` event's computation finished: the token to send (None: the mechanism has
        nothing more to send), or the error it raised.  A step of an ended connection is ignored.

        * :class:`~zkwire.errors.AuthFailedError`: the mechanism cannot authenticate (no or an expired
          ticket, a malformed challenge): the session ends in ``AUTH_FAILED`` with it -- another
          connection would not change that.
        * :class:`~zkwire.errors.ConnectionLossError`: something the mechanism needs is out of reach
          for now (no KDC answers): the connection is dropped, the session kept and retried.
        """
        events: list[Event[TokenT, WatcherT]] = []
        if self.state.is_terminal or self._phase is not Phase.SYNCING:
            return events
        try:
            if isinstance(result, ZKError):
                conversation = self._handshake.conversation
                if conversation is None or not conversation.take(step):
                    return events
                if not isinstance(result, AuthFailedError):
                    log.warning("session 0x%x: %s; trying again", self.session_id, result)
                    events.append(DropConnection(f"SASL: {result}"))
                    return events
                raise result
            if self._handshake.sasl_token(step, result, now):
                self._clock.last_send = now
                self._router.maybe_open(events)
        except AuthFailedError as e:
            self.auth_failed(events, e)
        return events

    def auth_failed(self, events: list[Event[TokenT, WatcherT]], error: ZKError, *, drop: bool = True) -> None:
        """The session cannot be what the application asked for (a refused credential, SASL exchange or
        certificate, a server requiring authentication the session lacks): every request fails with
        ``error``, the session ends in ``AUTH_FAILED`` with it, and (``drop``) the connection is dropped."""
        self._fail_pending(events, error)
        self._set_state(events, SessionState.AUTH_FAILED, error)
        if drop:
            events.append(DropConnection("authentication failed"))

    def close(self, now: float) -> bool:
        """Send closeSession if connected; returns True if the caller should wait for the server to close."""
        if self.state.is_terminal:
            return False
        if self._phase is Phase.OPEN:
            self._pending.send(self._out, OpCode.CLOSE_SESSION, None, None, now, self.max_frame)
            self._phase = Phase.CLOSING
            self._clock.last_send = now
            return True
        return False

    def mark_closed(self) -> list[Event[TokenT, WatcherT]]:
        """The application closed the client: fail what is still outstanding and end the session."""
        self._phase = Phase.IDLE
        events: list[Event[TokenT, WatcherT]] = []
        self._fail_pending(events, ClientClosedError("client closed"))
        self._set_state(events, SessionState.CLOSED)
        return events

    def terminal_error(self) -> ZKError:
        """A fresh exception telling why the session has ended (raise it to the caller of a request);
        :class:`~zkwire.errors.ClientClosedError` if it has not ended (or was closed)."""
        if self.state is SessionState.EXPIRED:
            return SessionExpiredError()
        if self.state is SessionState.AUTH_FAILED:
            if self._ended_by is not None:
                return copy_error(self._ended_by)
            return AuthFailedError(detail="the server rejected a credential")
        return ClientClosedError("client closed")

    # ------------------------------------------------------------------ watches

    def forget_watch(self, kind: WatchKind, path: str, watcher: WatcherT) -> bool:
        """The application dropped ``watcher``'s watch of ``kind`` on server path ``path`` (leaving a
        persistent watch's block): it is forgotten here.  True when the session holds no other watch on
        the path, so the server's may go too (a removeWatches request, then :meth:`remove_watches`)."""
        self.watches.discard(kind, path, watcher)
        return not self.watches.has_any(path)

    def remove_watches(self, path: str, watcher_type: WatcherType) -> list[tuple[EventType, WatcherT]]:
        """The server removed this session's watches of ``watcher_type`` on server path ``path`` (a
        removeWatches request answered without error): the local watchers of the removed tables are
        forgotten, as an answered request's watch is registered (:meth:`send_request`).  Returns each
        with the event it is to be woken with (DATA_WATCH_REMOVED, CHILD_WATCH_REMOVED,
        PERSISTENT_WATCH_REMOVED)."""
        return self.watches.removed(path, watcher_type)

    # ------------------------------------------------------------------ incoming bytes (the router's)

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event[TokenT, WatcherT]]:
        """Bytes from the server: the events they complete (:class:`~zkwire.sansio.routing.FrameRouter`).

        A frame over ``max_frame`` is skipped as its bytes come (the connection is kept): the request it
        answers fails with :class:`~zkwire.errors.ReplyTooLargeError`; a watch notification that long
        is dropped with a warning (its watchers cannot be told apart without its path).
        """
        events = self._router.receive_data(data, now)
        if self._draining:
            self._moves.drained(events)
        return events

    def receive_buffer(self) -> memoryview | None:
        """Where the I/O layer may read the next bytes directly (``recv_into``), then report them with
        :meth:`received_into`: the rest of a large reply's buffer, sized from its length prefix up to
        1 MiB and grown as a longer reply's bytes come (see :mod:`~zkwire.protocol.framing`); None
        when no large reply is in progress (read up to :data:`~zkwire.protocol.framing.READ_SIZE`
        bytes and hand them to :meth:`receive_data`)."""
        return self._router.receive_buffer()

    def received_into(self, n: int, now: float) -> list[Event[TokenT, WatcherT]]:
        """``n`` bytes were read into the view :meth:`receive_buffer` returned."""
        events = self._router.received_into(n, now)
        if self._draining:
            self._moves.drained(events)
        return events

    # ------------------------------------------------------------------ state

    def _set_state(
        self, events: list[Event[TokenT, WatcherT]], new: SessionState, error: ZKError | None = None
    ) -> None:
        old = self.state
        if old is new or old.is_terminal:
            return
        self.state = new
        if self.observed is not None:
            self.observed.state(new, self.session_id, self.current_host, None if error is None else str(error))
        log.log(
            logging.DEBUG if new is SessionState.CLOSED else logging.INFO,
            "session 0x%x: %s -> %s",
            self.session_id,
            old.value,
            new.value,
        )
        if new.is_terminal:
            if error is not None and new is SessionState.AUTH_FAILED:
                self._ended_by = error
            # Nobody waiting for a credential's verdict will ever get one from a server.
            ended = self.terminal_error()
            for token in self._handshake.waiting_tokens():
                events.append(AuthResult(token, copy_error(ended)))
        events.append(StateChanged(old, new, error))

    def _expire(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> list[Event[TokenT, WatcherT]]:
        self._fail_pending(events, SessionExpiredError())
        self._set_state(events, SessionState.EXPIRED, error)
        return events
