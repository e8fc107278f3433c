"""The op table: for each op code a 3.8 server accepts from a client, its name, request record, reply
record, and whether it may be a sub-operation of ``multi`` (14) or ``multiRead`` (22).

Everything else that maps op codes to records is derived from :data:`OPS`: the codec's
:data:`REQUEST_RECORDS` and :data:`RESPONSE_RECORDS`, the multi tables :data:`MULTI_REQUEST_RECORDS`
and :data:`MULTI_RESULT_RECORDS`, and the construct schemas' op tables in :mod:`zkwire.trace.schema`
(which look each record up by its class name).
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from ..constants import OpCode
from .multi import MultiRequest, MultiResponse
from .records import (
    AddWatchRequest,
    AuthPacket,
    CheckVersionRequest,
    CheckWatchesRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    ExistsRequest,
    ExistsResponse,
    GetACLRequest,
    GetACLResponse,
    GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    GetEphemeralsRequest,
    GetEphemeralsResponse,
    GetSASLRequest,
    ReconfigRequest,
    Record,
    RemoveWatchesRequest,
    SetACLRequest,
    SetACLResponse,
    SetDataRequest,
    SetDataResponse,
    SetSASLResponse,
    SetWatches,
    SetWatches2,
    SyncRequest,
    SyncResponse,
    WhoAmIResponse,
)

__all__ = [
    "SubOp",
    "OpSpec",
    "OPS",
    "REQUEST_RECORDS",
    "RESPONSE_RECORDS",
    "MULTI_WRITE_OPS",
    "MULTI_READ_OPS",
    "MULTI_REQUEST_RECORDS",
    "MULTI_RESULT_RECORDS",
    "op_name",
]


class SubOp(Enum):
    """Which multi an op may appear in as a sub-operation."""

    WRITE = "multi"  # multi (14)
    READ = "multiRead"  # multiRead (22)


class OpSpec(NamedTuple):
    """One row of the op table."""

    code: int
    #: ``getData`` style name.
    name: str
    #: The request body (None: the request is a bare RequestHeader).
    request: type[Record] | None
    #: The body of a successful reply (None: the reply is a bare ReplyHeader).  Inside a multi
    #: reply, a sub-operation's result has the same body.
    reply: type[Record] | None
    #: The multi it may be a sub-operation of (None: neither).
    sub_op: SubOp | None = None


def _derived_name(op: int) -> str | None:
    try:
        name = OpCode(op).name
    except ValueError:
        return None
    head, *rest = name.lower().split("_")
    return head + "".join(p.capitalize() for p in rest)


def _row(op: OpCode, request: type[Record] | None, reply: type[Record] | None, sub_op: SubOp | None = None) -> OpSpec:
    name = _derived_name(op)
    assert name is not None
    return OpSpec(op, name, request, reply, sub_op)


_W, _R = SubOp.WRITE, SubOp.READ

#: Every op a 3.8 server accepts from a client, by op code.
OPS: dict[int, OpSpec] = {
    spec.code: spec
    for spec in (
        _row(OpCode.CREATE, CreateRequest, CreateResponse, _W),
        _row(OpCode.DELETE, DeleteRequest, None, _W),
        _row(OpCode.EXISTS, ExistsRequest, ExistsResponse),
        _row(OpCode.GET_DATA, GetDataRequest, GetDataResponse, _R),
        _row(OpCode.SET_DATA, SetDataRequest, SetDataResponse, _W),
        _row(OpCode.GET_ACL, GetACLRequest, GetACLResponse),
        _row(OpCode.SET_ACL, SetACLRequest, SetACLResponse),
        _row(OpCode.GET_CHILDREN, GetChildrenRequest, GetChildrenResponse, _R),
        _row(OpCode.SYNC, SyncRequest, SyncResponse),
        _row(OpCode.PING, None, None),
        _row(OpCode.GET_CHILDREN2, GetChildren2Request, GetChildren2Response),
        _row(OpCode.CHECK, CheckVersionRequest, None, _W),
        _row(OpCode.MULTI, MultiRequest, MultiResponse),
        _row(OpCode.CREATE2, CreateRequest, Create2Response, _W),
        _row(OpCode.RECONFIG, ReconfigRequest, GetDataResponse),
        _row(OpCode.CHECK_WATCHES, CheckWatchesRequest, None),
        _row(OpCode.REMOVE_WATCHES, RemoveWatchesRequest, None),
        _row(OpCode.CREATE_CONTAINER, CreateRequest, Create2Response, _W),
        _row(OpCode.CREATE_TTL, CreateTTLRequest, Create2Response, _W),
        _row(OpCode.MULTI_READ, MultiRequest, MultiResponse),
        _row(OpCode.AUTH, AuthPacket, None),
        _row(OpCode.SET_WATCHES, SetWatches, None),
        _row(OpCode.SASL, GetSASLRequest, SetSASLResponse),
        _row(OpCode.GET_EPHEMERALS, GetEphemeralsRequest, GetEphemeralsResponse),
        _row(OpCode.GET_ALL_CHILDREN_NUMBER, GetAllChildrenNumberRequest, GetAllChildrenNumberResponse),
        _row(OpCode.SET_WATCHES2, SetWatches2, None),
        _row(OpCode.ADD_WATCH, AddWatchRequest, ErrorResponse),
        _row(OpCode.WHO_AM_I, None, WhoAmIResponse),
        _row(OpCode.CLOSE_SESSION, None, None),
    )
}

#: The request record of each op (None: the op has no body).
REQUEST_RECORDS: dict[int, type[Record] | None] = {op: spec.request for op, spec in OPS.items()}
#: The body of each op's successful reply (None: the reply is a bare header).
RESPONSE_RECORDS: dict[int, type[Record] | None] = {op: spec.reply for op, spec in OPS.items()}


def _sub_ops(kind: SubOp) -> dict[int, type[Record]]:
    out: dict[int, type[Record]] = {}
    for op, spec in OPS.items():
        if spec.sub_op is kind:
            assert spec.request is not None
            out[op] = spec.request
    return out


#: Sub-operations a multi (14) may contain, and the request record of each.
MULTI_WRITE_OPS: dict[int, type[Record]] = _sub_ops(SubOp.WRITE)
#: Sub-operations a multiRead (22) may contain.
MULTI_READ_OPS: dict[int, type[Record]] = _sub_ops(SubOp.READ)
#: Sub-operations of either multi.
MULTI_REQUEST_RECORDS: dict[int, type[Record]] = {**MULTI_WRITE_OPS, **MULTI_READ_OPS}
#: Body of each result type in a MultiResponse (None: no body): a sub-operation's reply record, and
#: :class:`~zkwire.protocol.records.ErrorResponse` for an error result (type -1).
MULTI_RESULT_RECORDS: dict[int, type[Record] | None] = {
    **{op: OPS[op].reply for op in MULTI_REQUEST_RECORDS},
    OpCode.ERROR: ErrorResponse,
}


def op_name(op: int) -> str:
    """``getData`` style name of an op code, or ``op<N>`` for unknown ones."""
    spec = OPS.get(op)
    if spec is not None:
        return spec.name
    return _derived_name(op) or f"op{op}"
