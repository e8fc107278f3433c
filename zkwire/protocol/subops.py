"""The ops that may be sub-operations of ``multi`` (14) or ``multiRead`` (22): their rows of the op table
and the lookup tables the multi records read and write them by.

The op table (:mod:`zkwire.protocol.optable`) holds a row for every op; the rows of the sub-operations
are defined here, below both it and :mod:`zkwire.protocol.multi`, so that the multi records can look
their sub-operations up without importing the table that names them as the records of multi and
multiRead (the modules import in one direction: records <- subops <- multi <- optable).
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from ..constants import OpCode
from .records import (
    CheckVersionRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    Record,
    SetDataRequest,
    SetDataResponse,
)

__all__ = [
    "SubOp",
    "OpSpec",
    "op_row",
    "derived_name",
    "SUB_OP_ROWS",
    "MULTI_WRITE_OPS",
    "MULTI_READ_OPS",
    "MULTI_REQUEST_RECORDS",
    "MULTI_RESULT_RECORDS",
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


def derived_name(op: int) -> str | None:
    """``getData`` style name of a known op code (from :class:`~zkwire.constants.OpCode`), else None."""
    try:
        name = OpCode(op).name
    except ValueError:
        return None
    head, *rest = name.lower().split("_")
    return head + "".join(p.capitalize() for p in rest)


def op_row(op: OpCode, request: type[Record] | None, reply: type[Record] | None, sub_op: SubOp | None = None) -> OpSpec:
    """The op table's row of ``op``, named after its op code."""
    name = derived_name(op)
    assert name is not None
    return OpSpec(op, name, request, reply, sub_op)


_W, _R = SubOp.WRITE, SubOp.READ

#: The op table's rows of the ops that may be sub-operations, by op code.
SUB_OP_ROWS: dict[int, OpSpec] = {
    spec.code: spec
    for spec in (
        op_row(OpCode.CREATE, CreateRequest, CreateResponse, _W),
        op_row(OpCode.DELETE, DeleteRequest, None, _W),
        op_row(OpCode.GET_DATA, GetDataRequest, GetDataResponse, _R),
        op_row(OpCode.SET_DATA, SetDataRequest, SetDataResponse, _W),
        op_row(OpCode.GET_CHILDREN, GetChildrenRequest, GetChildrenResponse, _R),
        op_row(OpCode.CHECK, CheckVersionRequest, None, _W),
        op_row(OpCode.CREATE2, CreateRequest, Create2Response, _W),
        op_row(OpCode.CREATE_CONTAINER, CreateRequest, Create2Response, _W),
        op_row(OpCode.CREATE_TTL, CreateTTLRequest, Create2Response, _W),
    )
}


def _sub_ops(kind: SubOp) -> dict[int, type[Record]]:
    out: dict[int, type[Record]] = {}
    for op, spec in SUB_OP_ROWS.items():
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
    **{op: SUB_OP_ROWS[op].reply for op in MULTI_REQUEST_RECORDS},
    OpCode.ERROR: ErrorResponse,
}
