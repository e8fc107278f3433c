"""A host-list change: which sessions move (the spread it gives, by simulation over many sessions), and a
planned move carried out by the session core against the fake server (no failed request, the state stays
CONNECTED, watches presented again, the move given up or failed cleanly)."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from helpers.fakeserver import ConnectionPair
from helpers.sessioncore import H1, H2, H3, Watcher, data_reply, get_data, make_core, only

from zkwire.constants import OpCode
from zkwire.errors import ConnectionLossError, InvalidArgumentError
from zkwire.sansio.hosts import HostPort, HostRotation, move_decision
from zkwire.sansio.session import DropConnection, Moved, Reply, SessionState, StateChanged

H4, H5 = HostPort("zk4", 2181), HostPort("zk5", 2181)
SESSIONS = 30_000


def spread(old: list[HostPort], new: list[HostPort], seed: int = 7) -> Counter[HostPort]:
    """Where SESSIONS sessions spread evenly over ``old`` end up once each decided alone for ``new``."""
    rng = random.Random(seed)
    where: Counter[HostPort] = Counter()
    for i in range(SESSIONS):
        me = old[i % len(old)]
        targets = move_decision(old, new, me, rng)
        if targets is None:
            where[me] += 1
        else:
            rng.shuffle(targets.fresh)
            rng.shuffle(targets.kept)
            picked = targets.pick(rng)
            assert picked is not None
            where[picked] += 1
    return where


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ([H1, H2, H3], [H1, H2, H3, H4, H5]),  # grow
        ([H1, H2, H3, H4, H5], [H1, H2, H3]),  # shrink
        ([H1, H2, H3], [H2, H3, H4]),  # replace one
        ([H1], [H1, H2, H3]),  # a client given one member learns the others
        ([H1, H2, H3, H4], [H4, H5]),  # shrink and replace
    ],
)
def test_sessions_spread_evenly_over_the_new_list(old: list[HostPort], new: list[HostPort]) -> None:
    where = spread(old, new)
    assert set(where) == set(new)
    share = SESSIONS / len(new)
    for host in new:  # within 3 % of an even share (the standard deviation is well under 1 %)
        assert abs(where[host] - share) < 0.03 * share, (host, where[host], share)


def test_only_the_sessions_needed_move() -> None:
    rng = random.Random(3)
    old, new = [H1, H2, H3], [H1, H2, H3, H4, H5]
    moved = sum(move_decision(old, new, old[i % 3], rng) is not None for i in range(SESSIONS))
    assert abs(moved / SESSIONS - 2 / 5) < 0.02  # exactly the share the new servers get
    assert all(move_decision(new, old, h, rng) is None for h in old)  # shrinking: kept servers' sessions stay


def test_the_rotation_tries_the_move_targets_first() -> None:
    rotation = HostRotation([H1], random.Random(1))
    assert rotation.next() == H1
    assert rotation.update([H1, H2, H3], H1) in (True, False)
    rotation = HostRotation([H1], random.Random(5))
    rotation.next()
    moves = [HostRotation([H1], random.Random(seed)) for seed in range(40)]
    decided = [r.update([H1, H2, H3], H1) for r in moves]
    assert 15 < sum(decided) < 40  # 2/3 move
    for r, move in zip(moves, decided, strict=True):
        first = r.next()
        assert (first in (H2, H3)) if move else (first != H1 or len(r) == 3)
    with pytest.raises(InvalidArgumentError):
        rotation.update([], H1)


def test_a_removed_server_is_left() -> None:
    for seed in range(20):
        rotation = HostRotation([H1, H2, H3], random.Random(seed))
        assert rotation.update([H2, H3], H1) is True
        assert rotation.next() in (H2, H3)
        assert set(rotation.hosts) == {H2, H3}


# ---------------------------------------------------------------------------------------------- the core


def connected_on(hosts: list[HostPort]) -> ConnectionPair:
    pair = ConnectionPair(make_core(hosts=hosts))
    assert only(pair.connect(0.0), StateChanged) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    return pair


def move_of(pair: ConnectionPair, new: list[HostPort], now: float = 1.0) -> None:
    """Update the core's list until it decides to move (the decision is random)."""
    core = pair.core
    for _ in range(50):
        core.update_hosts(new, now, spread=0.5)
        if core.moving:
            return
        core._hosts.update([pair.host], pair.host)  # type: ignore[arg-type]  # back, and again
    raise AssertionError("never moved")


def test_a_planned_move_fails_no_request_and_keeps_the_state() -> None:
    pair = connected_on([H1])
    core = pair.core
    watcher = Watcher("w")
    get_data(core, "/w", "watch", 0.2, watcher)
    pair.to_server()
    pair.to_client(pair.server.answer(data_reply()), 0.3)
    move_of(pair, [H1, H2, H3])
    assert core.next_deadline() <= 1.5
    get_data(core, "/a", "in-flight", 1.0)  # in flight when the move starts
    pair.to_server()
    assert pair.timer(1.6) == []  # draining: waiting for the request in flight
    with pytest.raises(ConnectionLossError, match="moving"):
        get_data(core, "/b", "late", 1.6)  # a new request waits (the client layer parks it)
    assert not core.ready
    events = pair.to_client(pair.server.answer(data_reply()), 1.7)
    [reply] = only(events, Reply)
    assert reply.token == "in-flight" and reply.error is None
    assert only(events, DropConnection)  # drained: the client closes the connection
    assert pair.lose(1.7) == []  # no SUSPENDED, nothing failed
    assert core.state is SessionState.CONNECTED
    host = core.next_host()
    assert host in (H2, H3)
    pair.open(1.8, host)
    events = pair.to_client(pair.server.accept(session_id=core.session_id), 1.8)
    [set_watches] = pair.to_server()
    assert set_watches.op == OpCode.SET_WATCHES and "/w" in set_watches.record.data_watches  # type: ignore[union-attr]
    events += pair.to_client(pair.server.answer(), 1.9)
    assert only(events, Moved) == [Moved(H1, host)]
    assert only(pair.events, StateChanged) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]
    assert core.ready


def test_a_move_with_requests_stuck_in_flight_is_given_up() -> None:
    pair = connected_on([H1])
    core = pair.core
    move_of(pair, [H1, H2, H3])
    get_data(core, "/a", "slow", 0.9)
    pair.to_server()
    pair.timer(1.6)
    assert not core.ready
    now = 1.6
    while now < 1.6 + core.read_timeout - 0.5:  # the server answers the pings, not the request
        now += 0.5
        pair.timer(now)
        for request in pair.to_server():
            assert request.op == OpCode.PING
            pair.to_client(pair.server.pong(), now)
    events = pair.timer(1.6 + core.read_timeout)
    assert Moved(H1, None) in events and core.ready and not core.moving
    assert core.state is SessionState.CONNECTED


def test_a_refused_move_tries_the_next_server_without_telling() -> None:
    """A server behind the session's zxid closes the connection without a ConnectResponse (it refuses the
    session until it catches up): the move goes on to the next target; the state never changes."""
    pair = connected_on([H1])
    core = pair.core
    move_of(pair, [H1, H2, H3])
    pair.timer(1.6)
    pair.lose(1.6)
    first = core.next_host()
    pair.open(1.6, first)
    assert only(pair.lose(1.62), StateChanged) == []  # refused: closed during the handshake
    second = core.next_host()
    assert second != first
    assert core.connection_failed() == []  # and the next one cannot be reached at all
    third = core.next_host()
    pair.open(1.7, third)
    events = pair.to_client(pair.server.accept(session_id=core.session_id), 1.7)
    assert Moved(H1, third) in events
    assert only(pair.events, StateChanged) == [StateChanged(SessionState.CONNECTING, SessionState.CONNECTED)]


def test_a_move_no_server_takes_is_reported_after_the_read_timeout() -> None:
    pair = connected_on([H1])
    core = pair.core
    move_of(pair, [H1, H2, H3])
    pair.timer(1.6)
    pair.lose(1.6)
    core.next_host()
    assert core.connection_failed() == []
    deadline = core.next_deadline()
    assert deadline <= 1.6 + core.read_timeout
    assert pair.timer(deadline - 0.01) == [] and core.state is SessionState.CONNECTED
    events = pair.timer(deadline)
    assert only(events, StateChanged) == [StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)]
    assert not core.moving


def test_a_connection_lost_before_the_move_cancels_it() -> None:
    pair = connected_on([H1])
    core = pair.core
    move_of(pair, [H1, H2, H3])
    events = pair.lose(1.1)
    assert only(events, StateChanged) == [StateChanged(SessionState.CONNECTED, SessionState.SUSPENDED)]
    assert not core.moving
    assert core.next_host() in (H2, H3)  # reconnecting goes to the move's targets first


def test_a_list_changed_during_the_handshake_moves_the_session_once_open() -> None:
    core = make_core(hosts=[H1])
    pair = ConnectionPair(core)
    pair.open(0.0)
    core.update_hosts([H2, H3], 0.0)  # while the ConnectRequest is out
    pair.to_client(pair.server.accept(), 0.1)
    assert core.state is SessionState.CONNECTED and core.moving  # open on H1, which left the list
    assert core.next_deadline() <= 0.1
    assert only(pair.timer(0.1), DropConnection)  # nothing in flight: drained at once
    assert pair.lose(0.1) == []
    assert core.next_host() in (H2, H3)


def test_a_list_changed_back_while_draining_gives_the_move_up() -> None:
    pair = connected_on([H1])
    core = pair.core
    move_of(pair, [H1, H2, H3])
    get_data(core, "/a", "in-flight", 1.0)
    pair.to_server()
    pair.timer(1.6)  # draining
    assert not core.ready
    assert core.update_hosts([H1], 1.7) is False
    events = pair.timer(1.7)
    assert Moved(H1, None) in events and core.ready and not core.moving
    events = pair.to_client(pair.server.answer(data_reply()), 1.8)
    assert only(events, DropConnection) == []  # answered; the connection stays


def test_the_spread_is_checked() -> None:
    pair = connected_on([H1])
    for bad in (float("nan"), -1.0, float("inf")):
        with pytest.raises(InvalidArgumentError):
            pair.core.update_hosts([H1, H2], 1.0, bad)
