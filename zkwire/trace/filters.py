"""Which decoded frames are shown: by path (prefix or glob), op, session, client address, errors only,
slow replies only, pings hidden (sans I/O).

A frame passes when it passes every criterion given.  Session and client are properties of the
connection (:class:`ConnectionInfo`: the client's address, and the session id from the handshake -- the
ConnectRequest's when it re-attaches, the ConnectResponse's when the server grants one), so a session
is followed across reconnects.  Replies carry the op and path of the request they answer.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from ..constants import OpCode
from ..errors import InvalidArgumentError
from ..protocol.codec import op_name
from .frames import DecodedFrame

__all__ = ["ConnectionInfo", "FrameFilter", "parse_session_id", "parse_op", "format_session", "multi_failure"]

_GLOB = frozenset("*?[")


def parse_session_id(text: str) -> int:
    """A session id as zkwire prints it (``0x1000a2b3c0000``) or in decimal."""
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        raise InvalidArgumentError(f"not a session id: {text!r} (hex with 0x, or decimal)") from None
    if not -(1 << 63) <= value < 1 << 64:
        raise InvalidArgumentError(f"session id out of range: {text!r}")
    return value & 0xFFFFFFFFFFFFFFFF


def format_session(session: int) -> str:
    return f"0x{session & 0xFFFFFFFFFFFFFFFF:x}"


_OP_NAMES = {op_name(op).lower(): op_name(op) for op in OpCode} | {"connect": "connect"}
_OP_CODES = {op_name(op): int(op) for op in OpCode}


def parse_op(text: str) -> str:
    """An op name as the tracer prints it (``getData``; any case), or an op code number."""
    key = text.strip().lower()
    if key in _OP_NAMES:
        return _OP_NAMES[key]
    try:
        return op_name(int(key))
    except ValueError:
        known = ", ".join(sorted(set(_OP_NAMES.values())))
        raise InvalidArgumentError(f"unknown op {text!r} (one of: {known})") from None


@dataclass
class ConnectionInfo:
    """What is known of one connection: the client's address ("host:port") and its session."""

    client: str = "?"
    session: int | None = None

    def learn(self, frame: DecodedFrame) -> int | None:
        """Take the session id from a handshake frame; returns it when it is newly known."""
        if frame.kind != "connect" and frame.kind != "connect_response":
            return None
        record: Any = frame.record if isinstance(frame.record, dict) else {}
        session: int | None = None
        if frame.kind == "connect" and record.get("session_id"):
            session = int(record["session_id"]) & 0xFFFFFFFFFFFFFFFF
        elif frame.kind == "connect_response" and int(record.get("timeout", 0)) > 0:
            session = int(record.get("session_id", 0)) & 0xFFFFFFFFFFFFFFFF
        if session is None or session == self.session:
            return None
        self.session = session
        return session


def _path_matches(pattern: str, path: str) -> bool:
    if _GLOB & set(pattern):
        return fnmatch.fnmatchcase(path, pattern)
    prefix = pattern.rstrip("/")
    return not prefix or path in (pattern, prefix) or path.startswith(prefix + "/")


def _client_matches(pattern: str, client: str) -> bool:
    """``host``, ``host:port``, ``:port`` or a glob over "host:port"."""
    if _GLOB & set(pattern):
        return fnmatch.fnmatchcase(client, pattern)
    if pattern.startswith(":"):
        return client.endswith(pattern)
    host = client.rpartition(":")[0].strip("[]")
    return client == pattern or host == pattern.strip("[]")


def multi_failure(frame: DecodedFrame) -> int | None:
    """The error code of the first failed operation in a multi's reply (a failed multi comes back with
    err 0 in its header and an error result per operation), or None."""
    record = frame.record
    if frame.kind != "reply" or frame.op not in (OpCode.MULTI, OpCode.MULTI_READ) or not isinstance(record, dict):
        return None
    for result in record.get("results", ()):
        if result.get("op") == OpCode.ERROR and result.get("err") not in (0, -2):  # -2: not run (after a failure)
            return int(result["err"])
    return None


def _paths_of(frame: DecodedFrame) -> list[str]:
    """The frame's path, and those of a multi's operations."""
    paths = [frame.path] if frame.path is not None else []
    record = frame.record
    if frame.op in (OpCode.MULTI, OpCode.MULTI_READ) and isinstance(record, dict):
        for op in record.get("ops", ()):
            body = op.get("request")
            if isinstance(body, dict) and isinstance(body.get("path"), str):
                paths.append(body["path"])
    return paths


@dataclass
class FrameFilter:
    """See the module docstring.  Empty criteria accept everything."""

    paths: tuple[str, ...] = ()
    ops: frozenset[str] = frozenset()
    sessions: frozenset[int] = frozenset()
    clients: tuple[str, ...] = ()
    errors: bool = False
    slower_ms: float | None = None
    hide_pings: bool = False
    _frame_level: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self._frame_level = bool(self.paths or self.ops or self.errors or self.slower_ms is not None)

    @property
    def active(self) -> bool:
        return self._frame_level or bool(self.sessions or self.clients or self.hide_pings)

    def op_codes(self) -> frozenset[int] | None:
        """The op codes of :attr:`ops` (names as :func:`parse_op` gives them; ``connect`` has none: the
        connect records are always read), or None when frames of every op pass."""
        if not self.ops:
            return None
        codes = set()
        for name in self.ops:
            code = _OP_CODES.get(name)
            if code is None and name.startswith("op") and name[2:].lstrip("-").isdigit():  # a code, no name
                code = int(name[2:])
            if code is not None:
                codes.add(code)
        return frozenset(codes)

    def connection_passes(self, info: ConnectionInfo) -> bool:
        if self.clients and not any(_client_matches(p, info.client) for p in self.clients):
            return False
        return not self.sessions or info.session in self.sessions

    def shows_notes(self, info: ConnectionInfo) -> bool:
        """Connection notes (open, closed, resynchronised) are shown when only connections are filtered."""
        return not self._frame_level and self.connection_passes(info)

    def passes(self, frame: DecodedFrame, info: ConnectionInfo) -> bool:
        if self.hide_pings and frame.kind == "ping":
            return False
        if not self.connection_passes(info):
            return False
        if self.ops and frame.op_name not in self.ops:
            return False
        if self.paths:
            paths = _paths_of(frame)
            if not any(_path_matches(p, path) for p in self.paths for path in paths):
                return False
        if self.errors:
            failed = frame.kind == "malformed" or bool(frame.err) or multi_failure(frame) is not None
            if not failed or frame.kind == "event":
                return False
        slow_enough = frame.latency is not None and frame.latency * 1000 > (self.slower_ms or 0.0)
        return self.slower_ms is None or slow_enough
