"""What a lease promises its holder, against the real server: how a loss is told (always LockLostError,
with when and why), how soon it is told under a partition, and writes fenced by the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import trio
from helpers.addresses import first_server
from helpers.faultproxy import open_fault_proxy

import zklock
import zkwire
from zkwire.constants import OpCode


def _upstream(zk_hosts: str) -> tuple[str, int]:
    return first_server(zk_hosts)


async def _setup(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)


async def test_a_request_failing_with_the_connection_ends_the_block_with_lock_lost(zk_hosts: str, zk_path: str) -> None:
    """The body's own request fails with ConnectionLossError when the connection breaks: the block
    still raises LockLostError (the body's error chained), and the lease says when and why."""
    path = f"{zk_path}/lock"
    await _setup(zk_hosts, zk_path)
    async with open_fault_proxy(*_upstream(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=4) as zk:
            mutex = zklock.Mutex(zk, path)
            with trio.fail_after(10), pytest.raises(zklock.LockLostError) as info:
                async with mutex as lease:
                    proxy.drop_request(op=OpCode.GET_DATA, path_prefix=zk_path)
                    before = trio.current_time()
                    await zk.get_data(zk_path)  # dropped, and the connection severed
            assert isinstance(info.value.__cause__, zkwire.ConnectionLossError)
            assert lease.lost and "suspended" in (lease.lost_reason or "")
            assert lease.lost_at is not None and before <= lease.lost_at <= trio.current_time()
            with trio.fail_after(10):
                await zk.wait_connected()
                while True:  # the release's delete is retried once reconnected
                    try:
                        if not await zk.get_children(path):
                            break
                    except zkwire.NoNodeError:
                        break  # the empty container lock node was removed by the server
                    await trio.sleep(0.05)


async def test_any_error_of_a_body_that_outlived_the_loss_becomes_lock_lost(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    await _setup(zk_hosts, zk_path)
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        with trio.fail_after(10), pytest.raises(zklock.LockLostError, match="deleted") as info:
            async with zklock.Mutex(zk, path) as lease:
                await other.delete(lease.node)
                with trio.CancelScope(shield=True):
                    await lease.wait_lost()
                raise ValueError("the body's own failure")
        assert isinstance(info.value.__cause__, ValueError)


async def test_an_outer_cancellation_is_not_turned_into_lock_lost(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    await _setup(zk_hosts, zk_path)
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        with trio.move_on_after(10) as outer:
            async with zklock.Mutex(zk, path) as lease:
                await other.delete(lease.node)
                with trio.CancelScope(shield=True):
                    await lease.wait_lost()
                outer.cancel()
                await trio.sleep_forever()
        assert outer.cancelled_caught  # the Cancelled reached its own scope


async def test_acquire_lease_bounds_only_the_wait(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    await _setup(zk_hosts, zk_path)
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as other:
        blocker = zklock.Mutex(other, path)
        assert await blocker.acquire()
        mutex = zklock.Mutex(zk, path)
        with pytest.raises(trio.TooSlowError), trio.fail_after(0.5):
            await mutex.acquire_lease()
        assert len(await zk.get_children(path)) == 1  # the waiter's node is gone
        await blocker.release()
        with trio.fail_after(5):
            lease = await mutex.acquire_lease()
        async with lease:
            await trio.sleep(0.6)  # longer than the bound above: the body is not bounded
            assert mutex.lease is lease and not lease.lost
        assert mutex.lease is None and lease.released
        assert await zk.get_children(path) == []


async def test_fenced_write_is_refused_once_the_node_is_gone(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/lock"
    target = f"{zk_path}/resource"
    async with zkwire.open_client(zk_hosts) as zk, zkwire.open_client(zk_hosts) as admin:
        await zk.create(zk_path)
        await zk.create(target, b"0")
        mutex = zklock.Mutex(zk, path, cancel_on_loss=False)
        async with mutex as lease:
            [stat] = await lease.fenced([zkwire.SetData(target, b"1")])
            assert isinstance(stat, zkwire.Stat) and stat.version == 1
            with pytest.raises(zkwire.BadVersionError):  # the ops' own failures are raised as they are
                await lease.fenced([zkwire.SetData(target, b"x", version=7)])
            assert not lease.lost
            await admin.delete(lease.node)  # a third party deletes the holder's node
            with pytest.raises(zklock.LockLostError, match="deleted"):
                await lease.fenced([zkwire.SetData(target, b"2")])  # before the holder has heard of it
            assert lease.lost
        assert (await admin.get_data(target))[0] == b"1"


_PAUSED_HOLDER = textwrap.dedent(
    """
    import sys, trio, zkwire, zklock

    async def main(hosts, path, target):
        async with zkwire.open_client(hosts, session_timeout=2) as zk:
            mutex = zklock.Mutex(zk, path, cancel_on_loss=False, lose_on_suspend=False)
            async with mutex as lease:
                print("held", lease.fencing_token, flush=True)
                sys.stdin.readline()  # the test pauses us (SIGSTOP) here, then resumes us and says go
                while True:
                    try:
                        await lease.fenced([zkwire.SetData(target, b"stale holder")])
                        print("written", flush=True)
                    except zklock.LockLostError as e:
                        print("refused", type(e.__cause__).__name__, flush=True)
                    except zkwire.ConnectionLossError:
                        await trio.sleep(0.1)  # outcome unknown: the guard makes a retry safe
                        continue
                    break

    try:
        trio.run(main, *sys.argv[1:])
    except zklock.LockLostError:
        pass
    """
)


@pytest.mark.slow
async def test_a_paused_holders_fenced_write_is_refused(zk_hosts: str, zk_path: str) -> None:
    """A holder paused (SIGSTOP) past its session timeout wakes up still believing it holds the lock;
    its fenced write is refused by the server, and the new holder's write stands."""
    path = f"{zk_path}/lock"
    target = f"{zk_path}/resource"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(target, b"0")
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-c", _PAUSED_HOLDER, zk_hosts, path, target],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert proc.stdin is not None and proc.stdout is not None
        buffered = b""

        async def readline() -> str:
            nonlocal buffered
            assert proc.stdout is not None
            while b"\n" not in buffered:
                chunk = await proc.stdout.receive_some()
                if not chunk:
                    break
                buffered += chunk
            line, _, buffered = buffered.partition(b"\n")
            return line.decode()

        try:
            with trio.fail_after(20):
                line = await readline()
            assert line.startswith("held"), line
            old_token = int(line.split()[1])
            os.kill(proc.pid, signal.SIGSTOP)
            with trio.fail_after(20):
                async with zklock.Mutex(zk, path) as lease:  # granted once the paused session expired
                    assert lease.fencing_token > old_token
                    await lease.fenced([zkwire.SetData(target, b"new holder")])
                    os.kill(proc.pid, signal.SIGCONT)
                    await proc.stdin.send_all(b"go\n")
                    line = await readline()
            assert line.split()[0] == "refused", line
            assert (await zk.get_data(target))[0] == b"new holder"
        finally:
            if proc.returncode is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
            with trio.CancelScope(shield=True):
                await proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one-way", "two-way"])
async def test_partitioned_holder_is_told_a_third_of_the_timeout_before_the_next_grant(
    zk_hosts: str, zk_path: str, shape: str
) -> None:
    """The holder's outbound traffic is lost (one-way: notifications of a busy persistent watch keep
    arriving; two-way: nothing arrives).  The server expires the session a timeout after it last heard
    from the holder; the holder must be told at least a third of the timeout before the next contender
    is granted, whatever keeps arriving."""
    timeout = 3.0
    path = f"{zk_path}/lock"
    busy = f"{zk_path}/busy"
    await _setup(zk_hosts, zk_path)
    async with open_fault_proxy(*_upstream(zk_hosts)) as proxy:
        async with (
            zkwire.open_client(proxy.hosts, session_timeout=timeout) as a,
            zkwire.open_client(zk_hosts) as b,
            zkwire.open_client(zk_hosts) as writer,
        ):
            await writer.create(busy, b"0")
            granted: list[float] = []
            notified = 0

            async def keep_writing() -> None:
                i = 0
                while True:
                    i += 1
                    await writer.set_data(busy, str(i).encode())
                    await trio.sleep(0.05)

            async def count_events() -> None:
                nonlocal notified
                try:
                    async with a.add_watch(busy) as events:
                        async for _ in events:
                            notified += 1
                except zkwire.SessionExpiredError:
                    pass

            async def contender() -> None:
                async with zklock.Mutex(b, path):
                    granted.append(trio.current_time())

            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(count_events)
                    nursery.start_soon(keep_writing)
                    lease = await zklock.Mutex(a, path, cancel_on_loss=False).acquire_lease()
                    nursery.start_soon(contender)
                    await trio.sleep(0.5)
                    proxy.freeze(to_server=True, to_client=shape == "two-way")
                    frozen_at = trio.current_time()
                    before = notified
                    while not granted:
                        await trio.sleep(0.01)
                    nursery.cancel_scope.cancel()
            assert lease.lost_at is not None, "the holder was never told"
            margin = granted[0] - lease.lost_at
            assert margin >= timeout / 3 - 0.2, (
                f"told {lease.lost_at - frozen_at:.2f}s after the partition, "
                f"{margin:.2f}s before the next grant ({notified - before} notifications meanwhile)"
            )
            if shape == "one-way":
                assert notified - before > 10  # the watch traffic did flow during the partition
