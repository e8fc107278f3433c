"""What a path of the coordination toolbox holds, for ``zklock status`` (locks are :mod:`zklock.status`'s).

Recognised by their layout, whoever wrote them (zklock, kazoo, Curator):

* a locking queue (``entries`` and ``taken``): the items by priority, and which are taken by whom;
* a partitioner (``party`` and ``locks``): the members and each partition's owner;
* a timed lease (``lease_holder``): the holder and the end, and whether it has passed;
* a party (``<uuid hex>__party__``) or a shallow party (``<uuid hex>-<identifier>``): the members;
* a queue (``entry-<priority>-<seq>`` or ``qn-<seq>``): the items by priority;
* a double barrier (a ``ready`` node and member nodes): the members and whether they were released;
* service discovery: a base path (services holding instances) or one service (instances): the
  instances;
* a counter (no children but witnesses, data that reads as one of the counter layouts): the value in
  each layout that fits.
"""

from __future__ import annotations

import datetime
import json
import re
import struct
from dataclasses import dataclass, field

from zkwire import Client, NoNodeError

from .barrier import READY
from .discovery import InstanceDataError, ServiceInstance
from .group import PARTY_MARKER
from .status import lock_status
from .timedlease import LEASE_HOLDER
from .witness import WITNESS_PREFIX
from .workqueue import WITNESS_DIRECTORY

__all__ = ["ToolboxStatus", "toolbox_status"]

_ITEM = re.compile(r"^(?:entry-(\d{3})-|qn-)(\d{10})$")
_SHALLOW = re.compile(r"^[0-9a-f]{32}-(.+)$")
_MEMBER = re.compile(r"^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
#: Instances read at most to tell a discovery path (a status is a look, not a dump).
_SAMPLE = 50


@dataclass
class ToolboxStatus:
    """A toolbox path as ``zklock status`` shows it: the recipe, lines of text, and the JSON object."""

    path: str
    recipe: str
    lines: list[str] = field(default_factory=list)
    details: dict[str, object] = field(default_factory=dict)

    def json(self) -> dict[str, object]:
        return {"path": self.path, "state": "toolbox", "recipe": self.recipe, **self.details}


async def _children(client: Client, path: str) -> list[str]:
    try:
        return sorted(await client.get_children(path))
    except NoNodeError:
        return []


async def _data(client: Client, path: str) -> bytes | None:
    try:
        data, _ = await client.get_data(path)
    except NoNodeError:
        return None
    return data


def _items(names: list[str]) -> tuple[str, dict[str, int]] | None:
    """(layout, items per priority) if every name is a queue item."""
    matches = [_ITEM.match(n) for n in names]
    if not names or not all(matches):
        return None
    per: dict[str, int] = {}
    for m in matches:
        assert m is not None
        key = m.group(1) or "-"
        per[key] = per.get(key, 0) + 1
    return ("kazoo" if any(m and m.group(1) for m in matches) else "curator"), per


async def toolbox_status(client: Client, path: str) -> ToolboxStatus | None:
    """The toolbox recipe at ``path``, or None if its layout is none of them."""
    names = [n for n in await _children(client, path) if not n.startswith(WITNESS_PREFIX) and n != WITNESS_DIRECTORY]
    base = path.rstrip("/")
    if {"entries", "taken"} <= set(names):
        return await _locking_queue(client, path)
    if {"party", "locks"} <= set(names):
        return await _partitioner(client, path)
    if LEASE_HOLDER in names:
        return await _timed_lease(client, path)
    if names and all(PARTY_MARKER in n for n in names):
        members = sorted([(await _data(client, f"{base}/{n}") or b"").decode("utf-8", "replace") for n in names])
        return ToolboxStatus(
            path, "party", [f"{path}: party of {len(members)}: {', '.join(members)}"], {"members": members}
        )
    if names and all(_SHALLOW.match(n) for n in names):
        members = sorted(n[33:] for n in names)
        return ToolboxStatus(
            path,
            "shallow party",
            [f"{path}: shallow party of {len(members)}: {', '.join(members)}"],
            {"members": members},
        )
    items = _items(names)
    if items is not None:
        layout, per = items
        shown = ", ".join(f"priority {p}: {n}" for p, n in sorted(per.items())) if layout == "kazoo" else ""
        line = f"{path}: queue ({layout} layout), {len(names)} items" + (f" ({shown})" if shown else "")
        return ToolboxStatus(path, "queue", [line], {"layout": layout, "items": len(names), "by_priority": per})
    members = [n for n in names if n != READY]
    if members and all(_MEMBER.match(n) for n in members) and (READY in names or await _data(client, path) == b""):
        released = READY in names
        line = f"{path}: double barrier, {len(members)} members {'released' if released else 'waiting to enter'}"
        return ToolboxStatus(path, "double barrier", [line], {"members": len(members), "released": released})
    found = await _discovery(client, path, names)
    if found is not None:
        return found
    if not names:
        return await _counter(client, path)
    return None


async def _locking_queue(client: Client, path: str) -> ToolboxStatus:
    base = path.rstrip("/")
    entries = await _children(client, f"{base}/entries")
    taken = await _children(client, f"{base}/taken")
    by: dict[str, str] = {}
    for name in taken:
        data = await _data(client, f"{base}/taken/{name}")
        if data is not None:
            by[name] = data.decode("utf-8", "replace")
    lines = [f"{path}: locking queue, {len(entries)} items, {len(by)} taken"]
    lines += [f"  {name} taken by consumer {consumer}" for name, consumer in sorted(by.items())]
    return ToolboxStatus(path, "locking queue", lines, {"items": len(entries), "taken": by})


async def _partitioner(client: Client, path: str) -> ToolboxStatus:
    base = path.rstrip("/")
    members = sorted(n[n.find("-") + 1 :] for n in await _children(client, f"{base}/party") if "-" in n)
    owners: dict[str, str | None] = {}
    for partition in await _children(client, f"{base}/locks"):
        status = await lock_status(client, f"{base}/locks/{partition}")
        owners[partition] = status.holders[0].identifier if status.holders else None
    lines = [f"{path}: partitioner, {len(members)} members: {', '.join(members)}"]
    lines += [f"  partition {p}: {o or 'free'}" for p, o in sorted(owners.items())]
    return ToolboxStatus(path, "partitioner", lines, {"members": members, "owners": owners})


async def _timed_lease(client: Client, path: str) -> ToolboxStatus:
    raw = await _data(client, f"{path.rstrip('/')}/{LEASE_HOLDER}")
    try:
        holder = json.loads((raw or b"").decode("utf-8"))
        end = datetime.datetime.strptime(holder["end"], "%Y-%m-%dT%H:%M:%S")
        who = str(holder["holder"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return ToolboxStatus(path, "timed lease", [f"{path}: timed lease, holder not readable"], {"holder": None})
    passed = end < datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    line = f"{path}: timed lease held by {who} until {end.isoformat()} UTC{' (passed)' if passed else ''}"
    return ToolboxStatus(path, "timed lease", [line], {"holder": who, "end": end.isoformat(), "passed": passed})


async def _instances(client: Client, service: str, ids: list[str]) -> list[ServiceInstance] | None:
    out = []
    for instance_id in ids[:_SAMPLE]:
        data = await _data(client, f"{service}/{instance_id}")
        if data is None:
            continue
        try:
            out.append(ServiceInstance.from_json(data))
        except InstanceDataError:
            return None
    return out


def _instance_line(i: ServiceInstance) -> str:
    where = f"{i.address}:{i.port}" if i.port is not None else str(i.address)
    return f"  {i.name}/{i.id} at {where} ({i.service_type.lower()}{'' if i.enabled else ', disabled'})"


async def _discovery(client: Client, path: str, names: list[str]) -> ToolboxStatus | None:
    if not names:
        return None
    base = path.rstrip("/")
    own = await _instances(client, base, names)
    if own:
        lines = [f"{path}: service with {len(names)} instances"] + [_instance_line(i) for i in own]
        return ToolboxStatus(path, "service", lines, {"instances": [i.id for i in own]})
    services: dict[str, list[ServiceInstance]] = {}
    for name in names[:_SAMPLE]:
        ids = await _children(client, f"{base}/{name}")
        found = await _instances(client, f"{base}/{name}", ids) if ids else []
        if found is None:
            return None
        services[name] = found
    if not any(services.values()):
        return None
    lines = [f"{path}: service discovery, {len(services)} services"]
    for instances in services.values():
        lines += [_instance_line(i) for i in instances]
    return ToolboxStatus(path, "services", lines, {"services": {n: [i.id for i in v] for n, v in services.items()}})


async def _counter(client: Client, path: str) -> ToolboxStatus | None:
    try:
        data, stat = await client.get_data(path)
    except NoNodeError:
        return None
    values: dict[str, int | float] = {}
    if len(data) == 4:
        values["int32"] = struct.unpack(">i", data)[0]
    elif len(data) == 8:
        values["int64"] = struct.unpack(">q", data)[0]
    else:
        try:
            text = data.decode("ascii")
            values["text"] = int(text) if re.fullmatch(r"-?\d+", text) else float(text)
        except (UnicodeDecodeError, ValueError):
            return None
    if stat.ephemeral_owner:
        return None
    shown = ", ".join(f"{value} ({layout})" for layout, value in values.items())
    return ToolboxStatus(path, "counter", [f"{path}: counter, {shown}, version {stat.version}"], {"values": values})
