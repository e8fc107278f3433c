"""A declarative description of the ZooKeeper 3.8 client protocol, written with ``construct``.

This is a second, independent implementation of every jute record that :mod:`zkwire.protocol.records` and
:mod:`zkwire.protocol.multi` implement by hand.  It is meant to be read next to the protocol reference, to
check the fast codec against (the differential tests build and parse every record both ways), and
to decode captured traffic in the tracer.  It is *not* on the hot path and never calls the fast codec.
Which record each op carries is not repeated here: :data:`REQUEST_SCHEMAS` and the other op tables are
derived from :mod:`zkwire.protocol.optable`, each record class standing for the schema of its name.

Jute's null convention does not fit construct's own length-prefixed types: a length or count of -1
means *null* (distinct from empty), and ``Prefixed``/``PascalString``/``PrefixedArray`` either raise
or misread it.  So the four primitives that need it are small constructs of their own:

* :data:`ustring`: int32 length, then UTF-8; -1 is None, any other negative length is an error.
  Java servers encode each UTF-16 unit separately, so surrogate pairs encoded as two 3-byte
  sequences are accepted and joined.
* :data:`buffer`: int32 length, then raw bytes; -1 is None.
* :class:`Vector` ``(subcon)``: int32 count, then the items; -1 is None.
* :data:`boolean`: one byte, any non-zero value is true; running out of input is an error.

They, and the multi adapters, emit their own code for ``.compile()``, so compiled schemas are
compiled all the way down.  Parsed values are construct ``Container`` s; :func:`to_plain` turns
them into plain dicts and lists, and :func:`record_to_plain` does the same for the fast codec's
records, so the two can be compared.

The schema lives in four modules, every name importable from here: :mod:`~zkwire.trace.schema.primitives`,
:mod:`~zkwire.trace.schema.records` (every record), :mod:`~zkwire.trace.schema.tables` (multi, the op tables
and the payloads) and :mod:`~zkwire.trace.schema.parsing` (parse, build and plain values).

Every public helper raises :class:`~zkwire.errors.ProtocolError` when the bytes (or, for the
builders, the values) do not fit the schema.
"""

from __future__ import annotations

from .parsing import (
    build,
    build_request,
    compiled,
    parse,
    parse_connect_request,
    parse_connect_response,
    parse_event,
    parse_reply,
    parse_request,
    record_to_plain,
    to_plain,
)
from .primitives import (
    JuteError,
    Reject,
    TrailingOptional,
    Vector,
    boolean,
    buffer,
    int32,
    int64,
    ustring,
)
from .records import (
    ACL,
    AddWatchRequest,
    AuthPacket,
    CheckVersionRequest,
    CheckWatchesRequest,
    ClientInfo,
    ConnectRequest,
    ConnectResponse,
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
    Id,
    MultiHeader,
    ReconfigRequest,
    RemoveWatchesRequest,
    ReplyHeader,
    RequestHeader,
    SetACLRequest,
    SetACLResponse,
    SetDataRequest,
    SetDataResponse,
    SetSASLResponse,
    SetWatches,
    SetWatches2,
    Stat,
    SyncRequest,
    SyncResponse,
    WatcherEvent,
    WhoAmIResponse,
)
from .tables import (
    MULTI_REQUEST_SCHEMAS,
    MULTI_RESULT_SCHEMAS,
    RECORD_SCHEMAS,
    REQUEST_SCHEMAS,
    RESPONSE_SCHEMAS,
    MultiRequest,
    MultiResponse,
    ReplyPayload,
    RequestPayload,
)

__all__ = [
    # primitives
    "JuteError",
    "ustring",
    "buffer",
    "boolean",
    "int32",
    "int64",
    "Vector",
    "TrailingOptional",
    "Reject",
    # shared records and headers
    "Stat",
    "Id",
    "ACL",
    "ClientInfo",
    "RequestHeader",
    "ReplyHeader",
    "MultiHeader",
    "ConnectRequest",
    "ConnectResponse",
    # requests
    "CreateRequest",
    "CreateTTLRequest",
    "DeleteRequest",
    "ExistsRequest",
    "GetDataRequest",
    "SetDataRequest",
    "GetACLRequest",
    "SetACLRequest",
    "GetChildrenRequest",
    "GetChildren2Request",
    "SyncRequest",
    "CheckVersionRequest",
    "ReconfigRequest",
    "CheckWatchesRequest",
    "RemoveWatchesRequest",
    "AuthPacket",
    "SetWatches",
    "SetWatches2",
    "GetSASLRequest",
    "GetEphemeralsRequest",
    "GetAllChildrenNumberRequest",
    "AddWatchRequest",
    # responses
    "CreateResponse",
    "Create2Response",
    "ExistsResponse",
    "GetDataResponse",
    "SetDataResponse",
    "GetACLResponse",
    "SetACLResponse",
    "GetChildrenResponse",
    "GetChildren2Response",
    "SyncResponse",
    "SetSASLResponse",
    "GetEphemeralsResponse",
    "GetAllChildrenNumberResponse",
    "ErrorResponse",
    "WhoAmIResponse",
    "WatcherEvent",
    # multi
    "MultiRequest",
    "MultiResponse",
    "MULTI_REQUEST_SCHEMAS",
    "MULTI_RESULT_SCHEMAS",
    # whole payloads and tables
    "RequestPayload",
    "ReplyPayload",
    "REQUEST_SCHEMAS",
    "RESPONSE_SCHEMAS",
    "RECORD_SCHEMAS",
    # helpers
    "compiled",
    "parse",
    "build",
    "parse_connect_request",
    "parse_connect_response",
    "parse_request",
    "parse_reply",
    "parse_event",
    "build_request",
    "to_plain",
    "record_to_plain",
]
