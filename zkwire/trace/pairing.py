"""What pairs a server's replies with the client's requests: the requests still pending by xid, the
pings in flight, and whether server bytes were skipped (then the requests answered in them are
forgotten at the next paired reply)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..constants import OpCode

__all__ = ["MAX_PENDING", "OUT_OF_BAND", "Pending", "RequestLedger"]

# Ops the server answers at once, so their replies may overtake others still in the pipeline.
OUT_OF_BAND = frozenset({OpCode.AUTH, OpCode.SASL})


@dataclass(slots=True)
class Pending:
    op: int
    path: str | None
    time: float | None
    ops: tuple[str, ...] = ()  # a multi's operations, as "create /a"


#: Requests (and pings) kept waiting for their replies: a client has far fewer in flight, so only a
#: capture without the server's side reaches it; the oldest are then forgotten (memory stays bounded).
MAX_PENDING = 1 << 16
#: How far past the highest xid seen a reply's xid may be and still answer requests lost from a capture.
_LOST_XIDS = 1024


class RequestLedger:
    """The requests and pings sent and not answered yet, in the order they were sent (at most
    :data:`MAX_PENDING` of each: past it the oldest are forgotten, and counted in ``forgotten``)."""

    __slots__ = ("complete", "forgotten", "gap", "max_xid", "pending", "pings")

    def __init__(self) -> None:
        self.pending: dict[int, Pending] = {}
        self.pings: deque[float | None] = deque(maxlen=MAX_PENDING)
        #: Requests forgotten unanswered because too many were pending.
        self.forgotten = 0
        #: The highest xid a request was sent with.
        self.max_xid = 0
        #: Server bytes were skipped: requests answered in them are dropped at the next paired reply.
        self.gap = False
        #: The client's side was followed from its handshake, none of it skipped: every reply pairs.
        self.complete = False

    def add(self, xid: int, pending: Pending) -> None:
        """A request sent with ``xid`` (one sent before with the same xid is replaced)."""
        table = self.pending
        table[xid] = pending
        if xid > self.max_xid:
            self.max_xid = xid
        if len(table) > MAX_PENDING:
            del table[next(iter(table))]
            self.forgotten += 1

    def could_have_sent(self, xid: int) -> bool:
        """Whether a request with ``xid`` may have been sent and lost from the capture: a client numbers
        its requests upwards, so its xids are positive and not far past the highest seen."""
        return 0 < xid <= self.max_xid + _LOST_XIDS

    def server_skipped(self) -> None:
        """Server bytes went by undecoded: the replies in them are lost."""
        self.gap = True
        self.pings.clear()

    def forget_in_band(self, before: int) -> None:
        """Drop the pending requests (auth and sasl aside) sent before the one with xid ``before``."""
        for xid in list(self.pending):
            if xid == before:
                return
            if self.pending[xid].op not in OUT_OF_BAND:
                del self.pending[xid]

    def oldest_in_band(self) -> int | None:
        # dicts keep insertion order: the first pending request that is not auth/sasl is the oldest.
        for xid, p in self.pending.items():
            if p.op not in OUT_OF_BAND:
                return xid
        return None
