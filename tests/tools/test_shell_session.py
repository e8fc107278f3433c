"""The shell's ``session`` command against the real server: the current session and the counts of what
the shell's sessions did (zkwire.observing.SessionCounters), as text and as JSON; one set of counts
across ``connect``; a chroot with a bidi override shown escaped; refused outside the shell."""

from __future__ import annotations

import json
import re

import trio
from helpers.cli import start_interactive, zkw

import zkwire
from zkwire.sansio.hosts import parse_connect_string

#: Requests of the first session: the commands', and the ensemble follower's read of /zookeeper/config.
FIRST = {"create": 1, "getData": 1, "setData": 1, "exists": 1, "getChildren": 1}


def _block(lines: list[str], first: str) -> list[str]:
    """One ``session``'s text: from the line ``first`` to the next JSON object or ``session id:``."""
    start = lines.index(first)
    end = start + 1
    while end < len(lines) and not lines[end].startswith(("{", "session id:")):
        end += 1
    return lines[start:end]


async def test_session_shows_the_session_and_what_the_shell_did(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    chroot = f"{zk_path}/ch\u202eroot"
    shell = await start_interactive(zk_hosts)
    await shell.send(f"create {zk_path}/a x")
    await shell.expect(f"Created {zk_path}/a\n")
    await trio.sleep(0.3)  # the ensemble follower's first read (50 ms after connecting) is done
    await shell.send(f"set {zk_path}/a y")
    await shell.send(f"stat {zk_path}/nope")  # exists: NONODE
    await shell.send(f"ls {zk_path}")
    await shell.expect("[a]\n")
    await shell.send("session")
    await shell.send("session --json")
    await shell.send("session -j")
    await shell.send(f"connect {zk_hosts}{chroot}")
    await shell.send("session -j")
    await shell.send("session")
    await shell.send("close")
    await shell.send("session")
    code, rest = await shell.finish(limit=30)
    assert code == 0
    assert "\u202e" not in rest  # escaped wherever it is shown
    lines = rest.splitlines()
    objects = [json.loads(line) for line in lines if line.startswith("{")]
    first, again, connected = objects
    assert first == again

    # The first session, in JSON
    servers = [str(h) for h in parse_connect_string(zk_hosts)[0]]
    facts = first["session"]
    assert re.fullmatch("0x[0-9a-f]+", facts["id"]) and facts["state"] == "connected"
    assert facts["server"] in servers and facts["chroot"] is None and facts["timeout_ms"] > 0
    assert first["requests"] == FIRST
    assert first["errors"] == {"NONODE": 1} and first["errors_by_op"] == {"exists NONODE": 1}
    assert {op: row["count"] for op, row in first["latency"].items()} == FIRST
    assert first["sessions"] == {"opened": 1, "reattached": 0, "closed": 0, "expired": 0}
    assert (first["in_flight"], first["backlog"]) == (0, 0)
    assert first["bytes"]["client"] > 0 and first["bytes"]["server"] > 0

    # ... and as text: the session, then the counters' lines
    text = _block(lines, f"session id: {facts['id']}")
    assert text[:10] == [
        f"session id: {facts['id']}",
        "state: connected",
        f"server: {facts['server']}",
        f"negotiated timeout: {facts['timeout_ms']}ms",
        "in flight: 0",
        "backlog: 0",
        f"summary: 5 requests, {first['bytes']['client']} bytes from clients, "
        f"{first['bytes']['server']} bytes from servers",
        "sessions: 1 opened, 0 re-attached, 0 closed, 0 expired",
        "connections: 1 attempts, 0 failed attempts, 0 lost, 0 suspended, 0 moved, 0 read-only, 0 refused credentials",
        "requests: create 1, getData 1, setData 1, exists 1, getChildren 1",
    ]
    assert text[10] == "errors: exists NONODE 1"
    assert [line.split(":")[0] for line in text[11:]] == [f"latency {op}" for op in sorted(FIRST)]
    assert all(re.fullmatch(r"latency \w+: n=1 p50=[0-9.]+ms p99=[0-9.]+ms max=[0-9.]+ms", line) for line in text[11:])

    # After connect: a new session, the same counters (both sessions' counts)
    facts = connected["session"]
    assert facts["chroot"] == chroot and facts["id"] != first["session"]["id"]
    assert connected["sessions"]["opened"] == 2 and connected["sessions"]["closed"] == 1
    assert {op: n for op, n in connected["requests"].items() if op != "getData"} == {
        op: n for op, n in FIRST.items() if op != "getData"
    }
    text = _block(lines, f"session id: {facts['id']}")
    assert text[3] == f"chroot: {zk_path}/ch\\u202eroot"
    assert text[4:7] == [f"negotiated timeout: {facts['timeout_ms']}ms", "in flight: 0", "backlog: 0"]
    assert "sessions: 2 opened, 0 re-attached, 1 closed, 0 expired" in text

    # After close: no session, the counts stay
    text = _block(lines, "session id: none")
    assert text[:2] == ["session id: none", "state: not connected"]
    assert text[2].startswith("summary: ")
    assert text[3] == "sessions: 2 opened, 0 re-attached, 2 closed, 0 expired"


async def test_session_is_refused_outside_the_shell(zk_hosts: str) -> None:
    """A one-shot run's only command is ``session``: its session would have done nothing to count."""
    r = await zkw(zk_hosts, "session", "--json")
    assert (r.code, r.out, r.err) == (2, "", "session: only available in the interactive shell\n")
