"""Contender node names: which names zklock creates, and which names it understands.

zklock writes one of two naming families, chosen per recipe with ``naming=``:

* ``"curator"`` (the default): Apache Curator's "protected" names, ``_c_<uuid>-<marker><seq>``, with the
  markers of Curator's recipes: ``lock-`` (InterProcessMutex), ``__READ__`` / ``__WRIT__``
  (InterProcessReadWriteLock), ``lease-`` (InterProcessSemaphoreV2, under ``<path>/leases``) and
  ``latch-`` (LeaderLatch).
* ``"kazoo"``: kazoo's names, ``<uuid hex>__lock__<seq>`` (Lock, WriteLock, and Election, which is a Lock)
  and ``<uuid hex>__rlock__<seq>`` (ReadLock); a kazoo Semaphore's lease is a bare ``<uuid hex>`` node
  (not sequential) directly under the semaphore's path.

Both families carry a uuid, which lets a contender find its own node after a lost create reply.

No single name suits both peers' default parsers: Curator orders a child by what follows the *last*
occurrence of its marker (the whole name when the marker is absent), so a name must end with
``lock-<seq>`` for an InterProcessMutex to order it; kazoo's Lock only counts names that end with
``__lock__`` followed by ten digits.  Both peers therefore need their own family.  zklock itself
understands both families whatever it writes, and orders every contender by its parsed sequence number,
so zklock users of a path exclude each other whatever their namings.

Which default peers exclude which recipe (README: interoperability matrix; readers never exclude
readers; semaphores limit holders together only within one layout):

======================  =========================================  ==========================================
zklock recipe           ``naming="curator"`` excludes              ``naming="kazoo"`` excludes
======================  =========================================  ==========================================
Mutex                   Curator InterProcessMutex                  kazoo Lock, ReadLock, WriteLock, Election
ReadLock                Curator read/write lock's write side       kazoo WriteLock
WriteLock               Curator read/write lock, both sides        kazoo Lock, ReadLock, WriteLock, Election
Election                Curator LeaderLatch                        kazoo Election, Lock, WriteLock
Semaphore               Curator InterProcessSemaphoreV2            kazoo Semaphore
======================  =========================================  ==========================================

Every other pair of a zklock recipe and a default Curator or kazoo recipe does not exclude each other.

``<seq>`` is the server's sequence suffix: the parent's child-version counter (an int32) formatted as
``%010d``.  It is parsed as a *signed* number, taking what follows the last marker (a marker such as
``lock-`` ends in a dash, so the sign cannot be found by pattern alone).  After 2,147,483,647 creations
under one parent the server wraps to negative numbers and order breaks; Curator-style lock parents are
container nodes that vanish when empty, which resets the counter long before that.
"""

from __future__ import annotations

import operator
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "Naming",
    "NAMINGS",
    "check_naming",
    "Contender",
    "parse_contender",
    "sort_contenders",
    "lease_contenders",
    "new_node_prefix",
    "new_protected_prefix",
    "family_of",
    "FAMILY_MARKERS",
    "MUTEX",
    "READ",
    "WRITE",
    "LEASE",
    "LATCH",
    "KAZOO_LOCK",
    "KAZOO_READ",
    "KAZOO_LEASE",
    "FOREIGN",
    "EXCLUSIVE_MARKERS",
    "SHARED_MARKERS",
    "LOCK_MARKERS",
    "ELECTION_MARKERS",
]

#: The naming family of the nodes a recipe creates.
Naming = Literal["curator", "kazoo"]
NAMINGS: tuple[Naming, ...] = get_args(Naming)

# Curator's markers (and zklock's in the "curator" naming).
MUTEX = "lock-"
READ = "__READ__"
WRITE = "__WRIT__"
LEASE = "lease-"
LATCH = "latch-"
# kazoo's markers.
KAZOO_LOCK = "__lock__"
KAZOO_READ = "__rlock__"
#: The marker of a kazoo semaphore lease: the name is the bare uuid hex, with no sequence.
KAZOO_LEASE = ""
#: The marker given to a child of a lease parent that no known recipe wrote (it still takes a lease).
FOREIGN = "?"

#: Markers of contenders that hold a lock alone: Curator's mutex and writer, kazoo's Lock/WriteLock.
EXCLUSIVE_MARKERS = frozenset({MUTEX, WRITE, KAZOO_LOCK})
#: Markers of contenders that share a lock with each other: Curator's and kazoo's readers.
SHARED_MARKERS = frozenset({READ, KAZOO_READ})
#: Every lock-queue marker: a mutex or a writer waits for any of these queued before it, a reader for the
#: nearest exclusive one.
LOCK_MARKERS: tuple[str, ...] = (MUTEX, WRITE, READ, KAZOO_LOCK, KAZOO_READ)
#: An election's queue: Curator's LeaderLatch nodes and kazoo's Election (a kazoo Lock).
ELECTION_MARKERS: tuple[str, ...] = (LATCH, KAZOO_LOCK)

#: The markers of each naming family.
FAMILY_MARKERS: dict[Naming, frozenset[str]] = {
    "curator": frozenset({MUTEX, READ, WRITE, LEASE, LATCH}),
    "kazoo": frozenset({KAZOO_LOCK, KAZOO_READ, KAZOO_LEASE}),
}
_FAMILY: dict[str, Naming] = {m: naming for naming, markers in FAMILY_MARKERS.items() for m in markers}


def check_naming(naming: object) -> Naming:
    """``naming`` if it is one of :data:`NAMINGS`; raises ValueError otherwise."""
    if naming == "curator":
        return "curator"
    if naming == "kazoo":
        return "kazoo"
    raise ValueError(f"naming must be one of {', '.join(map(repr, NAMINGS))}, not {naming!r}")


def family_of(marker: str) -> Naming | None:
    """The naming family whose recipes write nodes with ``marker`` (None for :data:`FOREIGN`)."""
    return _FAMILY.get(marker)


_ORDER = operator.attrgetter("sequence", "name")
_UNPARSED = object()
_SEQUENCE = re.compile(r"-?\d{9,10}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_KAZOO_UUID = re.compile(r"[0-9a-fA-F]{32}")


@dataclass(frozen=True, slots=True, order=True)
class Contender:
    """One contender node, ordered by sequence number.

    ``marker`` says which recipe wrote it (one of the marker constants of this module); ``uuid`` is the
    uuid carried in its name (the Curator form with dashes, or kazoo's 32 hex digits), or None.
    """

    sequence: int
    name: str
    marker: str
    uuid: str | None


#: Parsed names per marker set; a set's table is dropped when it is full and a new name comes (so every
#: table holds at most ``_PARSED_LIMIT`` names).
_PARSED: dict[tuple[str, ...], dict[str, Contender | None]] = {}
_PARSED_LIMIT = 65536
#: The key of the lease-parent table in ``_PARSED`` (no marker set is empty).
_LEASES_KEY: tuple[str, ...] = ()


def _table(key: tuple[str, ...]) -> dict[str, Contender | None]:
    table = _PARSED.get(key)
    if table is None or len(table) >= _PARSED_LIMIT:
        table = _PARSED[key] = {}
    return table


def _parse_uncached(name: str, markers: tuple[str, ...]) -> Contender | None:
    for marker in markers:
        at = name.rfind(marker)
        if at == -1:
            continue
        rest = name[at + len(marker) :]
        if _SEQUENCE.fullmatch(rest) is None or len(rest) < 10:
            continue
        head = name[:at]
        ident: str | None = None
        if head.startswith("_c_") and _UUID.fullmatch(head[3:39]) and head[39:] == "-":
            ident = head[3:39]
        elif _KAZOO_UUID.fullmatch(head):
            ident = head.lower()
        return Contender(int(rest), name, marker, ident)
    return None


def _parse_lease(name: str) -> Contender:
    parsed = _parse_uncached(name, (LEASE,))
    if parsed is not None:
        return parsed
    if _KAZOO_UUID.fullmatch(name):
        return Contender(0, name, KAZOO_LEASE, name.lower())
    return Contender(0, name, FOREIGN, None)


def parse_contender(name: str, markers: Iterable[str]) -> Contender | None:
    """The contender ``name`` stands for, or None if it carries none of ``markers`` and a sequence."""
    key = tuple(markers)
    table = _table(key)
    try:
        return table[name]
    except KeyError:
        parsed = _table(key)[name] = _parse_uncached(name, key)
        return parsed


def sort_contenders(children: Iterable[str], markers: Iterable[str]) -> list[Contender]:
    """The lock nodes among ``children``, in queue order (names are parsed once and remembered)."""
    key = tuple(markers)
    table = _table(key)
    out: list[Contender] = []
    append = out.append
    get = table.get
    for n in children:
        c = get(n, _UNPARSED)
        if c is _UNPARSED:
            c = _parse_uncached(n, key)
            if len(table) >= _PARSED_LIMIT:
                table = _PARSED[key] = {}
                get = table.get
            table[n] = c
        if c is not None:
            append(c)  # type: ignore[arg-type]
    out.sort(key=_ORDER)
    return out


def lease_contenders(children: Iterable[str]) -> list[Contender]:
    """Every child of a semaphore's lease parent, each of which takes a lease (Curator and kazoo count
    every child): ``lease-`` nodes in sequence order, then kazoo's bare-uuid leases and foreign children
    (sequence 0, so first, by name)."""
    table = _table(_LEASES_KEY)
    out: list[Contender] = []
    for n in children:
        c = table.get(n)
        if c is None:
            c = _parse_lease(n)
            if len(table) >= _PARSED_LIMIT:
                table = _PARSED[_LEASES_KEY] = {}
            table[n] = c
        out.append(c)
    out.sort(key=_ORDER)
    return out


def new_node_prefix(naming: Naming, marker: str) -> tuple[str, str]:
    """A fresh uuid and the node name built from it in ``naming`` (the server appends any sequence).

    ``curator``: ``_c_<uuid>-<marker>``; ``kazoo``: ``<uuid hex><marker>``.
    """
    if naming == "kazoo":
        u = uuid.uuid4().hex
        return u, f"{u}{marker}"
    return new_protected_prefix(marker)


def new_protected_prefix(marker: str) -> tuple[str, str]:
    """A fresh uuid and the Curator-style node-name prefix built from it."""
    u = str(uuid.uuid4())
    return u, f"_c_{u}-{marker}"
