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

from typing import ClassVar

__all__ = [
    "ZKError",
    "WatchOverflowError",
    "ProtocolError",
    "ReplyTooLargeError",
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


class ServerError(ZKError):
    """An error code returned by (or, for connection loss and expiry, on behalf of) the server."""

    code: int = 0
    name: ClassVar[str] = "OK"
    description: ClassVar[str] = "error"

    #: For a failed multi: each op's outcome (its result, or its error); None otherwise.
    results: list[object] | None = None

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


class SystemZKError(ServerError):
    code, name, description = -1, "SYSTEMERROR", "System error"


class RuntimeInconsistencyError(ServerError):
    code, name, description = -2, "RUNTIMEINCONSISTENCY", "Runtime inconsistency (operation not applied)"


class DataInconsistencyError(ServerError):
    code, name, description = -3, "DATAINCONSISTENCY", "Data inconsistency"


class ConnectionLossError(ServerError):
    """The connection broke before the reply arrived.

    For a write, the outcome is unknown: the server may or may not have applied it.
    """

    code, name, description = -4, "CONNECTIONLOSS", "Connection lost"


class MarshallingError(ServerError):
    code, name, description = -5, "MARSHALLINGERROR", "Server could not decode the request"


class UnimplementedError(ServerError):
    code, name, description = -6, "UNIMPLEMENTED", "Operation not implemented by the server"


class OperationTimeoutError(ServerError):
    code, name, description = -7, "OPERATIONTIMEOUT", "Operation timed out"


class BadArgumentsError(ServerError):
    code, name, description = -8, "BADARGUMENTS", "Bad arguments"


class UnknownSessionError(ServerError):
    code, name, description = -12, "UNKNOWNSESSION", "Unknown session"


class NewConfigNoQuorumError(ServerError):
    code, name, description = -13, "NEWCONFIGNOQUORUM", "New configuration has no quorum"


class ReconfigInProgressError(ServerError):
    code, name, description = -14, "RECONFIGINPROGRESS", "Reconfiguration in progress"


class APIError(ServerError):
    code, name, description = -100, "APIERROR", "API error"


class NoNodeError(ServerError):
    code, name, description = -101, "NONODE", "Node does not exist"


class NoAuthError(ServerError):
    code, name, description = -102, "NOAUTH", "Not authorized"


class BadVersionError(ServerError):
    code, name, description = -103, "BADVERSION", "Version does not match"


class NoChildrenForEphemeralsError(ServerError):
    code, name, description = -108, "NOCHILDRENFOREPHEMERALS", "Ephemeral nodes may not have children"


class NodeExistsError(ServerError):
    code, name, description = -110, "NODEEXISTS", "Node already exists"


class NotEmptyError(ServerError):
    code, name, description = -111, "NOTEMPTY", "Node has children"


class SessionExpiredError(ServerError):
    code, name, description = -112, "SESSIONEXPIRED", "Session expired"


class InvalidCallbackError(ServerError):
    code, name, description = -113, "INVALIDCALLBACK", "Invalid callback"


class InvalidACLError(ServerError):
    code, name, description = -114, "INVALIDACL", "Invalid ACL"


class AuthFailedError(ServerError):
    code, name, description = -115, "AUTHFAILED", "Authentication failed"


class SessionMovedError(ServerError):
    code, name, description = -118, "SESSIONMOVED", "Session moved to another server"


class NotReadOnlyError(ServerError):
    code, name, description = -119, "NOTREADONLY", "Server is read-only"


class EphemeralOnLocalSessionError(ServerError):
    code, name, description = -120, "EPHEMERALONLOCALSESSION", "Ephemeral node on a local session"


class NoWatcherError(ServerError):
    code, name, description = -121, "NOWATCHER", "No such watch"


class RequestTimeoutError(ServerError):
    code, name, description = -122, "REQUESTTIMEOUT", "Request timed out"


class ReconfigDisabledError(ServerError):
    code, name, description = -123, "RECONFIGDISABLED", "Reconfiguration is disabled"


class SessionClosedRequireSaslAuthError(ServerError):
    code, name, description = -124, "SESSIONCLOSEDREQUIRESASLAUTH", "Session closed: SASL authentication required"


class QuotaExceededError(ServerError):
    code, name, description = -125, "QUOTAEXCEEDED", "Quota exceeded"


class ThrottledOpError(ServerError):
    code, name, description = -127, "THROTTLEDOP", "Operation throttled by the server"


class ClientClosedError(ZKError):
    """The client was closed; no further requests can be made on it."""


ERROR_CLASSES: dict[int, type[ServerError]] = {
    cls.code: cls
    for cls in (
        SystemZKError,
        RuntimeInconsistencyError,
        DataInconsistencyError,
        ConnectionLossError,
        MarshallingError,
        UnimplementedError,
        OperationTimeoutError,
        BadArgumentsError,
        UnknownSessionError,
        NewConfigNoQuorumError,
        ReconfigInProgressError,
        APIError,
        NoNodeError,
        NoAuthError,
        BadVersionError,
        NoChildrenForEphemeralsError,
        NodeExistsError,
        NotEmptyError,
        SessionExpiredError,
        InvalidCallbackError,
        InvalidACLError,
        AuthFailedError,
        SessionMovedError,
        NotReadOnlyError,
        EphemeralOnLocalSessionError,
        NoWatcherError,
        RequestTimeoutError,
        ReconfigDisabledError,
        SessionClosedRequireSaslAuthError,
        QuotaExceededError,
        ThrottledOpError,
    )
}


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


class WatchOverflowError(ZKError):
    """A persistent watch's consumer fell too far behind; events after the buffered ones were dropped."""
