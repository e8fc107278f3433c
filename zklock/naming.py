"""Contender node names, shared with Apache Curator and kazoo so the recipes exclude each other.

* zklock and Curator: ``_c_<uuid>-lock-<seq>`` (Curator's "protected" names; the uuid lets a contender
  find its own node after a lost create reply).
* kazoo: ``<uuid hex>__lock__<seq>``.

``<seq>`` is the server's 10-digit sequence suffix: the parent's child-version counter, an int32.  It is
parsed as a *signed* number: after 2,147,483,647 creations under one parent the server wraps to
-2,147,483,648 and names sort wrongly from then on.  Lock parents are container nodes that vanish when
empty, which resets the counter long before that in practice.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

__all__ = ["Contender", "parse_contender", "sort_contenders", "new_protected_prefix", "LOCK_MARKER"]

LOCK_MARKER = "-lock-"
_PATTERNS = {
    "zklock": re.compile(r"^_c_([0-9a-fA-F-]{36})-lock-(-?\d{10,11})$"),
    "curator": re.compile(r"^(?:_c_([0-9a-fA-F-]{36})-)?.*lock-(-?\d{10,11})$"),
    "kazoo": re.compile(r"^([0-9a-fA-F]{32})__lock__(-?\d{10,11})$"),
}


@dataclass(frozen=True, slots=True, order=True)
class Contender:
    """One lock node: ordered by sequence number (then name, for ties that cannot happen on one parent)."""

    sequence: int
    name: str
    uuid: str | None


def parse_contender(name: str) -> Contender | None:
    """The contender a child name stands for, or None for children that are not lock nodes."""
    for pattern in _PATTERNS.values():
        m = pattern.match(name)
        if m is not None:
            return Contender(int(m.group(2)), name, m.group(1))
    return None


def sort_contenders(children: list[str]) -> list[Contender]:
    out = [c for c in map(parse_contender, children) if c is not None]
    out.sort()
    return out


def new_protected_prefix() -> tuple[str, str]:
    """A fresh uuid and the node-name prefix built from it (the server appends the sequence)."""
    u = str(uuid.uuid4())
    return u, f"_c_{u}{LOCK_MARKER}"
