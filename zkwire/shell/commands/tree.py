"""Paths below a node, for the commands that work on whole subtrees (``ls -R``, ``deleteall``,
``setAcl -R``, quotas)."""

from __future__ import annotations

from ...client.api import Client
from ...errors import NoNodeError
from ...sansio.ops import GetChildren

__all__ = ["child_path", "subtree"]

#: Children listings asked for in one pipelined round trip.
_LISTINGS_PER_ROUND = 1000


def child_path(parent: str, child: str) -> str:
    """The path of ``child`` (a name) under ``parent``."""
    return f"/{child}" if parent == "/" else f"{parent}/{child}"


async def subtree(client: Client, root: str) -> list[str]:
    """``root`` and all its descendants, breadth first (children sorted), a level per round trip.

    Nodes removed meanwhile are left out; a missing ``root`` raises :class:`~zkwire.errors.NoNodeError`.
    """
    out = [root]
    level = [root]
    first = True
    while level:
        next_level: list[str] = []
        for start in range(0, len(level), _LISTINGS_PER_ROUND):
            chunk = level[start : start + _LISTINGS_PER_ROUND]
            results = await client.pipeline([GetChildren(p) for p in chunk])
            for parent, result in zip(chunk, results, strict=True):
                if isinstance(result, NoNodeError) and not first:
                    continue  # removed meanwhile
                if isinstance(result, BaseException):
                    raise result
                assert isinstance(result, list)
                for child in result:
                    path = child_path(parent, child)
                    out.append(path)
                    next_level.append(path)
        level = next_level
        first = False
    return out
