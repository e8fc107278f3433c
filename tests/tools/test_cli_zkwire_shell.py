"""The ``zkwire`` shell, run as a subprocess against the real server and driven through stdin (on a
pseudo-terminal: in test_shell_interactive.py): commands, watch events as they arrive, close/connect and the
session commands, a lost connection."""

from __future__ import annotations

import trio
from helpers.cli import closed_port, start_interactive, zkw

import zkwire
from zkwire.testing.handles import ServerHandle

# ---------------------------------------------------------------------------------------- the shell


async def test_shell_reads_commands_from_stdin(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    script = "\n".join(
        [
            f"create {zk_path}/a 'two words'",
            f"get {zk_path}/a",
            "bogus",
            f"get {zk_path}/nope",
            f"set -v 5 {zk_path}/a x",
            f"ls {zk_path}",
            "",
            "history",
            "redo 1",
            "redo 99",
            "printwatches",
            f"create -e {zk_path}/eph",
            f"getEphemerals {zk_path}",
            "quit",
            f"create {zk_path}/never",
        ]
    )
    r = await zkw(zk_hosts, stdin=script.encode() + b"\n")
    assert r.code == 0
    assert r.out.splitlines() == [
        f"Created {zk_path}/a",
        "two words",
        "[a]",
        f"0 - create {zk_path}/a 'two words'",
        f"1 - get {zk_path}/a",
        "2 - bogus",
        f"3 - get {zk_path}/nope",
        f"4 - set -v 5 {zk_path}/a x",
        f"5 - ls {zk_path}",
        "6 - history",
        "two words",
        "printwatches is on",
        f"Created {zk_path}/eph",
        f"[{zk_path}/eph]",
    ]
    assert r.err.splitlines() == [
        "Command not found: bogus (try help)",
        f"Node does not exist: {zk_path}/nope",
        f"Version does not match: {zk_path}/a",
        "redo: no command 99 in the history",
    ]
    async with zkwire.open_client(zk_hosts) as zk:
        assert await zk.get_children(zk_path) == ["a"]


async def test_shell_prints_watch_events_as_they_arrive(zk_hosts: str, zk_path: str) -> None:
    # A persistent watch and a one-shot watch of one session on one path interfere in ZooKeeper 3.8
    # (a fired one-shot watch takes the persistent registration with it), so they use different paths.
    q = f"{zk_path}/q"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(q)
        shell = await start_interactive(zk_hosts)
        await shell.send(f"get -w {zk_path}")
        await shell.send("printwatches")  # a marker: the get has completed once this prints
        await shell.expect("printwatches is on\n")
        await zk.set_data(zk_path, b"changed")
        out = await shell.expect(f"type:NodeDataChanged path:{zk_path}\n")
        assert out.endswith(f"WATCHER::\n\nWatchedEvent state:SyncConnected type:NodeDataChanged path:{zk_path}\n")

        await shell.send(f"addWatch -m PERSISTENT {q}")
        await shell.send(f"ls -w {zk_path}")
        await shell.expect("[q]\n")
        await zk.create(f"{zk_path}/c1")
        await shell.expect(f"type:NodeChildrenChanged path:{zk_path}\n")
        await zk.create(f"{q}/c1")
        await shell.expect(f"type:NodeChildrenChanged path:{q}\n")
        await zk.set_data(q, b"again")
        await shell.expect(f"type:NodeDataChanged path:{q}\n")  # still there: persistent

        await shell.send(f"get -w {zk_path}")
        await shell.send(f"removewatches {zk_path} -d")
        await shell.expect(f"type:DataWatchRemoved path:{zk_path}\n")
        await shell.send(f"removewatches {q}")
        await shell.expect(f"type:PersistentWatchRemoved path:{q}\n")
        await shell.send(f"removewatches {q}")
        await shell.expect(f"No such watch: {q}\n")

        await shell.send("printwatches off")
        await shell.send(f"get -w {zk_path}")
        await shell.send(f"addWatch {q}")
        await shell.send(f"create {q}/c2 z")
        await shell.expect(f"Created {q}/c2\n")
        await zk.set_data(zk_path, b"quiet")
        await trio.sleep(0.3)
        code, rest = await shell.finish()
        assert code == 0
        assert "WatchedEvent" not in rest


async def test_shell_close_connect_and_session_commands(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    shell = await start_interactive(zk_hosts, "--timeout", "2")
    await shell.send(f"create -e {zk_path}/mine")
    await shell.expect(f"Created {zk_path}/mine\n")
    await shell.send("close")
    await shell.send("ls /")
    await shell.expect("Not connected (use: connect HOST:PORT)\n")
    await shell.send(f"connect 127.0.0.1:{closed_port()}")
    await shell.expect("Connection refused\n", limit=20)
    await shell.send(f"connect {zk_hosts}")
    await shell.send(f"ls {zk_path}")
    await shell.expect("[]\n")  # the ephemeral node went with the closed session
    await shell.send("addauth digest carol:pw")
    await shell.send("whoami")
    await shell.expect("digest: carol\n")
    await shell.send("four ruok")
    await shell.expect("imok\n")
    await shell.send(f"sync {zk_path}")
    await shell.expect("Sync is OK\n")
    code, _ = await shell.finish()
    assert code == 0


async def test_connection_loss_one_shot_gives_up_and_the_shell_reports_it(
    zk_server: ServerHandle, zk_path: str
) -> None:
    hosts = zk_server.hosts
    async with zkwire.open_client(hosts) as zk:
        await zk.ensure_path(zk_path)
        await zk.set_data(zk_path, b"here")
    # The shell is up first, so that only the server's stop comes between the one-shot's read and its
    # watch deadline (--timeout: a busy machine must not let the watch wait run out before the stop).
    shell = await start_interactive(hosts, "--session-timeout", "20")
    one_shot = None
    try:
        await shell.send(f"get {zk_path}")
        await shell.expect("here\n")
        one_shot = await start_interactive(hosts, "--timeout", "4", "get", "-w", zk_path)
        await one_shot.expect("here\n")
        await zk_server.stop()
        code, rest = await one_shot.finish()
        assert code == 3
        assert rest.startswith("Connection lost: ") and rest.count("\n") == 1, rest
        await shell.expect("WATCHER::\n\nWatchedEvent state:Disconnected type:None path:null\n")
        await zk_server.start()
        await shell.expect("WATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n", limit=20)
        await shell.send(f"get {zk_path}")  # the same session carries on
        await shell.expect("here\n")
        code, _ = await shell.finish()
        assert code == 0
    finally:
        for run in (one_shot, shell):
            if run is not None and run.process.returncode is None:
                run.process.kill()
        if not zk_server.running:  # a failure above must not leave the suite's server stopped
            await zk_server.start()
