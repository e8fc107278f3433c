"""Real network partitions: an ensemble whose members live in network namespaces (zkwire.testing.netns).

The links are cut with packet filter rules (packets dropped, as in a real partition) while the
servers, the clients and the locks run unchanged. Needs root on Linux (the fixture skips otherwise);
the plugin heals the links and waits for the whole ensemble after each test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from helpers.addresses import first_server

import zklock
import zkwire
from zkwire import SessionState
from zkwire.testing import ServerOptions, ZooKeeperStartError, netns
from zkwire.testing.handles import NetnsEnsembleHandle
from zkwire.testing.netns import NetnsEnsemble, netns_unavailable_reason

pytestmark = [pytest.mark.ensemble, pytest.mark.slow]

LIMIT = 60


@asynccontextmanager
async def client_on(net: NetnsEnsembleHandle, index: int, session_timeout: float) -> AsyncIterator[zkwire.Client]:
    """A client with the whole connect string that happens to be connected to member ``index``
    (the client picks a member at random: open sessions until one lands there)."""
    for _ in range(40):
        async with zkwire.open_client(net.hosts, session_timeout=session_timeout) as zk:
            host = zk.connected_host
            if host is not None and f"{host.host}:{host.port}" == net.member_hosts(index):
                yield zk
                return
    raise AssertionError(f"no session landed on member {index}")


def member_of(net: NetnsEnsembleHandle, zk: zkwire.Client) -> int | None:
    host = zk.connected_host
    if host is None:
        return None
    return next(i for i in range(net.size) if net.member_hosts(i) == f"{host.host}:{host.port}")


async def test_isolated_leader_holder_is_told_before_another_contender_is_granted(
    zk_netns_ensemble: NetnsEnsembleHandle, zk_path: str
) -> None:
    """The leader, with the lock holder's session on it, loses its followers. The holder must learn
    that its lease is lost before the contender (on the majority side) is granted the lock."""
    net = zk_netns_ensemble
    path = f"{zk_path}/lock"
    leader = await net.leader()
    followers = [i for i in range(net.size) if i != leader]
    majority_hosts = ",".join(net.member_hosts(i) for i in followers)
    held = trio.Event()
    seen: dict[str, float | int] = {}

    async with (
        client_on(net, leader, session_timeout=6) as holder_zk,
        zkwire.open_client(majority_hosts, session_timeout=6) as contender_zk,
    ):

        async def holder() -> None:
            with pytest.raises(zklock.LockLostError):
                async with zklock.Mutex(holder_zk, path) as lease:
                    seen["holder_token"] = lease.fencing_token
                    held.set()
                    await trio.sleep_forever()  # cancelled when the lease is lost
            assert lease.lost_at is not None
            seen["holder_lost_at"] = lease.lost_at

        async def contender() -> None:
            # Its lease may be lost in turn if the majority side holds another election right after
            # the grant (its member then drops its clients): that comes after the grant checked here.
            try:
                async with zklock.Mutex(contender_zk, path) as lease:
                    seen["contender_granted_at"] = trio.current_time()
                    seen["contender_token"] = lease.fencing_token
            except zklock.LockLostError:
                assert "contender_granted_at" in seen

        with trio.fail_after(LIMIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(holder)
                await held.wait()
                nursery.start_soon(contender)
                while len(await _children(contender_zk, path)) < 2:  # the contender queues
                    await trio.sleep(0.02)
                net.isolate(leader)
        # the old leader gave up; a follower leads now
        assert await net.leader() != leader

    assert seen["holder_lost_at"] < seen["contender_granted_at"], seen
    assert seen["contender_token"] > seen["holder_token"]


async def _children(zk: zkwire.Client, path: str) -> list[str]:
    """Children of ``path``; none while the member this session reads from has not yet applied its
    creation by another session (members may lag each other's writes)."""
    try:
        return await zk.get_children(path)
    except zkwire.NoNodeError:
        return []


async def test_client_on_the_minority_side_is_suspended_writes_nothing_and_recovers(
    zk_netns_ensemble: NetnsEnsembleHandle, zk_path: str
) -> None:
    """A 2|1 split with the client on the side of the lone member: the member stops serving, the
    client is suspended (it cannot reach the majority), none of its writes happens, and after the heal
    the same session carries on."""
    net = zk_netns_ensemble
    leader = await net.leader()
    lone = next(i for i in range(net.size) if i != leader)
    majority = [i for i in range(net.size) if i != lone]
    # The observer reaches the majority on the peer addresses, which cut_clients leaves open.
    observer_hosts = ",".join(net.peer_hosts(i) for i in majority)

    async with (
        client_on(net, lone, session_timeout=20) as zk,
        zkwire.open_client(observer_hosts, session_timeout=20) as observer,
    ):
        await zk.create(zk_path)
        sid = zk.session_id
        with trio.fail_after(LIMIT):
            net.partition(majority, [lone])
            net.cut_clients(*majority)  # this process is on the lone member's side
            await zk.wait_for_state(SessionState.SUSPENDED)
            # the majority goes on without us
            await observer.create(f"{zk_path}/majority", b"while split")
            # nothing the suspended client asks for happens
            with pytest.raises(trio.TooSlowError), trio.fail_after(3):
                await zk.create(f"{zk_path}/minority")
            assert await observer.exists(f"{zk_path}/minority") is None
            assert member_of(net, zk) is None
            net.heal()
            await zk.wait_for_state(SessionState.CONNECTED)
        assert zk.session_id == sid
        assert (await zk.get_data(f"{zk_path}/majority"))[0] == b"while split"
        assert await zk.exists(f"{zk_path}/minority") is None  # the cancelled create never happened
        await zk.create(f"{zk_path}/after", b"healed")
        assert (await observer.get_data(f"{zk_path}/after"))[0] == b"healed"


async def test_one_way_loss_from_the_leader_moves_the_follower_and_its_client(
    zk_netns_ensemble: NetnsEnsembleHandle, zk_path: str
) -> None:
    """Packets from the leader to one follower are lost (the other direction passes): the follower
    drops out, its client moves to a serving member with its session, and writes go on; after the
    heal the follower rejoins and has every write."""
    net = zk_netns_ensemble
    leader = await net.leader()
    follower = next(i for i in range(net.size) if i != leader)
    async with client_on(net, follower, session_timeout=10) as zk:
        sid = zk.session_id
        await zk.create(zk_path)
        with trio.fail_after(LIMIT):
            net.cut(leader, follower, both_ways=False)
            await zk.wait_for_state(SessionState.SUSPENDED)
            await zk.wait_for_state(SessionState.CONNECTED)
            assert zk.session_id == sid and member_of(net, zk) != follower
            for i in range(5):
                await zk.create(f"{zk_path}/n{i}")
            net.heal()
            await net.wait_until_serving()
        # the follower is back and has caught up
        async with zkwire.open_client(net.member_hosts(follower)) as direct:
            await direct.sync(zk_path)
            assert sorted(await direct.get_children(zk_path)) == [f"n{i}" for i in range(5)]


async def test_cut_links_and_the_client_namespace(zk_netns_ensemble: NetnsEnsembleHandle) -> None:
    """The harness itself: a process in the client namespace reaches the members until their client
    addresses are cut; probes still get through; heal restores everything."""
    net = zk_netns_ensemble
    probe = (
        "import socket, sys\n"
        "try:\n"
        "    s = socket.create_connection((sys.argv[1], 2181), timeout=1.5); s.sendall(b'ruok')\n"
        "    print(s.recv(4).decode())\n"
        "except OSError as e:\n"
        "    print('unreachable', e)\n"
    )

    def ruok_from_client_namespace(index: int) -> str:
        host = first_server(net.member_hosts(index))[0]
        argv = net.client_command([sys.executable, "-c", probe, host])
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True).stdout.strip()

    assert await trio.to_thread.run_sync(ruok_from_client_namespace, 0) == "imok"
    net.cut_clients(0)
    assert net.blocked == {("client", "m0"), ("m0", "client")}
    assert (await trio.to_thread.run_sync(ruok_from_client_namespace, 0)).startswith("unreachable")
    assert await trio.to_thread.run_sync(ruok_from_client_namespace, 1) == "imok"
    assert net.four_letter_word(0, "ruok") == "imok"  # probes use the peer address
    net.heal()
    assert net.blocked == frozenset()
    assert await trio.to_thread.run_sync(ruok_from_client_namespace, 0) == "imok"


# --------------------------------------------------------------------------------------------------------
# the harness cleans up


def _namespaces(prefix: str) -> list[str]:
    netns = Path("/var/run/netns")
    return sorted(p.name for p in netns.glob(f"{prefix}-*")) if netns.is_dir() else []


@pytest.mark.usefixtures("local_zookeeper")
def test_namespaces_are_removed_when_a_start_fails() -> None:
    reason = netns_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    ensemble = NetnsEnsemble(3, ServerOptions(extra_config={"tickTime": "not-a-number"}))
    with pytest.raises(ZooKeeperStartError, match="exited with code"):
        ensemble.start(timeout=30)
    assert _namespaces(ensemble.prefix) == []
    assert not Path(f"/sys/class/net/{ensemble.prefix}").exists()
    # The member that exited says why (the others were stopped, maybe before logging anything).
    assert any("not-a-number" in ensemble.log_tail(i, 100) for i in range(3))


def test_namespaces_of_a_dead_process_are_removed_by_the_next_one(tmp_path: Path) -> None:
    reason = netns_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    dead = subprocess.Popen(["true"])
    dead.wait()
    prefix = f"zkw{os.urandom(3).hex()}"
    netns.REGISTRY.mkdir(parents=True, exist_ok=True)
    (netns.REGISTRY / prefix).write_text(f"{dead.pid}\n")
    try:
        subprocess.run(["ip", "netns", "add", f"{prefix}-m0"], check=True, timeout=20)
        subprocess.run(["ip", "netns", "add", f"{prefix}-sw"], check=True, timeout=20)
        assert _namespaces(prefix) == [f"{prefix}-m0", f"{prefix}-sw"]
        netns.remove_stale()
        assert _namespaces(prefix) == []
        assert not (netns.REGISTRY / prefix).exists()
    finally:
        for name in _namespaces(prefix):
            subprocess.run(["ip", "netns", "del", name], check=False, timeout=20)
        (netns.REGISTRY / prefix).unlink(missing_ok=True)
