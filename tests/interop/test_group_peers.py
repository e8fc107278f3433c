"""Group membership on one path with the real peers: kazoo 2.11's Party and ShallowParty, Curator 5.4's
GroupMember; each side sees the other's joins, leaves and (Curator) payload changes, and a member whose
session expired is back exactly once."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from helpers.curator import curator_recipes
from helpers.interop import kazoo_client
from helpers.sessiontools import expire

import zklock
import zkwire


async def _eventually(read: Callable[[], Awaitable[Any]], expected: Any, seconds: float = 15) -> None:
    with trio.fail_after(seconds):
        while (got := await read()) != expected:
            await trio.sleep(0.05)
    assert got == expected


@pytest.mark.parametrize("shallow", [False, True], ids=["Party", "ShallowParty"])
async def test_kazoo_party_both_ways(zk_hosts: str, zk_path: str, shallow: bool) -> None:
    from kazoo.recipe.party import Party, ShallowParty

    path = f"{zk_path}/party"
    async with kazoo_client(zk_hosts) as kz:
        theirs = (ShallowParty if shallow else Party)(kz, path, "kazoo-member")
        await trio.to_thread.run_sync(theirs.join)
        kind = zklock.ShallowParty if shallow else zklock.Party
        async with zkwire.open_client(zk_hosts) as zk:
            views: list[list[str]] = []

            async def follow() -> None:
                async for members in zklock.watch_party(zk, path, shallow=shallow):
                    views.append(members)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow)
                async with kind(zk, path, "zklock-member") as member:
                    with trio.fail_after(10):
                        await member.wait_joined()

                    async def kazoo_sees() -> list[str]:
                        return sorted(await trio.to_thread.run_sync(lambda: list(theirs)))

                    await _eventually(kazoo_sees, ["kazoo-member", "zklock-member"])
                    assert await member.current_members() == ["kazoo-member", "zklock-member"]
                    await trio.to_thread.run_sync(theirs.leave)

                    async def views_last() -> list[str] | None:
                        return views[-1] if views else None

                    await _eventually(views_last, ["zklock-member"])
                await _eventually(kazoo_sees, [])
                await _eventually(views_last, [])
                nursery.cancel_scope.cancel()
        assert ["kazoo-member", "zklock-member"] in views


async def test_a_party_member_is_back_once_after_its_session_expired(zk_hosts: str, zk_path: str) -> None:
    from kazoo.recipe.party import Party

    path = f"{zk_path}/party"
    async with kazoo_client(zk_hosts) as kz:
        theirs = Party(kz, path, "kazoo-member")
        async with zkwire.sessions(zk_hosts, session_timeout=4) as stream:
            async with zklock.Party(stream, path, "zklock-member") as member:
                with trio.fail_after(10):
                    await member.wait_joined()
                first = stream.current
                assert first is not None
                await expire(first, zk_hosts)

                async def kazoo_sees() -> list[str]:
                    return sorted(await trio.to_thread.run_sync(lambda: list(theirs)))

                async def next_session() -> bool:
                    return stream.current is not first and stream.current is not None

                await _eventually(next_session, True)
                await _eventually(kazoo_sees, ["zklock-member"])
                names = await trio.to_thread.run_sync(kz.get_children, path)
                assert len(names) == 1 and names[0].endswith("__party__")
                owner = (await trio.to_thread.run_sync(kz.exists, f"{path}/{names[0]}")).ephemeralOwner
                assert stream.current is not None and owner == stream.current.session_id


async def test_curator_group_member_both_ways(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = f"{zk_path}/group"
    async with curator_recipes(tmp_path_factory, zk_hosts) as curator, zkwire.open_client(zk_hosts) as zk:
        await curator.ask("join", path, "java", "from-java")
        async with zklock.open_group_view(zk, path) as view:

            async def ours() -> dict[str, bytes]:
                return view.members

            async def theirs() -> dict[str, str]:
                return await curator.members(path)

            await _eventually(ours, {"java": b"from-java"})
            async with zklock.GroupMember(zk, path, "python", b"from-python") as member:
                with trio.fail_after(10):
                    assert await member.wait_joined() == f"{path}/python"
                await _eventually(theirs, {"java": "from-java", "python": "from-python"})
                await _eventually(ours, {"java": b"from-java", "python": b"from-python"})
                await member.set_payload(b"changed-python")
                await curator.ask("payload", path, "changed-java")
                await _eventually(theirs, {"java": "changed-java", "python": "changed-python"})
                await _eventually(ours, {"java": b"changed-java", "python": b"changed-python"})
                assert await member.current_members() == {"java": b"changed-java", "python": b"changed-python"}
            await _eventually(theirs, {"java": "changed-java"})
            await curator.ask("leave", path)
            await _eventually(ours, {})


async def test_group_view_changes_are_snapshots(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/group"
    async with zkwire.open_client(zk_hosts) as zk, zklock.open_group_view(zk, path) as view:
        seen: list[dict[str, bytes]] = []

        async def follow() -> None:
            async for members in view.changes():
                seen.append(members)
                if members == {"a": b"1", "b": b"2"}:
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            await trio.sleep(0.1)
            async with zklock.GroupMember(zk, path, "a", b"1"), zklock.GroupMember(zk, path, "b", b"2"):
                with trio.fail_after(10):
                    while not seen or seen[-1] != {"a": b"1", "b": b"2"}:
                        await trio.sleep(0.02)
        assert all(s != t for s, t in itertools.pairwise(seen))  # never the same snapshot twice


def test_bad_member_names_are_refused() -> None:
    zk: Any = object()
    for bad in ("", "a/b", "..", "x\ny"):
        with pytest.raises(zkwire.InvalidArgumentError):
            zklock.GroupMember(zk, "/g", bad)
        if bad:
            with pytest.raises(zkwire.InvalidArgumentError):
                zklock.ShallowParty(zk, "/p", bad)
