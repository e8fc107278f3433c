"""The ``zkwire`` command line's one-shot commands with watches, run as a subprocess against the real server:
the result then the event, a watch that does not fire, addWatch streaming until the timeout, removewatches."""

from __future__ import annotations

import trio
from helpers.addresses import first_server
from helpers.cli import Interactive, start_interactive, zkw

import zkwire

# ---------------------------------------------------------------------------------------- watches, one-shot


async def _start_one_shot(hosts: str, *args: str) -> Interactive:
    return await start_interactive(hosts, "--timeout", "8", *args)


async def test_one_shot_get_w_prints_result_then_the_event(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        await zk.set_data(zk_path, b"before")
        run = await _start_one_shot(zk_hosts, "get", "-w", zk_path)
        await run.expect("before\n")
        await zk.set_data(zk_path, b"after")
        code, rest = await run.finish()
        assert code == 0
        assert rest == f"WatchedEvent state:SyncConnected type:NodeDataChanged path:{zk_path}\n"

        run = await _start_one_shot(zk_hosts, "ls", "-w", zk_path)
        await run.expect("[]\n")
        await zk.create(f"{zk_path}/kid")
        code, rest = await run.finish()
        assert (code, rest) == (0, f"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:{zk_path}\n")

        run = await _start_one_shot(zk_hosts, "stat", "-w", f"{zk_path}/kid")
        await run.expect("numChildren = 0\n")
        await zk.delete(f"{zk_path}/kid")
        code, rest = await run.finish()
        assert (code, rest) == (0, f"WatchedEvent state:SyncConnected type:NodeDeleted path:{zk_path}/kid\n")


async def test_one_shot_watch_that_does_not_fire_exits_4(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    with trio.fail_after(10):
        start = trio.current_time()
        r = await zkw(zk_hosts, "get", "-w", zk_path, options=("--timeout", "1"))
        assert trio.current_time() - start < 6
    assert (r.code, r.err) == (4, "No watch event within 1s\n")


async def test_one_shot_stat_w_on_missing_node_waits_for_its_creation(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        run = await start_interactive(zk_hosts, "--timeout", "1.5", "stat", "-w", f"{zk_path}/later")
        await run.expect(f"Node does not exist: {zk_path}/later\n")
        await zk.create(f"{zk_path}/later")
        code, rest = await run.finish()
        assert (code, rest) == (0, f"WatchedEvent state:SyncConnected type:NodeCreated path:{zk_path}/later\n")


async def test_one_shot_add_watch_streams_events_until_the_timeout(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        run = await start_interactive(zk_hosts, "--timeout", "2", "addWatch", zk_path)
        # Wait until the server holds the watch before changing anything.
        with trio.fail_after(10):
            while True:
                if await _server_has_persistent_watch(zk_hosts, zk_path):
                    break
                await trio.sleep(0.05)
        await zk.create(f"{zk_path}/x", b"1")
        await zk.set_data(f"{zk_path}/x", b"2")
        code, rest = await run.finish()
        assert code == 0
        assert rest.splitlines() == [
            f"WatchedEvent state:SyncConnected type:NodeCreated path:{zk_path}/x",
            f"WatchedEvent state:SyncConnected type:NodeDataChanged path:{zk_path}/x",
        ]


async def _server_has_persistent_watch(hosts: str, path: str) -> bool:
    from zkwire.client.fourletter import four_letter_word

    host, port = first_server(hosts)
    return path in await four_letter_word(host, port, "wchp")


async def test_one_shot_removewatches_without_a_watch_fails(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    r = await zkw(zk_hosts, "removewatches", zk_path, "-d")
    assert (r.code, r.err) == (1, f"No such watch: {zk_path}\n")
