"""Barriers on one path with the real peers: Curator 5.4's DistributedBarrier/DistributedDoubleBarrier and
kazoo 2.11's Barrier/DoubleBarrier, all in one barrier; nobody released early, nobody left waiting."""

from __future__ import annotations

import pytest
import trio
from helpers.curator import curator_recipes
from helpers.interop import kazoo_client
from helpers.sessiontools import expire

import zklock
import zkwire


async def test_single_barrier_with_both_peers(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from kazoo.recipe.barrier import Barrier

    path = f"{zk_path}/barrier"
    async with kazoo_client(zk_hosts) as kz:
        async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
            ours = zklock.Barrier(zk, path)
            theirs = Barrier(kz, path)
            await java.ask("barrier-set", path)
            released: list[str] = []

            async def zklock_waits() -> None:
                await ours.wait()
                released.append("zklock")

            async def kazoo_waits() -> None:
                assert await trio.to_thread.run_sync(theirs.wait, 20)
                released.append("kazoo")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(zklock_waits)
                nursery.start_soon(kazoo_waits)
                assert await java.ask("barrier-wait", path, 300) == "WAITED false"
                assert released == []
                await ours.remove()
            assert sorted(released) == ["kazoo", "zklock"]
            assert await java.ask("barrier-wait", path, 1000) == "WAITED true"
            # The other way round: ours up, kazoo lowers it.
            await ours.set()
            with trio.move_on_after(0.3):
                await ours.wait()
                pytest.fail("released while the barrier is up")
            await trio.to_thread.run_sync(theirs.remove)
            with trio.fail_after(10):
                await ours.wait()


async def test_double_barrier_shared_by_four_clients_of_three_kinds(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """zklock (both namings), kazoo and Curator members of one 4-member double barrier: nobody enters
    before the fourth arrives, nobody leaves before the last one leaves."""
    from kazoo.recipe.barrier import DoubleBarrier

    path = f"{zk_path}/double"
    async with kazoo_client(zk_hosts) as kz:
        async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
            entered: list[str] = []
            left: list[str] = []
            go_leave = {name: trio.Event() for name in ("curator-naming", "kazoo-naming", "kazoo", "curator")}

            async def zklock_member(naming: zklock.Naming) -> None:
                name = f"{naming}-naming"
                barrier = zklock.DoubleBarrier(zk, path, 4, naming=naming)
                with trio.fail_after(30):
                    await barrier.enter()
                entered.append(name)
                await go_leave[name].wait()
                with trio.fail_after(30):
                    await barrier.leave()
                left.append(name)

            async def kazoo_member() -> None:
                theirs = DoubleBarrier(kz, path, 4)
                await trio.to_thread.run_sync(theirs.enter)
                entered.append("kazoo")
                await go_leave["kazoo"].wait()
                await trio.to_thread.run_sync(theirs.leave)
                left.append("kazoo")

            async def curator_member() -> None:
                assert await java.ask("dbarrier-enter", path, 4, 30000) == "ENTERED true"
                entered.append("curator")
                await go_leave["curator"].wait()
                assert await java.ask("dbarrier-leave", path, 30000) == "LEFT true"
                left.append("curator")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(zklock_member, "curator")
                nursery.start_soon(zklock_member, "kazoo")
                nursery.start_soon(kazoo_member)
                await trio.sleep(1.0)
                assert entered == []  # three of four: nobody released
                nursery.start_soon(curator_member)
                with trio.fail_after(30):
                    while len(entered) < 4:
                        await trio.sleep(0.02)
                for name in ("curator-naming", "kazoo", "curator"):
                    go_leave[name].set()
                await trio.sleep(1.0)
                assert left == []  # one member still inside: nobody has left
                go_leave["kazoo-naming"].set()
            assert sorted(left) == sorted(go_leave)
            assert await zk.get_children(path) == []


async def test_a_member_whose_session_expired_enters_with_the_next(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/double"
    async with zkwire.sessions(zk_hosts, session_timeout=4) as stream, zkwire.open_client(zk_hosts) as zk:
        waiting = zklock.DoubleBarrier(stream, path, 2)
        entered = trio.Event()

        async def first() -> None:
            await waiting.enter()
            entered.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            with trio.fail_after(10):
                while await zk.exists(waiting.node) is None:
                    await trio.sleep(0.02)
            old = stream.current
            assert old is not None
            await expire(old, zk_hosts)
            with trio.fail_after(15):  # back in the next session, still waiting
                while (stat := await zk.exists(waiting.node)) is None or stat.ephemeral_owner == old.session_id:
                    await trio.sleep(0.05)
            assert not entered.is_set()
            other = zklock.DoubleBarrier(zk, path, 2, naming="kazoo")
            with trio.fail_after(10):
                await other.enter()
                await entered.wait()
            with trio.fail_after(10):
                async with trio.open_nursery() as leaving:
                    leaving.start_soon(other.leave)
                    leaving.start_soon(waiting.leave)
        assert await zk.get_children(path) == []


async def test_a_cancelled_enter_leaves_nothing(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/double"
    async with zkwire.open_client(zk_hosts) as zk:
        barrier = zklock.DoubleBarrier(zk, path, 3)
        with trio.move_on_after(0.3):
            await barrier.enter()
        assert await zk.get_children(path) == []
        with pytest.raises(zkwire.InvalidArgumentError):
            zklock.DoubleBarrier(zk, path, 0)


async def test_a_lost_create_reply_makes_one_member_node(zk_hosts: str, zk_path: str, faultproxy) -> None:
    from helpers.addresses import first_server

    from zkwire.constants import OpCode

    path = f"{zk_path}/double"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk, zkwire.open_client(zk_hosts) as other:
            await other.ensure_path(path)
            barrier = zklock.DoubleBarrier(zk, path, 1)
            swallow = proxy.swallow_reply(op=(OpCode.CREATE, OpCode.CREATE2), path_prefix=barrier.node)
            with trio.fail_after(15):
                await barrier.enter()
            assert swallow.triggered
            await other.sync(path)
            assert sorted(await other.get_children(path)) == sorted([barrier.name, "ready"])
            with trio.fail_after(15):
                await barrier.leave()
            assert await other.get_children(path) == []


@pytest.mark.parametrize("naming", ["curator", "kazoo"])
async def test_leave_survives_a_lost_reply_to_deleting_ready(
    zk_hosts: str, zk_path: str, faultproxy, naming: zklock.Naming
) -> None:
    """The connection is cut just after the server deleted ``ready`` (last in Curator's order, first in
    kazoo's): leave carries on after the reconnection instead of raising ConnectionLossError (as the
    toolbox nemesis once saw)."""
    from helpers.addresses import first_server

    from zkwire.constants import OpCode

    path = f"{zk_path}/double"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk, zkwire.open_client(zk_hosts) as other:
            barrier = zklock.DoubleBarrier(zk, path, 1, naming=naming)
            with trio.fail_after(15):
                await barrier.enter()
            swallow = proxy.swallow_reply(op=OpCode.DELETE, path_prefix=f"{path}/ready")
            with trio.fail_after(15):
                await barrier.leave()
            assert swallow.triggered
            assert await other.get_children(path) == []
