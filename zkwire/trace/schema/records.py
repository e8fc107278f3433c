"""Every jute record of the ZooKeeper 3.8 client protocol as a construct ``Struct``, by the name of its
class in :mod:`zkwire.protocol.records`: the shared records and headers, the connect records, the
requests and the responses."""

from __future__ import annotations

from construct import (
    Struct,
)

from .primitives import TrailingOptional, Vector, boolean, buffer, int32, int64, ustring

__all__ = [
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
]


# ------------------------------------------------------------------------------------ shared records

Stat = Struct(
    "czxid" / int64,
    "mzxid" / int64,
    "ctime" / int64,
    "mtime" / int64,
    "version" / int32,
    "cversion" / int32,
    "aversion" / int32,
    "ephemeral_owner" / int64,
    "data_length" / int32,
    "num_children" / int32,
    "pzxid" / int64,
)

Id = Struct(
    "scheme" / ustring,
    "id" / ustring,
)

ACL = Struct(
    "perms" / int32,
    "id" / Id,
)

ClientInfo = Struct(
    "auth_scheme" / ustring,
    "user" / ustring,
)

RequestHeader = Struct(
    "xid" / int32,
    "type" / int32,
)

ReplyHeader = Struct(
    "xid" / int32,
    "zxid" / int64,
    "err" / int32,
)

MultiHeader = Struct(
    "type" / int32,
    "done" / boolean,
    "err" / int32,
)

# ------------------------------------------------------------------------------------------- connect

ConnectRequest = Struct(
    "protocol_version" / int32,
    "last_zxid_seen" / int64,
    "timeout" / int32,
    "session_id" / int64,
    "passwd" / buffer,
    "read_only" / TrailingOptional(boolean),
)

ConnectResponse = Struct(
    "protocol_version" / int32,
    "timeout" / int32,
    "session_id" / int64,
    "passwd" / buffer,
    "read_only" / TrailingOptional(boolean),
)

# ------------------------------------------------------------------------------------------ requests

CreateRequest = Struct(
    "path" / ustring,
    "data" / buffer,
    "acl" / Vector(ACL),
    "flags" / int32,
)

CreateTTLRequest = Struct(
    "path" / ustring,
    "data" / buffer,
    "acl" / Vector(ACL),
    "flags" / int32,
    "ttl" / int64,
)

DeleteRequest = Struct(
    "path" / ustring,
    "version" / int32,
)

CheckVersionRequest = Struct(
    "path" / ustring,
    "version" / int32,
)

ExistsRequest = Struct(
    "path" / ustring,
    "watch" / boolean,
)

GetDataRequest = Struct(
    "path" / ustring,
    "watch" / boolean,
)

GetChildrenRequest = Struct(
    "path" / ustring,
    "watch" / boolean,
)

GetChildren2Request = Struct(
    "path" / ustring,
    "watch" / boolean,
)

SetDataRequest = Struct(
    "path" / ustring,
    "data" / buffer,
    "version" / int32,
)

GetACLRequest = Struct(
    "path" / ustring,
)

SetACLRequest = Struct(
    "path" / ustring,
    "acl" / Vector(ACL),
    "version" / int32,
)

SyncRequest = Struct(
    "path" / ustring,
)

ReconfigRequest = Struct(
    "joining_servers" / ustring,
    "leaving_servers" / ustring,
    "new_members" / ustring,
    "cur_config_id" / int64,
)

CheckWatchesRequest = Struct(
    "path" / ustring,
    "type" / int32,
)

RemoveWatchesRequest = Struct(
    "path" / ustring,
    "type" / int32,
)

AuthPacket = Struct(
    "type" / int32,
    "scheme" / ustring,
    "auth" / buffer,
)

SetWatches = Struct(
    "relative_zxid" / int64,
    "data_watches" / Vector(ustring),
    "exist_watches" / Vector(ustring),
    "child_watches" / Vector(ustring),
)

SetWatches2 = Struct(
    "relative_zxid" / int64,
    "data_watches" / Vector(ustring),
    "exist_watches" / Vector(ustring),
    "child_watches" / Vector(ustring),
    "persistent_watches" / Vector(ustring),
    "persistent_recursive_watches" / Vector(ustring),
)

GetSASLRequest = Struct(
    "token" / buffer,
)

GetEphemeralsRequest = Struct(
    "prefix_path" / ustring,
)

GetAllChildrenNumberRequest = Struct(
    "path" / ustring,
)

AddWatchRequest = Struct(
    "path" / ustring,
    "mode" / int32,
)

# ----------------------------------------------------------------------------------------- responses

CreateResponse = Struct(
    "path" / ustring,
)

Create2Response = Struct(
    "path" / ustring,
    "stat" / Stat,
)

ExistsResponse = Struct(
    "stat" / Stat,
)

GetDataResponse = Struct(
    "data" / buffer,
    "stat" / Stat,
)

SetDataResponse = Struct(
    "stat" / Stat,
)

GetACLResponse = Struct(
    "acl" / Vector(ACL),
    "stat" / Stat,
)

SetACLResponse = Struct(
    "stat" / Stat,
)

GetChildrenResponse = Struct(
    "children" / Vector(ustring),
)

GetChildren2Response = Struct(
    "children" / Vector(ustring),
    "stat" / Stat,
)

SyncResponse = Struct(
    "path" / ustring,
)

SetSASLResponse = Struct(
    "token" / buffer,
)

GetEphemeralsResponse = Struct(
    "ephemerals" / Vector(ustring),
)

GetAllChildrenNumberResponse = Struct(
    "total_number" / int32,
)

ErrorResponse = Struct(
    "err" / int32,
)

WhoAmIResponse = Struct(
    "client_info" / Vector(ClientInfo),
)

WatcherEvent = Struct(
    "type" / int32,
    "state" / int32,
    "path" / ustring,
)
