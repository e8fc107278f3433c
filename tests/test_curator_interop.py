"""zklock and Apache Curator contend on one path (Debian's libcurator-recipes-java): Curator's
InterProcessMutex against zklock.Mutex, and InterProcessReadWriteLock against zklock.ReadWriteLock."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import trio

import zklock
import zkwire

JAVA_DIR = Path(__file__).parent / "java"
SHARE = Path("/usr/share/java")
COMPILE_CP = ":".join(
    str(SHARE / jar)
    for jar in (
        "curator-recipes.jar",
        "curator-framework.jar",
        "curator-client.jar",
        "zookeeper.jar",
        "zookeeper-jute.jar",
        "guava.jar",
        "slf4j-api.jar",
    )
)


@pytest.fixture(scope="session")
def curator_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("javac") is None or not (SHARE / "curator-recipes.jar").exists():
        pytest.skip("javac or Debian's libcurator-recipes-java is not installed")
    out = tmp_path_factory.mktemp("curator")
    subprocess.run(
        ["javac", "-d", str(out), "-cp", COMPILE_CP, str(JAVA_DIR / "CuratorLockWorker.java")],
        check=True,
        timeout=120,
    )
    return out


async def _java(curator_classes: Path, main: str, *args: str) -> str:
    proc = await trio.run_process(
        ["java", "-cp", f"{curator_classes}:{COMPILE_CP}:{SHARE}/*", main, *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()[-2000:]
    return out


async def test_curator_and_zklock_mutex_exclude_each_other(curator_classes: Path, zk_hosts: str, zk_path: str) -> None:
    lock_path = f"{zk_path}/lock"
    counter = f"{zk_path}/counter"
    iterations = 15
    conflicts = 0
    zk_grants = 0

    async with zkwire.open_client(zk_hosts) as setup:
        try:
            await setup.create("/zkwire-tests")
        except zkwire.NodeExistsError:
            pass
        await setup.create(zk_path)
        await setup.create(counter, b"0")

    async def curator_worker() -> str:
        return await _java(curator_classes, "CuratorLockWorker", zk_hosts, lock_path, counter, str(iterations))

    async def zklock_worker(zk: zkwire.Client) -> None:
        nonlocal conflicts, zk_grants
        mutex = zklock.Mutex(zk, lock_path)
        for _ in range(iterations):
            async with mutex:
                data, stat = await zk.get_data(counter)
                await trio.sleep(0.002)
                try:
                    await zk.set_data(counter, str(int(data) + 1).encode(), version=stat.version)
                except zkwire.BadVersionError:
                    conflicts += 1
                zk_grants += 1

    outputs: list[str] = []

    async def run_curator() -> None:
        outputs.append(await curator_worker())

    with trio.fail_after(240):
        async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_curator)
                nursery.start_soon(run_curator)
                nursery.start_soon(zklock_worker, a)
                nursery.start_soon(zklock_worker, b)
            data, _ = await a.get_data(counter)
            try:
                children = await a.get_children(lock_path)
            except zkwire.NoNodeError:  # the empty container parent may already be reaped
                children = []

    lines = [line for out in outputs for line in out.splitlines()]
    curator_conflicts = sum(int(line.split()[1]) for line in lines if line.startswith("DONE"))
    curator_grants = sum(1 for line in lines if line.startswith("GRANT"))
    assert conflicts == 0 and curator_conflicts == 0
    assert zk_grants == 2 * iterations and curator_grants == 2 * iterations
    assert int(data) == 4 * iterations
    assert children == []


async def test_curator_and_zklock_read_write_locks_exclude_each_other(
    curator_classes: Path, zk_hosts: str, zk_path: str
) -> None:
    # Two Curator processes (a reader and a writer) and two zklock sessions (a reader and a writer) on
    # one path.  Writers bump a version-checked counter; readers read it twice while holding and must
    # never see it change.  Readers overlap each other, which is allowed.
    lock_path = f"{zk_path}/rw"
    counter = f"{zk_path}/counter"
    iterations = 12
    bad = {"write": 0, "read": 0}
    grants = {"write": 0, "read": 0}

    async with zkwire.open_client(zk_hosts) as setup:
        await setup.create(zk_path)
        await setup.create(counter, b"0")

    async def zklock_worker(zk: zkwire.Client, mode: str) -> None:
        rw = zklock.ReadWriteLock(zk, lock_path)
        lock = rw.write_lock if mode == "write" else rw.read_lock
        for _ in range(iterations):
            async with lock:
                data, stat = await zk.get_data(counter)
                await trio.sleep(0.003)
                if mode == "write":
                    try:
                        await zk.set_data(counter, str(int(data) + 1).encode(), version=stat.version)
                    except zkwire.BadVersionError:
                        bad["write"] += 1
                else:
                    if (await zk.get_data(counter))[0] != data:
                        bad["read"] += 1
                grants[mode] += 1

    outputs: dict[str, str] = {}

    async def run_curator(mode: str) -> None:
        outputs[mode] = await _java(
            curator_classes, "CuratorLockWorker", zk_hosts, lock_path, counter, str(iterations), mode
        )

    with trio.fail_after(240):
        async with zkwire.open_client(zk_hosts) as a, zkwire.open_client(zk_hosts) as b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_curator, "write")
                nursery.start_soon(run_curator, "read")
                nursery.start_soon(zklock_worker, a, "write")
                nursery.start_soon(zklock_worker, b, "read")
            data, _ = await a.get_data(counter)
            try:
                children = await a.get_children(lock_path)
            except zkwire.NoNodeError:
                children = []

    for mode, out in outputs.items():
        lines = out.splitlines()
        assert sum(1 for line in lines if line.startswith("GRANT")) == iterations, (mode, out)
        assert "DONE 0" in lines, (mode, out)
    assert bad == {"write": 0, "read": 0}
    assert grants == {"write": iterations, "read": iterations}
    assert int(data) == 2 * iterations  # every write of both writers landed
    assert children == []
