"""Where the secrets of a frame are: session passwords, auth credentials, SASL tokens.

Found by the layout of the frame alone, never by decoding it, so a frame that is cut short, carries a
trailing byte or holds a length field that does not fit still has them masked.  The decoder records the
spans on each :class:`~zkwire.trace.frames.DecodedFrame`; the renderers mask them.
"""

from __future__ import annotations

from typing import Literal

from ..constants import OpCode
from ..protocol.framing import LENGTH as _INT

__all__ = [
    "SecretRole",
    "REQUEST_ROLES",
    "request_role",
    "secret_spans",
    "shifted",
    "candidate_roles",
    "secret_runs_past",
]

#: The frames that carry a secret: the connect records (the session password), an AuthPacket (its
#: credential), a SASL request or reply (the token).
SecretRole = Literal["connect_request", "connect_response", "auth", "sasl_request", "sasl_reply"]

#: Where the int32 length of the secret buffer is, by the role of the frame that carries it.
_SECRET_LENGTH_AT: dict[SecretRole, int] = {
    "connect_request": 24,
    "connect_response": 16,
    "sasl_request": 8,
    "sasl_reply": 16,
}


#: The requests that carry a secret, by op code: an AuthPacket's credential, a SASL request's token.
REQUEST_ROLES: dict[int, SecretRole] = {OpCode.AUTH: "auth", OpCode.SASL: "sasl_request"}


def request_role(payload: bytes) -> SecretRole | None:
    """ "auth" or "sasl_request" when the RequestHeader names one of those ops (else None)."""
    if len(payload) < 8:
        return None
    return REQUEST_ROLES.get(_INT.unpack_from(payload, 4)[0])


def _buffer_span(payload: bytes, at: int, exact: bool) -> tuple[tuple[int, int], ...]:
    start, end = at + 4, len(payload)
    if exact and end >= start:
        n = _INT.unpack_from(payload, at)[0]
        if -1 <= n <= end - start:
            end = start + max(n, 0)
    return ((start, end),) if end > start else ()


def secret_spans(
    role: SecretRole | None, payload: bytes, *, exact: bool, full_length: int | None = None
) -> tuple[tuple[int, int], ...]:
    """The (start, end) ranges of ``payload`` that hold a secret, found by the frame's layout alone.

    ``role`` is "connect_request", "connect_response" (the session password), "auth" (the credential of
    an AuthPacket), "sasl_request" or "sasl_reply" (the token); None has no secret.  ``payload`` may be
    only the beginning of the frame (``full_length`` is then the length its prefix announced).  With
    ``exact`` (the frame decoded) the span is the secret's bytes; otherwise it runs from where the secret
    starts to the end of ``payload``, since a length field in a frame that does not decode cannot be
    trusted.  An auth packet whose lengths do not agree with its size is masked from its scheme on.
    """
    if role is None:
        return ()
    at = _SECRET_LENGTH_AT.get(role)
    if at is not None:
        return _buffer_span(payload, at, exact)
    # AuthPacket after the RequestHeader: type int32 (8..12), scheme ustring (length at 12), auth buffer.
    # The scheme is shown only when both lengths are there and agree with the frame's size (it may have
    # bytes after the credential); otherwise a length may be wrong, or the bytes stop before they can be
    # checked, and the credential may be anywhere after the scheme's length field.
    total = len(payload) if full_length is None else full_length
    if len(payload) >= 16:
        n = _INT.unpack_from(payload, 12)[0]
        scheme_end = 16 + max(n, 0)
        if exact:
            return _buffer_span(payload, scheme_end, exact)
        if n >= -1 and scheme_end + 4 <= len(payload):
            m = _INT.unpack_from(payload, scheme_end)[0]
            if -1 <= m <= total - scheme_end - 4:
                return _buffer_span(payload, scheme_end, exact)
    return ((16, len(payload)),) if len(payload) > 16 else ()


def shifted(spans: tuple[tuple[int, int], ...], by: int) -> tuple[tuple[int, int], ...]:
    return tuple((start + by, end + by) for start, end in spans)


def candidate_roles(payload: bytes, expected: SecretRole | None) -> set[SecretRole]:
    """The roles ``payload`` may have whichever side sent it: the one expected, a connect record of either
    side when it opens with protocolVersion 0, an auth or SASL request when its op field names one."""
    roles: set[SecretRole] = {expected} if expected is not None else set()
    if payload[:4] == b"\x00\x00\x00\x00":
        roles.update(("connect_request", "connect_response"))
    role = request_role(payload)
    if role is not None:
        roles.add(role)
    return roles


def secret_runs_past(role: SecretRole, payload: bytes) -> bool:
    """Whether the secret of a frame of ``role`` does not end inside ``payload``: its length field is
    missing, or announces more bytes than are left (the frame's own length was then wrong, and the bytes
    after it may be the rest of the secret)."""
    at = _SECRET_LENGTH_AT.get(role)
    if at is None:  # auth: the scheme's length at 12, the credential's after the scheme
        if len(payload) < 16:
            return True
        n = _INT.unpack_from(payload, 12)[0]
        if n < -1 or 16 + max(n, 0) > len(payload):
            return True
        at = 16 + max(n, 0)
    if len(payload) < at + 4:
        return True
    return bool(_INT.unpack_from(payload, at)[0] > len(payload) - at - 4)
