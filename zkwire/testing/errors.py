"""The errors of :mod:`zkwire.testing`: a backend is missing, a server would not start, a port is taken."""

from __future__ import annotations

from ..errors import ZKError

__all__ = ["EmbeddedZooKeeperError", "PortInUseError", "ZooKeeperNotInstalledError", "ZooKeeperStartError"]


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
