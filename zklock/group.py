"""Group membership: Curator's ``GroupMember`` and kazoo's ``Party``/``ShallowParty``, on one path with
the peer.

Each member is one ephemeral node kept by a :class:`~zklock.persistent.PersistentNode` (re-created
after a deletion, a lost create reply or, given a :class:`zkwire.Sessions` stream, the session's
expiry).  The layouts are the peers':

=================  ===========================================  ==========================================
recipe             member node                                  member's identity
=================  ===========================================  ==========================================
``GroupMember``    ``<path>/<member id>`` (data: the payload)   the node name; the data is its payload
``Party``          ``<path>/<uuid hex>__party__``               the node's data (UTF-8)
``ShallowParty``   ``<path>/<uuid hex>-<identifier>``           the text after the first ``-``
=================  ===========================================  ==========================================

The parties' parents are persistent nodes (kazoo creates them once and caches the fact: a parent
reaped as a container would break its next join); a group's are containers, as Curator's.

Views of the members, for members and observers alike:

* :func:`open_group_view` -- a Curator group's members and payloads, kept by one persistent recursive
  watch (:func:`zkwire.open_tree_cache`): joins, leaves and payload changes.
* :func:`watch_party` -- a party's identifiers, as an async iterator of sorted lists: one listing per
  change, and (``Party`` only) one read of each member seen for the first time.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from zkwire import (
    Client,
    ClientClosedError,
    InvalidArgumentError,
    NoNodeError,
    SessionSource,
    open_tree_cache,
    validate_path,
    watch_children,
)
from zkwire import TreeCache as _TreeCache

from .persistent import NodeKeeper, PersistentNode
from .recipe import default_identifier
from .retrying import repeat

__all__ = [
    "GroupMember",
    "GroupView",
    "Party",
    "ShallowParty",
    "PARTY_MARKER",
    "open_group_view",
    "watch_party",
    "party_members",
]

#: The marker in a kazoo ``Party`` member's node name.
PARTY_MARKER = "__party__"


def _node_name(value: str, what: str, path: str) -> str:
    if not value or "/" in value or value in (".", "..") or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise InvalidArgumentError(path, f"{what} must be a non-empty node name without '/' or control characters")
    return value


class _Member(NodeKeeper):
    """A member node kept while the ``async with`` block runs."""

    def __init__(self, node: PersistentNode) -> None:
        self.node = node

    @property
    def path(self) -> str:
        """The member's node."""
        return self.node.path

    async def wait_joined(self) -> str:
        """Wait until the member's node exists; returns its path (see
        :meth:`~zklock.persistent.PersistentNode.wait_created`)."""
        return await self.node.wait_created()


class GroupMember(_Member):
    """A member of a Curator ``GroupMember`` group: the ephemeral node ``<path>/<member_id>`` with
    ``payload`` as its data, kept while the ``async with`` block runs.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path`` or ``member_id`` (at construction).
    """

    def __init__(self, source: SessionSource, path: str, member_id: str, payload: bytes = b"") -> None:
        self.group = validate_path(path)
        self.id = _node_name(member_id, "member_id", path)
        self.source = source
        super().__init__(PersistentNode(source, f"{self.group.rstrip('/')}/{member_id}", payload))

    async def set_payload(self, payload: bytes) -> None:
        """Change this member's payload (seen by every view of the group)."""
        await self.node.set_data(payload)

    async def current_members(self) -> dict[str, bytes]:
        """The group's members now (id -> payload), read once."""
        return await group_members(self.source, self.group)


async def group_members(source: SessionSource, path: str) -> dict[str, bytes]:
    """A Curator group's members now (member id -> payload), read once (a member that leaves while it
    is read is left out)."""

    async def read(zk: Client) -> dict[str, bytes]:
        try:
            names = await zk.get_children(path)
        except NoNodeError:
            return {}
        out: dict[str, bytes] = {}
        for name in sorted(names):
            try:
                out[name], _ = await zk.get_data(f"{path.rstrip('/')}/{name}")
            except NoNodeError:
                continue
        return out

    return await repeat(source, read)


class GroupView:
    """A Curator group's members, kept current (see :func:`open_group_view`)."""

    def __init__(self, cache: _TreeCache, path: str) -> None:
        self._cache = cache
        self.path = path

    @property
    def members(self) -> dict[str, bytes]:
        """The members now: member id -> payload."""
        cache = self._cache
        prefix = self.path.rstrip("/")
        out: dict[str, bytes] = {}
        for name in cache.children(self.path) or []:
            node = cache.get(f"{prefix}/{name}")
            if node is not None:
                out[name] = node.data
        return out

    async def changes(self) -> AsyncIterator[dict[str, bytes]]:
        """The members after each change (join, leave, payload), coalesced: a snapshot is yielded only
        when it differs from the one before."""
        last: Mapping[str, bytes] | None = None
        async for _event in self._cache.events():
            now = self.members
            if now != last:
                last = now
                yield now


@asynccontextmanager
async def open_group_view(source: SessionSource, path: str) -> AsyncIterator[GroupView]:
    """Follow a Curator group's members while the block runs (the block starts once they are read).

    Raises:
        InvalidPathError: a bad ``path``; and what :func:`zkwire.open_tree_cache` raises.
    """
    path = validate_path(path)
    async with open_tree_cache(source, path) as cache:
        yield GroupView(cache, path)


class Party(_Member):
    """A member of a kazoo ``Party``: the ephemeral node ``<path>/<uuid hex>__party__`` holding
    ``identifier`` (default ``hostname:pid``).

    Raises:
        InvalidPathError: a bad ``path`` (at construction).
    """

    shallow = False

    def __init__(self, source: SessionSource, path: str, identifier: str | None = None) -> None:
        self.party = validate_path(path)
        self.identifier = identifier if identifier is not None else default_identifier()
        self.source = source
        super().__init__(
            PersistentNode(source, f"{self.party.rstrip('/')}/{self._name()}", self._data(), container_parents=False)
        )

    def _name(self) -> str:
        return uuid.uuid4().hex + PARTY_MARKER

    def _data(self) -> bytes:
        return self.identifier.encode()

    async def current_members(self) -> list[str]:
        """The party's identifiers now, sorted, read once."""
        return await party_members(self.source, self.party, shallow=self.shallow)


class ShallowParty(Party):
    """A member of a kazoo ``ShallowParty``: the ephemeral node ``<path>/<uuid hex>-<identifier>``
    (empty data).

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path`` or ``identifier`` (at construction).
    """

    shallow = True

    def _name(self) -> str:
        return f"{uuid.uuid4().hex}-{_node_name(self.identifier, 'identifier', self.party)}"

    def _data(self) -> bytes:
        return b""


async def party_members(source: SessionSource, path: str, *, shallow: bool = False) -> list[str]:
    """A kazoo party's identifiers now, sorted, read once."""

    async def read(zk: Client) -> list[str]:
        try:
            names = await zk.get_children(path)
        except NoNodeError:
            return []
        return await _identities(zk, path, names, shallow, {})

    return await repeat(source, read)


async def _identities(zk: Client, path: str, names: list[str], shallow: bool, known: dict[str, str]) -> list[str]:
    if shallow:
        return sorted(n[n.find("-") + 1 :] for n in names if "-" in n)
    out = []
    prefix = path.rstrip("/")
    for name in names:
        if PARTY_MARKER not in name:
            continue
        if name not in known:
            try:
                data, _ = await zk.get_data(f"{prefix}/{name}")
            except NoNodeError:
                continue
            known[name] = data.decode("utf-8", "replace")
        out.append(known[name])
    for gone in set(known) - set(names):
        del known[gone]
    return sorted(out)


async def watch_party(source: SessionSource, path: str, *, shallow: bool = False) -> AsyncIterator[list[str]]:
    """Follow a kazoo party: its sorted identifiers now, then after each change (coalesced; an empty
    list while the party node does not exist).  Given a :class:`zkwire.Sessions` stream it carries on
    across expiries."""
    known: dict[str, str] = {}
    last: list[str] | None = None
    async for names in watch_children(source, path):
        listed = names or []

        async def read(zk: Client, listed: list[str] = listed) -> list[str]:
            return await _identities(zk, path, listed, shallow, known)

        try:
            members = await repeat(source, read)
        except ClientClosedError:
            return
        if members != last:
            last = members
            yield members
