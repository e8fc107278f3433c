"""``zklock.status.lock_status`` / ``zklock status`` against the real server, for every recipe and node
kind it understands: zklock's in both namings, kazoo's default recipes, Curator's recipes; unknown
children; a path holding both naming families."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio
from helpers.curator import CuratorPeer, compile_worker

import zklock
import zkwire
from zklock.cli import EXIT_UNKNOWN
from zklock.status import LockStatus, lock_status

kazoo_client = pytest.importorskip("kazoo.client")


async def zklock_status(hosts: str, *args: str) -> tuple[int, str, str]:
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, "-m", "zklock", "status", "--server", hosts, *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def ids(entries: list[zklock.status.Holder]) -> list[str]:
    return [h.identifier for h in entries]


async def wait_children(zk: zkwire.Client, path: str, count: int) -> None:
    with trio.fail_after(10):
        while True:
            try:
                if len(await zk.get_children(path)) >= count:
                    return
            except zkwire.NoNodeError:
                pass
            await trio.sleep(0.02)


async def status_of(zk: zkwire.Client, path: str) -> LockStatus:
    status = await lock_status(zk, path)
    assert status.unknown == [] or status.state != "free"
    return status


@pytest.fixture
async def kz(zk_hosts: str) -> AsyncIterator[Any]:
    def start() -> Any:
        client = kazoo_client.KazooClient(hosts=zk_hosts, timeout=10)
        client.start(timeout=10)
        return client

    client = await trio.to_thread.run_sync(start)
    try:
        yield client
    finally:
        await trio.to_thread.run_sync(lambda: (client.stop(), client.close()))


async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs))


@pytest.mark.parametrize("naming", ["curator", "kazoo"])
async def test_every_zklock_recipe(zk_hosts: str, zk_path: str, naming: zklock.Naming) -> None:
    async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
        with trio.fail_after(30):
            assert (await lock_status(a, f"{zk_path}/nothing")).state == "free"
            async with trio.open_nursery() as nursery:
                # mutex: a holder and a waiter
                mutex = f"{zk_path}/mutex"
                await zklock.Mutex(a, mutex, identifier="m1", naming=naming).acquire()
                nursery.start_soon(zklock.Mutex(b, mutex, identifier="m2", naming=naming).acquire)
                await wait_children(a, mutex, 2)
                s = await status_of(a, mutex)
                assert (s.state, s.recipe, ids(s.holders), ids(s.waiting)) == ("held", "mutex", ["m1"], ["m2"])
                assert {h.naming for h in s.holders + s.waiting} == {naming}
                assert s.warnings == []

                # read/write lock: two readers hold, a writer waits
                rw = f"{zk_path}/rw"
                await zklock.ReadWriteLock(a, rw, identifier="r1", naming=naming).read_lock.acquire()
                await zklock.ReadWriteLock(b, rw, identifier="r2", naming=naming).read_lock.acquire()
                nursery.start_soon(zklock.ReadWriteLock(b, rw, identifier="w", naming=naming).write_lock.acquire)
                await wait_children(a, rw, 3)
                s = await status_of(a, rw)
                assert (s.state, s.recipe, ids(s.holders), ids(s.waiting)) == (
                    "held",
                    "read/write lock",
                    ["r1", "r2"],
                    ["w"],
                )
                assert [h.kind for h in s.holders + s.waiting] == [
                    "read",
                    "read",
                    "write" if naming == "curator" else "lock",
                ]

                # semaphore of 2: two leases held, a third acquirer waits (holding the guard), a fourth queues
                sem = f"{zk_path}/sem"
                await zklock.Semaphore(a, sem, 2, identifier="s1", naming=naming).acquire()
                await zklock.Semaphore(b, sem, 2, identifier="s2", naming=naming).acquire()
                nursery.start_soon(zklock.Semaphore(a, sem, 2, identifier="s3", naming=naming).acquire)
                await wait_children(a, f"{sem}/leases" if naming == "curator" else sem, 3)
                nursery.start_soon(zklock.Semaphore(b, sem, 2, identifier="s4", naming=naming).acquire)
                guard = f"{sem}/locks" if naming == "curator" else f"{sem}-__lock__"
                await wait_children(a, guard, 2)
                s = await status_of(a, sem)
                assert (s.state, s.recipe, ids(s.holders)) == ("held", "semaphore", ["s1", "s2"])
                assert sorted(ids(s.waiting)) == ["s3", "s3", "s4"]  # s3's lease node, s3 and s4 in the guard's queue
                assert s.waiting[0].identifier == "s3" and s.waiting[0].kind == "lease"
                assert s.max_leases == (None if naming == "curator" else 2)

                # election: a leader and a candidate
                el = f"{zk_path}/election"
                await zklock.Election(a, el, identifier="e1", naming=naming).acquire()
                nursery.start_soon(zklock.Election(b, el, identifier="e2", naming=naming).acquire)
                await wait_children(a, el, 2)
                s = await status_of(a, el)
                assert (s.state, ids(s.holders), ids(s.waiting)) == ("held", ["e1"], ["e2"])
                assert s.recipe == ("election" if naming == "curator" else "mutex")  # a kazoo Election is a Lock
                nursery.cancel_scope.cancel()


async def test_kazoo_recipes(zk_hosts: str, zk_path: str, kz: Any) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        with trio.fail_after(30):
            lock = kz.Lock(f"{zk_path}/lock", "k-lock")
            assert await call(lock.acquire, blocking=False)
            s = await status_of(zk, f"{zk_path}/lock")
            assert (s.state, ids(s.holders), s.holders[0].kind, s.holders[0].naming) == (
                "held",
                ["k-lock"],
                "lock",
                "kazoo",
            )

            readers = [kz.ReadLock(f"{zk_path}/rw", f"k-r{i}") for i in range(2)]
            for r in readers:
                assert await call(r.acquire, blocking=False)
            writer = kz.WriteLock(f"{zk_path}/rw", "k-w")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, writer.acquire)
                await wait_children(zk, f"{zk_path}/rw", 3)
                s = await status_of(zk, f"{zk_path}/rw")
                assert (s.state, s.recipe, ids(s.holders), ids(s.waiting)) == (
                    "held",
                    "read/write lock",
                    ["k-r0", "k-r1"],
                    ["k-w"],
                )
                for r in readers:
                    await call(r.release)
            assert ids((await status_of(zk, f"{zk_path}/rw")).holders) == ["k-w"]
            await call(writer.release)

            sems = [kz.Semaphore(f"{zk_path}/sem", f"k-s{i}", max_leases=2) for i in range(2)]
            for sem in sems:
                assert await call(sem.acquire, blocking=False)
            s = await status_of(zk, f"{zk_path}/sem")
            assert (s.state, s.recipe, s.max_leases, sorted(ids(s.holders))) == (
                "held",
                "semaphore",
                2,
                ["k-s0", "k-s1"],
            )
            assert {h.naming for h in s.holders} == {"kazoo"}

            election = kz.Election(f"{zk_path}/election", "k-leader")
            election_done = threading.Event()
            async with trio.open_nursery() as nursery:
                led = trio.Event()
                token = trio.lowlevel.current_trio_token()

                def lead() -> None:
                    trio.from_thread.run_sync(led.set, trio_token=token)
                    election_done.wait(10)

                nursery.start_soon(call, election.run, lead)
                await led.wait()
                s = await status_of(zk, f"{zk_path}/election")
                assert (s.state, ids(s.holders)) == ("held", ["k-leader"])
                election_done.set()
            for obj in (lock, *sems):
                await call(obj.release)


@pytest.fixture(scope="module")
def curator_peer(tmp_path_factory: pytest.TempPathFactory, zk_hosts: str) -> Iterator[CuratorPeer]:
    peer = CuratorPeer(compile_worker(tmp_path_factory), zk_hosts)
    try:
        yield peer
    finally:
        peer.close()


@pytest.mark.parametrize(
    ("kind", "recipe", "shown_kind"),
    [
        ("mutex", "mutex", "mutex"),
        ("read", "read/write lock", "read"),
        ("write", "read/write lock", "write"),
        ("latch", "election", "leader"),
        ("semaphore:2", "semaphore", "lease"),
    ],
)
async def test_curator_recipes(
    zk_hosts: str, zk_path: str, curator_peer: CuratorPeer, kind: str, recipe: str, shown_kind: str
) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        with trio.fail_after(30):
            assert await curator_peer.try_(kind, path, 10_000)
            try:
                s = await status_of(zk, path)
                assert (s.state, s.recipe, len(s.holders), s.holders[0].kind, s.holders[0].naming) == (
                    "held",
                    recipe,
                    1,
                    shown_kind,
                    "curator",
                )
                code, out, _ = await zklock_status(zk_hosts, path)
                assert code == 0 and out.startswith(f"{path}: held by ")
            finally:
                await curator_peer.release()
            with trio.fail_after(5):
                while (await lock_status(zk, path)).state != "free":
                    await trio.sleep(0.05)  # Curator deletes a LeaderLatch's node in the background


async def test_cli_text_and_json_for_shared_holders_and_a_semaphore(zk_hosts: str, zk_path: str) -> None:
    rw, sem = f"{zk_path}/rw", f"{zk_path}/sem"
    async with zkwire.open_client(zk_hosts) as zk:
        r1 = zklock.ReadWriteLock(zk, rw, identifier="r1").read_lock
        r2 = zklock.ReadWriteLock(zk, rw, identifier="r2").read_lock
        async with trio.open_nursery() as nursery:
            nursery.start_soon(r1.acquire)
            nursery.start_soon(r2.acquire)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(zklock.ReadWriteLock(zk, rw, identifier="w").write_lock.acquire)
            await wait_children(zk, rw, 3)
            code, out, err = await zklock_status(zk_hosts, rw)
            lines = out.splitlines()
            assert (code, err) == (0, "")
            assert lines[0] == f"{rw}: held by 2 holders (read/write lock)"
            assert {line.split(" (")[0] for line in lines[1:3]} == {"  r1", "  r2"}
            assert all("(read, node _c_" in line and "fencing token" in line for line in lines[1:3])
            assert lines[3:5] == ["waiting (1):", f"  1. w (write, node {lines[4].split('node ')[1]}"]
            code, out, _ = await zklock_status(zk_hosts, "--json", rw)
            doc = json.loads(out)
            assert (code, doc["state"], doc["recipe"]) == (0, "held", "read/write lock")
            assert sorted(h["identifier"] for h in doc["holders"]) == ["r1", "r2"]
            assert doc["holder"] == doc["holders"][0]
            assert [(w["identifier"], w["kind"], w["naming"]) for w in doc["waiting"]] == [("w", "write", "curator")]
            nursery.cancel_scope.cancel()

        async with zklock.Semaphore(zk, sem, 3, identifier="s1", naming="kazoo"):
            code, out, _ = await zklock_status(zk_hosts, sem)
            assert code == 0
            assert out.startswith(f"{sem}: held by s1 (lease, node ")
            assert out.splitlines()[1] == "waiting: none"
            code, out, _ = await zklock_status(zk_hosts, "--json", sem)
            doc = json.loads(out)
            assert (doc["state"], doc["recipe"], doc["max_leases"], doc["holder"]["identifier"]) == (
                "held",
                "semaphore",
                3,
                "s1",
            )


async def test_unknown_children_are_not_free(zk_hosts: str, zk_path: str) -> None:
    path = f"{zk_path}/odd"
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.create(zk_path)
        await zk.create(path)
        await zk.create(f"{path}/config")
        await zk.create(f"{path}/lock-", sequential=True)  # a mutex node without a uuid: understood
        await zk.create(f"{path}/member-", sequential=True)
        s = await lock_status(zk, path)
        assert s.state == "held" and s.unknown == ["config", "member-0000000002"]
        await zk.delete(f"{path}/lock-0000000001")
        s = await lock_status(zk, path)
        assert (s.state, s.holders, s.unknown) == ("unknown", [], ["config", "member-0000000002"])
        code, out, _ = await zklock_status(zk_hosts, path)
        assert code == EXIT_UNKNOWN == 65
        assert out.splitlines() == [
            f"{path}: unknown (2 nodes no known lock recipe wrote)",
            "not understood (2): config, member-0000000002",
        ]
        code, out, _ = await zklock_status(zk_hosts, "--json", path)
        assert code == 65 and json.loads(out)["state"] == "unknown"


async def test_a_path_holding_both_namings_is_warned_about(zk_hosts: str, zk_path: str, kz: Any) -> None:
    path = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        # The failure the matrix warns of: a zklock mutex in the Curator naming holds, and a default
        # kazoo Lock is granted the same path.
        async with zklock.Mutex(zk, path, identifier="zklock"):
            lock = kz.Lock(path, "kazoo")
            assert await call(lock.acquire, blocking=False)
            try:
                s = await lock_status(zk, path)
                assert s.state == "held" and len(s.warnings) == 1
                assert "Curator-style" in s.warnings[0] and "kazoo-style" in s.warnings[0]
                code, out, err = await zklock_status(zk_hosts, path)
                assert code == 0 and out.startswith(f"{path}: held by zklock")
                assert err.startswith("zklock: warning: ") and "may overlap" in err
            finally:
                await call(lock.release)


def test_status_help_documents_every_exit_code() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "zklock", "status", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "0 free or held; 65 unknown" in " ".join(out.split()) and "69" in out


# ------------------------------------------------------------------------ the analysis, server-free

U = "0f8fad5b-d9cb-469f-a165-70867728950e"
H = "9b2c4d8e0a1f4b6c8d0e2f4a6b8c0d1e"


def holding(analysis: zklock.status.Analysis) -> list[tuple[str, str, bool]]:
    return [(e.name, e.kind, e.holds) for e in analysis.entries]


def test_analysis_of_queues() -> None:
    from zklock.status import analyze_queue

    latch, klock, mutex = f"_c_{U}-latch-0000000001", f"{H}__lock__0000000002", f"_c_{U}-lock-0000000003"
    a = analyze_queue("/p", [klock, latch])
    assert (a.recipe, holding(a), a.unknown) == ("election", [(latch, "leader", True), (klock, "lock", False)], [])
    assert len(a.warnings) == 1 and "may overlap" in a.warnings[0]  # both namings
    a = analyze_queue("/p", [mutex, latch, "x"])
    assert a.recipe == "mixed" and a.unknown == ["x"]
    assert holding(a) == [(latch, "leader", True), (mutex, "mutex", True)]
    assert "election and lock nodes" in a.warnings[0]
    reader, writer = f"{H}__rlock__0000000004", f"_c_{U}-__WRIT__0000000005"
    a = analyze_queue("/p", [writer, reader, f"{H}__rlock__0000000001"])
    assert a.recipe == "read/write lock"
    assert [e.holds for e in a.entries] == [True, True, False]
    leases = [f"_c_{U}-lease-000000000{i}" for i in range(3)]
    a = analyze_queue("/p/leases", leases)
    assert a.recipe == "semaphore" and all(e.holds for e in a.entries)
    assert analyze_queue("/p", []).entries == []


def test_analysis_of_semaphore_layouts() -> None:
    from zklock.status import analyze_semaphore

    lease, guard = f"_c_{U}-lease-0000000001", f"_c_{U}-lock-0000000003"
    a = analyze_semaphore("/s", ["locks", "leases", H, "odd"], [lease], "/s/locks", [guard], None)
    assert [(e.parent, e.name, e.holds) for e in a.entries] == [
        ("/s/leases", lease, True),
        ("/s", H, True),
        ("/s/locks", guard, False),
    ]
    assert a.unknown == ["odd"] and "do not limit each other" in a.warnings[0]
    a = analyze_semaphore("/s", [H, "config"], [H, "config"], "/s-__lock__", [], 2)
    assert a.max_leases == 2 and "which kazoo counts as taken leases" in a.warnings[0]


def _holder(node: str, kind: str, ident: str, session: int, token: int) -> zklock.status.Holder:
    return zklock.status.Holder(node, kind, "curator", ident, session, token)


def test_status_text_and_json_without_a_server() -> None:
    from zklock.status import LockStatus, format_session_id, status_json, status_lines

    assert format_session_id(0x1A2B) == "0x1a2b"
    assert format_session_id(-(1 << 63)) == "0x8000000000000000"
    free = LockStatus("/p", "free", "", [], [], [], [], None)
    assert status_lines(free) == ["/p: free"]
    assert status_json(free)["holder"] is None and status_json(free)["recipe"] is None
    unknown = LockStatus("/p", "unknown", "", [], [], ["x", "y"], [], None)
    assert status_lines(unknown) == [
        "/p: unknown (2 nodes no known lock recipe wrote)",
        "not understood (2): x, y",
    ]
    held = LockStatus(
        "/p",
        "held",
        "mutex",
        [_holder("n1", "mutex", "host:1", 0x10, 7)],
        [_holder("n2", "lock", "host:2", 0x11, 8), _holder("n3", "read", "host:3", 0x12, 9)],
        [],
        [],
        None,
    )
    assert status_lines(held) == [
        "/p: held by host:1 (node n1, session 0x10, fencing token 7)",
        "waiting (2):",
        "  1. host:2 (kazoo lock, node n2)",
        "  2. host:3 (read, node n3)",
    ]
    out = status_json(held)
    assert out["holder"] == {
        "node": "n1",
        "identifier": "host:1",
        "session": "0x10",
        "fencing_token": 7,
        "kind": "mutex",
        "naming": "curator",
    }
    assert [w["node"] for w in cast_list(out["waiting"])] == ["n2", "n3"]
    shared = LockStatus(
        "/s",
        "held",
        "semaphore",
        [_holder("leases/a", "lease", "a", 1, 1), _holder("leases/b", "lease", "b", 2, 2)],
        [],
        [],
        [],
        2,
    )
    assert status_lines(shared) == [
        "/s: held by 2 holders (semaphore, 2 leases)",
        "  a (lease, node leases/a, session 0x1, fencing token 1)",
        "  b (lease, node leases/b, session 0x2, fencing token 2)",
        "waiting: none",
    ]


def cast_list(value: object) -> list[dict[str, object]]:
    assert isinstance(value, list)
    return value
