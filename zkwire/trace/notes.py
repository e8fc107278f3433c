"""What a frame's note says of its record: a create's mode, a multi's operations and outcomes, the
watches a SetWatches re-registers, a watch event's type and state, a reconfiguration's members and the
version of an ensemble configuration a reply carries.

Text for people, made while decoding (it needs the request a reply answers); the renderers only print it.
"""

from __future__ import annotations

from typing import Any

from ..constants import CreateMode, EventType, KeeperState, OpCode
from ..errors import ZKError, error_name
from ..protocol.codec import op_name
from ..sansio.ensemble import CONFIG_PATH, parse_config
from .frames import format_zxid

__all__ = [
    "MULTI_OPS",
    "CREATES",
    "path_of",
    "multi_ops",
    "request_note",
    "event_note",
    "reply_note",
    "reconfig_request",
    "config_reply",
]

CREATES = frozenset({OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL})
MULTI_OPS = frozenset({OpCode.MULTI, OpCode.MULTI_READ})


def path_of(record: Any) -> str | None:
    if isinstance(record, dict):
        for key in ("path", "prefix_path"):
            value = record.get(key)
            if isinstance(value, str):
                return value
    return None


def _path_suffix(request: Any) -> str:
    path = path_of(request)
    return f" {path}" if path is not None else ""


def _enum_name(enum: Any, value: int) -> str:
    """``NodeDataChanged`` style name of an EventType / KeeperState value, or the number."""
    try:
        name = str(enum(value).name)
    except ValueError:
        return str(value)
    return "".join(p.capitalize() for p in name.split("_"))


#: Sub-operations of a multi named in a frame's note; the others are counted.
_LISTED = 20


def _listing(parts: list[str], total: int) -> str:
    more = total - len(parts)
    return ", ".join(parts) + (f", ... {more} more" if more > 0 else "")


def _multi_summary(results: list[dict[str, Any]], requested: tuple[str, ...] = ()) -> str:
    """Each sub-result of a multi's reply, named by the operation it answers when the request was seen:
    "FAILED: 1 of 3 ops failed: create /a ok, delete /b NONODE, setData /c not run"."""
    parts: list[str] = []
    failed = 0
    for i, r in enumerate(results):
        is_error = r["op"] == OpCode.ERROR
        if is_error and r["err"] not in (0, -2):  # -2: not run, after the one that failed
            failed += 1
        if len(parts) < _LISTED:
            what = requested[i] if i < len(requested) else None
            if is_error:
                outcome = "ok" if r["err"] == 0 else "not run" if r["err"] == -2 else error_name(r["err"])
                parts.append(f"{what or 'op'} {outcome}" if what else f"error {error_name(r['err'])}")
            else:
                created = r["body"].get("path") if isinstance(r["body"], dict) and r["op"] in CREATES else None
                shown = (
                    f"{op_name(r['op'])} {created}" if created else (what or op_name(r["op"]) + _path_suffix(r["body"]))
                )
                parts.append(shown + (" ok" if what else ""))
    head = f"FAILED: {failed} of {len(results)} ops failed" if failed else f"{len(results)} ops ok"
    return f"{head}: " + _listing(parts, len(results)) if parts else head


def _create_mode(flags: int) -> str:
    try:
        return CreateMode(flags).name.lower().replace("_", " ")
    except ValueError:
        return f"flags {flags}"


def _op_text(op: int, request: Any) -> str:
    """ "create /a (ephemeral sequential)": an operation inside a multi."""
    text = op_name(op) + _path_suffix(request)
    if op in CREATES and isinstance(request, dict) and isinstance(request.get("flags"), int):
        text += f" ({_create_mode(request['flags'])})"
    return text


def multi_ops(op: int, record: Any) -> tuple[str, ...]:
    if op not in MULTI_OPS or not isinstance(record, dict):
        return ()
    return tuple(op_name(o["op"]) + _path_suffix(o["request"]) for o in record["ops"][:_LISTED])  # those listed


def _watch_list(paths: Any) -> str:
    paths = list(paths or ())
    return f"{len(paths)} [" + _listing([str(p) for p in paths[:_LISTED]], len(paths)) + "]"


def _request_detail(op: int, record: Any) -> str | None:
    """What the one-line view says of a request beyond op and path: a create's mode (and TTL), an auth's
    scheme (never its credential), the watches a SetWatches re-registers and from which zxid."""
    if not isinstance(record, dict):
        return None
    if op in CREATES and isinstance(record.get("flags"), int):
        text = f"mode {_create_mode(record['flags'])}"
        if op == OpCode.CREATE_TTL and isinstance(record.get("ttl"), int):
            text += f", ttl {record['ttl']} ms"
        return text
    if op == OpCode.AUTH:
        return f"scheme {record.get('scheme')}"
    if op in (OpCode.SET_WATCHES, OpCode.SET_WATCHES2):
        kinds = [
            ("data", "data_watches"),
            ("exist", "exist_watches"),
            ("child", "child_watches"),
            ("persistent", "persistent_watches"),
            ("recursive", "persistent_recursive_watches"),
        ]
        listed = [f"{name} {_watch_list(record[key])}" for name, key in kinds if record.get(key)]
        zxid = record.get("relative_zxid")
        since = f" after zxid {format_zxid(zxid)}" if isinstance(zxid, int) else ""
        return f"re-registers{since}: " + ("; ".join(listed) or "nothing")
    return None


def request_note(op: int, record: Any) -> str | None:
    """The note of a request: a multi's operations, a reconfiguration's members, or :func:`_request_detail`."""
    if op in MULTI_OPS and isinstance(record, dict):
        ops = record["ops"]
        return "ops: " + _listing([_op_text(o["op"], o["request"]) for o in ops[:_LISTED]], len(ops))
    config = reconfig_request(op, record)
    if config is not None:
        return _reconfig_text(config)
    return _request_detail(op, record)


def _items(text: Any) -> list[str] | None:
    """A reconfig field (comma-separated, as sent) as its items; None when not given (null or empty)."""
    if not isinstance(text, str) or not text.strip():
        return None
    return [item.strip() for item in text.split(",") if item.strip()]


def _server_id(item: str) -> int | str:
    return int(item) if item.isascii() and item.isdigit() and len(item) <= 19 else item


def reconfig_request(op: int, record: Any) -> dict[str, Any] | None:
    """What a reconfig request asks, as plain values: ``joining`` and ``members`` (member lines),
    ``leaving`` (server ids; an item that is no id stays text), each None when not given, and
    ``from_config`` (the version it applies to; -1: any).  None for another op."""
    if op != OpCode.RECONFIG or not isinstance(record, dict):
        return None
    leaving = _items(record.get("leaving_servers"))
    version = record.get("cur_config_id")
    return {
        "joining": _items(record.get("joining_servers")),
        "leaving": None if leaving is None else [_server_id(i) for i in leaving],
        "members": _items(record.get("new_members")),
        "from_config": version if isinstance(version, int) else -1,
    }


def _reconfig_text(config: dict[str, Any]) -> str:
    """ "joining 1 [server.4=...]; leaving 1 [3]; from config 0x100000008"."""
    parts = [
        f"{name} {len(items)} [" + _listing([str(i) for i in items[:_LISTED]], len(items)) + "]"
        for name in ("joining", "leaving", "members")
        if (items := config[name]) is not None
    ]
    version = config["from_config"]
    parts.append("from any config" if version == -1 else f"from config {format_zxid(version)}")
    return "; ".join(parts)


def config_reply(op: int, path: str | None, record: Any) -> dict[str, Any] | None:
    """The ensemble configuration a reconfig reply, or a getData reply of ``/zookeeper/config``, carries:
    its ``version`` and member ``ids``.  None for another reply, or data that is not a configuration
    (the reply is then shown as any other)."""
    if op != OpCode.RECONFIG and not (op == OpCode.GET_DATA and path == CONFIG_PATH):
        return None
    data = record.get("data") if isinstance(record, dict) else None
    if not isinstance(data, bytes):
        return None
    try:
        config = parse_config(data)
    except (ZKError, ValueError):
        return None
    return {"version": config.version, "members": [m.id for m in config.members]}


def _config_text(config: dict[str, Any]) -> str:
    """ "config version 0x100000008, members 1, 2"."""
    ids = config["members"]
    if not ids and not config["version"]:
        return "config empty (a standalone server)"
    members = _listing([str(i) for i in ids[:_LISTED]], len(ids)) if ids else "none"
    return f"config version {format_zxid(config['version'])}, members {members}"


def event_note(record: Any) -> str:
    """ "NodeDataChanged SyncConnected": a watch event's type and state."""
    return f"{_enum_name(EventType, record['type'])} {_enum_name(KeeperState, record['state'])}"


def reply_note(op: int, record: Any, sub_ops: tuple[str, ...], config: dict[str, Any] | None = None) -> str | None:
    """The note of a successful reply: a multi's outcomes (``sub_ops``: what its request listed), the
    node a create made, or the ensemble configuration (``config``, from :func:`config_reply`)."""
    if config is not None:
        return _config_text(config)
    if op in MULTI_OPS and isinstance(record, dict):
        return _multi_summary(record["results"], sub_ops)
    if op in CREATES and isinstance(record, dict) and isinstance(record.get("path"), str):
        return f"created {record['path']}"
    return None
