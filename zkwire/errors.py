"""Exceptions raised by zkwire.

Three families, all under :class:`ZKError`:

* :class:`ServerError` subclasses, one per ZooKeeper error code (``NoNodeError`` for -101 and so on).
  Each carries ``code`` and, when known, the ``path`` the failed request named.  A code this module
  does not know becomes :class:`UnknownServerError`, which keeps the number.
* :class:`ProtocolError`: bytes that are not valid jute framing or records (truncated, oversize,
  negative lengths, trailing garbage where none is allowed).  The peer, not the caller, is at fault.
* :class:`InvalidInputError` subclasses: the caller asked for something that cannot be encoded
  (a malformed path, data over the frame limit, contradictory create flags).  Raised before any byte
  is written, so nothing is sent and nothing is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeVar, cast

__all__ = [
    "ZKError",
    "WatchOverflowError",
    "ProtocolError",
    "ReplyTooLargeError",
    "EnsembleConfigError",
    "InvalidInputError",
    "InvalidPathError",
    "DataTooLargeError",
    "InvalidArgumentError",
    "ServerError",
    "UnknownServerError",
    "SystemZKError",
    "RuntimeInconsistencyError",
    "DataInconsistencyError",
    "ConnectionLossError",
    "MarshallingError",
    "UnimplementedError",
    "OperationTimeoutError",
    "BadArgumentsError",
    "UnknownSessionError",
    "NewConfigNoQuorumError",
    "ReconfigInProgressError",
    "APIError",
    "NoNodeError",
    "NoAuthError",
    "BadVersionError",
    "NoChildrenForEphemeralsError",
    "NodeExistsError",
    "NotEmptyError",
    "SessionExpiredError",
    "InvalidCallbackError",
    "InvalidACLError",
    "AuthFailedError",
    "TLSError",
    "ClientCertificateRejectedError",
    "ServerCertificateError",
    "SessionMovedError",
    "NotReadOnlyError",
    "EphemeralOnLocalSessionError",
    "NoWatcherError",
    "RequestTimeoutError",
    "ReconfigDisabledError",
    "SessionClosedRequireSaslAuthError",
    "QuotaExceededError",
    "ThrottledOpError",
    "ClientClosedError",
    "error_for_code",
    "error_name",
    "copy_error",
    "ERROR_CLASSES",
]


class ZKError(Exception):
    """Base class of every exception zkwire raises on purpose."""


class ProtocolError(ZKError):
    """The byte stream is not valid ZooKeeper framing or jute encoding."""


class ReplyTooLargeError(ProtocolError):
    """A reply was longer than the client's ``max_frame``.

    The server answered (and applied the request, if it was a write), but its reply was skipped unread:
    only this request fails, the connection and the session carry on.  Raise ``max_frame`` (an
    ``open_client`` option) to read such replies, or ask for less (e.g. fewer children per node).
    """

    def __init__(self, size: int, max_frame: int, path: str | None = None) -> None:
        where = f" for {path}" if path is not None else ""
        super().__init__(f"reply of {size} bytes{where} exceeds max_frame ({max_frame} bytes)")
        self.size = size
        self.max_frame = max_frame
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.size, self.max_frame, self.path))


class EnsembleConfigError(ProtocolError):
    """A server's ``/zookeeper/config`` node does not hold a configuration this client can read (see
    :mod:`zkwire.sansio.ensemble`).  A client following its ensemble keeps the host list it has."""


class InvalidInputError(ZKError, ValueError):
    """The caller's input cannot be sent: rejected before anything was encoded."""


class InvalidPathError(InvalidInputError):
    """A znode path breaks ZooKeeper's path rules."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"Invalid path {path!r}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.reason))


class DataTooLargeError(InvalidInputError):
    """A request would exceed the maximum frame size."""


class InvalidArgumentError(InvalidInputError):
    """A flag, version, ACL or other argument is out of range or contradictory."""


#: Every ServerError subclass with a code, by its code (filled as each class is defined).
ERROR_CLASSES: dict[int, type[ServerError]] = {}


class ServerError(ZKError):
    """An error code returned by (or, for connection loss and expiry, on behalf of) the server.

    A subclass for one of the server's codes names it, with the server's name for it and a description,
    in its class statement (``class NoNodeError(ServerError, code=-101, name="NONODE", description=...)``):
    that registers it in :data:`ERROR_CLASSES`, where :func:`error_for_code` finds it.
    """

    code: int = 0
    name: ClassVar[str] = "OK"
    description: ClassVar[str] = "error"

    #: For a failed multi: each op's outcome (its result, or its error); None otherwise.
    results: list[object] | None = None

    def __init_subclass__(
        cls, *, code: int | None = None, name: str | None = None, description: str | None = None, **kwargs: object
    ) -> None:
        super().__init_subclass__(**kwargs)
        if code is None:
            return
        if name is None or description is None or code in ERROR_CLASSES:
            raise TypeError(f"{cls.__name__}: a new error code needs a name and a description ({code})")
        cls.code, cls.name, cls.description = code, name, description
        ERROR_CLASSES[code] = cls

    def __init__(self, path: str | None = None, detail: str | None = None) -> None:
        self.path = path
        self.detail = detail
        text = self.description
        if path is not None:
            text = f"{text}: {path}"
        if detail:
            text = f"{text} ({detail})"
        super().__init__(text)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.detail))


class UnknownServerError(ServerError):
    """An error code this version of zkwire does not know; ``code`` holds the number."""

    name = "UNKNOWN"
    description = "Unknown error"

    def __init__(self, code: int, path: str | None = None, detail: str | None = None) -> None:
        super().__init__(path, f"code {code}" + (f", {detail}" if detail else ""))
        self.code = code
        self.detail = detail

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.code, self.path, self.detail))


class SystemZKError(ServerError, code=-1, name="SYSTEMERROR", description="System error"):
    pass


class RuntimeInconsistencyError(
    ServerError, code=-2, name="RUNTIMEINCONSISTENCY", description="Runtime inconsistency (operation not applied)"
):
    pass


class DataInconsistencyError(ServerError, code=-3, name="DATAINCONSISTENCY", description="Data inconsistency"):
    pass


class ConnectionLossError(ServerError, code=-4, name="CONNECTIONLOSS", description="Connection lost"):
    """The connection broke before the reply arrived.

    For a write, the outcome is unknown: the server may or may not have applied it.
    """


class MarshallingError(
    ServerError, code=-5, name="MARSHALLINGERROR", description="Server could not decode the request"
):
    pass


class UnimplementedError(
    ServerError, code=-6, name="UNIMPLEMENTED", description="Operation not implemented by the server"
):
    pass


class OperationTimeoutError(ServerError, code=-7, name="OPERATIONTIMEOUT", description="Operation timed out"):
    pass


class BadArgumentsError(ServerError, code=-8, name="BADARGUMENTS", description="Bad arguments"):
    pass


class UnknownSessionError(ServerError, code=-12, name="UNKNOWNSESSION", description="Unknown session"):
    pass


class NewConfigNoQuorumError(
    ServerError, code=-13, name="NEWCONFIGNOQUORUM", description="New configuration has no quorum"
):
    pass


class ReconfigInProgressError(
    ServerError, code=-14, name="RECONFIGINPROGRESS", description="Reconfiguration in progress"
):
    pass


class APIError(ServerError, code=-100, name="APIERROR", description="API error"):
    pass


class NoNodeError(ServerError, code=-101, name="NONODE", description="Node does not exist"):
    pass


class NoAuthError(ServerError, code=-102, name="NOAUTH", description="Not authorized"):
    pass


class BadVersionError(ServerError, code=-103, name="BADVERSION", description="Version does not match"):
    pass


class NoChildrenForEphemeralsError(
    ServerError, code=-108, name="NOCHILDRENFOREPHEMERALS", description="Ephemeral nodes may not have children"
):
    pass


class NodeExistsError(ServerError, code=-110, name="NODEEXISTS", description="Node already exists"):
    pass


class NotEmptyError(ServerError, code=-111, name="NOTEMPTY", description="Node has children"):
    pass


class SessionExpiredError(ServerError, code=-112, name="SESSIONEXPIRED", description="Session expired"):
    pass


class InvalidCallbackError(ServerError, code=-113, name="INVALIDCALLBACK", description="Invalid callback"):
    pass


class InvalidACLError(ServerError, code=-114, name="INVALIDACL", description="Invalid ACL"):
    pass


class AuthFailedError(ServerError, code=-115, name="AUTHFAILED", description="Authentication failed"):
    pass


class TLSError(AuthFailedError):
    """A TLS connection failed for a reason another attempt would meet again: a certificate refused, by
    the server or by the client.  The session ends in ``AUTH_FAILED`` with it once a whole pass over
    the hosts has failed with no session and some host for such a reason (a host that is merely down
    is retried).  A subclass of :class:`AuthFailedError`: the certificates authenticate the two ends.

    The message names the cause and the host (``host``), never key material.  ``code`` is
    AuthFailedError's; no server sent it.
    """

    description = "TLS handshake failed"
    #: The server (``host:port``) whose connection failed so, when known.
    host: str | None = None

    def __init__(self, path: str | None = None, detail: str | None = None, host: str | None = None) -> None:
        super().__init__(path, detail)
        if host is not None:
            self.host = host

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.detail, self.host))


class ClientCertificateRejectedError(TLSError):
    """The server refused the client's certificate (none given where one is required, one its
    truststore does not trust, expired...): it alerted during the TLS handshake or, under TLS 1.3,
    on the first read after it."""

    description = "The server refused the client's TLS certificate"


class ServerCertificateError(TLSError):
    """The client did not accept the server's certificate (not signed by a CA it trusts, another host
    name, expired...)."""

    description = "The server's TLS certificate is not trusted"


class SessionMovedError(ServerError, code=-118, name="SESSIONMOVED", description="Session moved to another server"):
    pass


class NotReadOnlyError(ServerError, code=-119, name="NOTREADONLY", description="Server is read-only"):
    pass


class EphemeralOnLocalSessionError(
    ServerError, code=-120, name="EPHEMERALONLOCALSESSION", description="Ephemeral node on a local session"
):
    pass


class NoWatcherError(ServerError, code=-121, name="NOWATCHER", description="No such watch"):
    pass


class RequestTimeoutError(ServerError, code=-122, name="REQUESTTIMEOUT", description="Request timed out"):
    pass


class ReconfigDisabledError(ServerError, code=-123, name="RECONFIGDISABLED", description="Reconfiguration is disabled"):
    pass


class SessionClosedRequireSaslAuthError(
    ServerError,
    code=-124,
    name="SESSIONCLOSEDREQUIRESASLAUTH",
    description="Session closed: SASL authentication required",
):
    pass


class QuotaExceededError(ServerError, code=-125, name="QUOTAEXCEEDED", description="Quota exceeded"):
    pass


class ThrottledOpError(ServerError, code=-127, name="THROTTLEDOP", description="Operation throttled by the server"):
    pass


class ClientClosedError(ZKError):
    """The client was closed; no further requests can be made on it."""


def error_name(code: int) -> str:
    """The server's name for an error code (``NONODE``), or ``UNKNOWN(<code>)``."""
    if code == 0:
        return "OK"
    cls = ERROR_CLASSES.get(code)
    return cls.name if cls is not None else f"UNKNOWN({code})"


def error_for_code(code: int, path: str | None = None) -> ServerError:
    """The exception for a non-zero server error code; unknown codes keep their number."""
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return UnknownServerError(code, path)
    return cls(path)


E = TypeVar("E", bound=BaseException)


def copy_error(error: E, path: str | None = None) -> E:
    """A fresh exception equal to ``error``, for one more task to raise (an exception object must not be
    raised by two tasks: each raise adds to its traceback).

    The copy is built from the arguments ``error`` would be pickled with, so it keeps every detail its
    class takes (an unknown server error's code, an authentication failure's reason, an oversized reply's
    size), then gets the attributes set on ``error`` after it was made (a failed multi's ``results``,
    notes).  Its traceback, cause and context start empty.  ``path``: for a
    :class:`ServerError`, the path of the request the copy fails (the message names it); None keeps
    ``error``'s.
    """
    if path is not None and isinstance(error, ServerError) and path != error.path:
        if isinstance(error, UnknownServerError):
            fresh: BaseException = UnknownServerError(error.code, path, error.detail)
        else:
            fresh = type(error)(path, error.detail)
    else:
        reduced = error.__reduce__()
        assert not isinstance(reduced, str)  # only for module-level singletons, never an exception
        rebuild = cast("Callable[..., BaseException]", reduced[0])
        fresh = rebuild(*cast("tuple[object, ...]", reduced[1]))
    state = vars(fresh)
    for key, value in vars(error).items():
        if key not in state:
            state[key] = list(value) if key == "__notes__" else value
    return cast("E", fresh)


class WatchOverflowError(ZKError):
    """A persistent watch's consumer fell too far behind; events after the buffered ones were dropped."""
