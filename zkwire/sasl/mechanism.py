"""What a SASL mechanism is to the session: a factory of exchanges, one per connection.

The session core (:mod:`zkwire.sansio.sasl`) runs the conversation with the server -- which frames
carry the tokens, when the exchange starts and ends, what a refusal does to the session -- and asks a
:class:`SaslExchange` only for tokens.  A new mechanism is one class implementing these two protocols;
nothing else in the client changes.

An exchange's methods may block (GSSAPI asks a KDC for a service ticket): a mechanism says so with
:attr:`SaslMechanism.blocking`, and the trio layer then calls them in a worker thread.  They raise
:class:`~zkwire.errors.AuthFailedError` (with a ``detail`` naming the cause, never a secret) when the
client side cannot go on (a malformed challenge, an expired ticket, a server that failed to prove it
knows the password): the session ends.  They raise :class:`~zkwire.errors.ConnectionLossError` when
something they need is out of reach for now (no KDC answers): the connection is dropped and the session
tries again, as for a server out of reach.  No mechanism keeps a secret in its ``repr``.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SaslExchange", "SaslMechanism", "MAX_SASL_ROUNDS"]

#: Tokens a client sends in one exchange at most (DIGEST-MD5 sends 2, GSSAPI 3): a server asking for
#: more is refused, so a hostile one cannot keep a connection in the exchange for ever.
MAX_SASL_ROUNDS = 16


class SaslExchange(Protocol):
    """One SASL authentication on one connection."""

    def initial_response(self) -> bytes:
        """The first token the client sends (empty for mechanisms where the server speaks first, such
        as DIGEST-MD5)."""
        ...

    def evaluate(self, challenge: bytes) -> bytes | None:
        """The server's token (empty when it sent none) -> the next token to send (possibly empty), or
        None when the client has nothing more to send.

        Raises:
            AuthFailedError: the challenge cannot be answered (its ``detail`` says why).
        """
        ...

    @property
    def complete(self) -> bool:
        """The client side has finished: the server is authenticated to it where the mechanism does
        that (DIGEST-MD5's ``rspauth``, GSSAPI's mutual authentication)."""
        ...


class SaslMechanism(Protocol):
    """A SASL mechanism with its credentials: :meth:`exchange` starts one authentication."""

    #: The IANA name of the mechanism ("DIGEST-MD5", "GSSAPI").
    name: str
    #: The exchange's methods may block on I/O (a KDC): they are called off the event loop.
    blocking: bool

    def exchange(self, host: str) -> SaslExchange:
        """A new exchange with the server at ``host``, the host name (or address) the connection was
        made to, as given in the connect string."""
        ...

    def identity(self) -> str:
        """Who authenticates (a user or principal name; never a password), for messages.  (A mechanism
        may also have a ``refusal_hint`` string, added to the message when the server refuses it: the
        server gives no reason.)"""
        ...
