"""zklock.lease without a server: the lease's state machine (hold counting, the session's states, its own
node's watch, the holder's block, fenced writes) driven by a stub client.

Only logic that does not depend on the server is tested here; tests/server/test_lease.py and tests/server/test_mutex.py
test the same promises against the real server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import pytest
import trio

import zklock
from zklock.lease import OWN_NODE_WATCH_DELAY, REVOKE_DATA, HeldLock, Lease
from zkwire import Check, Client, EventType, NoNodeError, SessionExpiredError, SessionState, SetData, WatchedEvent

NODE = "/locks/job/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000003"


class StubWatch:
    def __init__(self) -> None:
        self.fired = trio.Event()
        self.event: WatchedEvent | None = None

    def fire(self, type_: EventType) -> None:
        self.event = WatchedEvent(type_, NODE)
        self.fired.set()

    async def wait(self) -> WatchedEvent:
        await self.fired.wait()
        assert self.event is not None
        return self.event


class StubClient:
    """The few parts of a Client a lease uses; every call is recorded."""

    def __init__(self, state: SessionState = SessionState.CONNECTED) -> None:
        self.state = state
        self.listeners: list[Callable[[SessionState], None]] = []
        self.spawned: list[Callable[[], Awaitable[object]]] = []
        self.calls: list[str] = []
        self.data: bytes | None = b"me"  # None: the node is gone
        self.watches: list[StubWatch] = []
        self.multi_error: Exception | None = None
        self.observed = False  # no observers: nothing reported

    def add_state_listener(self, fn: Callable[[SessionState], None]) -> None:
        self.listeners.append(fn)

    def remove_state_listener(self, fn: Callable[[SessionState], None]) -> None:
        if fn in self.listeners:
            self.listeners.remove(fn)

    def set_state(self, state: SessionState) -> None:
        self.state = state
        for fn in list(self.listeners):
            fn(state)

    def spawn(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        self.spawned.append(fn)

    async def get_data(self, path: str, watch: bool = False) -> tuple[bytes, object, StubWatch]:
        self.calls.append(f"get_data {path}")
        await trio.lowlevel.checkpoint()
        if self.data is None:
            raise NoNodeError(path)
        w = StubWatch()
        self.watches.append(w)
        return self.data, None, w

    async def multi(self, ops: list[Any]) -> list[object]:
        self.calls.append("multi " + " ".join(type(op).__name__ for op in ops))
        await trio.lowlevel.checkpoint()
        if self.multi_error is not None:
            raise self.multi_error
        return [None for _ in ops]

    async def wait_connected(self) -> None:
        await trio.lowlevel.checkpoint()


class StubLock:
    """What a lease needs of its lock: the lock's release deletes nothing here, it only counts."""

    def __init__(self, client: StubClient, *, lose_on_suspend: bool = True, cancel_on_loss: bool = True) -> None:
        self.client = cast(Client, client)
        self.path = "/locks/job"
        self.lose_on_suspend = lose_on_suspend
        self.cancel_on_loss = cancel_on_loss
        self.held: Lease | None = None
        self.released = 0
        self.event_name: str | None = None

    @property
    def lease(self) -> Lease | None:
        return self.held

    async def release(self) -> None:
        assert self.held is not None
        if self.held.let_go():
            self.held = None
            self.released += 1


def granted(client: StubClient, **options: bool) -> tuple[StubLock, Lease]:
    lock = StubLock(client, **options)
    lease = Lease(cast(HeldLock, lock), NODE, 42, 0x1234)
    lease.start()
    lock.held = lease
    return lock, lease


async def test_a_lease_counts_its_holds_and_stops_listening_at_the_last() -> None:
    client = StubClient()
    _, lease = granted(client)
    assert len(client.listeners) == 1 and len(client.spawned) == 1
    lease.hold_again()
    lease.hold_again()
    assert [lease.let_go(), lease.let_go()] == [False, False]
    assert not lease.released and client.listeners
    assert lease.let_go() is True
    assert lease.released and client.listeners == []
    # A state change after the release is not a loss.
    client.set_state(SessionState.EXPIRED)
    assert not lease.lost and repr(lease).endswith("released>")


@pytest.mark.parametrize(
    ("state", "lose_on_suspend", "reason"),
    [
        (SessionState.SUSPENDED, True, "connection lost (session suspended)"),
        (SessionState.SUSPENDED, False, None),
        (SessionState.CONNECTED, True, None),
        (SessionState.EXPIRED, False, "session expired"),
        (SessionState.CLOSED, True, "session closed"),
        (SessionState.AUTH_FAILED, False, "session auth_failed"),
    ],
)
async def test_session_states_mark_the_lease_lost(
    state: SessionState, lose_on_suspend: bool, reason: str | None
) -> None:
    client = StubClient()
    _, lease = granted(client, lose_on_suspend=lose_on_suspend)
    client.set_state(state)
    assert lease.lost_reason == reason
    assert (lease.lost_at is not None) == (reason is not None)


@pytest.mark.parametrize(("lose_on_suspend", "lost"), [(True, True), (False, False)])
async def test_a_grant_on_a_suspended_session_is_lost_at_once(lose_on_suspend: bool, lost: bool) -> None:
    _, lease = granted(StubClient(SessionState.SUSPENDED), lose_on_suspend=lose_on_suspend)
    assert lease.lost is lost
    if lost:
        assert lease.lost_reason == "session suspended"


async def test_the_first_loss_is_the_one_told() -> None:
    client = StubClient()
    _, lease = granted(client)
    client.set_state(SessionState.SUSPENDED)
    client.set_state(SessionState.EXPIRED)
    assert lease.lost_reason == "connection lost (session suspended)"


async def test_the_own_node_watch_starts_late_and_tells_revocation_then_deletion() -> None:
    client = StubClient()
    client.data = REVOKE_DATA
    _, lease = granted(client)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.spawned[0])
        await trio.sleep(OWN_NODE_WATCH_DELAY / 2)
        assert client.calls == []  # a short hold costs no request
        with trio.fail_after(5):
            await lease.wait_revocation_requested()
        assert client.calls == [f"get_data {NODE}"] and not lease.lost
        client.watches[0].fire(EventType.NODE_DELETED)
        with trio.fail_after(5):
            assert await lease.wait_lost() == "lock node was deleted"


async def test_a_data_change_re_arms_the_watch_and_a_missing_node_is_a_loss() -> None:
    client = StubClient()
    _, lease = granted(client)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.spawned[0])
        with trio.fail_after(5):
            while not client.watches:
                await trio.sleep(0.01)
        client.data = None  # the node goes; the change notification comes first
        client.watches[0].fire(EventType.NODE_DATA_CHANGED)
        with trio.fail_after(5):
            assert await lease.wait_lost() == "lock node was deleted"
    assert len(client.calls) == 2 and not lease.revocation_requested


async def test_a_released_lease_stops_watching() -> None:
    client = StubClient()
    _, lease = granted(client)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.spawned[0])
        with trio.fail_after(5):
            while not client.watches:
                await trio.sleep(0.01)
        assert lease.let_go()
    # The watch task ended with the release (the nursery closed), and no loss was told.
    assert not lease.lost


async def test_the_block_is_cancelled_on_loss_and_raises_lock_lost() -> None:
    client = StubClient()
    lock, lease = granted(client)
    reached_end = False
    with trio.fail_after(5), pytest.raises(zklock.LockLostError) as info:
        async with lease:
            client.set_state(SessionState.SUSPENDED)
            await trio.sleep_forever()
            reached_end = True
    assert not reached_end and info.value.reason == "connection lost (session suspended)"
    assert lock.released == 1 and lease.released


async def test_without_cancel_on_loss_the_block_runs_on_and_is_released() -> None:
    client = StubClient()
    lock, lease = granted(client, cancel_on_loss=False)
    async with lease:
        client.set_state(SessionState.SUSPENDED)
        await trio.lowlevel.checkpoint()
        assert lease.lost
    assert lock.released == 1


async def test_a_block_entered_on_a_lost_lease_is_cancelled_at_once() -> None:
    client = StubClient()
    _, lease = granted(client)
    client.set_state(SessionState.EXPIRED)
    with pytest.raises(zklock.LockLostError):
        async with lease:
            await trio.sleep_forever()


async def test_fenced_writes_go_out_behind_the_guard_and_a_refusal_is_a_loss() -> None:
    client = StubClient()
    _, lease = granted(client)
    assert lease.guard() == Check(NODE, -1)
    assert await lease.fenced([SetData("/data", b"x")]) == [None]
    assert client.calls == ["multi Check SetData"]
    refused = NoNodeError(NODE)
    refused.results = [NoNodeError(NODE), None]
    client.multi_error = refused
    with pytest.raises(zklock.LockLostError, match="lock node was deleted"):
        await lease.fenced([SetData("/data", b"y")])
    assert lease.lost_reason == "lock node was deleted"


async def test_a_fenced_write_on_another_missing_node_is_not_a_loss() -> None:
    client = StubClient()
    _, lease = granted(client)
    other = NoNodeError("/data")
    other.results = [None, NoNodeError("/data")]
    client.multi_error = other
    with pytest.raises(NoNodeError):
        await lease.fenced([SetData("/data", b"x")])
    assert not lease.lost
    client.multi_error = SessionExpiredError("expired")
    with pytest.raises(zklock.LockLostError, match="session expired"):
        await lease.fenced([SetData("/data", b"x")])
