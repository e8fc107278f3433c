"""The errors of :mod:`zkwire.testing`: a backend is missing, a server would not start, a port is taken,
a server refused a request of a fixture, an ensemble's membership could not be changed."""

from __future__ import annotations

from ..errors import ZKError, error_name

__all__ = [
    "EmbeddedZooKeeperError",
    "PortInUseError",
    "ReconfigError",
    "ServerRefusedError",
    "ZooKeeperNotInstalledError",
    "ZooKeeperStartError",
]


class EmbeddedZooKeeperError(ZKError, RuntimeError):
    """Base class of the errors of ``zkwire.testing`` (the name predates the other backends); a
    ZKError, and a RuntimeError as before."""


class ZooKeeperNotInstalledError(EmbeddedZooKeeperError):
    """What a backend needs is missing: Java or the ZooKeeper jars, a Docker engine, ``ip``..."""


class ZooKeeperStartError(EmbeddedZooKeeperError):
    """A server exited or did not become ready in time. ``log_tail`` holds the end of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(f"{message}\n--- end of the server log ---\n{log_tail}" if log_tail else message)
        self.log_tail = log_tail


class PortInUseError(ZooKeeperStartError):
    """The port a server was asked to listen on (a fixed port) is taken by another socket on this host.
    ``log_tail`` holds the end of the server's log when the server itself failed to bind it."""

    def __init__(self, host: str, port: int, reason: str, log_tail: str = "") -> None:
        message = f"port {port} of {host} is in use ({reason}): stop what holds it, or choose another port"
        super().__init__(message, log_tail)
        self.host = host
        self.port = port


class ServerRefusedError(EmbeddedZooKeeperError):
    """A server answered a request made over a session opened by hand with an error: ``code`` is the
    server's error code and ``error`` its name (``NOAUTH``, ``NEWCONFIGNOQUORUM``...)."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what}: ZooKeeper error {code} ({error_name(code)})")
        self.what = what
        self.code = code
        self.error = error_name(code)


class ReconfigError(EmbeddedZooKeeperError):
    """An ensemble's membership could not be changed (:meth:`~zkwire.testing.base.ZooKeeperEnsemble.add_member`,
    :meth:`~zkwire.testing.base.ZooKeeperEnsemble.remove_member`): the backend cannot, the server refused
    the reconfiguration (``code``/``error``: the server's error, else None), or it did not take effect in
    time. ``log_tail`` holds the end of the log of the member concerned, when there is one."""

    def __init__(self, message: str, code: int | None = None, log_tail: str = "") -> None:
        super().__init__(f"{message}\n--- end of the server log ---\n{log_tail}" if log_tail else message)
        self.code = code
        self.error = None if code is None else error_name(code)
        self.log_tail = log_tail
