"""Znode path rules, checked before anything is encoded, and the chroot: prefixing, stripping, and the
hint a chrooted client's NoNode error carries.

The rules are the server's: a path starts with "/", has no empty component, does not end with "/"
(except "/" itself, or a sequential create's parent prefix), has no "." or ".." component, and
contains none of NUL, U+0001-U+001F, U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF.
"""

from __future__ import annotations

import re

from ..constants import OpCode
from ..errors import InvalidPathError, NoNodeError, ZKError

__all__ = [
    "path_at_depth",
    "validate_path",
    "join_chroot",
    "strip_chroot",
    "validate_chroot",
    "parent_path",
    "chroot_hint",
    "with_chroot_hint",
]

# The server checks UTF-16 units, so characters outside the BMP (sent as surrogate pairs) are rejected too.
_FORBIDDEN = re.compile("[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff\U00010000-\U0010ffff]")


#: Paths found valid lately (applications use a few paths over and over): checked once, not on every
#: request.  Emptied when it reaches :data:`_KNOWN_VALID_MAX` entries.
_known_valid: set[str] = set()
_KNOWN_VALID_MAX = 4096


def validate_path(path: object, *, sequential: bool = False) -> str:
    """Return ``path`` if it is a valid znode path, else raise :class:`InvalidPathError`.

    With ``sequential=True`` a trailing "/" is allowed, since the server appends the sequence number.
    """
    if type(path) is str and path in _known_valid:
        return path
    checked = _check_path(path, sequential)
    if not sequential:
        if len(_known_valid) >= _KNOWN_VALID_MAX:
            _known_valid.clear()
        _known_valid.add(checked)
    return checked


def _check_path(path: object, sequential: bool) -> str:
    if not isinstance(path, str):
        raise InvalidPathError(path, f"must be a str, not {type(path).__name__}")
    if not path:
        raise InvalidPathError(path, "must not be empty")
    if path[0] != "/":
        raise InvalidPathError(path, 'must start with "/"')
    if path == "/":
        return path
    # The server validates a sequential path after appending the counter, so "/a/" and "/a/." are fine.
    check = path + "0" if sequential else path
    if check.endswith("/"):
        raise InvalidPathError(path, 'must not end with "/"')
    m = _FORBIDDEN.search(check)
    if m is not None:
        raise InvalidPathError(path, f"contains forbidden character U+{ord(m.group()):04X}")
    for part in check[1:].split("/"):
        if part == "":
            raise InvalidPathError(path, "has an empty component")
        if part in (".", ".."):
            raise InvalidPathError(path, f'has a "{part}" component')
    return path


def validate_chroot(chroot: str) -> str:
    """A chroot is a valid path other than "/"; "/" (or empty) means no chroot and gives ""."""
    if chroot in ("", "/"):
        return ""
    return validate_path(chroot)


def join_chroot(chroot: str, path: str) -> str:
    """The server-side path for a client path under ``chroot`` ("" for none)."""
    if not chroot:
        return path
    if path == "/":
        return chroot
    return chroot + path


def strip_chroot(chroot: str, server_path: str) -> str:
    """The client-side path for a server path; paths outside the chroot are returned unchanged."""
    if not chroot:
        return server_path
    if server_path == chroot:
        return "/"
    if server_path.startswith(chroot) and server_path[len(chroot)] == "/":
        return server_path[len(chroot) :]
    return server_path


def parent_path(path: str) -> str:
    """The parent of a valid path (``"/"`` for ``"/"`` and its children)."""
    return path.rsplit("/", 1)[0] or "/"


#: The create ops: a create whose parent is missing fails with NoNode.
_CREATES = frozenset((OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL))


def chroot_hint(chroot: str, op: int, path: str | None) -> str | None:
    """What a NoNode error of a chrooted client should add to its message (no round trip needed).

    A create whose parent is the chroot, or any request on the chroot itself (client path ``"/"``),
    fails with NoNode only when the chroot does not exist: the hint says so.  Any other NoNode names the
    server-side path, so the chroot is never hidden.
    """
    if not chroot or path is None:
        return None
    if path == "/" or (op in _CREATES and parent_path(path) == "/"):
        return f"the chroot {chroot} does not exist; create it with ensure_path('/')"
    return f"server path {chroot}{path}, under the chroot {chroot}"


def with_chroot_hint(error: ZKError, chroot: str, op: int) -> ZKError:
    """``error`` itself, or for a NoNode error a copy whose message carries :func:`chroot_hint`."""
    if type(error) is not NoNodeError or error.detail:
        return error
    hint = chroot_hint(chroot, op, error.path)
    if hint is None:
        return error
    return NoNodeError(error.path, hint)


def path_at_depth(path: str, depth: int | None) -> str:
    """``path`` cut to its first ``depth`` components ("/a/b/c" at depth 2 is "/a/b"); None: whole.
    The tracer's ``--depth`` and the OpenTelemetry adapter's ``path_depth`` both cut paths this way."""
    if depth is None:
        return path
    parts = [p for p in path.split("/") if p]
    return "/" + "/".join(parts[:depth])
