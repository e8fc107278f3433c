"""Commands on watches: ``addWatch`` (persistent), ``removewatches``, and ``printwatches`` (whether
events are shown).  One-shot watches are the ``-w`` of ``ls``, ``get`` and ``stat``."""

from __future__ import annotations

from dataclasses import dataclass

from ...constants import WatcherType
from ..argument_types import znode_path
from ..context import Context
from ..outcomes import ArgumentError
from ..registry import command, flag, option, optional_positional, positional

__all__ = ["AddWatchArguments", "RemoveWatchesArguments", "PrintWatchesArguments"]


def _recursive_mode(text: str) -> bool:
    """``-m PERSISTENT`` (False) or ``-m PERSISTENT_RECURSIVE`` (True), in any case."""
    mode = text.upper()
    if mode not in ("PERSISTENT", "PERSISTENT_RECURSIVE"):
        raise ArgumentError(f"mode must be PERSISTENT or PERSISTENT_RECURSIVE, not {text!r}")
    return mode == "PERSISTENT_RECURSIVE"


@dataclass(frozen=True, kw_only=True)
class AddWatchArguments:
    path: str = positional(znode_path)
    recursive: bool = option("m", _recursive_mode, default=True)


@command(
    "addWatch",
    "addWatch [-m mode] path",
    "persistent watch; mode PERSISTENT or PERSISTENT_RECURSIVE (the default)",
    AddWatchArguments,
)
async def cmd_add_watch(ctx: Context, a: AddWatchArguments) -> None:
    await ctx.persistent_watch(a.path, a.recursive)


@dataclass(frozen=True, kw_only=True)
class RemoveWatchesArguments:
    path: str = positional(znode_path)
    children: bool = flag("c")
    data: bool = flag("d")
    any: bool = flag("a")

    @property
    def kind(self) -> WatcherType:
        if self.children:
            return WatcherType.CHILDREN
        if self.data:
            return WatcherType.DATA
        return WatcherType.ANY


@command(
    "removewatches",
    "removewatches path [-c|-d|-a]",
    "remove this session's watches on a node (-c child, -d data, -a any: the default)",
    RemoveWatchesArguments,
    exclusive="cda",
)
async def cmd_remove_watches(ctx: Context, a: RemoveWatchesArguments) -> None:
    await ctx.require_client().remove_watches(a.path, a.kind)


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise ArgumentError("say on or off")
    return text == "on"


@dataclass(frozen=True, kw_only=True)
class PrintWatchesArguments:
    #: None: show the setting.
    on: bool | None = optional_positional(_on_off)


@command(
    "printwatches",
    "printwatches on|off",
    "show watch events as they arrive (on) or not",
    PrintWatchesArguments,
    session=False,
)
async def cmd_printwatches(ctx: Context, a: PrintWatchesArguments) -> None:
    if a.on is None:
        ctx.print(f"printwatches is {'on' if ctx.print_watches else 'off'}")
        return
    ctx.print_watches = a.on
