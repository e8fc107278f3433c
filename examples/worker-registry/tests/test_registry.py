"""The application's tests, against a real ZooKeeper from zkwire's pytest plugin.

``zk`` is a client chrooted to a fresh node for each test, so tests never see each other's data;
``zk_connect_string`` is the same place for code that opens its own client; ``zk_server`` can restart
the server. Local JVMs by default; ``pytest --zk-backend docker`` runs the same tests on containers.
"""

from __future__ import annotations

import registry
import trio

import zkwire
from zkwire.testing import ServerHandle


async def test_registered_workers_are_listed(zk: zkwire.Client) -> None:
    await registry.register(zk, "w1", "10.0.0.1:8000")
    await registry.register(zk, "w2", "10.0.0.2:8000")
    assert await registry.workers(zk) == {"w1": "10.0.0.1:8000", "w2": "10.0.0.2:8000"}


async def test_a_worker_disappears_with_its_session(zk: zkwire.Client, zk_connect_string: str) -> None:
    async with zkwire.open_client(zk_connect_string) as worker:  # the worker's own session
        await registry.register(worker, "short-lived")
        assert list(await registry.workers(zk)) == ["short-lived"]
    assert await registry.workers(zk) == {}


async def test_job_numbers_are_unique_under_contention(zk_connect_string: str) -> None:
    drawn: list[int] = []

    async def worker() -> None:
        async with zkwire.open_client(zk_connect_string) as client:
            for _ in range(5):
                drawn.append(await registry.next_job_number(client))

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(worker)
    assert sorted(drawn) == list(range(1, 21))


async def test_registration_survives_a_server_restart(zk: zkwire.Client, zk_server: ServerHandle) -> None:
    await registry.register(zk, "w1")
    with trio.fail_after(60):
        await zk_server.restart()  # same address, same data: the session carries on
        assert list(await registry.workers(zk)) == ["w1"]
    assert await registry.next_job_number(zk) == 1
