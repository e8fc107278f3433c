"""The incoming side of a session: the bytes a server sends, cut into frames, each routed to what it
answers.

A :class:`FrameRouter` reads the current connection's byte stream for its
:class:`~zkwire.sansio.session.SessionCore` and hands each frame to the part it concerns: the
ConnectResponse to the handshake's checks (:mod:`~zkwire.sansio.handshake`), a reply to the request it
answers (:mod:`~zkwire.sansio.matching`), a ping answer or any reply to the clocks
(:mod:`~zkwire.sansio.liveness`), an auth answer to the credentials, a watch notification to the watch
registry (:mod:`~zkwire.sansio.watches`).  What the frames change in the session -- its id, password
and zxid, the connection's phase, its state -- it changes through the core (the :class:`RoutedSession`
it routes for); the events they complete are returned to the I/O layer.
"""

from __future__ import annotations

import logging
from typing import Generic, Protocol, cast

from ..constants import AUTH_XID, PING_XID, WATCH_XID, EventType, KeeperState, OpCode
from ..errors import (
    AuthFailedError,
    ProtocolError,
    ReplyTooLargeError,
    SessionClosedRequireSaslAuthError,
    SessionExpiredError,
    ZKError,
    error_for_code,
)
from ..protocol.codec import decode_connect_response, decode_response_body, op_name
from ..protocol.framing import REPLY_HEADER as _REPLY_HEADER
from ..protocol.framing import FrameDecoder, OversizeFrame
from ..protocol.jute import Reader
from ..protocol.records import SetSASLResponse, WatcherEvent
from .events import (
    AuthResult,
    DeadlineMoved,
    DropConnection,
    Event,
    Reply,
    SessionState,
    TokenT,
    WatcherT,
    WatchNotification,
)
from .handshake import Handshake, Phase, check_connect_response, granted_timeout
from .hosts import HostPort, HostRotation
from .liveness import Liveness
from .matching import RequestQueue
from .observing import Observation
from .paths import strip_chroot
from .watches import WatchRegistry

__all__ = ["FrameRouter", "RoutedSession"]

log = logging.getLogger("zkwire.session")

#: The error code of a server that requires authentication this connection has not done (-124).
_REQUIRES_AUTHENTICATION = SessionClosedRequireSaslAuthError.code


class RoutedSession(Protocol[TokenT, WatcherT]):
    """What the router reads and changes in the session it routes frames for (the
    :class:`~zkwire.sansio.session.SessionCore`): the session's identity, the connection's phase, and
    the core's state changes."""

    state: SessionState
    session_id: int
    last_zxid: int
    seen_read_write: bool
    current_host: HostPort | None
    allow_read_only: bool
    chroot: str
    max_frame: int
    watches: WatchRegistry[WatcherT]
    observed: Observation | None
    _passwd: bytes
    _phase: Phase

    def _set_state(
        self, events: list[Event[TokenT, WatcherT]], new: SessionState, error: ZKError | None = None
    ) -> None: ...

    def _expire(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> list[Event[TokenT, WatcherT]]: ...

    def _fail_pending(self, events: list[Event[TokenT, WatcherT]], error: ZKError) -> None: ...

    def auth_failed(self, events: list[Event[TokenT, WatcherT]], error: ZKError, *, drop: bool = True) -> None: ...

    def _opened(self, events: list[Event[TokenT, WatcherT]], state: SessionState) -> None: ...


class FrameRouter(Generic[TokenT, WatcherT]):
    """The frames of the current connection, each routed to the part it answers (see the module).

    A frame the session cannot take -- malformed, answering nothing outstanding, badly framed -- ends
    in a :class:`DropConnection` event: the stream is broken, the connection is to be dropped.
    """

    __slots__ = ("_clock", "_decoder", "_handshake", "_hosts", "_pending", "_session", "read_only")

    def __init__(
        self,
        session: RoutedSession[TokenT, WatcherT],
        pending: RequestQueue[TokenT, WatcherT],
        clock: Liveness,
        handshake: Handshake[TokenT, WatcherT],
        hosts: HostRotation,
    ) -> None:
        self._session = session
        self._pending = pending
        self._clock = clock
        self._handshake = handshake
        self._hosts = hosts
        self._decoder = FrameDecoder(session.max_frame, skip_oversize=True)
        #: The current connection's server granted a read-only session.
        self.read_only = False

    def connection_made(self) -> None:
        """A new connection: its stream starts with a new frame."""
        self._decoder = FrameDecoder(self._session.max_frame, skip_oversize=True)

    # ------------------------------------------------------------------ incoming bytes

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event[TokenT, WatcherT]]:
        """Bytes from the server: the events they complete (see
        :meth:`~zkwire.sansio.session.SessionCore.receive_data`)."""
        events: list[Event[TokenT, WatcherT]] = []
        if self._session._phase is Phase.IDLE:
            return events
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as e:
            events.append(DropConnection(f"bad framing from server: {e}"))
            return events
        return self._handle_frames(frames, now, events)

    def receive_buffer(self) -> memoryview | None:
        """Where the next bytes may be read directly (see
        :meth:`~zkwire.sansio.session.SessionCore.receive_buffer`)."""
        if self._session._phase is Phase.IDLE:
            return None
        return self._decoder.receive_buffer()

    def received_into(self, n: int, now: float) -> list[Event[TokenT, WatcherT]]:
        """``n`` bytes were read into the view :meth:`receive_buffer` returned."""
        events: list[Event[TokenT, WatcherT]] = []
        if self._session._phase is Phase.IDLE:
            return events
        return self._handle_frames(self._decoder.received(n), now, events)

    def _handle_frames(
        self, frames: list[bytes | memoryview | OversizeFrame], now: float, events: list[Event[TokenT, WatcherT]]
    ) -> list[Event[TokenT, WatcherT]]:
        session = self._session
        for payload in frames:
            try:
                if isinstance(payload, OversizeFrame):
                    self._handle_oversize(payload, now, events)
                elif session._phase is Phase.HANDSHAKE:
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
        session = self._session
        if session._phase is Phase.HANDSHAKE:
            raise ProtocolError(f"connect response of {frame.length} bytes exceeds max_frame ({session.max_frame})")
        xid, zxid, err = _REPLY_HEADER.unpack(frame.head)
        if xid == WATCH_XID:
            log.warning(
                "session 0x%x: skipped a watch notification of %d bytes (over max_frame, %d bytes)",
                session.session_id,
                frame.length,
                session.max_frame,
            )
            return
        if not self._pending or self._pending[0].xid != xid:
            raise ProtocolError(f"frame of {frame.length} bytes (xid {xid}) answers no outstanding request")
        if err:
            raise ProtocolError(f"error reply of {frame.length} bytes")
        p = self._pending.popleft()
        self._confirm(p.sent, now, events)
        if zxid > session.last_zxid:
            session.last_zxid = zxid
        if p.token is None:
            raise ProtocolError(f"{op_name(p.op)} reply of {frame.length} bytes")
        log.warning(
            "session 0x%x: %s reply of %d bytes skipped (over max_frame, %d bytes)",
            session.session_id,
            op_name(p.op),
            frame.length,
            session.max_frame,
        )
        if session.observed is not None:
            session.observed.answered(
                p, session.session_id, session.current_host, frame.length + 4, now, ReplyTooLargeError
            )
        events.append(Reply(p.token, zxid, None, ReplyTooLargeError(frame.length, session.max_frame, p.path)))

    def _handle_connect_response(
        self, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]
    ) -> None:
        if len(payload) == 16:
            # Observed on 3.8.0: a read-only server refuses to create a session (without local sessions
            # enabled) by answering the ConnectRequest with a bare ReplyHeader carrying the error.
            _, _, err = _REPLY_HEADER.unpack_from(payload, 0)
            events.append(DropConnection(f"server refused the session: {error_for_code(err)}"))
            return
        session = self._session
        resp = decode_connect_response(bytes(payload))
        presented = session.session_id if session.seen_read_write else 0  # as in connection_made
        if resp.expired:
            if not presented:
                raise ProtocolError("a request for a new session was answered 'expired'")
            log.warning("session 0x%x expired (server %s)", session.session_id, session.current_host)
            session._expire(events, SessionExpiredError())
            events.append(DropConnection("session expired"))
            return
        session._passwd = check_connect_response(resp, presented, session.allow_read_only)
        session.session_id = resp.session_id
        self._clock.attached(granted_timeout(resp, self._clock.requested, session.current_host), now)
        self._hosts.reached()
        read_only = bool(resp.read_only)
        if not read_only:
            session.seen_read_write = True
        log.info(
            "session 0x%x attached via %s (timeout %d ms%s)",
            session.session_id,
            session.current_host,
            resp.timeout,
            ", read-only" if read_only else "",
        )
        session._phase = Phase.SYNCING
        self.read_only = read_only
        host = session.current_host
        step = self._handshake.attach(session.watches, session.last_zxid, now, host.host if host else "")
        self._clock.last_send = now
        if step is not None:
            events.append(step)
        self.maybe_open(events)
        if session._phase is Phase.SYNCING:
            events.append(DeadlineMoved())  # the SYNCING clocks run (see Liveness.next_deadline)

    def maybe_open(self, events: list[Event[TokenT, WatcherT]]) -> None:
        """The SYNCING phase is over once every step is answered: the session opens."""
        session = self._session
        if session._phase is Phase.SYNCING and self._handshake.done:
            session._phase = Phase.OPEN
            session._opened(events, SessionState.READ_ONLY if self.read_only else SessionState.CONNECTED)

    def _handle_frame(self, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        if len(payload) < 16:
            raise ProtocolError(f"reply of {len(payload)} bytes is shorter than a ReplyHeader")
        xid, zxid, err = _REPLY_HEADER.unpack_from(payload, 0)
        if err == _REQUIRES_AUTHENTICATION and xid != AUTH_XID and not self._answers_sasl(xid):
            self._requires_authentication(events)
            return
        if xid == PING_XID:
            sent = self._clock.ping_answered()
            if sent is not None:
                self._confirm(sent, now, events)
            return
        if xid == WATCH_XID:
            self._handle_notification(payload, now, events)
            return
        if xid == AUTH_XID:
            self._handle_auth_reply(err, events)
            return
        p, body = self._pending.answer(xid, err, payload)
        session = self._session
        # _confirm, inlined (once per reply)
        if self._clock.confirm(p.sent, now) and session.state is SessionState.SUSPENDED:
            self._confirmed_again(p.sent, now, events)
        if zxid > session.last_zxid:
            session.last_zxid = zxid
        if p.token is None:  # the core's own request
            if p.op == OpCode.SASL:
                self._sasl_answered(err, payload, now, events)
            elif p.op != OpCode.CLOSE_SESSION:  # SetWatches
                self._handshake.step_answered(err)
                self.maybe_open(events)
            return
        watch = p.watch
        if watch is not None:
            session.watches.answered(p.op, watch.kind, watch.path, watch.watcher, err)
        error = error_for_code(err, p.path) if err else None
        if session.observed is not None:
            failed = None if error is None else type(error)
            session.observed.answered(p, session.session_id, session.current_host, len(payload) + 4, now, failed)
        events.append(Reply(p.token, zxid, body, error))

    def _confirm(self, sent: float, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """The server answered, at ``now``, something we sent at ``sent``: it heard from us then or later."""
        if self._clock.confirm(sent, now) and self._session.state is SessionState.SUSPENDED:
            self._confirmed_again(sent, now, events)

    def _confirmed_again(self, sent: float, now: float, events: list[Event[TokenT, WatcherT]]) -> None:
        """Something newer than anything before was answered while suspended on an open connection."""
        session = self._session
        if session._phase is Phase.OPEN and now < sent + self._clock.read_timeout:
            log.info("session 0x%x: confirmed again on the same connection", session.session_id)
            state = SessionState.READ_ONLY if self.read_only else SessionState.CONNECTED
            session._set_state(events, state)

    def _handle_auth_reply(self, err: int, events: list[Event[TokenT, WatcherT]]) -> None:
        session = self._session
        cred, token, error = self._handshake.auth_answered(err, syncing=session._phase is Phase.SYNCING)
        if error is None:
            if token is not None:
                events.append(AuthResult(token, None))
            self.maybe_open(events)
            return
        if token is not None:
            events.append(AuthResult(token, error))
        if token is None or cred.required:
            # A credential the session was opened with, or one the server accepted before, is refused:
            # the session cannot be what the application asked for.
            session.auth_failed(events, error)
        else:
            events.append(DropConnection("authentication failed"))

    def _sasl_answered(
        self, err: int, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]
    ) -> None:
        token = None
        if not err:
            body = decode_response_body(OpCode.SASL, cast("bytes", payload))
            assert isinstance(body, SetSASLResponse)
            token = body.token
        try:
            step = self._handshake.sasl_answered(err, token, now)
        except AuthFailedError as e:
            log.warning("session 0x%x: %s", self._session.session_id, e.detail)
            self._session.auth_failed(events, e)
            return
        if step is not None:
            events.append(step)
        else:
            self.maybe_open(events)

    def _answers_sasl(self, xid: int) -> bool:
        pending = self._pending
        return bool(pending) and pending[0].xid == xid and pending[0].op == OpCode.SASL

    def _requires_authentication(self, events: list[Event[TokenT, WatcherT]]) -> None:
        """The server answered -124: it requires authentication (SASL, or the schemes its
        ``enforce.auth.schemes`` names) that this connection has not done, and closes the connection."""
        if self._handshake.sasl is None:
            detail = (
                "the server requires authentication before any request (enforce.auth.enabled or "
                "sessionRequireClientSASLAuth): give open_client(sasl=...) -- on the command line --sasl -- "
                "or the credential its enforce.auth.schemes names with auth=[...]"
            )
        else:
            detail = "the server requires authentication this session's credentials do not give"
        session = self._session
        log.warning("session 0x%x: %s", session.session_id, detail)
        session.auth_failed(events, SessionClosedRequireSaslAuthError(detail=detail))

    def _handle_notification(
        self, payload: bytes | memoryview, now: float, events: list[Event[TokenT, WatcherT]]
    ) -> None:
        r = Reader(payload, 16)
        ev = WatcherEvent.read(r)
        r.expect_end("WatcherEvent")
        server_path = ev.path or "/"
        watchers = self._session.watches.fire(ev.type, server_path)
        try:
            etype: EventType | int = EventType(ev.type)
        except ValueError:
            etype = ev.type
        try:
            kstate: KeeperState | int = KeeperState(ev.state)
        except ValueError:
            kstate = ev.state
        path = strip_chroot(self._session.chroot, server_path)
        observed = self._session.observed
        if observed is not None:
            observed.watch(self._session.session_id, etype, path, len(watchers), self._session.current_host, now)
        events.append(WatchNotification(etype, kstate, path, watchers))
