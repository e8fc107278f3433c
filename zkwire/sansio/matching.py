"""Request matching: the requests in flight on one connection, their xids, and each reply checked
against the request it answers.

A ZooKeeper server answers a session's requests in the order it received them, so the queue is a FIFO:
a reply must carry the xid of the oldest request, and its body must be what that request's op returns
(a create's reply names the created path, a multi's has one result of the right kind per op).  A reply
that cannot answer the oldest request is a :class:`~zkwire.errors.ProtocolError`: the stream is broken.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, cast

from ..constants import OpCode
from ..errors import ProtocolError, ZKError, copy_error
from ..protocol.codec import decode_response_body, encode_request_into, op_name
from ..protocol.multi import MultiRequest, MultiResponse
from ..protocol.records import Create2Response, CreateResponse, GetDataResponse, Record
from .events import Reply, TokenT, WatcherT, WatchRequest

__all__ = ["Pending", "RequestQueue", "XID_MAX"]

#: xids count up from 1 and wrap after this (an int32 on the wire; negative ones are the server's).
XID_MAX = (1 << 31) - 1


@dataclass(slots=True)
class Pending(Generic[TokenT, WatcherT]):
    """One request awaiting its reply."""

    xid: int
    op: int
    #: None for the core's own requests (closeSession, SetWatches).
    token: TokenT | None
    path: str | None
    watch: WatchRequest[WatcherT] | None
    #: When the request was queued: once it is answered, the server has heard from us since then.
    sent: float
    #: multi / multiRead: the op code of each sub-operation, to check the reply against.
    subops: tuple[int, ...] | None = None


class RequestQueue(deque[Pending[TokenT, WatcherT]]):
    """The requests sent on the current connection and not answered yet, oldest first (a deque: the
    I/O layer's ``len`` of it is on every request's path), and the xid counter."""

    __slots__ = ("xid",)

    def __init__(self) -> None:
        super().__init__()
        #: The last xid handed out.
        self.xid = 0

    def next_xid(self) -> int:
        xid = self.xid + 1
        if xid > XID_MAX:
            xid = 1
        self.xid = xid
        return xid

    def send(
        self,
        out: bytearray,
        op: int,
        record: Record | None,
        token: TokenT | None,
        now: float,
        max_frame: int,
        path: str | None = None,
        watch: WatchRequest[WatcherT] | None = None,
    ) -> int:
        """Encode a request into ``out`` and queue it; returns its xid.  ``token`` None: the core's own."""
        xid = self.xid + 1
        if xid > XID_MAX:
            xid = 1
        encode_request_into(out, xid, op, record, max_frame)
        self.xid = xid
        pending: Pending[TokenT, WatcherT] = Pending(xid, op, token, path, watch, now)
        if type(record) is MultiRequest:
            pending.subops = tuple([sub.op for sub in record.ops])
        self.append(pending)
        return xid

    def answer(
        self, xid: int, err: int, payload: bytes | memoryview
    ) -> tuple[Pending[TokenT, WatcherT], Record | None]:
        """Take the oldest request off the queue for its reply (``xid`` and error code ``err`` from the
        reply header, ``payload`` the whole frame), with the reply's body decoded and checked (None for an
        error reply and for the core's own requests).

        The body is decoded before the request leaves the queue: if the reply is malformed, the request
        stays and fails with the connection (ConnectionLossError) when it is dropped.

        Raises:
            ProtocolError: no request is outstanding, the xid is not the oldest request's, or the body
                cannot answer it.
        """
        if not self:
            raise ProtocolError(f"reply with xid {xid} but no request is outstanding")
        p = self[0]
        if p.xid != xid:
            raise ProtocolError(f"reply xid {xid} does not match the oldest request's xid {p.xid}")
        body: Record | None = None
        if p.token is None:
            pass  # the core's own: nothing in its reply but the error code
        elif err:
            if len(payload) != 16:
                raise ProtocolError(f"error reply carries {len(payload) - 16} unexpected body bytes")
        else:
            # The decoders read any buffer; a large reply comes as a view (see FrameDecoder), which only
            # getData's data would keep: it is made bytes here.
            body = decode_response_body(p.op, cast("bytes", payload))
            if type(payload) is not bytes and type(body) is GetDataResponse and isinstance(body.data, memoryview):
                body = GetDataResponse(bytes(body.data), body.stat)
            if p.op in _CHECKED_REPLIES:
                _check_reply(p, body)
        self.popleft()
        return p, body

    def fail_all(self, error: ZKError) -> list[Reply[TokenT]]:
        """Empty the queue: a reply for each request of the I/O layer's, with a fresh copy of ``error``
        naming the request's path."""
        replies: list[Reply[TokenT]] = []
        while self:
            p = self.popleft()
            if p.token is not None:
                replies.append(Reply(p.token, 0, None, copy_error(error, p.path)))
        return replies


_CREATES = frozenset({OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL})
#: Replies whose decoded body is checked against the request (cheap, and only for these ops).
_CHECKED_REPLIES = _CREATES | {OpCode.MULTI, OpCode.MULTI_READ}


def _check_reply(p: Pending[Any, Any], body: Record | None) -> None:
    """Refuse a well-formed reply that cannot answer ``p``: a create without a path, a multi whose
    results do not correspond one to one to its ops."""
    if isinstance(body, CreateResponse | Create2Response):
        if body.path is None:
            raise ProtocolError(f"{op_name(p.op)} reply without the created path")
        return
    if not isinstance(body, MultiResponse):
        return
    subops = p.subops or ()
    results = body.results
    if len(results) != len(subops):
        raise ProtocolError(f"{op_name(p.op)} reply with {len(results)} results for {len(subops)} ops")
    for i, (sub, result) in enumerate(zip(subops, results, strict=True)):
        rtype = result.op
        if rtype == OpCode.ERROR:
            continue
        # 3.8.0 answers create2 with a create result, createContainer and createTTL with create2 ones.
        if rtype != sub and not (sub in _CREATES and rtype in (OpCode.CREATE, OpCode.CREATE2)):
            raise ProtocolError(
                f"result {i} of a {op_name(p.op)} reply is a {op_name(rtype)} result for {op_name(sub)}"
            )
        if isinstance(result.body, CreateResponse | Create2Response) and result.body.path is None:
            raise ProtocolError(f"result {i} of a {op_name(p.op)} reply has no created path")
