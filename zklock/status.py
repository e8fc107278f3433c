"""What a lock path holds, read without taking part: ``zklock status`` and :func:`lock_status`; how the
command shows it: :func:`status_lines` and :func:`status_json`.

Every node kind of :mod:`zklock.naming` is understood, whoever wrote it (zklock, Curator, kazoo):

* a lock queue (mutex, read/write lock, kazoo Lock/ReadLock/WriteLock): an exclusive node (a mutex, a
  writer, a kazoo ``__lock__``) holds when it is first; a reader holds when no exclusive node is queued
  before it; everyone else waits;
* an election (Curator LeaderLatch, zklock Election; a kazoo Election is a kazoo Lock): the first node
  leads;
* a semaphore, Curator's layout (``locks`` and ``leases`` children) or kazoo's (bare-uuid lease nodes,
  the lease count as the path's data, the guard queue at ``<path>-__lock__``): every lease node holds a
  lease but those past ``max_leases`` when the count is known (kazoo's layout), or, when it is not
  (Curator's), the newest one if its session holds the guard (an acquirer waiting for a free lease); the
  guard's queue waits.

Children that fit none of these are *not understood*: when nothing else holds the path its state is
``"unknown"``, never ``"free"``.  A path holding both naming families gets a warning: a default peer of one
family does not see (kazoo) or cannot order (Curator) the other's nodes, so their holders may overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from zkwire import Client, NoNodeError

from .naming import (
    EXCLUSIVE_MARKERS,
    FOREIGN,
    KAZOO_LEASE,
    KAZOO_LOCK,
    KAZOO_READ,
    LATCH,
    LEASE,
    LOCK_MARKERS,
    MUTEX,
    READ,
    SHARED_MARKERS,
    WRITE,
    Contender,
    Naming,
    family_of,
    lease_contenders,
    sort_contenders,
)

__all__ = [
    "lock_status",
    "LockStatus",
    "Holder",
    "analyze_queue",
    "analyze_semaphore",
    "Analysis",
    "Entry",
    "status_lines",
    "status_json",
    "format_session_id",
]

State = Literal["free", "held", "unknown"]

#: What each marker's node is, as shown by ``zklock status``.
KIND = {
    MUTEX: "mutex",
    KAZOO_LOCK: "lock",  # kazoo's Lock, WriteLock and Election all write __lock__ nodes
    READ: "read",
    KAZOO_READ: "read",
    WRITE: "write",
    LATCH: "leader",
    LEASE: "lease",
    KAZOO_LEASE: "lease",
    FOREIGN: "lease",
}
_QUEUE_MARKERS = (*LOCK_MARKERS, LATCH, LEASE)
_SEMAPHORE_CHILDREN = ("locks", "leases")


@dataclass(frozen=True, slots=True)
class Entry:
    """One node of the analysis: where it is, what it is, and whether it holds."""

    parent: str
    name: str
    kind: str
    naming: Naming | None
    holds: bool


@dataclass
class Analysis:
    """The nodes of a lock path, before their data is read."""

    recipe: str
    entries: list[Entry] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    max_leases: int | None = None


@dataclass(frozen=True, slots=True)
class Holder:
    """A node that holds or waits: its identifier (the node's data), session and fencing token."""

    node: str
    kind: str
    naming: Naming | None
    identifier: str
    session: int
    fencing_token: int


@dataclass
class LockStatus:
    """The state of a lock path (see :func:`lock_status`)."""

    path: str
    state: State
    recipe: str
    holders: list[Holder]
    waiting: list[Holder]
    unknown: list[str]
    warnings: list[str]
    max_leases: int | None


def _entry(parent: str, c: Contender, holds: bool) -> Entry:
    return Entry(parent, c.name, KIND[c.marker], family_of(c.marker), holds)


def _mixed_warning(path: str, contenders: list[Contender]) -> list[str]:
    by_family: dict[Naming, str] = {}
    for c in contenders:
        fam = family_of(c.marker)
        if fam is not None:
            by_family.setdefault(fam, c.name)
    if len(by_family) < 2:
        return []
    return [
        f"{path} holds Curator-style nodes (e.g. {by_family['curator']}) and kazoo-style nodes (e.g. "
        f"{by_family['kazoo']}): default kazoo recipes do not see the former and Curator's cannot order the "
        "latter, so holders of the two kinds may overlap (README: interoperability)"
    ]


def analyze_queue(path: str, children: list[str]) -> Analysis:
    """A lock queue or an election: who holds, who waits, what is not understood."""
    queue = sort_contenders(children, _QUEUE_MARKERS)
    known = {c.name for c in queue}
    unknown = sorted(n for n in children if n not in known)
    latches = [c for c in queue if c.marker == LATCH]
    leases = [c for c in queue if c.marker == LEASE]
    locks = [c for c in queue if c.marker in LOCK_MARKERS]
    out = Analysis("", unknown=unknown)
    if latches and all(c.marker in (LATCH, KAZOO_LOCK) for c in locks):
        # An election: LeaderLatch / zklock nodes, and kazoo Election participants (kazoo Locks).
        election = sorted([*latches, *locks])
        out.recipe = "election"
        out.entries = [_entry(path, c, i == 0) for i, c in enumerate(election)]
        locks = []
    elif latches:
        out.recipe = "mixed"
        out.entries = [_entry(path, c, i == 0) for i, c in enumerate(latches)]
        out.warnings.append(f"{path} holds both election and lock nodes: they do not exclude each other")
    if locks:
        exclusive_seen = False
        for i, c in enumerate(locks):
            holds = i == 0 if c.marker in EXCLUSIVE_MARKERS else not exclusive_seen
            exclusive_seen = exclusive_seen or c.marker in EXCLUSIVE_MARKERS
            out.entries.append(_entry(path, c, holds))
        if not out.recipe:
            rw = any(c.marker in SHARED_MARKERS or c.marker == WRITE for c in locks)
            out.recipe = "read/write lock" if rw else "mutex"
    if leases:
        # The lease parent of a Curator-layout semaphore given directly: every lease node holds.
        out.entries += [_entry(path, c, True) for c in leases]
        out.recipe = "semaphore" if not out.recipe else "mixed"
    out.warnings += _mixed_warning(path, queue)
    return out


def analyze_semaphore(
    path: str,
    children: list[str],
    leases: list[str],
    guard_path: str,
    guard: list[str],
    max_leases: int | None,
) -> Analysis:
    """A semaphore: Curator's layout (``children`` has ``locks``/``leases``; ``leases`` lists
    ``<path>/leases``, ``guard`` lists ``<path>/locks``) or kazoo's (``leases`` are the bare-uuid children
    of ``path`` itself, ``guard`` lists ``<path>-__lock__``, ``max_leases`` is the path's data)."""
    curator_layout = any(n in _SEMAPHORE_CHILDREN for n in children)
    lease_parent = f"{path.rstrip('/')}/leases" if curator_layout else path
    out = Analysis("semaphore", max_leases=max_leases)
    held = lease_contenders(leases)
    out.entries = [_entry(lease_parent, c, True) for c in held]
    if curator_layout:
        # kazoo-layout leases beside Curator's layout: a second, separate semaphore on the same path.
        others = lease_contenders(n for n in children if n not in _SEMAPHORE_CHILDREN)
        out.entries += [_entry(path, c, True) for c in others if c.marker == KAZOO_LEASE]
        out.unknown = sorted(c.name for c in others if c.marker != KAZOO_LEASE)
        if any(c.marker == KAZOO_LEASE for c in others):
            out.warnings.append(
                f"{path} holds a Curator-layout semaphore (locks, leases) and kazoo-layout leases: they do not "
                "limit each other, and kazoo counts the locks and leases nodes as taken leases"
            )
    else:
        foreign = [c for c in held if c.marker != KAZOO_LEASE]
        if foreign:
            out.warnings.append(
                f"{path} holds kazoo-layout leases and other children ({', '.join(c.name for c in foreign)}), "
                "which kazoo counts as taken leases"
            )
    queue = sort_contenders(guard, LOCK_MARKERS)
    # The guard's queue waits for a lease (its first node is the acquirer being served now).
    out.entries += [Entry(guard_path, c.name, "lease", family_of(c.marker), False) for c in queue]
    out.warnings += _mixed_warning(guard_path, queue)
    return out


async def lock_status(client: Client, path: str) -> LockStatus:
    """Read what ``path`` holds (any recipe of zklock, Curator or kazoo) and who waits for it."""
    children = await _children(client, path)
    base = path.rstrip("/")
    analysis: Analysis
    if any(n in _SEMAPHORE_CHILDREN for n in children):
        guard_path = f"{base}/locks"
        analysis = analyze_semaphore(
            path,
            children,
            await _children(client, f"{base}/leases"),
            guard_path,
            await _children(client, guard_path),
            None,
        )
    elif children and any(c.marker == KAZOO_LEASE for c in lease_contenders(children)):
        guard_path = f"{base}-{KAZOO_LOCK}"
        try:
            data, _ = await client.get_data(path)
            max_leases: int | None = int(data.decode())
        except (NoNodeError, UnicodeDecodeError, ValueError):
            max_leases = None
        analysis = analyze_semaphore(
            path, children, children, guard_path, await _children(client, guard_path), max_leases
        )
    else:
        analysis = analyze_queue(path, children)

    holders: list[Holder] = []
    waiting: list[Holder] = []
    for entry in analysis.entries:
        try:
            data, stat = await client.get_data(f"{entry.parent}/{entry.name}")
        except NoNodeError:
            continue
        shown = entry.name if entry.parent == path else f"{entry.parent}/{entry.name}"
        holder = Holder(
            shown, entry.kind, entry.naming, data.decode("utf-8", "replace"), stat.ephemeral_owner, stat.czxid
        )
        (holders if entry.holds else waiting).append(holder)
    if analysis.recipe == "semaphore" and holders:
        holders.sort(key=lambda h: h.fencing_token)
        if analysis.max_leases is not None:
            # Lease nodes past the count are the newest: the acquirer holding the guard, still waiting.
            waiting[:0] = holders[analysis.max_leases :]
            del holders[analysis.max_leases :]
        elif waiting and waiting[0].session == holders[-1].session:
            # Count unknown (Curator's layout): the newest lease node belongs to the session that holds
            # the guard, which releases it as soon as it is granted -- so it is most likely still waiting.
            waiting.insert(0, holders.pop())
    state: State = "held" if holders else "unknown" if analysis.unknown else "free"
    return LockStatus(
        path,
        state,
        analysis.recipe if (holders or waiting) else "",
        holders,
        waiting,
        analysis.unknown,
        analysis.warnings,
        analysis.max_leases,
    )


def format_session_id(value: int) -> str:
    """A session id in hex, as ZooKeeper's shell prints it (two's complement when negative)."""
    return f"0x{value & 0xFFFFFFFFFFFFFFFF:x}"


def _entry_json(h: Holder) -> dict[str, str | int | None]:
    return {
        "node": h.node,
        "identifier": h.identifier,
        "session": format_session_id(h.session),
        "fencing_token": h.fencing_token,
        "kind": h.kind,
        "naming": h.naming,
    }


def status_json(status: LockStatus) -> dict[str, object]:
    """What ``zklock status --json`` prints (session ids in hex, as ZooKeeper's shell shows them)."""
    holders = [_entry_json(h) for h in status.holders]
    return {
        "path": status.path,
        "state": status.state,
        "recipe": status.recipe or None,
        "holder": holders[0] if holders else None,
        "holders": holders,
        "waiting": [_entry_json(h) for h in status.waiting],
        "max_leases": status.max_leases,
        "unknown": status.unknown,
        "warnings": status.warnings,
    }


def _kind(h: Holder) -> str:
    """How a node's kind is shown before its node name ("" for a mutex, the common case)."""
    if h.kind == "mutex":
        return ""
    if h.kind == "lock":
        return "kazoo lock, "
    return f"{h.kind}, "


def status_lines(status: LockStatus) -> list[str]:
    """What ``zklock status`` prints (not yet escaped for a terminal: node data is the peers' text)."""
    path = status.path
    lines: list[str] = []
    holders = status.holders
    if not holders:
        if status.state == "unknown":
            lines.append(f"{path}: unknown ({len(status.unknown)} nodes no known lock recipe wrote)")
        else:
            lines.append(f"{path}: free")
    elif len(holders) == 1:
        h = holders[0]
        lines.append(
            f"{path}: held by {h.identifier} ({_kind(h)}node {h.node}, session {format_session_id(h.session)}, "
            f"fencing token {h.fencing_token})"
        )
    else:
        leases = f", {status.max_leases} leases" if status.max_leases is not None else ""
        lines.append(f"{path}: held by {len(holders)} holders ({status.recipe}{leases})")
        for h in holders:
            lines.append(
                f"  {h.identifier} ({_kind(h)}node {h.node}, session {format_session_id(h.session)}, "
                f"fencing token {h.fencing_token})"
            )
    if holders or status.waiting:
        if status.waiting:
            lines.append(f"waiting ({len(status.waiting)}):")
            for i, h in enumerate(status.waiting, 1):
                lines.append(f"  {i}. {h.identifier} ({_kind(h)}node {h.node})")
        else:
            lines.append("waiting: none")
    if status.unknown:
        lines.append(f"not understood ({len(status.unknown)}): {', '.join(status.unknown)}")
    return lines


async def _children(client: Client, path: str) -> list[str]:
    try:
        return await client.get_children(path)
    except NoNodeError:
        return []
