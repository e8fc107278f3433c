"""zklock.sharedqueue without a server: the shared view of a lock queue that lets a woken waiter find its
next blocker without listing the queue again."""

from __future__ import annotations

import random

import trio
import trio.testing

from zklock.naming import EXCLUSIVE_MARKERS, LOCK_MARKERS, parse_contender
from zklock.sharedqueue import SharedQueue, nearest_below


def name(seq: int, marker: str = "lock-", uid: int = 0) -> str:
    return f"_c_{uid:08x}-0000-4000-8000-{seq:012x}-{marker}{seq:010d}"


def anything(_: object) -> bool:
    return True


def writers(c) -> bool:  # type: ignore[no-untyped-def]
    return c.marker in EXCLUSIVE_MARKERS


def test_nearest_below_in_one_pass_over_an_unsorted_listing() -> None:
    names = [name(s) for s in (7, 2, 9, 4, 11)] + ["not-a-lock-node", "x-lock-12"]
    random.Random(1).shuffle(names)
    assert nearest_below(names, name(9), LOCK_MARKERS, anything) == (True, parse_contender(name(7), LOCK_MARKERS))
    assert nearest_below(names, name(2), LOCK_MARKERS, anything) == (True, None)
    assert nearest_below(names, name(5), LOCK_MARKERS, anything) == (False, parse_contender(name(4), LOCK_MARKERS))


def test_a_reader_waits_only_for_the_nearest_writer_below() -> None:
    markers = LOCK_MARKERS
    names = [name(1, "__WRIT__"), name(2, "__READ__"), name(3, "__READ__"), name(4, "__READ__")]
    found, blocker = nearest_below(names, name(4, "__READ__"), markers, writers)
    assert found and blocker is not None and blocker.sequence == 1


def test_the_newest_listing_wins_whatever_order_it_is_handed_in() -> None:
    q = SharedQueue(LOCK_MARKERS)
    newer = [name(s) for s in (1, 2, 3)]
    older = [name(s) for s in (1, 2)]
    q.saw_listing(newer, cversion=3)
    q.saw_listing(older, cversion=2)  # a task that ran late must not put an older view back
    me = parse_contender(name(3), LOCK_MARKERS)
    assert me is not None
    assert q.blocker(me, anything) == (True, parse_contender(name(2), LOCK_MARKERS))


def test_known_deletions_hand_the_lock_down_the_queue_without_listing() -> None:
    q = SharedQueue(LOCK_MARKERS)
    names = [name(s) for s in range(100)]
    q.saw_listing(names, cversion=100)
    me = parse_contender(name(99), LOCK_MARKERS)
    assert me is not None
    for s in range(98, -1, -1):
        assert q.blocker(me, anything)[1] == parse_contender(name(s), LOCK_MARKERS)
        q.saw_gone(name(s))
    assert q.blocker(me, anything) == (True, None)
    assert len(q) == 1


def test_deletions_seen_before_the_sort_are_applied_and_forgotten_once_listed_away() -> None:
    q = SharedQueue(LOCK_MARKERS)
    q.saw_listing([name(s) for s in range(5)], cversion=5)
    q.saw_gone(name(3))
    me = parse_contender(name(4), LOCK_MARKERS)
    assert me is not None
    assert q.blocker(me, anything)[1] == parse_contender(name(2), LOCK_MARKERS)
    q.saw_listing([name(s) for s in (0, 1, 4)], cversion=9)
    assert q.blocker(me, anything)[1] == parse_contender(name(1), LOCK_MARKERS)
    assert q._gone == set()


def test_our_node_missing_from_the_view_is_reported() -> None:
    q = SharedQueue(LOCK_MARKERS)
    q.saw_listing([name(1), name(2)], cversion=2)
    me = parse_contender(name(2), LOCK_MARKERS)
    assert me is not None
    q.saw_gone(name(2))
    assert q.blocker(me, anything) == (False, None)


def test_view_is_always_a_superset_of_what_exists_below_a_waiter() -> None:
    """Random interleavings of creates, deletes, listings received late and deletion notices: the view
    never loses a node that still exists below a waiter."""
    rng = random.Random(7)
    for _ in range(200):
        alive: list[int] = []
        seq = 0
        version = 0
        q = SharedQueue(LOCK_MARKERS)
        snapshots: list[tuple[list[str], int]] = []
        me: int | None = None
        for _ in range(60):
            op = rng.random()
            if op < 0.4:
                alive.append(seq)
                if me is None and rng.random() < 0.2:
                    me = seq
                    q.saw_listing([name(s) for s in alive], version + 1)
                seq += 1
                version += 1
            elif op < 0.7 and alive:
                victim = rng.choice(alive)
                if victim == me:
                    continue
                alive.remove(victim)
                version += 1
                if rng.random() < 0.7:
                    q.saw_gone(name(victim))
            else:
                snapshots.append(([name(s) for s in alive], version))
                if rng.random() < 0.5 and snapshots:
                    q.saw_listing(*rng.choice(snapshots))
            if me is not None:
                mine = parse_contender(name(me), LOCK_MARKERS)
                assert mine is not None
                found, blocker = q.blocker(mine, anything)
                assert found
                below = [s for s in alive if s < me]
                if below:
                    assert blocker is not None and blocker.sequence >= max(below)
                else:
                    assert blocker is None or blocker.sequence < me


def test_a_new_incarnation_of_the_lock_path_replaces_the_view_whatever_its_child_version() -> None:
    """A lock path deleted and created again (a reaped container) starts its child version anew: its
    listing (a higher czxid) wins over an older incarnation's, and the old one never comes back."""
    q = SharedQueue(LOCK_MARKERS)
    q.saw_listing([name(s) for s in range(50)], cversion=50, parent_czxid=0x10)
    q.saw_gone(name(49))
    q.saw_listing([name(0, uid=1), name(1, uid=1)], cversion=2, parent_czxid=0x99)
    assert list(q.names) == [name(0, uid=1), name(1, uid=1)] and q._gone == set()
    q.saw_listing([name(s) for s in range(60)], cversion=60, parent_czxid=0x10)
    assert len(q) == 2
    me = parse_contender(name(1, uid=1), LOCK_MARKERS)
    assert me is not None
    assert q.blocker(me, anything) == (True, parse_contender(name(0, uid=1), LOCK_MARKERS))


async def test_waiters_asking_for_a_listing_at_once_share_one() -> None:
    """listing_after: every waiter that asked before a listing was sent is served by it; one that asks
    while it is in flight gets the next; at most one is in flight."""
    q = SharedQueue(LOCK_MARKERS)
    sent: list[int] = []
    release = trio.Event()
    in_flight = 0
    most = 0

    async def fetch() -> tuple[list[str], int, int]:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        sent.append(len(sent) + 1)
        await release.wait()
        in_flight -= 1
        return [name(s) for s in range(len(sent) * 10)], len(sent) * 10, 1

    served: list[int] = []

    async def waiter(i: int) -> None:
        await q.listing_after(q.mark(), fetch)
        served.append(i)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for i in range(50):
                nursery.start_soon(waiter, i)
            await trio.testing.wait_all_tasks_blocked()
            assert sent == [1]  # the first asker sends; the others wait for the next listing
            release.set()
    assert sorted(served) == list(range(50))
    assert len(sent) == 2 and most == 1 and q.listings == 2
    assert len(q) == 20  # the newest listing feeds the view


async def test_a_waiter_whose_listing_was_cancelled_does_not_strand_the_others() -> None:
    q = SharedQueue(LOCK_MARKERS)
    calls = 0

    async def fetch() -> tuple[list[str], int, int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await trio.sleep_forever()
        return [name(1)], 1, 1

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            first = trio.CancelScope()

            async def cancelled_waiter() -> None:
                with first:
                    await q.listing_after(q.mark(), fetch)

            nursery.start_soon(cancelled_waiter)
            await trio.testing.wait_all_tasks_blocked()
            mark = q.mark()  # after the first listing was sent: the next one must serve us
            nursery.start_soon(q.listing_after, mark, fetch)
            await trio.testing.wait_all_tasks_blocked()
            first.cancel()
    assert calls == 2 and q.listings == 1 and list(q.names) == [name(1)]
