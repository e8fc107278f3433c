"""Commands on quotas: ``setquota``, ``listquota``, ``delquota``.

A node's quota lives under :data:`QUOTA_ROOT` (``/zookeeper/quota/PATH``): its limits in
``zookeeper_limits``, the usage the server counts in ``zookeeper_stats``; both are written in the text
forms ZooKeeper 3.8's own shell and server use.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from ...client.api import Client
from ...errors import NodeExistsError, NoNodeError, NotEmptyError
from ...sansio.ops import Create
from ..argument_types import integer, znode_path
from ..context import Context
from ..outcomes import ArgumentError, CommandError
from ..registry import command, flag, option, positional
from .tree import child_path

__all__ = [
    "QUOTA_ROOT",
    "QUOTA_LIMITS",
    "QUOTA_STATS",
    "parse_quota",
    "format_limits",
    "SetQuotaArguments",
    "QuotaPathArguments",
    "DelQuotaArguments",
]

QUOTA_ROOT = "/zookeeper/quota"
QUOTA_LIMITS = "zookeeper_limits"
QUOTA_STATS = "zookeeper_stats"

_LIMIT_KEYS = ("count", "bytes", "countHardLimit", "byteHardLimit")
_STAT_KEYS = ("count", "bytes")


def parse_quota(text: str) -> dict[str, int]:
    """The numbers in a quota node's data.

    Accepts the forms ZooKeeper versions write: ``count=2,bytes=10`` (stats and older limits) and 3.8's
    ``count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1``.
    """
    out: dict[str, int] = {}
    for piece in re.split(r"[,;]", text):
        key, sep, rest = piece.partition("=")
        key = key.strip()
        if not sep or not key:
            continue
        try:
            out[key] = int(rest.split("=", 1)[0].strip())
        except ValueError:
            continue
    return out


def format_limits(q: dict[str, int]) -> str:
    """A limits node's data, byte for byte as ZooKeeper 3.8's shell writes it (and its server reads it)."""
    return (
        f"count={q.get('count', -1)},bytes={q.get('bytes', -1)}"
        f"=;byteHardLimit={q.get('byteHardLimit', -1)};countHardLimit={q.get('countHardLimit', -1)}"
    )


def _format_quota(q: dict[str, int], keys: tuple[str, ...]) -> str:
    return ",".join(f"{k}={q.get(k, -1)}" for k in keys)


def _quota_node(path: str, leaf: str | None = None) -> str:
    base = QUOTA_ROOT + path
    return f"{base}/{leaf}" if leaf else base


def _quota_path(text: str) -> str:
    """A node that may have a quota: not ``/`` nor anything of ``/zookeeper``."""
    path = znode_path(text)
    if path == "/" or path == "/zookeeper" or path.startswith("/zookeeper/"):
        raise ArgumentError(f"quotas cannot be set on {path}")
    return path


_quota_value = integer("quota", 0, (1 << 63) - 1)


@dataclass(frozen=True, kw_only=True)
class SetQuotaArguments:
    """Exactly one of the limits."""

    path: str = positional(_quota_path)
    count: int | None = option("n", _quota_value)
    bytes: int | None = option("b", _quota_value)
    count_hard_limit: int | None = option("N", _quota_value)
    byte_hard_limit: int | None = option("B", _quota_value)

    def __post_init__(self) -> None:
        if len(self._given()) != 1:
            raise ArgumentError("give exactly one of -n, -b, -N, -B")

    @property
    def limit(self) -> tuple[str, int]:
        """The limit to set, as its key in the limits node, and its value."""
        return self._given()[0]

    def _given(self) -> list[tuple[str, int]]:
        values = (self.count, self.bytes, self.count_hard_limit, self.byte_hard_limit)
        return [(key, value) for key, value in zip(_LIMIT_KEYS, values, strict=True) if value is not None]


@command(
    "setquota",
    "setquota -n|-b|-N|-B val path",
    "set a quota: -n node count, -b bytes (soft, logged); -N, -B hard limits",
    SetQuotaArguments,
    exclusive="nbNB",
    require_one=True,
)
async def cmd_setquota(ctx: Context, a: SetQuotaArguments) -> None:
    client = ctx.require_client()
    path = a.path
    key, value = a.limit
    if await client.exists(path) is None:
        raise NoNodeError(path)
    limits_path = _quota_node(path, QUOTA_LIMITS)
    try:
        data, stat = await client.get_data(limits_path)
    except NoNodeError:
        data, stat = b"", None
    if stat is not None:
        limits = parse_quota(data.decode("utf-8", "replace"))
        limits[key] = value
        await client.set_data(limits_path, format_limits(limits).encode(), stat.version)
    else:
        await _create_quota(client, path, key, value)
    if key in ("count", "countHardLimit"):
        try:
            stats_data, _ = await client.get_data(_quota_node(path, QUOTA_STATS))
        except NoNodeError:
            return
        current = parse_quota(stats_data.decode("utf-8", "replace")).get("count", -1)
        if current > value:
            ctx.error(f"warning: {path} already has {current} nodes, more than the count quota {value}")


async def _create_quota(client: Client, path: str, key: str, value: int) -> None:
    """The first limit of ``path``: its limits and stats nodes, the stats counted now."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:i])
        if await client.exists(_quota_node(ancestor, QUOTA_LIMITS)) is not None:
            raise CommandError(f"{path} has a parent {ancestor} which has a quota")
    for below in await _quota_descendants(client, path):
        raise CommandError(f"{path} has a child {below} which has a quota")
    count, nbytes = await _subtree_usage(client, path)
    node = QUOTA_ROOT
    for part in parts:
        node = f"{node}/{part}"
        with contextlib.suppress(NodeExistsError):
            await client.create(node)
    limits = dict.fromkeys(_LIMIT_KEYS, -1)
    limits[key] = value
    try:
        await client.multi(
            [
                Create(_quota_node(path, QUOTA_LIMITS), format_limits(limits).encode()),
                Create(_quota_node(path, QUOTA_STATS), f"count={count},bytes={nbytes}".encode()),
            ]
        )
    except NodeExistsError:
        raise CommandError(f"a quota for {path} was set meanwhile; try again") from None


async def _subtree_usage(client: Client, path: str) -> tuple[int, int]:
    """Number of nodes (``path`` included) and bytes of data in the subtree, as the server counts them."""
    count = total = 0
    pending = [path]
    while pending:
        p = pending.pop()
        try:
            children, stat = await client.get_children_with_stat(p)
        except NoNodeError:
            continue
        count += 1
        total += stat.data_length
        pending.extend(child_path(p, c) for c in children)
    return count, total


async def _quota_descendants(client: Client, path: str) -> list[str]:
    """Znode paths strictly below ``path`` that have a quota."""
    found: list[str] = []
    pending = [_quota_node(path)]
    while pending:
        node = pending.pop()
        try:
            children = await client.get_children(node)
        except NoNodeError:
            continue
        for c in children:
            if c == QUOTA_LIMITS and node != _quota_node(path):
                found.append(node[len(QUOTA_ROOT) :])
            elif c not in (QUOTA_LIMITS, QUOTA_STATS):
                pending.append(child_path(node, c))
    return sorted(found)


@dataclass(frozen=True, kw_only=True)
class QuotaPathArguments:
    path: str = positional(_quota_path)


@command("listquota", "listquota path", "show a node's quota and current usage", QuotaPathArguments)
async def cmd_listquota(ctx: Context, a: QuotaPathArguments) -> None:
    client = ctx.require_client()
    path = a.path
    limits_path = _quota_node(path, QUOTA_LIMITS)
    try:
        data, _ = await client.get_data(limits_path)
    except NoNodeError:
        raise CommandError(f"quota for {path} does not exist.") from None
    ctx.print(f"absolute path is {limits_path}")
    ctx.print(f"Output quota for {path} {_format_quota(parse_quota(data.decode('utf-8', 'replace')), _LIMIT_KEYS)}")
    try:
        stats, _ = await client.get_data(_quota_node(path, QUOTA_STATS))
    except NoNodeError:
        ctx.print(f"Output stat for {path} (none)")
        return
    ctx.print(f"Output stat for {path} {_format_quota(parse_quota(stats.decode('utf-8', 'replace')), _STAT_KEYS)}")


@dataclass(frozen=True, kw_only=True)
class DelQuotaArguments:
    """No flag: the whole quota; one flag: just that limit."""

    path: str = positional(_quota_path)
    count: bool = flag("n")
    bytes: bool = flag("b")
    count_hard_limit: bool = flag("N")
    byte_hard_limit: bool = flag("B")

    def __post_init__(self) -> None:
        if len(self._chosen()) > 1:
            raise ArgumentError("use only one of -n, -b, -N, -B")

    @property
    def limit(self) -> str | None:
        """The key of the one limit to remove, or None for the whole quota."""
        chosen = self._chosen()
        return chosen[0] if chosen else None

    def _chosen(self) -> list[str]:
        flags = (self.count, self.bytes, self.count_hard_limit, self.byte_hard_limit)
        return [key for key, given in zip(_LIMIT_KEYS, flags, strict=True) if given]


@command(
    "delquota",
    "delquota [-n|-b|-N|-B] path",
    "remove a node's quota (or just one of its limits)",
    DelQuotaArguments,
    exclusive="nbNB",
)
async def cmd_delquota(ctx: Context, a: DelQuotaArguments) -> None:
    client = ctx.require_client()
    path = a.path
    limits_path = _quota_node(path, QUOTA_LIMITS)
    try:
        data, stat = await client.get_data(limits_path)
    except NoNodeError:
        raise CommandError(f"Quota does not exist for {path}") from None
    key = a.limit
    if key is not None:
        limits = parse_quota(data.decode("utf-8", "replace"))
        limits[key] = -1
        await client.set_data(limits_path, format_limits(limits).encode(), stat.version)
        return
    for leaf in (QUOTA_LIMITS, QUOTA_STATS):
        with contextlib.suppress(NoNodeError):
            await client.delete(_quota_node(path, leaf))
    # Remove the now empty quota directories, up to (not including) the quota root.
    node = _quota_node(path)
    while node != QUOTA_ROOT:
        try:
            await client.delete(node)
        except NotEmptyError:
            break
        except NoNodeError:
            pass
        node = node.rsplit("/", 1)[0]
