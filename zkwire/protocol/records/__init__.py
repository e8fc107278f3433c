"""Every jute record of the ZooKeeper 3.8 client protocol, with a fast encoder and decoder each.

Records are immutable.  ``write(out)`` appends the record's encoding to a bytearray; the class method
``read(reader)`` decodes one from a :class:`~zkwire.protocol.jute.Reader`.  Field order and types follow the
server's record definitions exactly; field names are the snake_case forms of the server's names.

The small records that users see all the time (:class:`Stat`, :class:`Id`, :class:`ACL`, the headers)
are ``NamedTuple`` s: they are built straight from ``struct.unpack_from`` results, which keeps decoding
a reply in the low microseconds.

The records live in modules by family, and every name is importable from here:
:mod:`~zkwire.protocol.records.base` (the protocol, Stat, Id, ACL, the headers and the layouts the
families share), :mod:`~zkwire.protocol.records.connect` (the connect handshake),
:mod:`~zkwire.protocol.records.nodes` (the node operations), :mod:`~zkwire.protocol.records.watches`
(watches and their events) and :mod:`~zkwire.protocol.records.access` (ACLs, authentication and the
ensemble's configuration).
"""

from __future__ import annotations

from .access import (
    AuthPacket,
    GetACLRequest,
    GetACLResponse,
    GetSASLRequest,
    ReconfigRequest,
    SetACLRequest,
    SetACLResponse,
    SetSASLResponse,
    WhoAmIResponse,
)
from .base import (
    ACL,
    STAT_STRUCT,
    ClientInfo,
    ErrorResponse,
    Id,
    MultiHeader,
    Record,
    ReplyHeader,
    RequestHeader,
    Stat,
)
from .connect import (
    ConnectRequest,
    ConnectResponse,
)
from .nodes import (
    CheckVersionRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ExistsRequest,
    ExistsResponse,
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
    SetDataRequest,
    SetDataResponse,
    SyncRequest,
    SyncResponse,
)
from .watches import (
    AddWatchRequest,
    CheckWatchesRequest,
    RemoveWatchesRequest,
    SetWatches,
    SetWatches2,
    WatcherEvent,
)

__all__ = [
    "Record",
    "Stat",
    "Id",
    "ACL",
    "ClientInfo",
    "RequestHeader",
    "ReplyHeader",
    "MultiHeader",
    "ConnectRequest",
    "ConnectResponse",
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
    "STAT_STRUCT",
]
