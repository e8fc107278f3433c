"""Commands on nodes and their data: ``ls``, ``create``, ``stat``, ``get``, ``set``, ``delete``,
``deleteall``, ``sync``, ``getEphemerals``, ``getAllChildrenNumber``.  Text data is sent as UTF-8."""

from __future__ import annotations

from dataclasses import dataclass

from ...constants import MAX_TTL_MS
from ...errors import NoNodeError, NotEmptyError
from ...protocol.records import ACL
from ...sansio.ops import Delete, create_op
from ...sansio.paths import validate_path
from .. import format as fmt
from ..argument_types import acl_entries, data_version, integer, znode_path
from ..context import Context
from ..outcomes import ArgumentError, CommandError
from ..registry import command, flag, option, optional_positional, positional
from .tree import subtree

__all__ = [
    "LsArguments",
    "CreateArguments",
    "StatArguments",
    "GetArguments",
    "SetArguments",
    "DeleteArguments",
    "DeleteAllArguments",
    "PathArguments",
    "GetEphemeralsArguments",
]


@dataclass(frozen=True, kw_only=True)
class PathArguments:
    """Just a node's path."""

    path: str = positional(znode_path)


@dataclass(frozen=True, kw_only=True)
class LsArguments:
    path: str = positional(znode_path)
    stat: bool = flag("s")
    watch: bool = flag("w")
    recursive: bool = flag("R")

    def __post_init__(self) -> None:
        if self.recursive and (self.stat or self.watch):
            raise ArgumentError("-R cannot be combined with -s or -w")


@command(
    "ls",
    "ls [-s] [-w] [-R] path",
    "list the children of a node (-s with its stat, -w watch for child changes, -R the whole subtree)",
    LsArguments,
)
async def cmd_ls(ctx: Context, a: LsArguments) -> None:
    client = ctx.require_client()
    if a.recursive:
        for p in await subtree(client, a.path):
            ctx.print(p)
        return
    if a.stat:
        if a.watch:
            children, stat, w = await client.get_children_with_stat(a.path, watch=True)
            ctx.watch(w)
        else:
            children, stat = await client.get_children_with_stat(a.path)
        ctx.print(fmt.format_list(children))
        ctx.print(fmt.format_stat(stat))
        return
    if a.watch:
        children, w = await client.get_children(a.path, watch=True)
        ctx.watch(w)
    else:
        children = await client.get_children(a.path)
    ctx.print(fmt.format_list(children))


@dataclass(frozen=True, kw_only=True)
class CreateArguments:
    #: Checked with the sequential flag in mind (a sequential node's path may end in "/").
    path: str = positional(str)
    data: str | None = optional_positional(str)
    acl: tuple[ACL, ...] | None = optional_positional(acl_entries)
    sequential: bool = flag("s")
    ephemeral: bool = flag("e")
    container: bool = flag("c")
    ttl: int | None = option("t", integer("ttl (milliseconds)", 1, MAX_TTL_MS))

    def __post_init__(self) -> None:
        validate_path(self.path, sequential=self.sequential)
        create_op(ephemeral=self.ephemeral, sequential=self.sequential, container=self.container, ttl=self.ttl)


@command(
    "create",
    "create [-s] [-e] [-c] [-t ttl] path [data] [acl]",
    "create a node (-s sequential, -e ephemeral, -c container, -t ttl in ms)",
    CreateArguments,
)
async def cmd_create(ctx: Context, a: CreateArguments) -> None:
    created = await ctx.require_client().create(
        a.path,
        _utf8(a.data),
        acl=a.acl,
        ephemeral=a.ephemeral,
        sequential=a.sequential,
        container=a.container,
        ttl=a.ttl,
    )
    ctx.print(f"Created {created}")


@dataclass(frozen=True, kw_only=True)
class StatArguments:
    path: str = positional(znode_path)
    watch: bool = flag("w")


@command(
    "stat",
    "stat [-w] path",
    "show a node's stat (-w: watch for its creation, change or deletion)",
    StatArguments,
)
async def cmd_stat(ctx: Context, a: StatArguments) -> None:
    client = ctx.require_client()
    if a.watch:
        stat, w = await client.exists(a.path, watch=True)
        ctx.watch(w)
    else:
        stat = await client.exists(a.path)
    if stat is None:
        raise NoNodeError(a.path)
    ctx.print(fmt.format_stat(stat))


@dataclass(frozen=True, kw_only=True)
class GetArguments:
    path: str = positional(znode_path)
    stat: bool = flag("s")
    watch: bool = flag("w")


@command(
    "get",
    "get [-s] [-w] path",
    "show a node's data (-s with its stat, -w watch for changes)",
    GetArguments,
)
async def cmd_get(ctx: Context, a: GetArguments) -> None:
    client = ctx.require_client()
    if a.watch:
        data, stat, w = await client.get_data(a.path, watch=True)
        ctx.watch(w)
    else:
        data, stat = await client.get_data(a.path)
    ctx.print(fmt.format_data(data))
    if a.stat:
        ctx.print(fmt.format_stat(stat))


@dataclass(frozen=True, kw_only=True)
class SetArguments:
    path: str = positional(znode_path)
    data: str = positional(str)
    stat: bool = flag("s")
    version: int = option("v", data_version, default=-1)


@command(
    "set",
    "set [-s] [-v version] path data",
    "replace a node's data (-v only if its data version matches, -s show the new stat)",
    SetArguments,
)
async def cmd_set(ctx: Context, a: SetArguments) -> None:
    stat = await ctx.require_client().set_data(a.path, _utf8(a.data), a.version)
    if a.stat:
        ctx.print(fmt.format_stat(stat))


@dataclass(frozen=True, kw_only=True)
class DeleteArguments:
    path: str = positional(znode_path)
    version: int = option("v", data_version, default=-1)


@command(
    "delete",
    "delete [-v version] path",
    "delete a node without children (-v only if its data version matches)",
    DeleteArguments,
)
async def cmd_delete(ctx: Context, a: DeleteArguments) -> None:
    await ctx.require_client().delete(a.path, a.version)


def _below_root(text: str) -> str:
    path = znode_path(text)
    if path == "/":
        raise ArgumentError("refusing to delete everything under /")
    return path


@dataclass(frozen=True, kw_only=True)
class DeleteAllArguments:
    path: str = positional(_below_root)
    batch: int = option("b", integer("batch size", 1, 100_000), default=1000)


#: Rounds of ``deleteall`` (listing the subtree, deleting it) before new children count as a failure.
_DELETEALL_ROUNDS = 5


@command(
    "deleteall",
    "deleteall path [-b batch size]",
    "delete a node and all its descendants",
    DeleteAllArguments,
)
async def cmd_deleteall(ctx: Context, a: DeleteAllArguments) -> None:
    client = ctx.require_client()
    for _round in range(_DELETEALL_ROUNDS):
        nodes = await subtree(client, a.path)
        retry = False
        ordered = list(reversed(nodes))  # deepest first: children before their parents
        for start in range(0, len(ordered), a.batch):
            chunk = ordered[start : start + a.batch]
            results = await client.pipeline([Delete(p) for p in chunk])
            for result in results:
                if isinstance(result, NoNodeError):
                    continue
                if isinstance(result, NotEmptyError):
                    retry = True  # a child was created meanwhile
                    continue
                if isinstance(result, BaseException):
                    raise result
        if not retry:
            return
    raise CommandError(f"deleteall: {a.path} keeps getting new children")


@command("sync", "sync path", "wait until the server has caught up with the leader", PathArguments)
async def cmd_sync(ctx: Context, a: PathArguments) -> None:
    await ctx.require_client().sync(a.path)
    ctx.print("Sync is OK")


@dataclass(frozen=True, kw_only=True)
class GetEphemeralsArguments:
    path: str | None = optional_positional(znode_path)


@command(
    "getEphemerals",
    "getEphemerals [path]",
    "list this session's ephemeral nodes (under path)",
    GetEphemeralsArguments,
)
async def cmd_get_ephemerals(ctx: Context, a: GetEphemeralsArguments) -> None:
    ctx.print(fmt.format_list(await ctx.require_client().get_ephemerals(a.path or "/")))


@command(
    "getAllChildrenNumber",
    "getAllChildrenNumber path",
    "count all descendants of a node",
    PathArguments,
)
async def cmd_get_all_children_number(ctx: Context, a: PathArguments) -> None:
    ctx.print(str(await ctx.require_client().get_all_children_number(a.path)))


def _utf8(text: str | None) -> bytes:
    return (text or "").encode("utf-8")
