"""The session state machine, sans I/O: bytes and time in, events and bytes out.

One :class:`SessionCore` lives as long as a ZooKeeper session.  It owns everything that must survive a
broken TCP connection -- session id and password, the last zxid seen, auth credentials, the watch
registry -- and, for the connection currently in use, the handshake, the requests awaiting replies,
and the liveness clocks.  It composes one part per job, each a module of its own:

* :mod:`~zkwire.sansio.hosts`: the servers, their order, and the back-off between attempts;
* :mod:`~zkwire.sansio.liveness`: ping, read timeout, suspension and client-side expiry;
* :mod:`~zkwire.sansio.handshake`: the connection's phases (ConnectRequest and its answer, auth,
  SetWatches) and the session's credentials;
* :mod:`~zkwire.sansio.matching`: the requests in flight, their xids, each reply checked against its
  request;
* :mod:`~zkwire.sansio.watches`: the watch registry (watches are registered and removed here, as the
  requests carrying them are answered);
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

from ..constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, WATCH_XID, EventType, KeeperState, OpCode, WatcherType
from ..errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    ProtocolError,
    ReplyTooLargeError,
    SessionExpiredError,
    ZKError,
    copy_error,
    error_for_code,
)
from ..protocol.codec import decode_connect_response, encode_request, op_name
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from ..protocol.framing import FrameDecoder, OversizeFrame
from ..protocol.jute import Reader
from ..protocol.records import Record, WatcherEvent
from .backoff import SHARED_RNG
from .events import (
    AuthResult,
    DropConnection,
    Event,
    Reply,
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
    check_connect_response,
    connect_request,
    granted_timeout,
)
from .hosts import HostPort, HostRotation
from .liveness import Liveness
from .matching import RequestQueue
from .options import check_max_frame, check_session_timeout
from .paths import strip_chroot
from .watches import WatchRegistry

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
    "WatchRequest",
    "Event",
    "HostPort",
    "MAX_PASSWORD",
    "TIMEOUT_CEILING",
    "SET_WATCHES_BATCH_BYTES",
    "WATCH_FRAME_OVERHEAD",
]

log = logging.getLogger("zkwire.session")


class SessionCore(Generic[TokenT, WatcherT]):
    """ZooKeeper session logic for one session across any number of connections.

    Server values
    -------------
    What a server says in its ConnectResponse is checked before the session uses it
    (:func:`~zkwire.sansio.handshake.check_connect_response`).  A refused answer is a
    :class:`~zkwire.errors.ProtocolError`: the connection is dropped, the attempt counts toward
    back-off, and the next server is tried (the session, if there is one, is kept).

    * **Session password**: null, empty, or longer than :data:`MAX_PASSWORD` bytes -- refused.
    * **Read-only grant** the client did not ask for (``allow_read_only`` false) -- refused.
    * **Session id**: 0, or, on a re-attach, another id than the one presented -- refused (taking it
      would start a new session silently).  An "expired" answer to a request for a new session --
      refused (only a presented session can expire).
    * **Negotiated timeout** above both the requested timeout and :data:`TIMEOUT_CEILING` -- clamped to
      the larger of the two.  The ping interval, the read timeout and client-side expiry run on the
      clamped value, so a dead server is still noticed; the client may declare the session lost
      earlier than the server would, never later.  A server raising a short request to its
      ``minSessionTimeout`` is unaffected.
    * **Reply zxids** -- accepted: the client has nothing to check them against.  One that no honest
      server has reached (2**63-1) makes them refuse the re-attach; the session then expires
      client-side after the negotiated timeout (:class:`~zkwire.errors.SessionExpiredError`).
    """

    __slots__ = (
        "_clock",
        "_decoder",
        "_handshake",
        "_hosts",
        "_opened_at",
        "_out",
        "_passwd",
        "_pending",
        "_phase",
        "_read_only_connection",
        "abandoned",
        "allow_read_only",
        "chroot",
        "current_host",
        "last_zxid",
        "max_frame",
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
    ) -> None:
        session_timeout = check_session_timeout(session_timeout)
        max_frame = check_max_frame(max_frame)
        #: The servers, their order and the back-off between attempts.
        self._hosts = HostRotation(hosts, rng or SHARED_RNG)
        #: When the current connection was made (None between connections).
        self._opened_at: float | None = None
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
        self._decoder = FrameDecoder(max_frame, skip_oversize=True)
        self._out = bytearray()
        #: The requests in flight on this connection (a deque: ``len`` is on every request's path).
        self._pending: RequestQueue[TokenT, WatcherT] = RequestQueue()
        self._handshake: Handshake[TokenT, WatcherT] = Handshake(self._out, self._pending, max_frame)
        self._read_only_connection = False
        #: The id and password of the session once the client has declared it expired by itself (no
        #: server reached for the session timeout): the server may still hold it, and its ephemeral
        #: nodes, until it expires it there.  :func:`zkwire.sessions` closes such a session before it
        #: opens the next one.  None otherwise.
        self.abandoned: tuple[int, bytes] | None = None

    # ------------------------------------------------------------------ timeouts and deadlines

    @property
    def requested_timeout(self) -> float:
        """The session timeout asked for (seconds)."""
        return self._clock.requested

    @property
    def negotiated_timeout(self) -> float | None:
        """The session timeout the server granted (clamped: see "Server values"); None before."""
        return self._clock.negotiated

    @property
    def hosts(self) -> list[HostPort]:
        return self._hosts.hosts

    @property
    def connect_timeout(self) -> float:
        return self._clock.timeout / len(self._hosts)

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
        deadline = self._clock.next_deadline(self._phase, self.state.is_connected, oldest)
        expiry = self._client_side_expiry()
        return deadline if expiry is None else min(deadline, expiry)

    def _client_side_expiry(self) -> float | None:
        # A server that still answers on an open connection would close it if the session expired.
        return self._clock.expiry(self.state.is_connected or self._phase is Phase.OPEN)

    def handle_timer(self, now: float) -> list[Event[TokenT, WatcherT]]:
        events: list[Event[TokenT, WatcherT]] = []
        if self.state.is_terminal:
            return events
        clock = self._clock
        expiry = self._client_side_expiry()
        if expiry is not None and now >= expiry:
            log.warning(
                "session 0x%x: no server reached for %.1fs, treating it as expired",
                self.session_id,
                now - expiry + self.session_timeout,
            )
            self.abandoned = (self.session_id, self._passwd)
            return self._expire(events, SessionExpiredError(detail="no server reachable for the session timeout"))
        phase = self._phase
        reason = clock.dead(now, phase, self.connect_timeout)
        if reason is not None:
            events.append(DropConnection(reason))
            return events
        if phase is not Phase.SYNCING and phase is not Phase.OPEN:
            return events
        if phase is Phase.OPEN and self.state.is_connected and clock.unconfirmed(now):
            # Answers keep coming, but to requests sent before the read timeout (a deep pipeline
            # draining; our pings wait behind it).  The application is told now, as it would be by a
            # dropped connection; the connection stays, and the next newer answer confirms the session.
            log.info(
                "session 0x%x: answers arrive, but none to anything sent in the last %.2fs: suspended",
                self.session_id,
                now - clock.last_confirmed,
            )
            self._set_state(events, SessionState.SUSPENDED)
        if self._pending and clock.lost(now, self._pending[0].sent):
            oldest = self._pending[0]
            events.append(
                DropConnection(
                    f"{op_name(oldest.op)} request (xid {oldest.xid}) unanswered for {now - oldest.sent:.2f}s"
                )
            )
        elif clock.ping_due(now):
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
        self._opened_at = now
        self._phase = Phase.HANDSHAKE
        self._decoder = FrameDecoder(self.max_frame, skip_oversize=True)
        self._out.clear()
        self._clock.connection_made(now, self.connect_timeout)
        # A session only ever served by read-only servers is local to that server: a read-write server
        # would not know it, so it is not presented again (it has no ephemeral nodes to lose).
        attach = self.session_id if self.seen_read_write else 0
        self._out += connect_request(
            attach, self._passwd, self.last_zxid, self.requested_timeout, self.allow_read_only, self.max_frame
        )

    def connection_failed(self) -> None:
        """A connection attempt did not even reach the handshake."""
        self._hosts.failed()

    def connection_ended(self, now: float, answered: bool) -> None:
        """The connection made at :meth:`connection_made` is over (after :meth:`connection_lost`);
        ``answered``: the server answered some request on it.  One that ended within
        :data:`~zkwire.sansio.hosts.SHORT_CONNECTION` unanswered lengthens :meth:`reconnect_delay`, even
        if its handshake succeeded."""
        opened, self._opened_at = self._opened_at, None
        if opened is not None:
            self._hosts.ended(now - opened, answered)

    def connection_lost(self, now: float, error: ZKError | None = None) -> list[Event[TokenT, WatcherT]]:
        """The socket is gone.  Pending requests fail; the session is suspended, not ended."""
        events: list[Event[TokenT, WatcherT]] = []
        if self.current_host is None:
            return events  # already handled
        phase = self._phase
        self._phase = Phase.IDLE
        self.current_host = None
        self._out.clear()
        if phase is Phase.IDLE or phase is Phase.HANDSHAKE:
            self._hosts.failed()
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
        events.extend(self._pending.fail_all(error))
        self._handshake.connection_lost()

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
    ) -> int:
        """Queue a request on the open connection; its Reply will carry ``token``.  Returns the xid."""
        if self._phase is not Phase.OPEN:
            if self.state.is_terminal:
                raise self.terminal_error()
            raise ConnectionLossError(path, "not connected")
        xid = self._pending.send(self._out, op, record, token, now, self.max_frame, path, watch)
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
        if self._phase is Phase.OPEN or self._phase is Phase.SYNCING:
            # While re-attaching, the credentials known then were sent: this one is sent too, and holds
            # the session back from CONNECTED until it is answered, like the others.
            self._handshake.send_credential(cred, syncing=self._phase is Phase.SYNCING)
            self._clock.last_send = now

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
            return AuthFailedError(detail="the server rejected a credential")
        return ClientClosedError("client closed")

    # ------------------------------------------------------------------ watches

    def remove_watches(self, path: str, watcher_type: WatcherType) -> list[tuple[EventType, WatcherT]]:
        """The server removed this session's watches of ``watcher_type`` on server path ``path`` (a
        removeWatches request answered without error): the local watchers of the removed tables are
        forgotten, as an answered request's watch is registered (:meth:`send_request`).  Returns each
        with the event it is to be woken with (DATA_WATCH_REMOVED, CHILD_WATCH_REMOVED,
        PERSISTENT_WATCH_REMOVED)."""
        return self.watches.removed(path, watcher_type)

    # ------------------------------------------------------------------ incoming bytes

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event[TokenT, WatcherT]]:
        """Bytes from the server: the events they complete.

        A frame over ``max_frame`` is skipped as its bytes come (the connection is kept): the request it
        answers fails with :class:`~zkwire.errors.ReplyTooLargeError`; a watch notification that long
        is dropped with a warning (its watchers cannot be told apart without its path).
        """
        events: list[Event[TokenT, WatcherT]] = []
        if self._phase is Phase.IDLE:
            return events
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as e:
            events.append(DropConnection(f"bad framing from server: {e}"))
            return events
        return self._handle_frames(frames, now, events)

    def receive_buffer(self) -> memoryview | None:
        """Where the I/O layer may read the next bytes directly (``recv_into``), then report them with
        :meth:`received_into`: the rest of a large reply's buffer, sized from its length prefix; None
        when no large reply is in progress (read up to :data:`~zkwire.protocol.framing.READ_SIZE`
        bytes and hand them to :meth:`receive_data`)."""
        if self._phase is Phase.IDLE:
            return None
        return self._decoder.receive_buffer()

    def received_into(self, n: int, now: float) -> list[Event[TokenT, WatcherT]]:
        """``n`` bytes were read into the view :meth:`receive_buffer` returned."""
        events: list[Event[TokenT, WatcherT]] = []
        if self._phase is Phase.IDLE:
            return events
        return self._handle_frames(self._decoder.received(n), now, events)

    def _handle_frames(
        self, frames: list[bytes | memoryview | OversizeFrame], now: float, events: list[Event[TokenT, WatcherT]]
    ) -> list[Event[TokenT, WatcherT]]:
        for payload in frames:
            try:
                if isinstance(payload, OversizeFrame):
                    self._handle_oversize(payload, now, events)
                elif self._phase is Phase.HANDSHAKE:
                    self._handle_connect_response(payload, now, events)
                else:
                    self._handle_frame(payload, now, events)
            except ProtocolError as e:
                events.append(DropConnection(f"malformed frame from server: {e}"))
                return events
            if events and isinstance(events[-1], DropConnection):
                return events
        if self._decoder.error is not None:
            # A bad length came after complete frames: those were handled above, now the stream ends.
            events.append(DropConnection(f"bad framing from server: {self._decoder.error}"))
        return events

    def _handle_oversize(self, frame: OversizeFrame, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """A frame over ``max_frame`` (its bytes are being skipped): the request it answers fails with
        :class:`~zkwire.errors.ReplyTooLargeError`, the connection carries on.

        A watch notification that large (possible only for a persistent recursive watch on a path nearly
        ``max_frame`` long, or a ``max_frame`` below the server's) cannot be read: which watchers it
        wakes depends on its path.  It is dropped with a warning, the connection kept (a reconnect would
        not bring it back).  Anything else that large -- a connect response, a ping or auth reply, a
        reply to no outstanding request -- is a broken stream.
        """
        if self._phase is Phase.HANDSHAKE:
            raise ProtocolError(f"connect response of {frame.length} bytes exceeds max_frame ({self.max_frame})")
        xid, zxid, err = _REPLY_HEADER.unpack(frame.head)
        if xid == WATCH_XID:
            log.warning(
                "session 0x%x: skipped a watch notification of %d bytes (over max_frame, %d bytes)",
                self.session_id,
                frame.length,
                self.max_frame,
            )
            return
        if not self._pending or self._pending[0].xid != xid:
            raise ProtocolError(f"frame of {frame.length} bytes (xid {xid}) answers no outstanding request")
        if err:
            raise ProtocolError(f"error reply of {frame.length} bytes")
        p = self._pending.popleft()
        self._confirm(p.sent, now, events)
        if zxid > self.last_zxid:
            self.last_zxid = zxid
        if p.token is None:
            raise ProtocolError(f"{op_name(p.op)} reply of {frame.length} bytes")
        log.warning(
            "session 0x%x: %s reply of %d bytes skipped (over max_frame, %d bytes)",
            self.session_id,
            op_name(p.op),
            frame.length,
            self.max_frame,
        )
        events.append(Reply(p.token, zxid, None, ReplyTooLargeError(frame.length, self.max_frame, p.path)))

    def _handle_connect_response(
        self, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]
    ) -> None:
        if len(payload) == 16:
            # Observed on 3.8.0: a read-only server refuses to create a session (without local sessions
            # enabled) by answering the ConnectRequest with a bare ReplyHeader carrying the error.
            _, _, err = _REPLY_HEADER.unpack_from(payload, 0)
            events.append(DropConnection(f"server refused the session: {error_for_code(err)}"))
            return
        resp = decode_connect_response(bytes(payload))
        presented = self.session_id if self.seen_read_write else 0  # as in connection_made
        if resp.expired:
            if not presented:
                raise ProtocolError("a request for a new session was answered 'expired'")
            log.warning("session 0x%x expired (server %s)", self.session_id, self.current_host)
            self._expire(events, SessionExpiredError())
            events.append(DropConnection("session expired"))
            return
        self._passwd = check_connect_response(resp, presented, self.allow_read_only)
        self.session_id = resp.session_id
        self._clock.attached(granted_timeout(resp, self.requested_timeout, self.current_host), now)
        self._hosts.reached()
        read_only = bool(resp.read_only)
        if not read_only:
            self.seen_read_write = True
        log.info(
            "session 0x%x attached via %s (timeout %d ms%s)",
            self.session_id,
            self.current_host,
            resp.timeout,
            ", read-only" if read_only else "",
        )
        self._phase = Phase.SYNCING
        self._read_only_connection = read_only
        self._handshake.attach(self.watches, self.last_zxid, now)
        self._clock.last_send = now
        self._maybe_open(events)

    def _maybe_open(self, events: list[Event[TokenT, WatcherT]]) -> None:
        if self._phase is Phase.SYNCING and self._handshake.done:
            self._phase = Phase.OPEN
            self._set_state(events, SessionState.READ_ONLY if self._read_only_connection else SessionState.CONNECTED)

    def _handle_frame(self, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        if len(payload) < 16:
            raise ProtocolError(f"reply of {len(payload)} bytes is shorter than a ReplyHeader")
        xid, zxid, err = _REPLY_HEADER.unpack_from(payload, 0)
        if xid == PING_XID:
            sent = self._clock.ping_answered()
            if sent is not None:
                self._confirm(sent, now, events)
            return
        if xid == WATCH_XID:
            self._handle_notification(payload, events)
            return
        if xid == AUTH_XID:
            self._handle_auth_reply(err, events)
            return
        p, body = self._pending.answer(xid, err, payload)
        # _confirm, inlined (once per reply)
        if self._clock.confirm(p.sent, now) and self.state is SessionState.SUSPENDED:
            self._confirmed_again(p.sent, now, events)
        if zxid > self.last_zxid:
            self.last_zxid = zxid
        if p.token is None:  # the core's own request
            if p.op != OpCode.CLOSE_SESSION:  # SetWatches
                self._handshake.step_answered(err)
                self._maybe_open(events)
            return
        watch = p.watch
        if watch is not None:
            self.watches.answered(p.op, watch.kind, watch.path, watch.watcher, err)
        events.append(Reply(p.token, zxid, body, error_for_code(err, p.path) if err else None))

    def _confirm(self, sent: float, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """The server answered, at ``now``, something we sent at ``sent``: it heard from us then or later."""
        if self._clock.confirm(sent, now) and self.state is SessionState.SUSPENDED:
            self._confirmed_again(sent, now, events)

    def _confirmed_again(self, sent: float, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """Something newer than anything before was answered while suspended on an open connection."""
        if self._phase is Phase.OPEN and now < sent + self.read_timeout:
            log.info("session 0x%x: confirmed again on the same connection", self.session_id)
            self._set_state(events, SessionState.READ_ONLY if self._read_only_connection else SessionState.CONNECTED)

    def _handle_auth_reply(self, err: int, events: list[Event[TokenT, WatcherT]]) -> None:
        cred, token, error = self._handshake.auth_answered(err, syncing=self._phase is Phase.SYNCING)
        if error is None:
            if token is not None:
                events.append(AuthResult(token, None))
            self._maybe_open(events)
            return
        if token is not None:
            events.append(AuthResult(token, error))
        if token is None or cred.required:
            # A credential the session was opened with, or one the server accepted before, is refused:
            # the session cannot be what the application asked for.
            self._fail_pending(events, AuthFailedError(detail="the server rejected a credential"))
            self._set_state(events, SessionState.AUTH_FAILED, error)
        events.append(DropConnection("authentication failed"))

    def _handle_notification(self, payload: bytes | memoryview, events: list[Event[TokenT, WatcherT]]) -> None:
        r = Reader(payload, 16)
        ev = WatcherEvent.read(r)
        r.expect_end("WatcherEvent")
        server_path = ev.path or "/"
        watchers = self.watches.fire(ev.type, server_path)
        try:
            etype: EventType | int = EventType(ev.type)
        except ValueError:
            etype = ev.type
        try:
            kstate: KeeperState | int = KeeperState(ev.state)
        except ValueError:
            kstate = ev.state
        events.append(WatchNotification(etype, kstate, strip_chroot(self.chroot, server_path), watchers))

    # ------------------------------------------------------------------ state

    def _set_state(
        self, events: list[Event[TokenT, WatcherT]], new: SessionState, error: ZKError | None = None
    ) -> None:
        old = self.state
        if old is new or old.is_terminal:
            return
        self.state = new
        log.log(
            logging.DEBUG if new is SessionState.CLOSED else logging.INFO,
            "session 0x%x: %s -> %s",
            self.session_id,
            old.value,
            new.value,
        )
        if new.is_terminal:
            # Nobody waiting for a credential's verdict will ever get one from a server.
            ended = self.terminal_error()
            for token in self._handshake.waiting_tokens():
                events.append(AuthResult(token, copy_error(ended)))
        events.append(StateChanged(old, new, error))

    def _expire(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> list[Event[TokenT, WatcherT]]:
        self._fail_pending(events, SessionExpiredError())
        self._set_state(events, SessionState.EXPIRED, error)
        return events
