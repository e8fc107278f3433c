"""What the two halves of the interoperability matrix (test_interop_matrix_kazoo, test_curator_interop)
share: the verdicts, the matrix's cells, zklock's side of a cell, and zklock's hold on the counter that
the contention tests guard."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

import zklock
import zkwire
from helpers.holds import Holds, now_us

__all__ = [
    "EXCLUDES",
    "DOES_NOT_EXCLUDE",
    "SHARES",
    "Matrix",
    "OUR_KIND",
    "cells",
    "excluding",
    "cell_ids",
    "verdict",
    "make_recipe",
    "hold_counter",
]

EXCLUDES, DOES_NOT_EXCLUDE, SHARES = "excludes", "does not exclude", "shares"
#: (zklock recipe, naming) -> the peer's recipe -> the verdict.
Matrix = dict[tuple[str, str], dict[str, str]]
#: zklock's lock-queue recipes and the kind of hold each takes ("x" exclusive, "s" shared).
OUR_KIND = {"Mutex": "x", "ReadLock": "s", "WriteLock": "x", "Election": "x"}


def cells(matrix: Matrix) -> list[tuple[str, str, str]]:
    """Every ``(ours, naming, theirs)`` of the matrix."""
    return [(ours, naming, theirs) for (ours, naming), row in matrix.items() for theirs in row]


def excluding(matrix: Matrix) -> list[tuple[str, str, str]]:
    """The cells whose verdict is :data:`EXCLUDES`."""
    return [cell for cell in cells(matrix) if matrix[cell[0], cell[1]][cell[2]] == EXCLUDES]


def cell_ids(some: list[tuple[str, str, str]], peer: str) -> list[str]:
    """Test ids: ``Mutex-kazoo-vs-<peer>-Lock``."""
    return [f"{ours}-{naming}-vs-{peer}-{theirs}" for ours, naming, theirs in some]


def verdict(they_got_in: bool, we_got_in: bool, both_shared: bool) -> str:
    """The verdict of a cell from its two tries (each side trying while the other holds)."""
    if not (they_got_in or we_got_in):
        return EXCLUDES
    return SHARES if both_shared and they_got_in and we_got_in else DOES_NOT_EXCLUDE


def make_recipe(
    zk: zkwire.Client, ours: str, path: str, naming: str, identifier: str = "zklock"
) -> zklock.recipe.LockRecipe:
    """zklock's recipe ``ours`` (a key of :data:`OUR_KIND`) on ``path``."""
    n: zklock.Naming = "kazoo" if naming == "kazoo" else "curator"
    if ours == "Mutex":
        return zklock.Mutex(zk, path, naming=n, identifier=identifier)
    if ours == "Election":
        return zklock.Election(zk, path, naming=n, identifier=identifier)
    rw = zklock.ReadWriteLock(zk, path, naming=n, identifier=identifier)
    return rw.read_lock if ours == "ReadLock" else rw.write_lock


async def hold_counter(
    zk: zkwire.Client, counter: str, kind: str, holds: Holds, side: str, conflicts: list[int]
) -> None:
    """One hold's work: an exclusive holder bumps the counter (version-checked), a shared one reads it
    twice; a conflict is appended to ``conflicts``; the hold's interval is recorded in ``holds``."""
    start = now_us()
    data, stat = await zk.get_data(counter)
    await trio.sleep(0.003)
    if kind == "x":
        try:
            await zk.set_data(counter, str(int(data) + 1).encode(), version=stat.version)
        except zkwire.BadVersionError:
            conflicts.append(1)
    elif (await zk.get_data(counter))[0] != data:
        conflicts.append(1)
    holds.add(side, kind, start, now_us())


@asynccontextmanager
async def kazoo_client(hosts: str) -> AsyncIterator[Any]:
    """A started ``KazooClient`` for the block (kazoo's calls block: run them with ``trio.to_thread``)."""
    from kazoo.client import KazooClient

    def start() -> Any:
        kz = KazooClient(hosts=hosts, timeout=10)
        kz.start(timeout=10)
        return kz

    kz = await trio.to_thread.run_sync(start)
    try:
        yield kz
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(kz.stop)
            await trio.to_thread.run_sync(kz.close)
