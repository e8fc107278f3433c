"""The ``zkwire`` command line, run as a subprocess against the real server: one-shot commands with their
outputs, failures and exit codes, the interactive shell driven through stdin (on a pseudo-terminal: in
test_shell_interactive.py), watches, quotas, four-letter words."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import trio
from helpers.addresses import first_server

import zkwire
from zkwire.acl import digest_id
from zkwire.shell.commands.quotas import format_limits, parse_quota
from zkwire.shell.format import format_data, format_stat, format_zxid
from zkwire.testing.handles import ServerHandle

STAT_FIELDS = [
    "cZxid",
    "ctime",
    "mZxid",
    "mtime",
    "pZxid",
    "cversion",
    "dataVersion",
    "aclVersion",
    "ephemeralOwner",
    "dataLength",
    "numChildren",
]


@dataclass
class Result:
    code: int
    out: str
    err: str


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ZKWIRE_SERVER", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


async def zkw(hosts: str, *args: str, stdin: bytes = b"", limit: float = 20.0, options: tuple[str, ...] = ()) -> Result:
    """Run ``python -m zkwire --server HOSTS [options] ARGS...`` to completion."""
    cmd = [sys.executable, "-m", "zkwire", "--server", hosts, *options, *args]
    with trio.fail_after(limit):
        done = await trio.run_process(
            cmd, stdin=stdin, capture_stdout=True, capture_stderr=True, check=False, env=_env()
        )
    result = Result(done.returncode, done.stdout.decode(), done.stderr.decode())
    assert "Traceback" not in result.err, result.err
    return result


async def zkw_all(hosts: str, cases: list[list[str]], options: tuple[str, ...] = ()) -> list[Result]:
    """Run independent one-shot invocations a few at a time; results in the order of ``cases``."""
    results: list[Result | None] = [None] * len(cases)
    limiter = trio.CapacityLimiter(4)

    async def one(i: int, args: list[str]) -> None:
        async with limiter:
            results[i] = await zkw(hosts, *args, options=options)

    async with trio.open_nursery() as nursery:
        for i, args in enumerate(cases):
            nursery.start_soon(one, i, args)
    return [r for r in results if r is not None]


async def shell_script(hosts: str, lines: list[str], *options: str) -> list[str]:
    """Feed ``lines`` to the shell through a pipe; its output lines (stderr merged, in order)."""
    shell = await start_interactive(hosts, *options)
    for line in lines:
        await shell.send(line)
    code, rest = await shell.finish(limit=30)
    assert code == 0, rest
    return rest.splitlines()


class Interactive:
    """A running ``zkwire`` process whose stdin we write line by line (stderr merged into stdout)."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.output = b""
        self.seen = 0

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(line.encode() + b"\n")

    async def expect(self, text: str, limit: float = 10.0) -> str:
        """Wait until ``text`` appears after what earlier expects consumed; return the output up to it."""
        assert self.process.stdout is not None
        with trio.fail_after(limit):
            while True:
                at = self.output.find(text.encode(), self.seen)
                if at != -1:
                    chunk = self.output[self.seen : at + len(text)].decode()
                    self.seen = at + len(text)
                    return chunk
                data = await self.process.stdout.receive_some(65536)
                if not data:
                    raise AssertionError(f"EOF before {text!r}; output:\n{self.output.decode()}")
                self.output += data

    async def finish(self, limit: float = 10.0) -> tuple[int, str]:
        """Close stdin (end of input) and collect the rest of the output and the exit code."""
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.aclose()
        with trio.fail_after(limit):
            while data := await self.process.stdout.receive_some(65536):
                self.output += data
            code = await self.process.wait()
        rest = self.output[self.seen :].decode()
        assert "Traceback" not in self.output.decode(), self.output.decode()
        return code, rest


async def start_interactive(hosts: str, *args: str) -> Interactive:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "zkwire", "--server", hosts, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_env(),
    )
    return Interactive(process)


async def remove_tree(zk: zkwire.Client, path: str) -> None:
    try:
        children = await zk.get_children(path)
    except zkwire.NoNodeError:
        return
    for child in children:
        await remove_tree(zk, f"{path}/{child}")
    try:
        await zk.delete(path)
    except zkwire.NoNodeError:
        pass


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------- formatting


def test_format_helpers() -> None:
    assert format_data(b"hello world") == "hello world"
    assert format_data(b"two\nlines\t!") == "two\nlines\t!"
    assert format_data(b"\x00\xff\x10") == "0x00ff10"
    assert format_data("caf\u00e9".encode()) == "caf\u00e9"
    assert format_data(b"bell\x07") == "0x62656c6c07"
    assert format_data(b"") == ""
    assert format_zxid(0) == "0x0"
    assert format_zxid(0x1A2B) == "0x1a2b"
    assert format_zxid(-(1 << 63)) == "0x8000000000000000"
    stat = zkwire.Stat(1, 2, 0, 1000, 3, 4, 5, 0x10, 6, 7, 8)
    lines = format_stat(stat).splitlines()
    assert [line.split(" = ")[0] for line in lines] == STAT_FIELDS
    assert lines[0] == "cZxid = 0x1" and lines[4] == "pZxid = 0x8" and lines[8] == "ephemeralOwner = 0x10"


def test_quota_text_round_trip() -> None:
    text = "count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=7"
    parsed = parse_quota(text)
    assert parsed == {"count": 5, "bytes": -1, "byteHardLimit": -1, "countHardLimit": 7}
    assert format_limits(parsed) == text
    assert parse_quota("count=2,bytes=10") == {"count": 2, "bytes": 10}


# ---------------------------------------------------------------------------------------- one-shot commands


async def test_create_get_set_delete_and_their_failures(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    node = f"{zk_path}/n"
    r = await zkw(zk_hosts, "create", node, "hello world")
    assert (r.code, r.out, r.err) == (0, f"Created {node}\n", "")
    cases = [
        ["create", node, "again"],
        ["get", node],
        ["set", "-v", "3", node, "stale"],
        ["delete", "-v", "7", node],
        ["create", f"{zk_path}/missing/child"],
        ["delete", zk_path],
        ["get", f"{zk_path}/nope"],
        ["stat", f"{zk_path}/nope"],
        ["set", f"{zk_path}/nope", "x"],
    ]
    results = await zkw_all(zk_hosts, cases)
    assert [(r.code, r.out, r.err) for r in results] == [
        (1, "", f"Node already exists: {node}\n"),
        (0, "hello world\n", ""),
        (1, "", f"Version does not match: {node}\n"),
        (1, "", f"Version does not match: {node}\n"),
        (1, "", f"Node does not exist: {zk_path}/missing/child\n"),
        (1, "", f"Node has children: {zk_path}\n"),
        (1, "", f"Node does not exist: {zk_path}/nope\n"),
        (1, "", f"Node does not exist: {zk_path}/nope\n"),
        (1, "", f"Node does not exist: {zk_path}/nope\n"),
    ]
    r = await zkw(zk_hosts, "set", "-s", node, "v2")
    assert r.code == 0 and "dataVersion = 1" in r.out and "dataLength = 2" in r.out
    r = await zkw(zk_hosts, "set", "-v", "1", node, "-5")  # a negative number is data, not an option
    assert r.code == 0
    r = await zkw(zk_hosts, "get", "-s", node)
    assert r.code == 0 and r.out.startswith("-5\ncZxid = 0x") and "dataVersion = 2" in r.out
    r = await zkw(zk_hosts, "delete", "-v", "2", node)
    assert (r.code, r.out, r.err) == (0, "", "")
    async with zkwire.open_client(zk_hosts) as zk:
        assert await zk.exists(node) is None


async def test_stat_shows_all_eleven_fields(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        await zk.create(f"{zk_path}/kid", b"abc")
        stat = await zk.exists(zk_path)
        assert stat is not None
        r = await zkw(zk_hosts, "stat", zk_path)
        assert r.code == 0
        fields = dict(line.split(" = ", 1) for line in r.out.splitlines())
        assert list(fields) == STAT_FIELDS
        assert fields["cZxid"] == f"0x{stat.czxid:x}" and fields["mZxid"] == f"0x{stat.mzxid:x}"
        assert fields["pZxid"] == f"0x{stat.pzxid:x}"
        assert fields["numChildren"] == "1" and fields["cversion"] == "1" and fields["ephemeralOwner"] == "0x0"
        assert re.fullmatch(r"\w{3} \w{3} \d\d \d\d:\d\d:\d\d \S+ \d{4}", fields["ctime"]), fields["ctime"]
        r = await zkw(zk_hosts, "create", "-e", f"{zk_path}/eph")
        assert r.code == 0
        # The one-shot session is gone, and its ephemeral node with it.
        assert await zk.exists(f"{zk_path}/eph") is None


async def test_binary_data_is_shown_in_hex(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        await zk.set_data(zk_path, b"\x00\x01\xfe\xff")
    r = await zkw(zk_hosts, "get", zk_path)
    assert (r.code, r.out) == (0, "0x0001feff\n")


async def test_ls_plain_stat_recursive(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(f"{zk_path}/b/y")
        await zk.create(f"{zk_path}/a")
        await zk.create(f"{zk_path}/b/x")
    ls, ls_s, ls_r, missing, number = await zkw_all(
        zk_hosts,
        [
            ["ls", zk_path],
            ["ls", "-s", zk_path],
            ["ls", "-R", zk_path],
            ["ls", f"{zk_path}/nope"],
            ["getAllChildrenNumber", zk_path],
        ],
    )
    assert (ls.code, ls.out) == (0, "[a, b]\n")
    assert ls_s.code == 0 and ls_s.out.startswith("[a, b]\ncZxid = ") and "numChildren = 2" in ls_s.out
    assert ls_r.code == 0
    assert ls_r.out.splitlines() == [zk_path, f"{zk_path}/a", f"{zk_path}/b", f"{zk_path}/b/x", f"{zk_path}/b/y"]
    assert (missing.code, missing.err) == (1, f"Node does not exist: {zk_path}/nope\n")
    assert (number.code, number.out) == (0, "4\n")


async def test_create_modes(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
        bad = f"{zk_path}/bad"
        results = await zkw_all(
            zk_hosts,
            [
                ["create", "-s", f"{zk_path}/seq-", "x"],
                ["create", "-c", f"{zk_path}/box"],
                ["create", "-t", "60000", f"{zk_path}/ttl", "t"],
                ["create", "-s", "-t", "60000", f"{zk_path}/ttlseq-"],
                # Contradictory flags are usage errors, found before connecting.
                ["create", "-e", "-t", "100", bad],
                ["create", "-c", "-s", bad],
                ["create", "-c", "-e", bad],
                ["create", "-t", "0", bad],
                ["create", "-t", "soon", bad],
            ],
        )
        assert [r.code for r in results] == [0, 0, 0, 0, 2, 2, 2, 2, 2], results
        assert re.fullmatch(rf"Created {re.escape(zk_path)}/seq-\d{{10}}\n", results[0].out), results[0]
        assert "ttlseq-" in results[3].out
        children = await zk.get_children(zk_path)
        assert {"box", "ttl"} <= set(children) and len(children) == 4


async def test_acls_and_auth(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(zk_path)
    readonly = f"{zk_path}/readonly"
    secret = f"{zk_path}/secret"
    ident = digest_id("alice", "s3cret").id
    results = await zkw_all(
        zk_hosts,
        [
            ["create", readonly, "data", "world:anyone:cdr"],
            ["create", secret, "hidden", f"digest:{ident}:cdrwa,world:anyone:c"],
        ],
    )
    assert [r.code for r in results] == [0, 0]
    alice = ("--auth", "digest:alice:s3cret")
    cases = [
        ["getAcl", readonly],
        ["getAcl", "-s", readonly],
        ["setAcl", readonly, "world:anyone:cdrwa"],
        ["set", readonly, "x"],
        ["getAcl", secret],  # reading an ACL needs READ (or ADMIN) permission
        ["get", secret],
    ]
    results = await zkw_all(zk_hosts, cases)
    assert (results[0].code, results[0].out) == (0, "'world,'anyone\n: cdr\n")
    assert results[1].code == 0 and results[1].out.startswith("'world,'anyone\n: cdr\ncZxid = ")
    assert "aclVersion = 0" in results[1].out
    assert [(r.code, r.err) for r in results[2:]] == [
        (1, f"Not authorized: {readonly}\n"),
        (1, f"Not authorized: {readonly}\n"),
        (1, f"Not authorized: {secret}\n"),
        (1, f"Not authorized: {secret}\n"),
    ]
    results = await zkw_all(
        zk_hosts, [["getAcl", secret], ["get", secret], ["setAcl", "-v", "5", secret, "world:anyone:r"]], alice
    )
    assert [(r.code, r.out, r.err) for r in results] == [
        (0, f"'digest,'{ident}\n: cdrwa\n'world,'anyone\n: c\n", ""),
        (0, "hidden\n", ""),
        (1, "", f"Version does not match: {secret}\n"),
    ]
    # The shell: addauth, then the same session may change the ACL.
    out = await shell_script(
        zk_hosts,
        [
            f"get {secret}",
            "addauth digest alice:wrong",
            f"get {secret}",
            "addauth digest alice:s3cret",
            f"get {secret}",
            f"setAcl -s -v 0 {secret} world:anyone:r",
        ],
    )
    assert out[:4] == [f"Not authorized: {secret}", f"Not authorized: {secret}", "hidden", "cZxid = " + out[3][8:]]
    assert "aclVersion = 1" in out
    r = await zkw(zk_hosts, "get", secret)
    assert (r.code, r.out) == (0, "hidden\n")
    # Bad ACL text is a usage error.
    cases = [["create", f"{zk_path}/bad", "d", acl] for acl in ("bogus", "world:anyone:xyz", "world:anyone", ",")]
    cases.append(["setAcl", zk_path, "nonsense"])
    for r in await zkw_all(zk_hosts, cases):
        assert r.code == 2 and r.err.count("\n") == 1, r


async def test_recursive_set_acl_and_deleteall(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        for p in ("a/b/c", "a/d", "e"):
            await zk.ensure_path(f"{zk_path}/{p}")
        r = await zkw(zk_hosts, "setAcl", "-R", f"{zk_path}/a", "world:anyone:cdrwa")
        assert r.code == 0
        _, stat = await zk.get_acl(f"{zk_path}/a/b/c")
        assert stat.aversion == 1
        r = await zkw(zk_hosts, "deleteall", f"{zk_path}/a", "-b", "2")
        assert r.code == 0
        assert await zk.get_children(zk_path) == ["e"]
        r = await zkw(zk_hosts, "deleteall", zk_path)
        assert (r.code, r.out, r.err) == (0, "", "")
        assert await zk.exists(zk_path) is None
    r = await zkw(zk_hosts, "deleteall", zk_path)
    assert r.code == 1 and "Node does not exist" in r.err
    r = await zkw(zk_hosts, "deleteall", "/")
    assert r.code == 2


async def test_sync_whoami_ephemerals(zk_server: ServerHandle, zk_hosts: str, zk_path: str) -> None:
    sync, whoami, ephemerals = await zkw_all(zk_hosts, [["sync", "/"], ["whoami"], ["getEphemerals"]])
    assert (sync.code, sync.out) == (0, "Sync is OK\n")
    ip = zk_server.client_address  # 127.0.0.1, or the container network's gateway
    assert whoami.code == 0 and whoami.out.splitlines()[0] == "Auth scheme: User" and f"ip: {ip}\n" in whoami.out
    assert (ephemerals.code, ephemerals.out) == (0, "[]\n")
    r = await zkw(zk_hosts, "whoami", options=("--auth", "digest:bob:pw"))
    assert r.code == 0 and "digest: bob" in r.out


async def test_quotas_in_zookeeper_38_format(zk_hosts: str, zk_path: str) -> None:
    limits = f"/zookeeper/quota{zk_path}/zookeeper_limits"
    stats = f"/zookeeper/quota{zk_path}/zookeeper_stats"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.ensure_path(f"{zk_path}/a")
        await zk.set_data(f"{zk_path}/a", b"12345")
        try:
            r = await zkw(zk_hosts, "setquota", "-n", "5", zk_path)
            assert (r.code, r.out, r.err) == (0, "", "")
            data, _ = await zk.get_data(limits)
            assert data == b"count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"
            data, _ = await zk.get_data(stats)
            assert data == b"count=2,bytes=5"
            # The server keeps the usage up to date itself.
            await zk.create(f"{zk_path}/b", b"xy")
            with trio.fail_after(5):
                while (await zk.get_data(stats))[0] != b"count=3,bytes=7":
                    await trio.sleep(0.05)
            out = await shell_script(
                zk_hosts,
                [
                    f"setquota -b 100 {zk_path}",
                    f"get {limits}",
                    f"setquota -N 2 {zk_path}",
                    f"listquota {zk_path}",
                    f"setquota -n 3 {zk_path}/a",
                    f"delquota -n {zk_path}",
                    f"get {limits}",
                    f"delquota {zk_path}",
                    f"ls /zookeeper/quota{zk_path}",
                    f"listquota {zk_path}",
                    f"delquota {zk_path}",
                    f"setquota -n 3 {zk_path}/a",
                    f"setquota -b 10 {zk_path}",
                    f"delquota {zk_path}/a",
                    f"ls /zookeeper/quota{zk_path}",
                ],
            )
            assert out == [
                "count=5,bytes=100=;byteHardLimit=-1;countHardLimit=-1",
                f"warning: {zk_path} already has 3 nodes, more than the count quota 2",
                f"absolute path is {limits}",
                f"Output quota for {zk_path} count=5,bytes=100,countHardLimit=2,byteHardLimit=-1",
                f"Output stat for {zk_path} count=3,bytes=7",
                f"{zk_path}/a has a parent {zk_path} which has a quota",
                "count=-1,bytes=100=;byteHardLimit=-1;countHardLimit=2",
                f"Node does not exist: /zookeeper/quota{zk_path}",
                f"quota for {zk_path} does not exist.",
                f"Quota does not exist for {zk_path}",
                f"{zk_path} has a child {zk_path}/a which has a quota",
                f"Node does not exist: /zookeeper/quota{zk_path}",
            ]
        finally:
            await remove_tree(zk, f"/zookeeper/quota{zk_path}")
    cases = [
        ["listquota", zk_path],
        ["setquota", "-n", "1", f"{zk_path}/missing"],
        ["setquota", "-n", "x", zk_path],
        ["setquota", zk_path],
        ["setquota", "-n", "1", "-b", "2", zk_path],
        ["setquota", "-n", "1", "/zookeeper"],
    ]
    results = await zkw_all(zk_hosts, cases)
    assert [(r.code, r.err) for r in results[:2]] == [
        (1, f"quota for {zk_path} does not exist.\n"),
        (1, f"Node does not exist: {zk_path}/missing\n"),
    ]
    assert [r.code for r in results[2:]] == [2, 2, 2, 2]


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


# ---------------------------------------------------------------------------------------- usage and connection errors


async def test_usage_errors_exit_2_without_connecting() -> None:
    nowhere = f"127.0.0.1:{closed_port()}"  # proves that nothing tries to connect
    cases = [
        ["bogus"],
        ["ls"],
        ["ls", "/a", "/b"],
        ["ls", "-x", "/"],
        ["ls", "--long", "/"],
        ["get", "relative/path"],
        ["get", "/double//slash"],
        ["set", "-v", "abc", "/a", "x"],
        ["set", "-v"],
        ["delete", "-v", "99999999999", "/a"],
        ["addWatch", "-m", "SOMETIMES", "/a"],
        ["removewatches", "/a", "-c", "-d"],
        ["history"],
        ["connect", "h:1"],
        ["four", "RUOK"],
        ["create", "/a", "d", "world:anyone:q"],
        ["delquota", "-n", "-b", "/a"],
        ["ls", "-R", "-s", "/"],
    ]
    with trio.fail_after(40):
        results = await zkw_all(nowhere, cases)
    for args, r in zip(cases, results, strict=True):
        assert r.code == 2, (args, r)
        assert r.out == "" and r.err.count("\n") == 1, (args, r)
    assert results[0].err == "Command not found: bogus (try help)\n"
    assert results[5].err == "Invalid path 'relative/path': must start with \"/\"\n"
    assert results[7].err == "set: version must be a number, not 'abc'\n"
    assert results[17].err == "ls: -R cannot be combined with -s or -w\n"
    r = await zkw(nowhere, "ls", options=("--timeout", "soon"))
    assert r.code == 2 and "--timeout" in r.err
    r = await zkw("not a:connect:string", "ls", "/")
    assert r.code == 2 and r.err.count("\n") == 1


async def test_connection_refused_exits_3_quickly() -> None:
    port = closed_port()
    nowhere = f"127.0.0.1:{port}"
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        results: dict[str, Result] = {}

        async def run(name: str, stdin: bytes, *args: str) -> None:
            results[name] = await zkw(nowhere, *args, options=("--timeout", "1"), stdin=stdin)

        nursery.start_soon(run, "one-shot", b"", "ls", "/")
        nursery.start_soon(run, "shell", b"ls /\n")
        nursery.start_soon(run, "four", b"", "four", "ruok")
    assert trio.current_time() - start < 8
    r = results["one-shot"]
    assert (r.code, r.out, r.err) == (3, "", f"Cannot connect to 127.0.0.1:{port}: Connection refused\n")
    r = results["shell"]
    assert (r.code, r.err) == (3, f"Cannot connect to 127.0.0.1:{port}: Connection refused\n")
    r = results["four"]
    assert (r.code, r.err) == (3, f"127.0.0.1:{port}: Connection refused\n")


async def test_help_and_version(zk_hosts: str) -> None:
    help_, version, long_help = await zkw_all(zk_hosts, [["help"], ["version"], ["--help"]])
    assert help_.code == 0
    for usage in ("ls [-s] [-w] [-R] path", "create [-s] [-e] [-c] [-t ttl] path [data] [acl]", "setquota -n|-b"):
        assert usage in help_.out
    assert (version.code, version.out) == (0, f"zkwire {zkwire.__version__}\n")
    assert long_help.code == 0 and "exit codes:" in long_help.out


async def test_console_script_and_subprogram_hook(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("zkwire")
    if script.exists():
        with trio.fail_after(20):
            done = await trio.run_process([str(script), "version"], capture_stdout=True, check=False)
        assert done.returncode == 0 and done.stdout.startswith(b"zkwire ")
    # "decode" goes to the tracer module, which reads its own arguments.
    capture = tmp_path / "capture.bin"
    capture.write_bytes(b"")
    with trio.fail_after(20):
        done = await trio.run_process(
            [sys.executable, "-m", "zkwire", "decode", str(capture)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    with trio.fail_after(20):
        done = await trio.run_process(
            [sys.executable, "-m", "zkwire", "decode", str(tmp_path / "missing.bin")],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1 and b"Traceback" not in done.stderr


# ---------------------------------------------------------------------------------------- four-letter words


async def test_four_letter_words(zk_hosts: str) -> None:
    host, port = first_server(zk_hosts)
    ruok, srvr, mntr, conf = await zkw_all(zk_hosts, [["four", w] for w in ("ruok", "srvr", "mntr", "conf")])
    assert (ruok.code, ruok.out) == (0, "imok\n")
    assert srvr.code == 0 and srvr.out.startswith("Zookeeper version: ") and "Mode: " in srvr.out
    assert mntr.code == 0 and "zk_version\t" in mntr.out
    assert conf.code == 0 and "clientPort=" in conf.out
    r = await zkw(f"127.0.0.1:{closed_port()}", "four", "isro", f"{host}:{port}")
    assert (r.code, r.out) == (0, "rw\n")


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


async def test_cli_with_a_refused_credential_exits_3(zk_hosts: str) -> None:
    r = await zkw(zk_hosts, "ls", "/", options=("--auth", "bogus:x"))
    assert r.code == 3, r
    assert "Authentication failed" in r.err
    assert "bogus" not in r.out
    r = await zkw(zk_hosts, "ls", "/", options=("--auth", "digest:u:pw"))
    assert r.code == 0 and "zookeeper" in r.out
