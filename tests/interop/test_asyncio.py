"""zkwire from asyncio: a clear error when called directly, and trio guest mode as the way in."""

from __future__ import annotations

import asyncio
import functools

import pytest

import zkwire


def test_open_client_from_asyncio_says_how() -> None:
    async def main() -> None:
        async with zkwire.open_client("127.0.0.1:1"):
            pass

    with pytest.raises(zkwire.NotInTrioError, match=r"called from asyncio.*zkwire\.aio\.run_trio"):
        asyncio.run(main())


def test_helpers_from_asyncio_say_how() -> None:
    async def main() -> None:
        async with zkwire.sessions("127.0.0.1:1"):
            pass

    with pytest.raises(zkwire.NotInTrioError, match=r"zkwire\.sessions needs trio"):
        asyncio.run(main())


def test_an_asyncio_program_runs_zkwire_in_guest_mode(zk_hosts: str, zk_path: str) -> None:
    async def zk_part(path: str) -> bytes:  # trio code
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.ensure_path(path, data=b"from asyncio")
            data, _ = await zk.get_data(path)
            return data

    async def main() -> tuple[bytes, int]:
        ticks = 0

        async def ticker() -> None:  # the asyncio loop keeps running its own tasks meanwhile
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        data = await zkwire.aio.run_trio(zk_part, zk_path)
        task.cancel()
        return data, ticks

    data, ticks = asyncio.run(main())
    assert data == b"from asyncio"
    assert ticks > 0


def test_a_portal_keeps_a_client_open_across_calls(zk_hosts: str, zk_path: str) -> None:
    async def main() -> None:
        async with zkwire.aio.open_portal() as portal:
            zk = await portal.enter(zkwire.open_client(zk_hosts))
            assert await portal.call(zk.ensure_path, zk_path) is True
            stat = await portal.call(zk.set_data, zk_path, b"v2")
            assert stat.version == 1
            results = await asyncio.gather(*(portal.call(zk.get_data, zk_path) for _ in range(20)))
            assert {data for data, _ in results} == {b"v2"}
            with pytest.raises(zkwire.NoNodeError):
                await portal.call(zk.get_data, f"{zk_path}/missing")
            # Cancelling the asyncio side cancels the trio call.
            call = asyncio.ensure_future(portal.call(functools.partial(zk.exists, f"{zk_path}/later", watch=True)))
            await asyncio.sleep(0)
            sleeper = asyncio.ensure_future(portal.call(_sleep_forever))
            await asyncio.sleep(0.05)
            sleeper.cancel()
            with pytest.raises(asyncio.CancelledError):
                await sleeper
            assert (await call)[0] is None
        assert zk.state is zkwire.SessionState.CLOSED  # closed with the portal

    asyncio.run(main())


def test_keyword_arguments_go_through_run_trio_and_the_portal(zk_hosts: str, zk_path: str) -> None:
    async def zk_part(path: str, *, data: bytes, async_fn: str) -> tuple[bytes, str]:  # trio code
        async with zkwire.open_client(zk_hosts) as zk:
            await zk.ensure_path(path, data=data)
            value, _ = await zk.get_data(path)
            return value, async_fn

    async def main() -> None:
        # Even a keyword named like run_trio's own parameter goes to the function.
        assert await zkwire.aio.run_trio(zk_part, zk_path, data=b"kw", async_fn="x") == (b"kw", "x")
        async with zkwire.aio.open_portal() as portal:
            zk = await portal.enter(zkwire.open_client(zk_hosts))
            assert await portal.call(zk.ensure_path, zk_path, data=b"ignored") is False
            data, stat, watch = await portal.call(zk.get_data, zk_path, watch=True)
            assert (data, stat.version) == (b"kw", 0)
            await portal.call(zk.set_data, zk_path, b"v2", version=0)
            event = await portal.call(watch.wait)
            assert event.type is zkwire.EventType.NODE_DATA_CHANGED
            assert await portal.call(lambda: zk.get_children(zk_path, watch=True, sort=False)) != []

    asyncio.run(main())


async def _sleep_forever() -> None:
    import trio

    await trio.sleep_forever()
