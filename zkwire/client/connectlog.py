"""Rate-limited reporting of failed connection attempts.

While no server can be reached the client tries again several times a second; each attempt is logged at
DEBUG on ``zkwire.client``.  A WARNING summary is logged once the outage has lasted
:data:`FIRST_SUMMARY_AFTER` seconds (and every host of the connect string has failed), then at most once
per :data:`SUMMARY_INTERVAL` seconds while it lasts, and an INFO line when a connection is made again
after a warning.  (Short outages -- a server restart, a failover -- leave only DEBUG lines; a program
that must report an unreachable server sooner bounds its wait and says so itself.)
"""

from __future__ import annotations

import logging
import time

__all__ = ["ConnectFailureLog", "FIRST_SUMMARY_AFTER", "SUMMARY_INTERVAL"]

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
