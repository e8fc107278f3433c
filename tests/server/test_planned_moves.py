"""A planned move on a real ensemble (``Client.update_hosts``): the session moves to another member with its
ephemeral node, its watches (one-shot, persistent, recursive) and a held lock, while requests keep coming;
the application sees no state change and no request fails.  The configuration node, read past a chroot."""

from __future__ import annotations

import trio

import zklock
import zkwire
from zkwire import EventType, SessionState
from zkwire.client.connection import tcp_connector
from zkwire.testing import ZooKeeperEnsemble


async def moved(zk: zkwire.Client, hosts: list[str], origin: str) -> str:
    """Give ``zk`` (on ``origin``) the whole list until its session decides to move (the decision is
    random, 2 in 3 here), then wait until it is on another member; that member."""
    for _ in range(40):
        if zk.update_hosts(hosts, move_spread=0.2):
            break
        zk.update_hosts([origin])  # back to the one member (it stays: nothing to move for)
    else:
        raise AssertionError("the session never decided to move")
    with trio.fail_after(10):
        while str(zk.connected_host) == origin or zk.connected_host is None:
            await trio.sleep(0.02)
    return str(zk.connected_host)


async def test_a_planned_move_keeps_everything_and_tells_nothing(ensemble: ZooKeeperEnsemble, zk_path: str) -> None:
    hosts = [ensemble.member_hosts(i) for i in range(3)]
    async with (
        zkwire.open_client(hosts[0], follow_ensemble=False) as zk,
        zkwire.open_client(",".join(hosts), follow_ensemble=False) as other,
    ):
        await zk.ensure_path(f"{zk_path}/tree")
        await zk.create(f"{zk_path}/eph", b"e", ephemeral=True)
        states: list[SessionState] = []
        zk.add_state_listener(states.append)
        _, _, one_shot = await zk.get_data(f"{zk_path}/tree", watch=True)
        async with zk.add_watch(f"{zk_path}/tree") as persistent, zk.add_watch(zk_path, recursive=True) as recursive:
            await moved_with_everything(ensemble, zk, other, hosts, zk_path, states, one_shot, persistent, recursive)


async def moved_with_everything(
    ensemble: ZooKeeperEnsemble,
    zk: zkwire.Client,
    other: zkwire.Client,
    hosts: list[str],
    zk_path: str,
    states: list[SessionState],
    one_shot: zkwire.Watch,
    persistent: zkwire.PersistentWatch,
    recursive: zkwire.PersistentWatch,
) -> None:
    if True:
        failures: list[BaseException] = []
        done = 0

        async def busy() -> None:  # requests all through the move: none may fail
            nonlocal done
            while True:
                try:
                    await zk.get_data(f"{zk_path}/eph")
                    done += 1
                except zkwire.ZKError as e:
                    failures.append(e)
                await trio.sleep(0.001)

        async with zklock.Mutex(zk, f"{zk_path}/lock") as lease, trio.open_nursery() as nursery:
            nursery.start_soon(busy)
            await trio.sleep(0.1)
            target = await moved(zk, hosts, hosts[0])
            await trio.sleep(0.2)
            assert not lease.lost, lease.lost_reason
            nursery.cancel_scope.cancel()
        assert target in hosts[1:]
        assert failures == [] and done > 10
        assert states == []  # the lock holder was told nothing; no SUSPENDED, no CONNECTED again
        # The session is the same: its ephemeral node is there, owned by it, and the watches fire.
        stat = await other.exists(f"{zk_path}/eph")
        assert stat is not None and stat.ephemeral_owner == zk.session_id
        await other.set_data(f"{zk_path}/tree", b"x")
        with trio.fail_after(5):
            assert (await one_shot.wait()).type is EventType.NODE_DATA_CHANGED
            assert (await persistent.__anext__()).type is EventType.NODE_DATA_CHANGED
            while (await recursive.__anext__()).path != f"{zk_path}/tree":
                pass  # the lock's nodes came and went under the path too
        # The member it moved to lists the session among its connections.
        index = hosts.index(target)
        assert f"sid=0x{zk.session_id:x}" in ensemble.four_letter_word(index, "cons")


async def test_the_configuration_is_read_past_the_chroot(ensemble: ZooKeeperEnsemble, zk_path: str) -> None:
    async with zkwire.open_client(ensemble.hosts) as zk:
        await zk.ensure_path(zk_path)
        plain = await zk.get_config()
    assert [m.id for m in plain.members] == [1, 2, 3]
    async with zkwire.open_client(ensemble.hosts + zk_path) as chrooted:
        config, watch = await chrooted.get_config(watch=True)
        assert config == plain
        assert config.stat is not None and config.stat.version == -1
        assert not watch.triggered


async def test_a_standalone_server_has_an_empty_configuration(zk_hosts: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        config = await zk.get_config()
    assert config.version == 0 and config.members == () and config.text() == ""


async def test_closing_during_a_move_closes_the_session_at_once(zk_hosts: str, zk_path: str) -> None:
    """close() while the session re-attaches elsewhere (the target is slow to connect): closeSession is
    sent once the session is open again, so its ephemeral node goes at once, not after its timeout."""
    port = int(zk_hosts.rpartition(":")[2])
    plain = tcp_connector(None)
    reattaching = trio.Event()

    async def connect(host: zkwire.HostPort) -> trio.abc.Stream:
        if host.host == "localhost":  # the move's target: the same server by another name
            reattaching.set()
            await trio.sleep(1.0)
        return await plain(host)

    async with zkwire.open_client(zk_hosts) as other:
        await other.ensure_path(zk_path)
        async with zkwire.open_client(
            f"127.0.0.1:{port}", follow_ensemble=False, connect=connect, session_timeout=8.0
        ) as zk:
            await zk.create(f"{zk_path}/eph", ephemeral=True)
            while not zk.update_hosts([f"127.0.0.1:{port}", f"localhost:{port}"], move_spread=0):
                zk.update_hosts([f"127.0.0.1:{port}"])
            await reattaching.wait()
            assert zk._core.moving and zk.state is SessionState.CONNECTED
        closed = trio.current_time()
        with trio.fail_after(4):  # well under the 8 s session timeout
            while await other.exists(f"{zk_path}/eph") is not None:
                await trio.sleep(0.05)
        assert trio.current_time() - closed < 2.5
