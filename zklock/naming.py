"""Contender node names, shared with Apache Curator and kazoo so that their recipes and ours exclude
each other on the same path.

* zklock and Curator write "protected" names: ``_c_<uuid>-<marker><seq>``; the uuid lets a contender
  find its own node after a lost create reply.  Markers: ``lock-`` (mutex), ``__READ__`` / ``__WRIT__``
  (read/write lock), ``lease-`` (semaphore), ``latch-`` (leader election).
* kazoo writes ``<32 hex>__lock__<seq>`` (and ``__rlock__`` for its read lock).

``<seq>`` is the server's sequence suffix: the parent's child-version counter (an int32) formatted as
``%010d``.  It is parsed as a *signed* number, taking what follows the last marker, as Curator does (a
marker such as ``lock-`` ends in a dash, so the sign cannot be found by pattern alone).  After
2,147,483,647 creations under one parent the server wraps to negative numbers and order breaks; lock
parents are container nodes that vanish when empty, which resets the counter long before that.
"""

from __future__ import annotations

import operator
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Contender",
    "parse_contender",
    "sort_contenders",
    "new_protected_prefix",
    "MUTEX_MARKERS",
    "READ_MARKERS",
    "WRITE_MARKERS",
]

#: Names that hold a mutex: ours/Curator's, and kazoo's.
MUTEX_MARKERS = ("lock-", "__lock__")
READ_MARKERS = ("__READ__", "__rlock__")
WRITE_MARKERS = ("__WRIT__", "__lock__")

_ORDER = operator.attrgetter("sequence", "name")
_UNPARSED = object()
_SEQUENCE = re.compile(r"-?\d{9,10}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_KAZOO_UUID = re.compile(r"[0-9a-fA-F]{32}")


@dataclass(frozen=True, slots=True, order=True)
class Contender:
    """One contender node, ordered by sequence number."""

    sequence: int
    name: str
    marker: str
    uuid: str | None


#: Parsed names per marker set; a set's table is dropped when it reaches the limit (so is bounded).
_PARSED: dict[tuple[str, ...], dict[str, Contender | None]] = {}
_PARSED_LIMIT = 65536


def _parse(name: str, markers: tuple[str, ...]) -> Contender | None:
    table = _PARSED.get(markers)
    if table is None or len(table) >= _PARSED_LIMIT:
        table = _PARSED[markers] = {}
    try:
        return table[name]
    except KeyError:
        parsed = table[name] = _parse_uncached(name, markers)
        return parsed


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
            ident = head
        return Contender(int(rest), name, marker, ident)
    return None


def parse_contender(name: str, markers: Iterable[str]) -> Contender | None:
    """The contender ``name`` stands for, or None if it carries none of ``markers`` and a sequence."""
    return _parse(name, tuple(markers))


def sort_contenders(children: Iterable[str], markers: Iterable[str]) -> list[Contender]:
    """The lock nodes among ``children``, in queue order (names are parsed once and remembered)."""
    key = tuple(markers)
    table = _PARSED.get(key)
    if table is None or len(table) >= _PARSED_LIMIT:
        table = _PARSED[key] = {}
    out: list[Contender] = []
    append = out.append
    get = table.get
    for n in children:
        c = get(n, _UNPARSED)
        if c is _UNPARSED:
            c = table[n] = _parse_uncached(n, key)
        if c is not None:
            append(c)  # type: ignore[arg-type]
    out.sort(key=_ORDER)
    return out


def new_protected_prefix(marker: str) -> tuple[str, str]:
    """A fresh uuid and the node-name prefix built from it (the server appends the sequence)."""
    u = str(uuid.uuid4())
    return u, f"_c_{u}-{marker}"
