"""The handshake of each connection, in phases, and the session's credentials.

A connection goes through these :class:`Phase` s:

1. **HANDSHAKE**: the ConnectRequest is sent (:func:`connect_request`) and its answer checked
   (:func:`check_connect_response`, :func:`granted_timeout`) before the session uses anything in it.
2. **SYNCING**: the session is attached; before user requests flow, :meth:`Handshake.attach` sends

   a. with a SASL mechanism, the SASL exchange (:mod:`~zkwire.sansio.sasl`), alone on the connection:
      nothing else -- not even a ping -- is sent until it is over (a server requiring SASL closes a
      connection that sends anything else first);
   b. every credential the session holds (AuthPacket), answered one by one;
   c. SetWatches (or SetWatches2) frames re-registering every watch, batched under the frame limit.

   The session reports CONNECTED (or READ_ONLY) once all of them are answered (:attr:`Handshake.done`).
3. **OPEN**: user requests flow; **CLOSING**: closeSession sent.  **IDLE** between connections.

Server values
-------------
What a server says in its ConnectResponse is checked before the session uses it
(:func:`check_connect_response`, :func:`granted_timeout`).  A refused answer is a
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

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic

from ..constants import AUTH_XID, OpCode
from ..errors import AuthFailedError, DataTooLargeError, ProtocolError, ServerError, error_for_code
from ..protocol.codec import encode_connect_request, encode_request
from ..protocol.records import (
    AuthPacket,
    ConnectRequest,
    ConnectResponse,
    GetSASLRequest,
    Record,
    SetWatches,
    SetWatches2,
)
from ..sasl.mechanism import SaslMechanism
from .events import SaslStep, TokenT, WatcherT
from .matching import RequestQueue
from .sasl import SaslConversation
from .watches import WatchKind, WatchRegistry

__all__ = [
    "Phase",
    "Handshake",
    "Credential",
    "connect_request",
    "check_connect_response",
    "granted_timeout",
    "MAX_PASSWORD",
    "TIMEOUT_CEILING",
    "SET_WATCHES_BATCH_BYTES",
    "WATCH_FRAME_OVERHEAD",
]

log = logging.getLogger("zkwire.session")

#: Paths per SetWatches frame are batched to stay well under the frame limit.
SET_WATCHES_BATCH_BYTES = 128 * 1024
#: A SetWatches2 frame holding one path is at most this much longer than the path's UTF-8 bytes (40,
#: with room to spare): a watch on a longer path could not be re-registered after a reconnect.
WATCH_FRAME_OVERHEAD = 64
#: A negotiated session timeout above both this (seconds) and the requested one is clamped to the
#: larger of the two for the client's own clocks (see "Server values" above).
TIMEOUT_CEILING = 60.0
#: Longest session password accepted from a server (every ZooKeeper release sends 16 bytes).
MAX_PASSWORD = 64


class Phase(Enum):
    IDLE = 0  # no connection
    HANDSHAKE = 1  # ConnectRequest sent, waiting for ConnectResponse
    SYNCING = 2  # session attached; re-sending auth and watches
    OPEN = 3  # user requests flow
    CLOSING = 4  # closeSession sent


def connect_request(
    session_id: int, passwd: bytes, last_zxid: int, timeout: float, read_only: bool, max_frame: int
) -> bytearray:
    """The ConnectRequest frame: presenting session ``session_id`` (0: asking for a new one)."""
    req = ConnectRequest(
        protocol_version=0,
        last_zxid_seen=last_zxid,
        timeout=int(timeout * 1000),
        session_id=session_id,
        passwd=passwd if session_id else bytes(16),
        read_only=read_only,
    )
    return encode_connect_request(req, max_frame)


def check_connect_response(resp: ConnectResponse, presented: int, allow_read_only: bool) -> bytes:
    """The refusals listed under "Server values" (see the module); returns the password.

    Raises:
        ProtocolError: the answer cannot be taken (the connection is dropped, the next server tried).
    """
    passwd = resp.passwd
    if passwd is None:
        raise ProtocolError("ConnectResponse without a session password")
    if not 0 < len(passwd) <= MAX_PASSWORD:
        raise ProtocolError(f"session password of {len(passwd)} bytes (1..{MAX_PASSWORD} accepted)")
    if resp.read_only and not allow_read_only:
        raise ProtocolError("read-only session granted, but the client did not ask for one")
    if resp.session_id == 0:
        raise ProtocolError("ConnectResponse with session id 0")
    if presented and resp.session_id != presented:
        raise ProtocolError(f"re-attach of session 0x{presented:x} answered with session 0x{resp.session_id:x}")
    return passwd


def granted_timeout(resp: ConnectResponse, requested: float, host: object) -> float:
    """The session timeout the client's clocks run on (seconds): the server's, clamped to the larger of
    ``requested`` and :data:`TIMEOUT_CEILING`."""
    timeout = resp.timeout / 1000
    ceiling = max(requested, TIMEOUT_CEILING)
    if timeout > ceiling:
        log.warning(
            "session 0x%x: server %s granted a timeout of %d ms; the client's clocks use %g s",
            resp.session_id,
            host,
            resp.timeout,
            ceiling,
        )
        timeout = ceiling
    return timeout


@dataclass(slots=True, eq=False)
class Credential(Generic[TokenT]):
    scheme: str
    #: The whole AuthPacket frame, encoded when the credential was added (so it can always be sent).
    packet: bytes = field(repr=False)
    #: Who waits for the server's verdict on the first sending of this credential.
    token: TokenT | None = None
    #: A condition of the session (given to open_client): its refusal ends the session (AUTH_FAILED).
    required: bool = False


class Handshake(Generic[TokenT, WatcherT]):
    """The session's credentials, and what the SYNCING phase of a connection still waits for."""

    __slots__ = (
        "_held",
        "_max_frame",
        "_out",
        "_requests",
        "auth_pending",
        "conversation",
        "credentials",
        "outstanding",
        "sasl",
    )

    def __init__(
        self,
        out: bytearray,
        requests: RequestQueue[TokenT, WatcherT],
        max_frame: int,
        sasl: SaslMechanism | None = None,
    ) -> None:
        #: The session's outgoing buffer, its request queue and frame limit (the core's, shared).
        self._out = out
        self._requests = requests
        self._max_frame = max_frame
        #: The SASL mechanism the session authenticates with on every connection (None: no SASL).
        self.sasl = sasl
        #: The SASL exchange of this connection while it runs (None before and after).
        self.conversation: SaslConversation | None = None
        #: What the SASL exchange holds back: the watch registry and zxid for SetWatches.
        self._held: tuple[WatchRegistry[WatcherT], int] | None = None
        #: Every credential the session holds (sent again on each re-attach); a refused one is dropped.
        self.credentials: list[Credential[TokenT]] = []
        #: Credentials sent on this connection and not answered yet, oldest first (a list: rare).
        self.auth_pending: list[Credential[TokenT]] = []
        #: Steps of the SYNCING phase not answered yet.
        self.outstanding = 0

    @property
    def done(self) -> bool:
        """Every step of the SYNCING phase is answered: user requests may flow."""
        return self.outstanding == 0

    def credential(self, scheme: str, auth: bytes, token: TokenT, required: bool) -> Credential[TokenT]:
        """A new credential, remembered; it raises here, in the caller, if it cannot be encoded."""
        packet = bytes(encode_request(AUTH_XID, OpCode.AUTH, AuthPacket(0, scheme, auth), self._max_frame))
        cred = Credential(scheme, packet, token, required)
        self.credentials.append(cred)
        return cred

    def send_credential(self, cred: Credential[TokenT], syncing: bool) -> None:
        """Queue ``cred`` on the connection; ``syncing``: it holds the session back from CONNECTED."""
        self._out += cred.packet
        self.auth_pending.append(cred)
        if syncing:
            self.outstanding += 1

    def attach(self, watches: WatchRegistry[WatcherT], last_zxid: int, now: float, host: str) -> SaslStep | None:
        """The session is attached to ``host``: queue the SYNCING steps (see the module docstring).
        With SASL, returns the step computing its first token; the rest waits for the exchange."""
        if self.sasl is not None:
            self.conversation = SaslConversation(self.sasl, host)
            self._held = (watches, last_zxid)
            self.outstanding += 1
            return self.conversation.first_step()
        self._send_rest(watches, last_zxid, now)
        return None

    @property
    def sasl_running(self) -> bool:
        """The SASL exchange is running: nothing but its tokens may be sent."""
        return self.conversation is not None

    def sasl_token(self, step: SaslStep, token: bytes | None, now: float) -> bool:
        """``step`` computed ``token``: send it (None: the mechanism has nothing more to send, the
        exchange is over).  False if the step is stale (its connection has ended).

        Raises:
            AuthFailedError: the exchange cannot go on (see :mod:`~zkwire.sansio.sasl`).
        """
        conversation = self.conversation
        if conversation is None or not conversation.take(step):
            return False
        if token is None:
            conversation.finished_sending()
            self._sasl_done(now)
            return True
        if not isinstance(token, bytes | bytearray):
            raise AuthFailedError(
                detail=f"{conversation.describe()}: the mechanism gave a {type(token).__name__}, not bytes"
            )
        conversation.sending()
        try:
            self._requests.send(self._out, OpCode.SASL, GetSASLRequest(bytes(token)), None, now, self._max_frame)
        except DataTooLargeError:
            raise AuthFailedError(
                detail=f"{conversation.describe()}: a token of {len(token)} bytes does not fit max_frame "
                f"({self._max_frame} bytes)"
            ) from None
        return True

    def sasl_answered(self, err: int, token: bytes | None, now: float) -> SaslStep | None:
        """The server answered the last SASL token: the next step, or None (the exchange is over, and
        what it held back has been queued).

        Raises:
            AuthFailedError: the server refused the authentication.
            ProtocolError: no exchange is running.
        """
        conversation = self.conversation
        if conversation is None:
            raise ProtocolError("SASL reply but no SASL exchange is running")
        step = conversation.answered(err, token)
        if step is None:
            self._sasl_done(now)
        return step

    def _sasl_done(self, now: float) -> None:
        log.debug("%s succeeded", self.conversation.describe() if self.conversation else "SASL")
        self.conversation = None
        self.outstanding -= 1
        held, self._held = self._held, None
        if held is not None:
            self._send_rest(*held, now)

    def _send_rest(self, watches: WatchRegistry[WatcherT], last_zxid: int, now: float) -> None:
        for cred in self.credentials:
            self.send_credential(cred, syncing=True)
        self._send_set_watches(watches, last_zxid, now)

    def auth_answered(self, err: int, syncing: bool) -> tuple[Credential[TokenT], TokenT | None, ServerError | None]:
        """The server's verdict on the oldest credential sent: the credential, who waited for it (None
        after its first sending), and the error (None: accepted).  A refused credential is forgotten
        (the server closes the connection after one; it is never sent again).

        Raises:
            ProtocolError: no credential was waiting for a verdict.
        """
        if not self.auth_pending:
            raise ProtocolError("auth reply but no auth request is outstanding")
        cred = self.auth_pending.pop(0)
        token, cred.token = cred.token, None
        if syncing:
            self.outstanding -= 1
        error = None
        if err:
            error = error_for_code(err)
            if isinstance(error, AuthFailedError):
                error = AuthFailedError(detail=f"the server rejected the {cred.scheme!r} credential")
            self.credentials.remove(cred)
        return cred, token, error

    def step_answered(self, err: int) -> None:
        """A SetWatches frame of the SYNCING phase was answered (with error code ``err``)."""
        if err:
            log.warning("re-registering watches failed: %s", error_for_code(err))
        self.outstanding -= 1

    def connection_lost(self) -> None:
        """Credentials not yet answered stay remembered and are sent again on the next connection; a
        SASL exchange in progress is abandoned (the next connection runs a new one)."""
        self.auth_pending.clear()
        self.outstanding = 0
        self.conversation = None
        self._held = None

    def waiting_tokens(self) -> list[TokenT]:
        """Take every token still waiting for a verdict (the session ended: none will come)."""
        tokens = []
        for cred in self.credentials:
            if cred.token is not None:
                tokens.append(cred.token)
                cred.token = None
        return tokens

    def _send_set_watches(self, watches: WatchRegistry[WatcherT], last_zxid: int, now: float) -> None:
        max_frame = self._max_frame
        tables = {kind: watches.paths(kind) for kind in WatchKind}
        if not any(tables.values()):
            return
        use_v2 = bool(tables[WatchKind.PERSISTENT] or tables[WatchKind.RECURSIVE])
        order = list(WatchKind) if use_v2 else [WatchKind.DATA, WatchKind.EXIST, WatchKind.CHILD]
        batch: dict[WatchKind, list[str]] = {k: [] for k in order}
        size = 0

        def flush() -> None:
            nonlocal size
            paths = (tuple(batch[k]) for k in order)
            rec: Record = SetWatches2(last_zxid, *paths) if use_v2 else SetWatches(last_zxid, *paths)
            op = OpCode.SET_WATCHES2 if use_v2 else OpCode.SET_WATCHES
            self._requests.send(self._out, op, rec, None, now, max_frame)
            self.outstanding += 1
            for k in order:
                batch[k] = []
            size = 0

        # A batch fits the frame limit (the client refuses watches on paths too long for one).
        limit = min(SET_WATCHES_BATCH_BYTES, max_frame - WATCH_FRAME_OVERHEAD)
        for kind in order:
            for path in tables[kind]:
                cost = len(path.encode()) + 4
                if size and size + cost > limit:
                    flush()
                batch[kind].append(path)
                size += cost
        if size:
            flush()
