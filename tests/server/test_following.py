"""Clients following a reconfigurable ensemble (real 3.8 servers, members added and removed with
``reconfig``): sessions spread over new members, survive the removal of their member with their ephemeral
nodes, watches and locks, under a chroot too."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from types import ModuleType

import pytest
import trio
from helpers.sessiontools import expire

import zklock
import zkwire
from zkwire import EventType, SessionState
from zkwire.testing.embedded import EmbeddedEnsemble

pytestmark = pytest.mark.ensemble

SESSIONS = 30
#: The runs of the removal test in which the client was cut before it could move (reported, not failed).
CUT: list[str] = []


def sessions_by_member(ens: EmbeddedEnsemble, ids: dict[int, int]) -> Counter[int]:
    """How many of the sessions ``ids`` (session id -> client number) each running member serves, counted
    with ``cons`` on the member."""
    counts: Counter[int] = Counter()
    for index in ens.running_members():
        cons = ens.four_letter_word(index, "cons")
        counts[index] = sum(f"sid=0x{sid:x}" in cons for sid in ids)
    return counts


async def settled(clients: list[zkwire.Client], members: int) -> None:
    """Until every client has followed the configuration of ``members`` members and finished moving."""
    with trio.fail_after(30):
        while not all(
            zk.ensemble is not None and len(zk.ensemble.members) == members and not zk._core.moving for zk in clients
        ):
            await trio.sleep(0.05)


async def test_sessions_spread_over_new_members_and_survive_their_removal(
    reconfigurable: EmbeddedEnsemble, zk_path: str
) -> None:
    """3 -> 5 -> 3 members with 30 sessions, each sending a request every 20 ms throughout.

    Growing, one member at a time: at each change a session moves with probability 1 - M/N (1/4, then
    1/5), always to the new member, so the two new members hold 6 sessions each in expectation (12
    together, standard deviation 2.7); the test asks for at least 4 together and at least one each (a
    chance below 1 in 1000 of failing a correct client), every move exactly one planned re-attach and no
    other connection.  Shrinking: the sessions on the removed members reconnect (their
    in-flight requests may fail with ConnectionLossError, nothing else), no session expires, every
    ephemeral node stays.
    """
    ens = reconfigurable
    hosts = ens.hosts
    failures: dict[int, list[BaseException]] = {i: [] for i in range(SESSIONS)}
    states: dict[int, list[SessionState]] = {i: [] for i in range(SESSIONS)}
    async with zkwire.open_client(hosts, auth=[ens.super_auth]) as admin:
        await admin.ensure_path(zk_path)
        async with trio.open_nursery() as nursery:
            clients: list[zkwire.Client] = [None] * SESSIONS  # type: ignore[list-item]  # filled below
            opened = trio.Event()

            async def session(i: int) -> None:
                async with zkwire.open_client(hosts, move_spread=1.0) as zk:
                    zk.add_state_listener(states[i].append)
                    await zk.create(f"{zk_path}/s{i}", ephemeral=True)
                    clients[i] = zk
                    if all(c is not None for c in clients):
                        opened.set()
                    while True:
                        try:
                            await zk.get_data(f"{zk_path}/s{i}")
                        except zkwire.ZKError as e:
                            failures[i].append(e)
                        await trio.sleep(0.02)

            for i in range(SESSIONS):
                nursery.start_soon(session, i)
            await opened.wait()
            await settled(clients, 3)
            ids = {zk.session_id: i for i, zk in enumerate(clients)}
            before = sessions_by_member(ens, ids)
            assert sum(before.values()) == SESSIONS

            new = []
            for size in (4, 5):  # one member per reconfiguration, as an operator adds them
                attached = [zk._core.attachments for zk in clients]
                where = sessions_by_member(ens, ids)
                new.append(await trio.to_thread.run_sync(ens.add_member))
                await settled(clients, size)
                await trio.sleep(0.5)
                now = sessions_by_member(ens, ids)
                moves = [zk._core.attachments - a for zk, a in zip(clients, attached, strict=True)]
                print(f"adding member {size}: {sum(moves)} of {SESSIONS} sessions moved, each re-attaching once")
                assert set(moves) <= {0, 1}  # at most one re-attach per session and change
                # A session re-attached exactly when it moved, and only to balance the load: the newest
                # member took the moved sessions (all of them, unless it refused one for being behind on
                # the zxid the session had seen: the move then went on to another member), and the old
                # members lost exactly the moved ones.
                gone = sum(where.values()) - sum(now[i] for i in where)
                assert now[new[-1]] <= gone <= sum(moves) and sum(moves) - now[new[-1]] <= 2, (moves, where, now)
            grown = sessions_by_member(ens, ids)
            print(f"sessions by member: before {dict(before)}, grown {dict(grown)}")  # for the report (-s)
            assert sum(grown.values()) == SESSIONS, grown
            assert grown[new[0]] + grown[new[1]] >= 4 and grown[new[0]] >= 1 and grown[new[1]] >= 1, grown
            assert all(states[i] == [] for i in range(SESSIONS)), states  # no state change seen
            assert all(f == [] for f in failures.values()), failures

            on_removed = {
                ids[sid] for sid in ids if any(f"sid=0x{sid:x}" in ens.four_letter_word(n, "cons") for n in new)
            }
            for index in new:
                await trio.to_thread.run_sync(ens.remove_member, index)
            await settled(clients, 3)
            await trio.sleep(0.5)
            shrunk = sessions_by_member(ens, ids)
            print(f"sessions by member: shrunk {dict(shrunk)}; on removed members before: {len(on_removed)}")
            assert sum(shrunk.values()) == SESSIONS and set(shrunk) <= {0, 1, 2}, shrunk
            for i, zk in enumerate(clients):
                assert zk.state is SessionState.CONNECTED
                if i not in on_removed:
                    assert failures[i] == [], (
                        i,
                        hex(clients[i].session_id),
                        failures[i],
                        states[i],
                        on_removed,
                        shrunk,
                    )
                assert all(isinstance(e, zkwire.ConnectionLossError) for e in failures[i]), failures[i]
            assert len(await admin.get_children(zk_path)) == SESSIONS  # every ephemeral node stayed
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("chroot", ["", "/app"])
async def test_a_client_given_one_member_survives_its_removal(
    reconfigurable: EmbeddedEnsemble, zk_path: str, chroot: str
) -> None:
    """The client's connect string names member 1 only; it learns the others from the configuration
    (and may move to one of them, planned).  Member 1 is then removed and stopped: the session lives on
    elsewhere with its ephemeral node, its one-shot, persistent and recursive watches and its lock; the
    lock holder is told "lost" only if its connection was cut (never by a move): when member 1 is a follower
    its sessions move away planned, on the news of the change; when it is the leader its removal makes
    every member drop its clients (protocol-notes/reconfig.md), and the holder is told, as for any cut."""
    ens = reconfigurable
    async with zkwire.open_client(ens.hosts, auth=[ens.super_auth]) as admin:
        await admin.ensure_path(chroot + zk_path + "/tree")
        async with zkwire.open_client(ens.member_hosts(0) + chroot, move_spread=0.2) as zk:
            states: list[SessionState] = []
            zk.add_state_listener(states.append)
            await zk.create(f"{zk_path}/eph", ephemeral=True)
            _, _, one_shot = await zk.get_data(f"{zk_path}/tree", watch=True)
            async with (
                zk.add_watch(f"{zk_path}/tree") as persistent,
                zk.add_watch(zk_path, recursive=True) as recursive,
                zklock.Mutex(zk, f"{zk_path}/lock", cancel_on_loss=False) as lease,
            ):
                with trio.fail_after(10):
                    while zk.ensemble is None or zk._core.moving:
                        await trio.sleep(0.02)
                assert len(zk._core.hosts) == 3
                moved_before = zk._core.attachments == 2
                on_first = str(zk.connected_host) == ens.member_hosts(0)
                assert moved_before != on_first
                leader = ens.leader_index()
                # Removed, then stopped once its sessions have left it (as an operator would).
                await trio.to_thread.run_sync(lambda: ens.remove_member(0, stop=False))
                with trio.fail_after(20):
                    while (
                        zk.ensemble is None
                        or len(zk.ensemble.members) != 2
                        or zk.state is not SessionState.CONNECTED
                        or str(zk.connected_host) == ens.member_hosts(0)
                    ):
                        await trio.sleep(0.02)
                await trio.to_thread.run_sync(ens.stop_member, 0)
                await trio.sleep(0.2)
                assert zk.state is SessionState.CONNECTED
                if states == []:  # moved, planned, before the removal or on the news of it
                    assert not lease.lost, lease.lost_reason
                else:  # cut: the leader's removal drops every member's clients
                    assert leader == 0, (states, leader, moved_before)
                    assert states[0] is SessionState.SUSPENDED and states[-1] is SessionState.CONNECTED
                    assert lease.lost  # told
                    CUT.append(chroot)
                # The session is the one it was: its node, its watches.
                stat = await admin.exists(f"{chroot}{zk_path}/eph")
                assert stat is not None and stat.ephemeral_owner == zk.session_id
                await admin.set_data(f"{chroot}{zk_path}/tree", b"x")
                with trio.fail_after(5):
                    assert (await one_shot.wait()).type is EventType.NODE_DATA_CHANGED
                    assert (await persistent.__anext__()).type is EventType.NODE_DATA_CHANGED
                    while (await recursive.__anext__()).path != f"{zk_path}/tree":
                        pass
            assert zk.state is SessionState.CONNECTED


@pytest.fixture
async def wildcard_ensemble(local_zookeeper: None) -> AsyncIterator[EmbeddedEnsemble]:
    ens = EmbeddedEnsemble(3, reconfigurable=True, wildcard_client_addresses=True)
    await trio.to_thread.run_sync(ens.start)
    try:
        yield ens
    finally:
        await trio.to_thread.run_sync(ens.stop)


async def test_wildcard_client_addresses_become_the_quorum_hosts(wildcard_ensemble: EmbeddedEnsemble) -> None:
    """Members given a bare client port show ``0.0.0.0:<port>`` in the config node: the client connects to
    their quorum host (127.0.0.1) instead, and follows a change."""
    ens = wildcard_ensemble
    assert all(";0.0.0.0:" in line for line in ens.config_text().splitlines() if line.startswith("server."))
    async with zkwire.open_client(ens.member_hosts(0), move_spread=0.2) as zk:
        with trio.fail_after(10):
            while zk.ensemble is None or zk._core.moving:
                await trio.sleep(0.02)
        expected = {zkwire.HostPort("127.0.0.1", ens.member_port(i)) for i in range(3)}
        assert set(zk._core.hosts) == expected
        added = await trio.to_thread.run_sync(ens.add_member)
        with trio.fail_after(10):
            while len(zk._core.hosts) != 4:
                await trio.sleep(0.02)
        assert zkwire.HostPort("127.0.0.1", ens.member_port(added)) in zk._core.hosts
        assert zk.connected_host is not None and zk.connected_host.host == "127.0.0.1"
        assert zk.state is SessionState.CONNECTED


async def test_a_client_through_a_proxy_keeps_its_way_in(
    reconfigurable: EmbeddedEnsemble, faultproxy: ModuleType
) -> None:
    """Reached through a proxy (as through NAT or a container's published ports), the ensemble's
    configuration names addresses that are not the client's way in: the client keeps its connect string's
    servers, through a change too, instead of moving where it cannot follow."""
    ens = reconfigurable
    host, port = ens._member_address(0)
    async with faultproxy.open_fault_proxy(host, port) as proxy, zkwire.open_client(proxy.hosts) as zk:
        config = await zk.get_config()
        assert len(config.members) == 3
        await trio.sleep(0.5)
        assert [str(h) for h in zk._core.hosts] == [proxy.hosts]
        await trio.to_thread.run_sync(ens.add_member)
        with trio.fail_after(10):
            while len((await zk.get_config()).members) != 4:
                await trio.sleep(0.05)
        await trio.sleep(0.5)
        assert [str(h) for h in zk._core.hosts] == [proxy.hosts]
        assert zk.state is SessionState.CONNECTED and zk._core.attachments == 1


async def test_the_connect_strings_names_are_kept(reconfigurable: EmbeddedEnsemble) -> None:
    """Given ``localhost:<port>`` for member 1, the client keeps that name in its host list (it resolves
    to the address the configuration names); the members it did not name come from the configuration."""
    ens = reconfigurable
    named = zkwire.HostPort("localhost", ens.member_port(0))
    async with zkwire.open_client(f"{named}/app", move_spread=60, wait_connected=False) as zk:
        await zk.wait_connected()
        others = {zkwire.HostPort("127.0.0.1", ens.member_port(i)) for i in (1, 2)}
        # The follower keeps the configuration (zk.ensemble) before it has resolved the connect string's
        # names and installed the host list: wait for the list itself.
        with trio.fail_after(10):
            while zk.ensemble is None or len(zk._core.hosts) < 3:
                await trio.sleep(0.02)
        assert set(zk._core.hosts) == {named} | others
        assert zk.chroot == "/app"


async def test_the_next_session_opens_on_the_members_followed(reconfigurable: EmbeddedEnsemble) -> None:
    """A ``sessions()`` stream given member 1 only: member 1 leaves the ensemble and stops, then the session
    expires; the next session opens on the members the first one followed, not on the connect string's
    member that is gone."""
    ens = reconfigurable
    seen: list[int] = []
    with trio.fail_after(60):
        async with zkwire.sessions(ens.member_hosts(0), session_timeout=4, move_spread=0.2) as stream:
            async for zk in stream:
                seen.append(zk.session_id)
                if len(seen) == 2:
                    assert zk.connected_host is not None and str(zk.connected_host) != ens.member_hosts(0)
                    break
                while zk.ensemble is None or zk._core.moving:
                    await trio.sleep(0.02)
                await trio.to_thread.run_sync(ens.remove_member, 0)
                while zk.ensemble is None or len(zk.ensemble.members) != 2 or zk.connected_host is None:
                    await trio.sleep(0.02)
                await expire(zk, str(zk.connected_host))
    assert len(set(seen)) == 2
