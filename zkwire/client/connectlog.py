"""Rate-limited reporting of failed connection attempts, and which of them no retry would cure.

While no server can be reached the client tries again several times a second; each attempt is logged at
DEBUG on ``zkwire.client``.  A WARNING summary is logged once the outage has lasted
:data:`FIRST_SUMMARY_AFTER` seconds (and every host of the connect string has failed), then at most once
per :data:`SUMMARY_INTERVAL` seconds while it lasts, and an INFO line when a connection is made again
after a warning.  (Short outages -- a server restart, a failover -- leave only DEBUG lines; a program
that must report an unreachable server sooner bounds its wait and says so itself.)

:func:`tls_failure` tells a certificate refused from a server that is down: the reason handed to the
session core with the failed attempt (:meth:`~zkwire.sansio.session.SessionCore.connection_failed`),
which ends the session with it after a whole pass over the hosts.
"""

from __future__ import annotations

import logging
import ssl
import time

from ..errors import ClientCertificateRejectedError, ServerCertificateError, TLSError

__all__ = ["ConnectFailureLog", "FIRST_SUMMARY_AFTER", "SUMMARY_INTERVAL", "tls_failure"]

#: The TLS alerts a server sends about the client's certificate (OpenSSL's reason codes), with what
#: each says.  A server that requires a certificate and gets none answers ``bad certificate``
#: (ZooKeeper 3.8) or ``certificate required`` (TLS 1.3's own alert); one it does not trust,
#: ``certificate unknown`` or ``unknown CA``.
CLIENT_CERTIFICATE_ALERTS: dict[str, str] = {
    "SSLV3_ALERT_BAD_CERTIFICATE": "bad certificate: none was given, or one the server cannot use",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "certificate unknown: not signed by a CA the server trusts",
    "TLSV1_ALERT_UNKNOWN_CA": "unknown CA: not signed by a CA the server trusts",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "certificate expired",
    "SSLV3_ALERT_CERTIFICATE_REVOKED": "certificate revoked",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": "unsupported certificate",
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "certificate required: none was given",
    "TLSV1_ALERT_ACCESS_DENIED": "access denied",
}

#: Seconds of failed attempts before the first WARNING summary of an outage.
FIRST_SUMMARY_AFTER = 15.0
#: Seconds between two WARNING summaries of one outage.
SUMMARY_INTERVAL = 30.0


class ConnectFailureLog:
    """Counts consecutive failed connection attempts of one client and reports them sparingly."""

    __slots__ = ("_attempts", "_last_warning", "_log", "_since")

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._attempts = 0
        self._since = 0.0
        self._last_warning: float | None = None

    def failed(self, host: object, error: BaseException, hosts: int, now: float | None = None) -> None:
        """One attempt to reach ``host`` failed with ``error``; ``hosts`` is the connect string's size."""
        now = time.monotonic() if now is None else now
        if self._attempts == 0:
            self._since = now
        self._attempts += 1
        self._log.debug("cannot connect to %s: %s", host, error)
        if self._attempts < hosts or now - self._since < FIRST_SUMMARY_AFTER:
            return
        if self._last_warning is not None and now - self._last_warning < SUMMARY_INTERVAL:
            return
        self._last_warning = now
        self._log.warning(
            "cannot connect to any server for %.1fs (%d attempts, last to %s: %s); still trying",
            now - self._since,
            self._attempts,
            host,
            error,
        )

    def succeeded(self, host: object, now: float | None = None) -> None:
        """A connection to ``host`` was made: the outage (if any) is over."""
        now = time.monotonic() if now is None else now
        if self._last_warning is not None:
            self._log.info(
                "connected to %s after %.1fs and %d failed attempts", host, now - self._since, self._attempts
            )
        self._attempts = 0
        self._last_warning = None


def _ssl_error(error: BaseException) -> ssl.SSLError | None:
    """The :class:`ssl.SSLError` behind ``error`` (trio wraps it in BrokenResourceError), if any."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def tls_failure(error: BaseException, host: object) -> TLSError | None:
    """The typed error for a connection to ``host`` that failed with ``error`` because a certificate was
    refused -- the server's by the client (:class:`~zkwire.errors.ServerCertificateError`), or the
    client's by the server, which alerted (:class:`~zkwire.errors.ClientCertificateRejectedError`) --
    or None for any other failure (refused, reset, closed without an alert: the server may be down,
    or be no TLS server; another attempt may do).  The message names the cause and the host: what the
    verification or the alert said, never a certificate's or a key's content."""
    found = _ssl_error(error)
    if found is None:
        return None
    where = str(host)
    if isinstance(found, ssl.SSLCertVerificationError):
        said: str = found.verify_message or found.reason or "verification failed"
        return ServerCertificateError(detail=f"{where}: {said}", host=where)
    reason = found.reason or ""
    alert = CLIENT_CERTIFICATE_ALERTS.get(reason)
    if alert is not None:
        return ClientCertificateRejectedError(detail=f"{where}: the server answered {alert}", host=where)
    return None
