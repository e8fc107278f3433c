"""The session's side of a SASL exchange: one :class:`SaslConversation` per connection.

Where it runs (observed on 3.8.0; protocol-notes/sasl.md): after the ConnectResponse, before any
AuthPacket, SetWatches, ping or request -- a server that requires SASL answers anything else from an
unauthenticated connection with error -124 and closes it.  Each token goes out as a ``sasl`` request
(op 102, ``GetSASLRequest``) with an ordinary xid; the server answers it at once with the same xid and
its own token (``SetSASLResponse``), or with an error code (-115 AUTHFAILED, or -124 where SASL is
required) after which it closes the connection.  The exchange is redone on every connection: the
server ties the identity to the connection, not to the session.

The conversation asks the mechanism (:class:`~zkwire.sasl.mechanism.SaslExchange`) for tokens through
:class:`~zkwire.sansio.events.SaslStep` events, so a mechanism that blocks runs off the event loop; the
rules it enforces:

* a server error ends the exchange with :class:`~zkwire.errors.AuthFailedError` naming the mechanism,
  the identity and the server's code (never a token);
* the exchange is over when the server answers while the mechanism is complete, or when the mechanism
  has nothing more to send -- which it may only have once complete;
* at most :data:`~zkwire.sasl.mechanism.MAX_SASL_ROUNDS` tokens are sent (a server that keeps
  challenging is refused).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ..errors import AuthFailedError, error_for_code
from ..sasl.mechanism import MAX_SASL_ROUNDS, SaslExchange, SaslMechanism
from .events import SaslStep

__all__ = ["SaslConversation"]


class SaslConversation:
    """One SASL exchange on one connection, from the session's side (see the module)."""

    __slots__ = ("_exchange", "_pending_step", "host", "mechanism", "rounds")

    def __init__(self, mechanism: SaslMechanism, host: str) -> None:
        self.mechanism = mechanism
        self.host = host
        #: Tokens sent so far.
        self.rounds = 0
        self._exchange: SaslExchange | None = None
        #: The step whose token the conversation waits for (None: it waits for the server).
        self._pending_step: SaslStep | None = None

    def describe(self) -> str:
        return f"SASL {self.mechanism.name} authentication as {self.mechanism.identity()!r}"

    @property
    def complete(self) -> bool:
        return self._exchange is not None and self._exchange.complete

    def first_step(self) -> SaslStep:
        """The step computing the first token (the exchange itself is made there too: making it may block)."""
        return self._step(self._initial)

    def _initial(self) -> bytes:
        self._exchange = self.mechanism.exchange(self.host)
        return self._exchange.initial_response()

    def _step(self, compute: Callable[[], bytes | None]) -> SaslStep:
        step = SaslStep(compute, self.mechanism.blocking)
        self._pending_step = step
        return step

    def take(self, step: SaslStep) -> bool:
        """``step``'s result came: True if the conversation was waiting for it (else it is stale)."""
        if step is not self._pending_step:
            return False
        self._pending_step = None
        return True

    def sending(self) -> None:
        """A token is about to go out.

        Raises:
            AuthFailedError: the server has asked for more than :data:`MAX_SASL_ROUNDS` tokens.
        """
        self.rounds += 1
        if self.rounds > MAX_SASL_ROUNDS:
            raise AuthFailedError(detail=f"{self.describe()}: the server asked for more than {MAX_SASL_ROUNDS} tokens")

    def answered(self, err: int, token: bytes | None) -> SaslStep | None:
        """The server answered the last token (error code ``err``, its token): the next step, or None
        when the exchange is over.

        Raises:
            AuthFailedError: the server refused the authentication.
        """
        if err:
            refused = error_for_code(err)
            hint = getattr(self.mechanism, "refusal_hint", "")
            detail = f"the server refused {self.describe()} ({refused.name}, {err})"
            raise AuthFailedError(detail=f"{detail}: {hint}" if hint else detail)
        exchange = self._exchange
        assert exchange is not None  # a token was sent, so the exchange exists
        if exchange.complete:
            return None
        return self._step(partial(exchange.evaluate, token or b""))

    def finished_sending(self) -> None:
        """The mechanism has nothing more to send.

        Raises:
            AuthFailedError: it has not completed (the server stopped short of authenticating itself).
        """
        if not self.complete:
            raise AuthFailedError(detail=f"{self.describe()}: the mechanism stopped before it completed")
