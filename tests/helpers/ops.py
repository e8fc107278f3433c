"""What the tests of every client operation against the real server (tests/server/ops) share: the time limit,
creating a path with its parents, and the Stat of a node just created."""

from __future__ import annotations

import zkwire
from zkwire import Stat

# Every test finishes well within this (the server's tickTime is 200 ms).
LIMIT = 10


async def ensure_path(zk: zkwire.Client, path: str) -> Stat:
    """Create ``path`` and any missing parents; return the Stat of ``path``."""
    await zk.ensure_path(path)
    stat = await zk.exists(path)
    assert stat is not None
    return stat


def assert_fresh_stat(stat: Stat, data_length: int, owner: int = 0) -> None:
    """The Stat of a node just created and never changed."""
    assert stat.czxid == stat.mzxid == stat.pzxid > 0
    assert stat.ctime == stat.mtime > 0
    assert (stat.version, stat.cversion, stat.aversion) == (0, 0, 0)
    assert stat.ephemeral_owner == owner
    assert stat.data_length == data_length
    assert stat.num_children == 0
