"""The op table: for each op code a 3.8 server accepts from a client, its name, request record, reply
record, and whether it may be a sub-operation of ``multi`` (14) or ``multiRead`` (22).

Everything else that maps op codes to records is derived from these rows: the codec's
:data:`REQUEST_RECORDS` and :data:`RESPONSE_RECORDS`, the multi tables :data:`MULTI_REQUEST_RECORDS`
and :data:`MULTI_RESULT_RECORDS`, and the construct schemas' op tables in :mod:`zkwire.trace.schema`
(which look each record up by its class name).  The rows of the ops that may be sub-operations of a
multi are defined in :mod:`zkwire.protocol.subops`, with the multi tables derived from them, so that
the multi records (:mod:`zkwire.protocol.multi`, named in this table) read those tables from below
it; :data:`OPS` holds them like any other row.
"""

from __future__ import annotations

from ..constants import OpCode
from .multi import MultiRequest, MultiResponse
from .records import (
    AddWatchRequest,
    AuthPacket,
    CheckWatchesRequest,
    ErrorResponse,
    ExistsRequest,
    ExistsResponse,
    GetACLRequest,
    GetACLResponse,
    GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetDataResponse,
    GetEphemeralsRequest,
    GetEphemeralsResponse,
    GetSASLRequest,
    ReconfigRequest,
    Record,
    RemoveWatchesRequest,
    SetACLRequest,
    SetACLResponse,
    SetSASLResponse,
    SetWatches,
    SetWatches2,
    SyncRequest,
    SyncResponse,
    WhoAmIResponse,
)
from .subops import (
    MULTI_READ_OPS,
    MULTI_REQUEST_RECORDS,
    MULTI_RESULT_RECORDS,
    MULTI_WRITE_OPS,
    SUB_OP_ROWS,
    OpSpec,
    SubOp,
    derived_name,
    op_row,
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


_S = SUB_OP_ROWS  # the rows of the sub-operations (zkwire.protocol.subops)

#: Every op a 3.8 server accepts from a client, by op code.
OPS: dict[int, OpSpec] = {
    spec.code: spec
    for spec in (
        _S[OpCode.CREATE],
        _S[OpCode.DELETE],
        op_row(OpCode.EXISTS, ExistsRequest, ExistsResponse),
        _S[OpCode.GET_DATA],
        _S[OpCode.SET_DATA],
        op_row(OpCode.GET_ACL, GetACLRequest, GetACLResponse),
        op_row(OpCode.SET_ACL, SetACLRequest, SetACLResponse),
        _S[OpCode.GET_CHILDREN],
        op_row(OpCode.SYNC, SyncRequest, SyncResponse),
        op_row(OpCode.PING, None, None),
        op_row(OpCode.GET_CHILDREN2, GetChildren2Request, GetChildren2Response),
        _S[OpCode.CHECK],
        op_row(OpCode.MULTI, MultiRequest, MultiResponse),
        _S[OpCode.CREATE2],
        op_row(OpCode.RECONFIG, ReconfigRequest, GetDataResponse),
        op_row(OpCode.CHECK_WATCHES, CheckWatchesRequest, None),
        op_row(OpCode.REMOVE_WATCHES, RemoveWatchesRequest, None),
        _S[OpCode.CREATE_CONTAINER],
        _S[OpCode.CREATE_TTL],
        op_row(OpCode.MULTI_READ, MultiRequest, MultiResponse),
        op_row(OpCode.AUTH, AuthPacket, None),
        op_row(OpCode.SET_WATCHES, SetWatches, None),
        op_row(OpCode.SASL, GetSASLRequest, SetSASLResponse),
        op_row(OpCode.GET_EPHEMERALS, GetEphemeralsRequest, GetEphemeralsResponse),
        op_row(OpCode.GET_ALL_CHILDREN_NUMBER, GetAllChildrenNumberRequest, GetAllChildrenNumberResponse),
        op_row(OpCode.SET_WATCHES2, SetWatches2, None),
        op_row(OpCode.ADD_WATCH, AddWatchRequest, ErrorResponse),
        op_row(OpCode.WHO_AM_I, None, WhoAmIResponse),
        op_row(OpCode.CLOSE_SESSION, None, None),
    )
}

#: The request record of each op (None: the op has no body).
REQUEST_RECORDS: dict[int, type[Record] | None] = {op: spec.request for op, spec in OPS.items()}
#: The body of each op's successful reply (None: the reply is a bare header).
RESPONSE_RECORDS: dict[int, type[Record] | None] = {op: spec.reply for op, spec in OPS.items()}


def op_name(op: int) -> str:
    """``getData`` style name of an op code, or ``op<N>`` for unknown ones."""
    spec = OPS.get(op)
    if spec is not None:
        return spec.name
    return derived_name(op) or f"op{op}"
