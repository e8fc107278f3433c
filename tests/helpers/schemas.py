"""Builders over the construct schemas of :mod:`zkwire.trace.schema` that only the tests need."""

from __future__ import annotations

from typing import Any

from zkwire.trace.schema import ReplyPayload, build

__all__ = ["build_reply"]


def build_reply(
    op: int | None, xid: int, zxid: int, err: int = 0, body: Any = None, *, compiled: bool = False
) -> bytes:
    """ReplyHeader(xid, zxid, err) and ``body`` as one payload (no length prefix)."""
    header = {"xid": xid, "zxid": zxid, "err": err}
    return build(ReplyPayload, {"header": header, "body": body}, compiled=compiled, op=op)
