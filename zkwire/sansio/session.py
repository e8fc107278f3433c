"""The session state machine, sans I/O: bytes and time in, events and bytes out.

One :class:`SessionCore` lives as long as a ZooKeeper session.  It owns everything that must survive a
broken TCP connection -- session id and password, the last zxid seen, auth credentials, the watch
registry -- and, for the connection currently in use, the handshake, the xid counter, the queue of
requests awaiting replies, and the ping and read-timeout clocks.

The I/O layer drives it like this::

    host = core.next_host()               # where to connect (after sleeping core.reconnect_delay())
    core.connection_made(host, now)       # TCP is up: a ConnectRequest is queued
    send(core.data_to_send())
    events = core.receive_data(chunk, now)    # for every chunk read
    events = core.handle_timer(now)       # at core.next_deadline()
    core.send_request(op, record, token)  # for each user request (state must be CONNECTED/READ_ONLY)
    if core.has_data_to_send: ...         # after events: write what a reply or the timer queued
    events = core.connection_lost(now)    # when the socket breaks or a DropConnection event asks for it
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
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeAlias, TypeVar, cast

from ..constants import AUTH_XID, DEFAULT_MAX_FRAME, PING_XID, WATCH_XID, EventType, KeeperState, OpCode
from ..errors import (
    AuthFailedError,
    ClientClosedError,
    ConnectionLossError,
    InvalidArgumentError,
    NoNodeError,
    ProtocolError,
    ReplyTooLargeError,
    ServerError,
    SessionExpiredError,
    ZKError,
    copy_error,
    error_for_code,
)
from ..protocol.codec import (
    decode_connect_response,
    decode_response_body,
    encode_connect_request,
    encode_request,
    encode_request_into,
    op_name,
)
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from ..protocol.framing import FrameDecoder, OversizeFrame
from ..protocol.jute import Reader
from ..protocol.multi import MultiRequest, MultiResponse
from ..protocol.records import (
    AuthPacket,
    ConnectRequest,
    ConnectResponse,
    Create2Response,
    CreateResponse,
    GetDataResponse,
    Record,
    SetWatches,
    SetWatches2,
    WatcherEvent,
)
from .backoff import SHARED_RNG
from .hosts import HostPort, HostRotation
from .options import check_max_frame, check_session_timeout
from .paths import strip_chroot
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
    "WatchRequest",
    "Event",
    "HostPort",
]

log = logging.getLogger("zkwire.session")

#: What the I/O layer hands in with a request and gets back in its :class:`Reply` (opaque to the core).
TokenT = TypeVar("TokenT")
#: What the I/O layer registers as a watcher and gets back in a :class:`WatchNotification` (opaque too).
WatcherT = TypeVar("WatcherT")

_XID_MAX = (1 << 31) - 1
#: Paths per SetWatches frame are batched to stay well under the frame limit.
SET_WATCHES_BATCH_BYTES = 128 * 1024
#: A SetWatches2 frame holding one path is at most this much longer than the path's UTF-8 bytes (40,
#: with room to spare): a watch on a longer path could not be re-registered after a reconnect.
WATCH_FRAME_OVERHEAD = 64
#: A negotiated session timeout above both this (seconds) and the requested one is clamped to the
#: larger of the two for the client's own clocks (see "Server values" in SessionCore's docstring).
TIMEOUT_CEILING = 60.0
#: Longest session password accepted from a server (every ZooKeeper release sends 16 bytes).
MAX_PASSWORD = 64


class SessionState(Enum):
    """Where the session stands, as the application sees it."""

    #: No session yet; the first connection is being made.
    CONNECTING = "connecting"
    #: Connected to a read-write server.
    CONNECTED = "connected"
    #: Connected to a read-only server (only with ``allow_read_only``): writes fail with NotReadOnlyError.
    READ_ONLY = "read_only"
    #: The connection was lost, or nothing sent in the last two thirds of the session timeout has been
    #: answered (a server still answering older requests keeps its connection); the session may still
    #: be alive on the servers.  Reconnecting, or CONNECTED again once something newer is answered.
    SUSPENDED = "suspended"
    #: The session is gone: a server said so, or no server was reached for the whole session timeout.
    EXPIRED = "expired"
    #: The server rejected a credential given to open_client, or on a reconnect one it had accepted
    #: before; the session cannot be used.
    AUTH_FAILED = "auth_failed"
    #: Closed by the application.
    CLOSED = "closed"

    @property
    def is_terminal(self) -> bool:
        return self in (SessionState.EXPIRED, SessionState.AUTH_FAILED, SessionState.CLOSED)

    @property
    def is_connected(self) -> bool:
        return self in (SessionState.CONNECTED, SessionState.READ_ONLY)


class _Phase(Enum):
    IDLE = 0  # no connection
    HANDSHAKE = 1  # ConnectRequest sent, waiting for ConnectResponse
    SYNCING = 2  # session attached; re-sending auth and watches
    OPEN = 3  # user requests flow
    CLOSING = 4  # closeSession sent


@dataclass(frozen=True, slots=True)
class WatchRequest(Generic[WatcherT]):
    """A watch to register when the request it rides on succeeds."""

    kind: WatchKind
    path: str  # server path
    watcher: WatcherT


@dataclass(slots=True)
class Reply(Generic[TokenT]):
    """The outcome of a request: ``body`` on success, or ``error``.  (Not frozen: one is built per
    reply, and a frozen dataclass costs three times as much to build; nothing changes it.)"""

    token: TokenT
    zxid: int
    body: Record | None
    error: ZKError | None


@dataclass(frozen=True, slots=True)
class WatchNotification(Generic[WatcherT]):
    """A server notification and the local watchers it wakes (path already chroot-stripped)."""

    type: EventType | int
    state: KeeperState | int
    path: str
    watchers: list[WatcherT]


@dataclass(frozen=True, slots=True)
class StateChanged:
    old: SessionState
    new: SessionState
    error: ZKError | None = None


@dataclass(frozen=True, slots=True)
class DropConnection:
    """The core found the connection unusable; the I/O layer must close it, then call connection_lost."""

    reason: str


@dataclass(frozen=True, slots=True)
class AuthResult(Generic[TokenT]):
    token: TokenT
    error: ZKError | None


Event: TypeAlias = Reply[TokenT] | WatchNotification[WatcherT] | StateChanged | DropConnection | AuthResult[TokenT]


@dataclass(slots=True)
class _Pending(Generic[TokenT, WatcherT]):
    xid: int
    op: int
    #: None for the core's own requests (closeSession, SetWatches).
    token: TokenT | None
    path: str | None
    watch: WatchRequest[WatcherT] | None
    #: When the request was queued: once it is answered, the server has heard from us since then.
    sent: float
    #: multi / multiRead: the op code of each sub-operation, to check the reply against.
    subops: tuple[int, ...] | None = None


@dataclass(slots=True, eq=False)
class _Credential(Generic[TokenT]):
    scheme: str
    #: The whole AuthPacket frame, encoded when the credential was added (so it can always be sent).
    packet: bytes = field(repr=False)
    #: Who waits for the server's verdict on the first sending of this credential.
    token: TokenT | None = None
    #: A condition of the session (given to open_client): its refusal ends the session (AUTH_FAILED).
    required: bool = False


class SessionCore(Generic[TokenT, WatcherT]):
    """ZooKeeper session logic for one session across any number of connections.

    Server values
    -------------
    What a server says in its ConnectResponse is checked before the session uses it.  A refused
    answer is a :class:`~zkwire.errors.ProtocolError`: the connection is dropped, the attempt counts
    toward back-off, and the next server is tried (the session, if there is one, is kept).

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
        "_answered_at",
        "_auth_pending",
        "_connect_deadline",
        "_credentials",
        "_decoder",
        "_hosts",
        "_last_confirmed",
        "_last_heard",
        "_last_send",
        "_opened_at",
        "_out",
        "_passwd",
        "_pending",
        "_phase",
        "_pings",
        "_read_only_connection",
        "_sync_outstanding",
        "_xid",
        "abandoned",
        "allow_read_only",
        "chroot",
        "current_host",
        "last_zxid",
        "max_frame",
        "negotiated_timeout",
        "requested_timeout",
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
        self.requested_timeout = session_timeout
        self.chroot = chroot
        self.allow_read_only = allow_read_only
        self.max_frame = max_frame

        self.state = SessionState.CONNECTING
        self.session_id = 0
        self._passwd = bytes(16)
        self.negotiated_timeout: float | None = None
        self.last_zxid = 0
        self.current_host: HostPort | None = None
        self.seen_read_write = False
        self._credentials: list[_Credential[TokenT]] = []
        self.watches: WatchRegistry[WatcherT] = WatchRegistry()

        self._phase = _Phase.IDLE
        self._decoder = FrameDecoder(max_frame, skip_oversize=True)
        self._out = bytearray()
        self._pending: deque[_Pending[TokenT, WatcherT]] = deque()
        self._auth_pending: list[_Credential[TokenT]] = []  # rare: a list is smaller than a deque
        self._read_only_connection = False
        self._sync_outstanding = 0
        self._xid = 0
        self._last_send = 0.0
        #: Send times of the pings on this connection that are not answered yet (oldest first).
        self._pings: deque[float] = deque()
        self._connect_deadline = 0.0
        #: Liveness is timed from what proves that the server heard us, never from what merely arrives
        #: (a watch notification, a ping answer nobody asked for, half a frame): the send time of the
        #: newest request, ping or ConnectRequest that has been answered on this connection.  A server
        #: expires a session one timeout after it last heard from the client, so dropping the connection
        #: two thirds of a timeout after this moment tells the application at least a third of a timeout
        #: before the session can expire, whatever else the server keeps sending.
        self._last_confirmed = 0.0
        #: When the newest answer arrived (of anything sent on this connection): the connection is
        #: dropped only when nothing has been answered for the read timeout.  Between the two deadlines
        #: -- answers still arriving, but none to anything sent in the last read timeout (a deep
        #: pipeline draining, pings queued behind it) -- the session is SUSPENDED on the open connection
        #: and CONNECTED again as soon as something newer is answered.
        self._answered_at = 0.0
        #: The same moment across connections (None before the first session): client-side expiry.
        self._last_heard: float | None = None
        #: The id and password of the session once the client has declared it expired by itself (no
        #: server reached for the session timeout): the server may still hold it, and its ephemeral
        #: nodes, until it expires it there.  :func:`zkwire.sessions` closes such a session before it
        #: opens the next one.  None otherwise.
        self.abandoned: tuple[int, bytes] | None = None

    # ------------------------------------------------------------------ host selection & timing

    @property
    def hosts(self) -> list[HostPort]:
        return self._hosts.hosts

    @property
    def connect_timeout(self) -> float:
        return (self.negotiated_timeout or self.requested_timeout) / len(self._hosts)

    @property
    def read_timeout(self) -> float:
        return (self.negotiated_timeout or self.requested_timeout) * 2 / 3

    @property
    def session_timeout(self) -> float:
        """The negotiated session timeout (the requested one before any session): the longest a request
        may stay unanswered on a connection whose server answers later ones (then the connection is
        dropped as broken and the request fails with ConnectionLossError)."""
        return self.negotiated_timeout or self.requested_timeout

    @property
    def liveness_deadline(self) -> float:
        """When the connection counts as dead unless the server answers something before then: the read
        timeout after the newest answer arrived (the connect timeout during the handshake; inf without a
        connection).  It moves only as answers arrive, so an I/O layer blocked in a write while the
        server keeps answering (busy, not dead) waits on."""
        if self._phase is _Phase.IDLE:
            return float("inf")
        if self._phase is _Phase.HANDSHAKE:
            return self._connect_deadline
        if self._phase is _Phase.SYNCING:
            return self._last_confirmed + self.read_timeout
        return self._answered_at + self.read_timeout

    @property
    def ping_interval(self) -> float:
        return (self.negotiated_timeout or self.requested_timeout) / 3

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
            return float("inf")
        deadlines = [float("inf")]
        if self._phase is _Phase.HANDSHAKE:
            deadlines.append(self._connect_deadline)
        elif self._phase is _Phase.SYNCING:
            deadlines.append(self._last_confirmed + self.read_timeout)
            deadlines.append(self._last_send + self.ping_interval)
        elif self._phase is _Phase.OPEN:
            deadlines.append(self._answered_at + self.read_timeout)
            if self.state.is_connected:
                deadlines.append(self._last_confirmed + self.read_timeout)
            deadlines.append(self._last_send + self.ping_interval)
            if self._pending and self._last_confirmed > self._pending[0].sent:
                deadlines.append(self._pending[0].sent + self.session_timeout)
        expiry = self._client_side_expiry()
        if expiry is not None:
            deadlines.append(expiry)
        return min(deadlines)

    def _client_side_expiry(self) -> float | None:
        """When the client treats the session as expired by itself: a session timeout after the server
        last heard from it, while no connection vouches for it (a server that still answers on an open
        connection would close it if the session expired); None when that does not apply."""
        if (
            self._last_heard is None
            or self.negotiated_timeout is None
            or self.state.is_connected
            or self._phase is _Phase.OPEN
        ):
            return None
        return self._last_heard + self.negotiated_timeout

    def handle_timer(self, now: float) -> list[Event[TokenT, WatcherT]]:
        events: list[Event[TokenT, WatcherT]] = []
        if self.state.is_terminal:
            return events
        expiry = self._client_side_expiry()
        if expiry is not None and now >= expiry:
            log.warning(
                "session 0x%x: no server reached for %.1fs, treating it as expired",
                self.session_id,
                now - expiry + self.session_timeout,
            )
            self.abandoned = (self.session_id, self._passwd)
            return self._expire(events, SessionExpiredError(detail="no server reachable for the session timeout"))
        if self._phase is _Phase.HANDSHAKE and now >= self._connect_deadline:
            events.append(DropConnection(f"no handshake reply within {self.connect_timeout:.2f}s"))
        elif self._phase is _Phase.SYNCING and now >= self._last_confirmed + self.read_timeout:
            events.append(DropConnection(f"nothing sent in the last {now - self._last_confirmed:.2f}s was answered"))
        elif self._phase in (_Phase.SYNCING, _Phase.OPEN):
            if self._phase is _Phase.OPEN and now >= self._answered_at + self.read_timeout:
                events.append(DropConnection(f"nothing answered for {now - self._answered_at:.2f}s"))
                return events
            if (
                self._phase is _Phase.OPEN
                and self.state.is_connected
                and now >= self._last_confirmed + self.read_timeout
            ):
                # Answers keep coming, but to requests sent before the read timeout (a deep pipeline
                # draining; our pings wait behind it): nothing proves the server heard us since, so the
                # session may expire unseen.  The application is told now, as it would be by a dropped
                # connection; the connection stays, and the next newer answer confirms the session.
                log.info(
                    "session 0x%x: answers arrive, but none to anything sent in the last %.2fs: suspended",
                    self.session_id,
                    now - self._last_confirmed,
                )
                self._set_state(events, SessionState.SUSPENDED)
            if (
                self._pending
                and self._last_confirmed > self._pending[0].sent
                and now >= self._pending[0].sent + self.session_timeout
            ):
                # The server answered something sent later (a ping) but not this request: it has lost
                # it.  A server answers a session's requests in order, so no healthy one gets here.
                oldest = self._pending[0]
                events.append(
                    DropConnection(
                        f"{op_name(oldest.op)} request (xid {oldest.xid}) unanswered for {now - oldest.sent:.2f}s"
                    )
                )
            elif now >= self._last_send + self.ping_interval:
                self._out += encode_request(PING_XID, OpCode.PING)
                self._pings.append(now)
                self._last_send = now
        return events

    # ------------------------------------------------------------------ connection lifecycle

    def resume(self, session_id: int, passwd: bytes) -> None:
        """Present an existing session (its id and password) on the first connection instead of asking
        for a new one: the server re-attaches it or answers that it has expired.  Only before the first
        connection of a core that has no session yet.

        Raises:
            InvalidArgumentError: the core already has a session, or the id or password cannot be one.
        """
        if self.session_id or self._phase is not _Phase.IDLE or self.state is not SessionState.CONNECTING:
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
        self._phase = _Phase.HANDSHAKE
        self._decoder = FrameDecoder(self.max_frame, skip_oversize=True)
        self._out.clear()
        self._connect_deadline = now + self.connect_timeout
        self._last_send = self._last_confirmed = self._answered_at = now
        self._pings.clear()
        # A session only ever served by read-only servers is local to that server: a read-write server
        # would not know it, so it is not presented again (it has no ephemeral nodes to lose).
        attach = self.session_id if self.seen_read_write else 0
        req = ConnectRequest(
            protocol_version=0,
            last_zxid_seen=self.last_zxid,
            timeout=int(self.requested_timeout * 1000),
            session_id=attach,
            passwd=self._passwd if attach else bytes(16),
            read_only=self.allow_read_only,
        )
        self._out += encode_connect_request(req, self.max_frame)

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
        self._phase = _Phase.IDLE
        self.current_host = None
        self._out.clear()
        if phase in (_Phase.IDLE, _Phase.HANDSHAKE):
            self._hosts.failed()
        # The state change comes first: whoever watches the session (a lock's lease) has heard of the
        # loss before any caller's request fails with it.
        if phase is _Phase.CLOSING:
            self._set_state(events, SessionState.CLOSED)
        elif self.state.is_connected:
            self._set_state(events, SessionState.SUSPENDED)
        self._fail_pending(events, error or ConnectionLossError())
        return events

    def _fail_pending(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> None:
        """Fail every outstanding request with a fresh copy of ``error`` (carrying the request's path)."""
        while self._pending:
            p = self._pending.popleft()
            if p.token is not None:
                events.append(Reply(p.token, 0, None, copy_error(error, p.path)))
        # Credentials not yet answered stay remembered and are sent again on the next connection.
        self._auth_pending.clear()
        self._sync_outstanding = 0

    def _fail_auth_waiters(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> None:
        """The session ended: nobody waiting for a credential's verdict will ever get one from a server."""
        for cred in self._credentials:
            if cred.token is not None:
                token, cred.token = cred.token, None
                events.append(AuthResult(token, copy_error(error, None)))

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

    def _next_xid(self) -> int:
        xid = self._xid + 1
        if xid > _XID_MAX:
            xid = 1
        self._xid = xid
        return xid

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
        if self._phase is not _Phase.OPEN:
            if self.state.is_terminal:
                raise self.terminal_error()
            raise ConnectionLossError(path, "not connected")
        xid = self._next_xid()
        encode_request_into(self._out, xid, op, record, self.max_frame)
        pending = _Pending(xid, op, token, path, watch, now)
        if type(record) is MultiRequest:
            pending.subops = tuple([sub.op for sub in record.ops])
        self._pending.append(pending)
        self._last_send = now
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
        packet = bytes(encode_request(AUTH_XID, OpCode.AUTH, AuthPacket(0, scheme, auth), self.max_frame))
        cred = _Credential(scheme, packet, token, required)
        self._credentials.append(cred)
        if self._phase is _Phase.OPEN:
            self._send_credential(cred)
            self._last_send = now
        elif self._phase is _Phase.SYNCING:
            # The re-attach already sent the credentials it knew of: send this one too, and hold the
            # session back from CONNECTED until it is answered, like the others.
            self._send_credential(cred)
            self._sync_outstanding += 1
            self._last_send = now

    def _send_credential(self, cred: _Credential[TokenT]) -> None:
        self._out += cred.packet
        self._auth_pending.append(cred)

    def close(self, now: float) -> bool:
        """Send closeSession if connected; returns True if the caller should wait for the server to close."""
        if self.state.is_terminal:
            return False
        if self._phase is _Phase.OPEN:
            xid = self._next_xid()
            self._out += encode_request(xid, OpCode.CLOSE_SESSION)
            self._pending.append(_Pending(xid, OpCode.CLOSE_SESSION, None, None, None, now))
            self._phase = _Phase.CLOSING
            self._last_send = now
            return True
        return False

    def mark_closed(self) -> list[Event[TokenT, WatcherT]]:
        """The application closed the client: fail what is still outstanding and end the session."""
        self._phase = _Phase.IDLE
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

    # ------------------------------------------------------------------ incoming bytes

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event[TokenT, WatcherT]]:
        """Bytes from the server: the events they complete.

        A frame over ``max_frame`` is skipped as its bytes come (the connection is kept): the request it
        answers fails with :class:`~zkwire.errors.ReplyTooLargeError`; a watch notification that long
        is dropped with a warning (its watchers cannot be told apart without its path).
        """
        events: list[Event[TokenT, WatcherT]] = []
        if self._phase is _Phase.IDLE:
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
        if self._phase is _Phase.IDLE:
            return None
        return self._decoder.receive_buffer()

    def received_into(self, n: int, now: float) -> list[Event[TokenT, WatcherT]]:
        """``n`` bytes were read into the view :meth:`receive_buffer` returned."""
        events: list[Event[TokenT, WatcherT]] = []
        if self._phase is _Phase.IDLE:
            return events
        return self._handle_frames(self._decoder.received(n), now, events)

    def _handle_frames(
        self, frames: list[bytes | memoryview | OversizeFrame], now: float, events: list[Event[TokenT, WatcherT]]
    ) -> list[Event[TokenT, WatcherT]]:
        for payload in frames:
            try:
                if isinstance(payload, OversizeFrame):
                    self._handle_oversize(payload, now, events)
                elif self._phase is _Phase.HANDSHAKE:
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
        if self._phase is _Phase.HANDSHAKE:
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
        self._passwd = self._check_connect_response(resp, presented)
        self.session_id = resp.session_id
        timeout = resp.timeout / 1000
        ceiling = max(self.requested_timeout, TIMEOUT_CEILING)
        if timeout > ceiling:
            log.warning(
                "session 0x%x: server %s granted a timeout of %d ms; the client's clocks use %g s",
                resp.session_id,
                self.current_host,
                resp.timeout,
                ceiling,
            )
            timeout = ceiling
        self.negotiated_timeout = timeout
        self._last_heard = self._last_confirmed  # when the ConnectRequest was queued
        self._answered_at = now
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
        self._phase = _Phase.SYNCING
        self._read_only_connection = read_only
        for cred in self._credentials:
            self._send_credential(cred)
            self._sync_outstanding += 1
        self._send_set_watches(now)
        self._last_send = now
        self._maybe_open(events)

    def _check_connect_response(self, resp: ConnectResponse, presented: int) -> bytes:
        """The refusals listed under "Server values" in the class docstring; returns the password."""
        passwd = resp.passwd
        if passwd is None:
            raise ProtocolError("ConnectResponse without a session password")
        if not 0 < len(passwd) <= MAX_PASSWORD:
            raise ProtocolError(f"session password of {len(passwd)} bytes (1..{MAX_PASSWORD} accepted)")
        if resp.read_only and not self.allow_read_only:
            raise ProtocolError("read-only session granted, but the client did not ask for one")
        if resp.session_id == 0:
            raise ProtocolError("ConnectResponse with session id 0")
        if presented and resp.session_id != presented:
            raise ProtocolError(f"re-attach of session 0x{presented:x} answered with session 0x{resp.session_id:x}")
        return passwd

    def _send_set_watches(self, now: float) -> None:
        w = self.watches
        tables = {kind: w.paths(kind) for kind in WatchKind}
        if not any(tables.values()):
            return
        use_v2 = bool(tables[WatchKind.PERSISTENT] or tables[WatchKind.RECURSIVE])
        order = list(WatchKind) if use_v2 else [WatchKind.DATA, WatchKind.EXIST, WatchKind.CHILD]
        batch: dict[WatchKind, list[str]] = {k: [] for k in order}
        size = 0

        def flush() -> None:
            nonlocal size
            if use_v2:
                rec: Record = SetWatches2(self.last_zxid, *(tuple(batch[k]) for k in order))
                op = OpCode.SET_WATCHES2
            else:
                rec = SetWatches(self.last_zxid, *(tuple(batch[k]) for k in order))
                op = OpCode.SET_WATCHES
            xid = self._next_xid()
            self._out += encode_request(xid, op, rec, self.max_frame)
            self._pending.append(_Pending(xid, op, None, None, None, now))
            self._sync_outstanding += 1
            for k in order:
                batch[k] = []
            size = 0

        # A batch fits the frame limit (the client refuses watches on paths too long for one).
        limit = min(SET_WATCHES_BATCH_BYTES, self.max_frame - WATCH_FRAME_OVERHEAD)
        for kind in order:
            for path in tables[kind]:
                cost = len(path.encode()) + 4
                if size and size + cost > limit:
                    flush()
                batch[kind].append(path)
                size += cost
        if size:
            flush()
        self._last_send = now

    def _maybe_open(self, events: list[Event[TokenT, WatcherT]]) -> None:
        if self._phase is _Phase.SYNCING and self._sync_outstanding == 0:
            self._phase = _Phase.OPEN
            self._set_state(events, SessionState.READ_ONLY if self._read_only_connection else SessionState.CONNECTED)

    def _handle_frame(self, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        if len(payload) < 16:
            raise ProtocolError(f"reply of {len(payload)} bytes is shorter than a ReplyHeader")
        xid, zxid, err = _REPLY_HEADER.unpack_from(payload, 0)
        if xid == PING_XID:
            if self._pings:  # an answer to no ping of ours proves nothing
                self._confirm(self._pings.popleft(), now, events)
            return
        if xid == WATCH_XID:
            self._handle_notification(payload, events)
            return
        if xid == AUTH_XID:
            self._handle_auth_reply(err, events)
            return
        if not self._pending:
            raise ProtocolError(f"reply with xid {xid} but no request is outstanding")
        p = self._pending[0]
        if p.xid != xid:
            raise ProtocolError(f"reply xid {xid} does not match the oldest request's xid {p.xid}")
        if p.token is None:  # internal request
            self._pending.popleft()
            self._confirm(p.sent, now, events)
            if zxid > self.last_zxid:
                self.last_zxid = zxid
            self._internal_reply(p, err, events)
            return
        # Decode before taking the request off the queue: if the reply is malformed, the request stays
        # pending and fails with ConnectionLossError when the connection is dropped.
        body: Record | None = None
        if err:
            if len(payload) != 16:
                raise ProtocolError(f"error reply carries {len(payload) - 16} unexpected body bytes")
        else:
            # The decoders read any buffer; a large reply comes as a view (see FrameDecoder), which only
            # getData's data would keep: it is made bytes here.
            body = decode_response_body(p.op, cast("bytes", payload))
            if type(payload) is not bytes and type(body) is GetDataResponse and isinstance(body.data, memoryview):
                body = GetDataResponse(bytes(body.data), body.stat)
            if p.op in _CHECKED_REPLIES:
                _check_reply(p, body)
        self._pending.popleft()
        self._confirm(p.sent, now, events)
        if zxid > self.last_zxid:
            self.last_zxid = zxid
        if p.watch is not None:
            self._register_watch(p, err)
        events.append(Reply(p.token, zxid, body, error_for_code(err, p.path) if err else None))

    def _confirm(self, sent: float, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """The server answered, at ``now``, something we sent at ``sent``: it heard from us then or later."""
        self._answered_at = now
        if sent > self._last_confirmed:
            self._last_confirmed = self._last_heard = sent
            if self.state is SessionState.SUSPENDED and self._phase is _Phase.OPEN and now < sent + self.read_timeout:
                log.info("session 0x%x: confirmed again on the same connection", self.session_id)
                self._set_state(
                    events, SessionState.READ_ONLY if self._read_only_connection else SessionState.CONNECTED
                )

    def _register_watch(self, p: _Pending[TokenT, WatcherT], err: int) -> None:
        assert p.watch is not None
        if p.op == OpCode.EXISTS:
            # As the server does: exists arms a data watch on a node that exists, an exist watch on one
            # that does not (NoNode), whatever table the caller named.
            if err == 0:
                self.watches.add(WatchKind.DATA, p.watch.path, p.watch.watcher)
            elif err == NoNodeError.code:
                self.watches.add(WatchKind.EXIST, p.watch.path, p.watch.watcher)
        elif err == 0:
            self.watches.add(p.watch.kind, p.watch.path, p.watch.watcher)

    def _internal_reply(self, p: _Pending[TokenT, WatcherT], err: int, events: list[Event[TokenT, WatcherT]]) -> None:
        if p.op == OpCode.CLOSE_SESSION:
            return
        if p.op in (OpCode.SET_WATCHES, OpCode.SET_WATCHES2):
            if err:
                log.warning("re-registering watches failed: %s", error_for_code(err))
            self._sync_outstanding -= 1
            self._maybe_open(events)

    def _handle_auth_reply(self, err: int, events: list[Event[TokenT, WatcherT]]) -> None:
        if not self._auth_pending:
            raise ProtocolError("auth reply but no auth request is outstanding")
        cred = self._auth_pending.pop(0)
        token, cred.token = cred.token, None
        if self._phase is _Phase.SYNCING:
            self._sync_outstanding -= 1
        error: ServerError | None = error_for_code(err) if err else None
        if error is None:
            if token is not None:
                events.append(AuthResult(token, None))
            self._maybe_open(events)
            return
        # The server closes the connection after a rejected credential; never send it again.
        self._credentials.remove(cred)
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
            self._fail_auth_waiters(events, self.terminal_error())
        events.append(StateChanged(old, new, error))

    def _expire(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> list[Event[TokenT, WatcherT]]:
        self._fail_pending(events, SessionExpiredError())
        self._set_state(events, SessionState.EXPIRED, error)
        return events


_CREATES = frozenset({OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL})
#: Replies whose decoded body is checked against the request (cheap, and only for these ops).
_CHECKED_REPLIES = _CREATES | {OpCode.MULTI, OpCode.MULTI_READ}


def _check_reply(p: _Pending[Any, Any], body: Record | None) -> None:
    """Refuse a well-formed reply that cannot answer ``p``: a create without a path, a multi whose
    results do not correspond one to one to its ops."""
    if isinstance(body, CreateResponse | Create2Response):
        if body.path is None:
            raise ProtocolError(f"{op_name(p.op)} reply without the created path")
        return
    if not isinstance(body, MultiResponse):
        return
    subops = p.subops or ()
    results = body.results
    if len(results) != len(subops):
        raise ProtocolError(f"{op_name(p.op)} reply with {len(results)} results for {len(subops)} ops")
    for i, (sub, result) in enumerate(zip(subops, results, strict=True)):
        rtype = result.op
        if rtype == OpCode.ERROR:
            continue
        # 3.8.0 answers create2 with a create result, createContainer and createTTL with create2 ones.
        if rtype != sub and not (sub in _CREATES and rtype in (OpCode.CREATE, OpCode.CREATE2)):
            raise ProtocolError(
                f"result {i} of a {op_name(p.op)} reply is a {op_name(rtype)} result for {op_name(sub)}"
            )
        if isinstance(result.body, CreateResponse | Create2Response) and result.body.path is None:
            raise ProtocolError(f"result {i} of a {op_name(p.op)} reply has no created path")
