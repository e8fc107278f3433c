"""Commands on access: ACLs (``getAcl``, ``setAcl``) and the session's identities (``addauth``,
``whoami``).  Credentials are never printed."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import NoNodeError
from ...protocol.records import ACL
from .. import format as fmt
from ..argument_types import acl_entries, data_version, znode_path
from ..context import Context
from ..outcomes import ArgumentError
from ..registry import NoArguments, command, flag, option, positional
from .tree import subtree

__all__ = ["GetAclArguments", "SetAclArguments", "AddAuthArguments"]


@dataclass(frozen=True, kw_only=True)
class GetAclArguments:
    path: str = positional(znode_path)
    stat: bool = flag("s")


@command("getAcl", "getAcl [-s] path", "show a node's ACL (-s with its stat)", GetAclArguments)
async def cmd_get_acl(ctx: Context, a: GetAclArguments) -> None:
    acls, stat = await ctx.require_client().get_acl(a.path)
    ctx.print(fmt.format_acl_entries(acls))
    if a.stat:
        ctx.print(fmt.format_stat(stat))


@dataclass(frozen=True, kw_only=True)
class SetAclArguments:
    path: str = positional(znode_path)
    acl: tuple[ACL, ...] = positional(acl_entries)
    stat: bool = flag("s")
    recursive: bool = flag("R")
    version: int = option("v", data_version, default=-1)


@command(
    "setAcl",
    "setAcl [-s] [-v version] [-R] path acl",
    "replace a node's ACL, e.g. world:anyone:cdrwa,digest:user:hash:r (-v acl version, -R recursive)",
    SetAclArguments,
)
async def cmd_set_acl(ctx: Context, a: SetAclArguments) -> None:
    client = ctx.require_client()
    stat = await client.set_acl(a.path, a.acl, a.version)
    if a.recursive:
        for p in (await subtree(client, a.path))[1:]:
            try:
                await client.set_acl(p, a.acl)
            except NoNodeError:
                continue
    if a.stat:
        ctx.print(fmt.format_stat(stat))


def _scheme(text: str) -> str:
    if not text:
        raise ArgumentError("the scheme must not be empty")
    return text


@dataclass(frozen=True, kw_only=True)
class AddAuthArguments:
    scheme: str = positional(_scheme)
    credential: str = positional(str)

    def __repr__(self) -> str:  # never shows the credential
        return f"{type(self).__name__}(scheme={self.scheme!r}, credential=...)"


@command(
    "addauth",
    "addauth scheme auth",
    "authenticate the session (e.g. addauth digest user:password)",
    AddAuthArguments,
)
async def cmd_addauth(ctx: Context, a: AddAuthArguments) -> None:
    await ctx.require_client().add_auth(a.scheme, a.credential)
    ctx.auth.append((a.scheme, a.credential))


@command("whoami", "whoami", "show the identities the server gave this session", NoArguments)
async def cmd_whoami(ctx: Context, a: NoArguments) -> None:
    ids = await ctx.require_client().who_am_i()
    ctx.print("Auth scheme: User")
    for scheme, user in ids:
        ctx.print(f"{scheme}: {user}")
