"""Checks of the options a session is opened with, shared by :func:`~zkwire.open_client` and
:class:`~zkwire.sansio.session.SessionCore`: a bad value is an :class:`~zkwire.errors.InvalidArgumentError`
naming the option, raised before any connection is made."""

from __future__ import annotations

import math

from ..errors import InvalidArgumentError

__all__ = ["MIN_MAX_FRAME", "MAX_MAX_FRAME", "MAX_SESSION_TIMEOUT", "check_session_timeout", "check_max_frame"]

#: The session timeout travels as an int32 of milliseconds.
MAX_SESSION_TIMEOUT = ((1 << 31) - 1) / 1000
#: Smallest ``max_frame``: room for any handshake and a reply with a Stat.
MIN_MAX_FRAME = 1024
#: Largest ``max_frame`` (256 MiB): what one reply may make the client buffer.
MAX_MAX_FRAME = 1 << 28


def check_session_timeout(value: object) -> float:
    """``value`` as seconds: a finite number from 0.001 to 2147483.647 (the protocol's int32 of ms)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"session_timeout must be a number of seconds, not {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0.001 <= seconds <= MAX_SESSION_TIMEOUT:
        raise InvalidArgumentError(
            f"session_timeout must be from 0.001 to {MAX_SESSION_TIMEOUT} seconds, not {value!r}"
        )
    return seconds


def check_max_frame(value: object) -> int:
    """``value`` as a frame size limit in bytes, from :data:`MIN_MAX_FRAME` to :data:`MAX_MAX_FRAME`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"max_frame must be an int of bytes, not {type(value).__name__}")
    if not MIN_MAX_FRAME <= value <= MAX_MAX_FRAME:
        raise InvalidArgumentError(f"max_frame must be from {MIN_MAX_FRAME} to {MAX_MAX_FRAME} bytes, not {value}")
    return value
