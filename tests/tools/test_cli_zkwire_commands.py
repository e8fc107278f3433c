"""The ``zkwire`` command line's one-shot commands, run as a subprocess against the real server: their outputs
(and the formatting helpers behind them), failures and exit codes, ACLs and auth, quotas, four-letter words."""

from __future__ import annotations

import re

import trio
from helpers.addresses import first_server
from helpers.cli import closed_port, shell_script, zkw, zkw_all

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
