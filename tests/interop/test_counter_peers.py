"""Counters on one path with the real peers (kazoo 2.11's Counter, Curator 5.4's SharedCount and
DistributedAtomicLong/Integer) under contention, and exact under a lost reply and an expiry."""

from __future__ import annotations

import struct
import threading
from typing import Any

import pytest
import trio
from helpers.addresses import first_server
from helpers.curator import curator_recipes
from helpers.interop import kazoo_client
from helpers.sessiontools import expire

import zklock
import zkwire
from zkwire.constants import OpCode

ROUNDS = 25


@pytest.mark.parametrize(
    ("default", "curator", "step"), [(0, False, 1), (0.5, False, 0.25), (0, True, 1)], ids=["int", "float", "curator"]
)
async def test_kazoo_counter_and_ours_add_up(
    zk_hosts: str, zk_path: str, default: float, curator: bool, step: float
) -> None:
    path = f"{zk_path}/counter"
    async with kazoo_client(zk_hosts) as kz:
        theirs = kz.Counter(path, default=default, support_curator=curator)

        def kazoo_adds() -> None:
            for _ in range(ROUNDS):
                theirs.__add__(step)

        async with zkwire.open_client(zk_hosts) as zk:
            ours = zklock.Counter(zk, path, default, curator=curator)

            async def zklock_adds() -> None:
                for _ in range(ROUNDS):
                    await ours.add(step)

            async with ours, trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, kazoo_adds)
                nursery.start_soon(zklock_adds)
                nursery.start_soon(zklock_adds)
            expected = default + 3 * ROUNDS * step
            assert await ours.value() == expected
            assert await trio.to_thread.run_sync(lambda: theirs.value) == expected
            data, _ = await zk.get_data(path)
            assert data == (struct.pack(">i", int(expected)) if curator else repr(expected).encode())
            assert await zk.get_children(path) == []  # no witness left once closed


@pytest.mark.parametrize("kind", ["SharedCount", "AtomicLong", "AtomicInteger"])
async def test_curator_counters_and_ours_add_up(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    path = f"{zk_path}/{kind}"
    command = {"SharedCount": "count-add", "AtomicLong": "long-add", "AtomicInteger": "int-add"}[kind]
    async with curator_recipes(tmp_path_factory, zk_hosts) as java, zkwire.open_client(zk_hosts) as zk:
        counter: Any = {"SharedCount": zklock.SharedCount, "AtomicLong": zklock.AtomicLong}.get(
            kind, zklock.AtomicInteger
        )(zk, path)

        async def java_adds() -> None:
            for _ in range(ROUNDS):
                answer = await java.ask(command, path, 2)
                assert answer.split()[0] in ("COUNT", "LONG", "INT"), answer

        async def zklock_adds() -> None:
            for _ in range(ROUNDS):
                result = await counter.add(3)
                if kind != "SharedCount":
                    assert result.succeeded and result.post_value == result.pre_value + 3

        async with counter, trio.open_nursery() as nursery:
            nursery.start_soon(java_adds)
            nursery.start_soon(zklock_adds)
            nursery.start_soon(zklock_adds)
        total = ROUNDS * 2 + 2 * ROUNDS * 3
        if kind == "SharedCount":
            assert await counter.get() == total
            assert await java.ask("count-get", path) == f"COUNT {total}"
        elif kind == "AtomicLong":
            assert (await counter.get()).post_value == total
            assert await java.ask("long-get", path) == f"LONG {total} {total}"
            assert len((await zk.get_data(path))[0]) == 8
        else:
            assert (await counter.get()).post_value == total
            assert len((await zk.get_data(path))[0]) == 4


async def test_shared_count_versioned_set_and_watch(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/count"
    async with zkwire.open_client(zk_hosts) as zk:
        count = zklock.SharedCount(zk, path, seed=7)
        seen: list[int] = []

        async def follow() -> None:
            async for value in count.watch():
                seen.append(value)
                if value == 9:
                    return

        first = await count.get_versioned()
        assert first.value == 7
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            assert await count.try_set(first, 8)
            assert not await count.try_set(first, 100)  # the version moved on
            await count.set(9)
        assert seen[0] in (7, 8) and seen[-1] == 9
        assert await count.get() == 9


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "like-the-peers"])
async def test_a_lost_reply_counts_once(zk_hosts: str, zk_path: str, faultproxy, exact: bool) -> None:
    """The update's reply is lost with the connection after the server applied it: the exact counter
    finds its witness and counts once; a peer-style counter (``exact=False``) reads again and counts twice
    -- the failure the witness exists for."""
    path = f"{zk_path}/counter"
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk, zkwire.open_client(zk_hosts) as other:
            counter = zklock.AtomicLong(zk, path, exact=exact)
            assert (await counter.add(1)).succeeded
            swallow = proxy.swallow_reply(op=(OpCode.MULTI, OpCode.SET_DATA), path_prefix=path)
            with trio.fail_after(15):
                result = await counter.add(1)
            assert swallow.triggered and swallow.reply is not None and swallow.reply.err == 0
            value = struct.unpack(">q", (await other.get_data(path))[0])[0]
            if exact:
                assert result == zklock.AtomicValue(True, 1, 2) and value == 2
            else:
                assert value == 3  # counted twice
            await counter.aclose()
            assert await other.get_children(path) == []


async def test_no_increment_lost_or_doubled_across_expiry(zk_hosts: str, zk_path: str) -> None:
    """Four workers on a sessions stream add while the session is expired under them: the final value is
    exactly the number of adds that returned."""
    path = f"{zk_path}/counter"
    done = 0
    stop = trio.Event()
    async with zkwire.sessions(zk_hosts, session_timeout=4) as stream, zkwire.open_client(zk_hosts) as other:
        counter = zklock.SharedCount(stream, path)

        async def worker() -> None:
            nonlocal done
            while not stop.is_set():
                try:
                    await counter.add(1)
                except (zkwire.SessionExpiredError, zkwire.ConnectionLossError):
                    continue  # raised before the write went out: nothing was applied
                done += 1

        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(worker)
            await trio.sleep(0.3)
            first = stream.current
            assert first is not None
            before = done
            await expire(first, zk_hosts)
            with trio.fail_after(15):
                while stream.current is first or done < before + 50:
                    await trio.sleep(0.05)
            stop.set()
        assert before > 0 and stream.generation >= 2
        assert struct.unpack(">i", (await other.get_data(path))[0])[0] == done
        await counter.aclose()


async def test_contention_is_bounded_and_typed(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/counter"
    async with zkwire.open_client(zk_hosts) as zk:
        stop = threading.Event()
        counter = zklock.Counter(zk, path, max_attempts=1)
        await counter.add(1)
        original = zk.multi

        async def meddling_multi(ops: Any) -> Any:
            await zk.set_data(path, b"41")  # another writer in between, every time
            return await original(ops)

        zk.multi = meddling_multi  # type: ignore[method-assign]
        try:
            with pytest.raises(zklock.ContentionError):
                await counter.add(1)
        finally:
            del zk.multi
            stop.set()
        assert await counter.value() == 41
        atomic = zklock.AtomicLong(zk, f"{zk_path}/long", max_attempts=1)
        assert (await atomic.compare_and_set(5, 6)) == zklock.AtomicValue(False, 0, 0)
        assert (await atomic.compare_and_set(0, 6)) == zklock.AtomicValue(True, 0, 6)
        assert await atomic.initialize(1) is False
        await atomic.aclose()


async def test_foreign_data_and_bad_values_are_typed_errors(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(f"{zk_path}/text", b"not a number")
        with pytest.raises(zklock.CounterDataError):
            await zklock.Counter(zk, f"{zk_path}/text").value()
        with pytest.raises(zklock.CounterDataError):
            await zklock.AtomicLong(zk, f"{zk_path}/text").get()
        count = zklock.SharedCount(zk, f"{zk_path}/count")
        with pytest.raises(zkwire.InvalidArgumentError):
            await count.set(2**31)
        with pytest.raises(zkwire.InvalidArgumentError):
            await zklock.Counter(zk, f"{zk_path}/c").add(1.5)
        for bad in ({"default": "1"}, {"default": 1.5, "curator": True}, {"max_attempts": 0}):
            with pytest.raises(zkwire.InvalidArgumentError):
                zklock.Counter(zk, f"{zk_path}/c", **bad)
        assert await zk.get_data(f"{zk_path}/text") == (b"not a number", (await zk.exists(f"{zk_path}/text")))


async def test_promoted_to_a_lock_after_the_optimistic_attempts(zk_hosts: str, zk_path: str) -> None:
    """``promote_to_lock``: when the optimistic attempts meet conflicts, the update is tried again holding
    a Curator-layout mutex at the lock path (Curator's PromotedToLock), and succeeds."""
    path, lock = f"{zk_path}/long", f"{zk_path}/long-lock"
    async with zkwire.open_client(zk_hosts) as zk:
        counter = zklock.AtomicLong(zk, path, max_attempts=1, promote_to_lock=lock)
        await counter.add(1)
        original = zk.multi
        held_during: list[list[str]] = []

        async def meddling_multi(ops: Any) -> Any:
            held_during.append(await zk.get_children(lock) if await zk.exists(lock) else [])
            if len(held_during) == 1:
                await zk.set_data(path, struct.pack(">q", 10))  # another writer, once
            return await original(ops)

        zk.multi = meddling_multi  # type: ignore[method-assign]
        try:
            result = await counter.add(5)
        finally:
            del zk.multi
        assert result == zklock.AtomicValue(True, 10, 15)
        assert held_during[0] == [] and len(held_during[1]) == 1 and "-lock-" in held_during[1][0]
        assert (await counter.get()).post_value == 15
        assert await zk.get_children(lock) == []
        await counter.aclose()
