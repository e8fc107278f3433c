"""The multi bodies and the op tables: which schema each op's request and reply carries (derived from
:mod:`zkwire.protocol.optable`), whole request and reply payloads, and every record schema by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from construct import (
    Container,
    IfThenElse,
    ListContainer,
    Pass,
    RepeatUntil,
    Struct,
    Switch,
    obj_,
    this,
)

from ...constants import WATCH_XID
from ...protocol.optable import MULTI_REQUEST_RECORDS, MULTI_RESULT_RECORDS, REQUEST_RECORDS, RESPONSE_RECORDS
from . import records
from .primitives import CompilableAdapter, Reject
from .records import MultiHeader, ReplyHeader, RequestHeader, WatcherEvent

__all__ = [
    "MultiRequest",
    "MultiResponse",
    "MULTI_REQUEST_SCHEMAS",
    "MULTI_RESULT_SCHEMAS",
    "RequestPayload",
    "ReplyPayload",
    "REQUEST_SCHEMAS",
    "RESPONSE_SCHEMAS",
    "RECORD_SCHEMAS",
]


# --------------------------------------------------------------------------------------------- multi


#: The record schemas by name; the multi bodies join them once defined.
_BY_NAME: dict[str, Any] = {name: getattr(records, name) for name in records.__all__}


def _by_op(table: Mapping[int, Any]) -> dict[int, Any]:
    # Plain int keys: the compiler writes the keys of Switch cases into source code with repr().
    return {int(op): sc for op, sc in table.items()}


def _schema_of(record: type[Any] | None) -> Any:
    """The schema describing the layout of a fast-codec record class: the one of the same name here."""
    return None if record is None else _BY_NAME[record.__name__]


#: Sub-operations of multi (14) and multiRead (22), and the request record of each.
MULTI_REQUEST_SCHEMAS: dict[int, Any] = _by_op({op: _schema_of(cls) for op, cls in MULTI_REQUEST_RECORDS.items()})

#: Result types of a multi response, and the body of each (Pass: no body).
MULTI_RESULT_SCHEMAS: dict[int, Any] = _by_op(
    {op: Pass if cls is None else _schema_of(cls) for op, cls in MULTI_RESULT_RECORDS.items()}
)

# One entry on the wire: a MultiHeader, then (unless it is the terminator) the body its type selects.
_MultiRequestEntry = Struct(
    "header" / MultiHeader,
    "body"
    / IfThenElse(
        this.header.done,
        Pass,
        Switch(this.header.type, MULTI_REQUEST_SCHEMAS, default=Reject(this.header.type, "multi sub-op type")),
    ),
)

_MultiResultEntry = Struct(
    "header" / MultiHeader,
    "body"
    / IfThenElse(
        this.header.done,
        Pass,
        Switch(this.header.type, MULTI_RESULT_SCHEMAS, default=Reject(this.header.type, "multi result type")),
    ),
)

_TERMINATOR = {"type": -1, "done": True, "err": -1}


class _MultiRequestAdapter(CompilableAdapter):
    """Entries up to the ``done`` header, shown as ``{"ops": [{"op", "request"}, ...]}`` like MultiRequest."""

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        ops = ListContainer(
            Container(op=e["header"]["type"], request=e["body"]) for e in obj if not e["header"]["done"]
        )
        return Container(ops=ops)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        entries: list[dict[str, Any]] = [
            {"header": {"type": op["op"], "done": False, "err": -1}, "body": op["request"]} for op in obj["ops"]
        ]
        entries.append({"header": _TERMINATOR, "body": None})
        return entries


class _MultiResponseAdapter(CompilableAdapter):
    """Entries up to the ``done`` header, shown as ``{"results": [{"op", "err", "body"}, ...]}``."""

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        results = ListContainer(
            Container(op=e["header"]["type"], err=e["header"]["err"], body=e["body"])
            for e in obj
            if not e["header"]["done"]
        )
        return Container(results=results)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        entries: list[dict[str, Any]] = [
            {"header": {"type": r["op"], "done": False, "err": r["err"]}, "body": r["body"]} for r in obj["results"]
        ]
        entries.append({"header": _TERMINATOR, "body": None})
        return entries


#: multi (14) / multiRead (22) request body: entries repeated until a header with ``done`` set.
MultiRequest = _MultiRequestAdapter(RepeatUntil(obj_.header.done, _MultiRequestEntry))
#: multi (14) / multiRead (22) response body.
MultiResponse = _MultiResponseAdapter(RepeatUntil(obj_.header.done, _MultiResultEntry))
_BY_NAME.update(MultiRequest=MultiRequest, MultiResponse=MultiResponse)

# ---------------------------------------------------------------------------------------- op tables

#: Request record of each op a 3.8 server accepts from a client (None: no body).
REQUEST_SCHEMAS: dict[int, Any] = _by_op({op: _schema_of(cls) for op, cls in REQUEST_RECORDS.items()})

#: Body of each op's successful reply (None: the reply is a bare ReplyHeader).
RESPONSE_SCHEMAS: dict[int, Any] = _by_op({op: _schema_of(cls) for op, cls in RESPONSE_RECORDS.items()})


def _cases(table: Mapping[int, Any]) -> dict[int, Any]:
    return {int(op): Pass if sc is None else sc for op, sc in table.items()}


#: A client frame after the handshake: RequestHeader, then the record its ``type`` selects.
RequestPayload = Struct(
    "header" / RequestHeader,
    "body" / Switch(this.header.type, _cases(REQUEST_SCHEMAS), default=Reject(this.header.type, "op code")),
)

#: A server frame after the handshake.  The op being answered is not on the wire: pass it as the
#: ``op`` context parameter.  xid -1 is a watch event; an error reply (err != 0) has no body.
ReplyPayload = Struct(
    "header" / ReplyHeader,
    "body"
    / IfThenElse(
        this.header.xid == WATCH_XID,
        WatcherEvent,
        IfThenElse(
            this.header.err == 0,
            Switch(this._params.op, _cases(RESPONSE_SCHEMAS), default=Reject(this._params.op, "reply to op code")),
            Pass,
        ),
    ),
)

#: Every record by the name of its class in :mod:`zkwire.protocol.records` / :mod:`zkwire.protocol.multi`.
RECORD_SCHEMAS: dict[str, Any] = _BY_NAME
