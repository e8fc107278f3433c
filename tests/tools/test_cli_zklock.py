"""``zklock run`` / ``zklock status`` as subprocesses against the real server: exit codes, the fencing token
in COMMAND's environment, --nowait / --wait, signal forwarding, COMMAND terminated when the lock is lost."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass

import trio

import zklock
import zkwire
from zklock.cli import EXIT_LOCK_BUSY, EXIT_LOCK_LOST, EXIT_NOT_FOUND, EXIT_UNAVAILABLE


@dataclass
class Result:
    code: int
    out: str
    err: str


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("ZKLOCK_SERVER", "ZKWIRE_SERVER", "ZKLOCK_FENCING_TOKEN", "ZKLOCK_PATH", "ZKLOCK_NODE"):
        env.pop(name, None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _cmd(action: str, hosts: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "zklock", action, "--server", hosts, *args]


async def zkl(action: str, hosts: str, *args: str, limit: float = 20.0) -> Result:
    with trio.fail_after(limit):
        done = await trio.run_process(
            _cmd(action, hosts, *args), capture_stdout=True, capture_stderr=True, check=False, env=_env()
        )
    result = Result(done.returncode, done.stdout.decode(), done.stderr.decode())
    assert "Traceback" not in result.err, result.err
    return result


class Running:
    """A ``zklock`` process in the background (stderr merged into stdout)."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.output = b""

    @classmethod
    async def start(cls, action: str, hosts: str, *args: str) -> Running:
        process = await trio.lowlevel.open_process(
            _cmd(action, hosts, *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=_env(),
        )
        return cls(process)

    async def expect(self, text: str, limit: float = 10.0) -> None:
        assert self.process.stdout is not None
        with trio.fail_after(limit):
            while text.encode() not in self.output:
                data = await self.process.stdout.receive_some(65536)
                if not data:
                    raise AssertionError(f"EOF before {text!r}: {self.output.decode()}")
                self.output += data

    async def wait(self, limit: float = 15.0) -> tuple[int, str]:
        assert self.process.stdout is not None
        with trio.fail_after(limit):
            while data := await self.process.stdout.receive_some(65536):
                self.output += data
            code = await self.process.wait()
        text = self.output.decode()
        assert "Traceback" not in text, text
        return code, text

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


async def contenders(zk: zkwire.Client, path: str) -> list[str]:
    try:
        return await zk.get_children(path)
    except zkwire.NoNodeError:
        return []


async def wait_for_contenders(zk: zkwire.Client, path: str, count: int, limit: float = 10.0) -> list[str]:
    with trio.fail_after(limit):
        while len(found := await contenders(zk, path)) != count:
            await trio.sleep(0.05)
    return found


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


PRINT_ENV = 'echo "token=$ZKLOCK_FENCING_TOKEN path=$ZKLOCK_PATH node=$ZKLOCK_NODE"; exit 7'


async def test_exit_code_and_fencing_token_in_the_environment(zk_hosts: str, zk_path: str) -> None:
    lock = f"{zk_path}/lock"
    first = await zkl("run", zk_hosts, lock, "--", "sh", "-c", PRINT_ENV)
    assert first.code == 7, first
    fields = dict(item.split("=", 1) for item in first.out.split())
    assert fields["path"] == lock
    assert fields["node"].startswith(f"{lock}/_c_") and "-lock-" in fields["node"]
    token = int(fields["token"])
    assert token > 0
    second = await zkl("run", zk_hosts, lock, "sh", "-c", PRINT_ENV)  # "--" is optional
    assert second.code == 7
    assert int(second.out.split()[0].split("=")[1]) > token
    async with zkwire.open_client(zk_hosts) as zk:
        assert await contenders(zk, lock) == []  # released


async def test_exit_codes_of_the_command_and_of_zklock(zk_hosts: str, zk_path: str) -> None:
    lock = f"{zk_path}/lock"
    nowhere = f"127.0.0.1:{closed_port()}"
    results: dict[str, Result] = {}
    cases: dict[str, tuple[str, tuple[str, ...]]] = {
        "ok": (zk_hosts, (f"{lock}-ok", "--", "true")),
        "signal": (zk_hosts, (f"{lock}-sig", "--", "sh", "-c", "kill -KILL $$")),
        "not found": (zk_hosts, (f"{lock}-nf", "--", "/nonexistent/command")),
        "not executable": (zk_hosts, (f"{lock}-nx", "--", "/dev/null")),
        "no command": (zk_hosts, (lock, "--")),
        "nowait and wait": (zk_hosts, ("--nowait", "--wait", "1", lock, "--", "true")),
        "bad wait": (zk_hosts, ("--wait", "soon", lock, "--", "true")),
        "relative path": (zk_hosts, ("relative/lock", "--", "true")),
        "unreachable": (nowhere, ("--timeout", "1", lock, "--", "true")),
    }

    async def one(name: str, hosts: str, args: tuple[str, ...]) -> None:
        results[name] = await zkl("run", hosts, *args)

    async with trio.open_nursery() as nursery:
        for name, (hosts, args) in cases.items():
            nursery.start_soon(one, name, hosts, args)
    codes = {name: r.code for name, r in results.items()}
    assert codes == {
        "ok": 0,
        "signal": 128 + signal.SIGKILL,
        "not found": EXIT_NOT_FOUND,
        "not executable": 126,
        "no command": 2,
        "nowait and wait": 2,
        "bad wait": 2,
        "relative path": 2,
        "unreachable": EXIT_UNAVAILABLE,
    }
    assert results["not found"].err == "zklock: /nonexistent/command: command not found\n"
    assert results["relative path"].err.startswith("zklock: Invalid path 'relative/lock'")
    assert results["unreachable"].err == f"zklock: cannot connect to ZooKeeper at {nowhere} within 1s\n"
    r = await zkl("status", nowhere, "--timeout", "1", lock)
    assert r.code == EXIT_UNAVAILABLE
    r = await zkl("status", zk_hosts)
    assert r.code == 2


async def test_nowait_and_wait_give_up_while_the_lock_is_held(zk_hosts: str, zk_path: str) -> None:
    lock = f"{zk_path}/lock"
    async with zkwire.open_client(zk_hosts) as zk:
        async with zklock.Mutex(zk, lock, identifier="test-holder"):
            results: dict[str, Result] = {}
            elapsed: dict[str, float] = {}

            async def one(name: str, *args: str) -> None:
                start = trio.current_time()
                results[name] = await zkl("run", zk_hosts, *args, lock, "--", "echo", "ran")
                elapsed[name] = trio.current_time() - start

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one, "nowait", "--nowait")
                nursery.start_soon(one, "wait", "--wait", "1")
            nowait, wait = results["nowait"], results["wait"]
            assert (nowait.code, nowait.out) == (EXIT_LOCK_BUSY, "")
            assert nowait.err == f"zklock: {lock} is locked by test-holder\n"
            assert (wait.code, wait.out) == (EXIT_LOCK_BUSY, "")
            assert wait.err == f"zklock: {lock} was not granted within 1s (locked by test-holder)\n"
            assert elapsed["wait"] >= 1.0
            assert len(await contenders(zk, lock)) == 1  # the attempts cleaned up after themselves

            # A waiting run gets the lock as soon as the holder lets go.
            waiter = await Running.start("run", zk_hosts, "--identifier", "waiter", lock, "--", "echo", "ran")
            await wait_for_contenders(zk, lock, 2)
        code, out = await waiter.wait()
        assert (code, out) == (0, "ran\n")


async def test_signals_are_forwarded_to_the_command(zk_hosts: str, zk_path: str) -> None:
    script = "trap 'echo got-{0}; exit {1}' {0}; echo ready; while :; do sleep 0.05; done"
    cases = {"TERM": 3, "INT": 4, "HUP": 5}
    outcomes: dict[str, tuple[int, str]] = {}

    async def one(name: str, code: int) -> None:
        run = await Running.start("run", zk_hosts, f"{zk_path}/{name}", "--", "sh", "-c", script.format(name, code))
        try:
            await run.expect("ready\n")
            run.process.send_signal(getattr(signal, f"SIG{name}"))
            outcomes[name] = await run.wait()
        finally:
            run.kill()

    async with trio.open_nursery() as nursery:
        for name, code in cases.items():
            nursery.start_soon(one, name, code)
    for name, code in cases.items():
        # The whole process group gets the signal (sh may report its sleep's death, e.g. "Hangup").
        assert outcomes[name][0] == code, (name, outcomes[name])
        lines = outcomes[name][1].splitlines()
        assert lines[0] == "ready" and lines[-1] == f"got-{name}", (name, outcomes[name])
    async with zkwire.open_client(zk_hosts) as zk:
        for name in cases:
            assert await contenders(zk, f"{zk_path}/{name}") == []


async def test_command_is_terminated_when_the_lock_is_lost(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        outcomes: dict[str, tuple[int, str, float]] = {}

        async def one(name: str, script: str) -> None:
            lock = f"{zk_path}/{name}"
            run = await Running.start("run", zk_hosts, "--grace", "1", lock, "--", "sh", "-c", script)
            try:
                await run.expect("pid=")
                await run.expect("\n")
                (node,) = await wait_for_contenders(zk, lock, 1)
                start = trio.current_time()
                await zk.delete(f"{lock}/{node}")
                code, out = await run.wait(limit=10)
                outcomes[name] = (code, out, trio.current_time() - start)
            finally:
                run.kill()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "polite", "echo pid=$$; exec sleep 30")
            nursery.start_soon(one, "stubborn", "trap '' TERM; echo pid=$$; exec sleep 30")
    for name in ("polite", "stubborn"):
        code, out, took = outcomes[name]
        assert code == EXIT_LOCK_LOST, (name, out)
        assert f"lock {zk_path}/{name} lost (lock node was deleted); terminating COMMAND" in out
        assert took < 5, (name, took)
        pid = int(out.split("pid=")[1].split()[0])
        assert gone(pid), name
    assert "killing it" in outcomes["stubborn"][1] and "killing it" not in outcomes["polite"][1]
    assert outcomes["stubborn"][2] >= 1.0  # the grace period


async def test_status_shows_holder_and_queue_and_a_signal_ends_a_wait(zk_hosts: str, zk_path: str) -> None:
    lock = f"{zk_path}/lock"
    r = await zkl("status", zk_hosts, lock)
    assert (r.code, r.out) == (0, f"{lock}: free\n")
    async with zkwire.open_client(zk_hosts) as zk:
        async with zklock.Mutex(zk, lock, identifier="holder-a") as lease:
            waiter = await Running.start("run", zk_hosts, "--identifier", "waiter-b", lock, "--", "echo", "never")
            try:
                nodes = await wait_for_contenders(zk, lock, 2)
                holder_node = lease.node.rsplit("/", 1)[1]
                waiter_node = next(n for n in nodes if n != holder_node)
                r = await zkl("status", zk_hosts, lock)
                assert r.code == 0
                assert r.out.splitlines() == [
                    f"{lock}: held by holder-a (node {holder_node}, session 0x{zk.session_id:x}, "
                    f"fencing token {lease.fencing_token})",
                    "waiting (1):",
                    f"  1. waiter-b (node {waiter_node})",
                ]
                r = await zkl("status", zk_hosts, "--json", lock)
                doc = json.loads(r.out)
                assert doc["holder"]["identifier"] == "holder-a" and doc["holder"]["node"] == holder_node
                assert doc["holder"]["fencing_token"] == lease.fencing_token
                assert [w["identifier"] for w in doc["waiting"]] == ["waiter-b"]
                # SIGTERM while waiting: COMMAND never runs, the queue entry goes away.
                waiter.process.send_signal(signal.SIGTERM)
                code, out = await waiter.wait()
                assert code == 128 + signal.SIGTERM
                assert out == "zklock: SIGTERM while waiting for the lock; COMMAND not run\n"
                assert await contenders(zk, lock) == [holder_node]
            finally:
                waiter.kill()


# A COMMAND that records when it held the lock: "<dir>/<name>.start" and ".end" (nanoseconds since the
# epoch), holding for $HOLD seconds or, with $UNTIL set, until that file exists.
RECORD = (
    'date +%s%N > "$0.start"; '
    'if [ -n "$UNTIL" ]; then i=0; while [ ! -e "$UNTIL" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; '
    'else sleep "$HOLD"; fi; '
    'date +%s%N > "$0.end"'
)


def exists(path: str) -> bool:
    return os.path.exists(path)


def touch(path: str) -> None:
    with open(path, "w"):
        pass


def recorded(directory: os.PathLike[str], name: str) -> tuple[int, int] | None:
    base = os.path.join(directory, name)
    if not os.path.exists(f"{base}.end"):
        return None
    with open(f"{base}.start") as start, open(f"{base}.end") as end:
        return int(start.read()), int(end.read())


def record(directory: os.PathLike[str], name: str, *, hold: float = 0.0, until: str = "") -> tuple[str, ...]:
    return ("--", "env", f"HOLD={hold}", f"UNTIL={until}", "sh", "-c", RECORD, os.path.join(directory, name))


async def test_shared_runs_overlap(zk_hosts: str, zk_path: str, tmp_path: os.PathLike[str]) -> None:
    lock = f"{zk_path}/rw"
    # Each COMMAND waits until the other one has started: both end only if they held the lock together.
    d = str(tmp_path)
    runs = [
        await Running.start("run", zk_hosts, "--shared", lock, *record(d, "a", until=os.path.join(d, "b.start"))),
        await Running.start("run", zk_hosts, "-s", lock, *record(d, "b", until=os.path.join(d, "a.start"))),
    ]
    try:
        for run in runs:
            code, out = await run.wait(limit=30)
            assert (code, out) == (0, "")
    finally:
        for run in runs:
            run.kill()
    a, b = recorded(d, "a"), recorded(d, "b")
    assert a is not None and b is not None
    assert a[0] < b[1] and b[0] < a[1]  # the two holds overlapped
    async with zkwire.open_client(zk_hosts) as zk:
        assert await contenders(zk, lock) == []


async def test_shared_and_exclusive_runs_exclude_each_other(
    zk_hosts: str, zk_path: str, tmp_path: os.PathLike[str]
) -> None:
    lock = f"{zk_path}/rw"
    d = str(tmp_path)
    release_x, release_s = os.path.join(d, "release-x"), os.path.join(d, "release-s")
    async with zkwire.open_client(zk_hosts) as zk:
        # An exclusive run holds; a shared run queues behind it and starts only after it ended.
        x = await Running.start("run", zk_hosts, "--identifier", "excl", lock, *record(d, "x", until=release_x))
        try:
            await wait_for_contenders(zk, lock, 1)
            s = await Running.start("run", zk_hosts, "--shared", lock, *record(d, "s", until=release_s))
            try:
                await wait_for_contenders(zk, lock, 2)
                busy = await zkl("run", zk_hosts, "--shared", "--nowait", lock, "--", "true")
                assert (busy.code, busy.err) == (EXIT_LOCK_BUSY, f"zklock: {lock} is locked by excl\n")
                await trio.sleep(0.3)
                assert not exists(os.path.join(d, "s.start"))
                touch(release_x)
                assert (await x.wait(limit=30))[0] == 0

                # Now the shared run holds: another shared run gets in at once, an exclusive one does not.
                with trio.fail_after(20):
                    while not exists(os.path.join(d, "s.start")):
                        await trio.sleep(0.05)
                shared = await zkl("run", zk_hosts, "--shared", "--nowait", lock, "--", "echo", "shared too")
                assert (shared.code, shared.out) == (0, "shared too\n")
                excl = await zkl("run", zk_hosts, "--nowait", lock, "--", "true")
                assert excl.code == EXIT_LOCK_BUSY
                touch(release_s)
                assert (await s.wait(limit=30))[0] == 0
            finally:
                s.kill()
        finally:
            x.kill()
        xs, ss = recorded(d, "x"), recorded(d, "s")
        assert xs is not None and ss is not None and xs[1] < ss[0]
        assert await contenders(zk, lock) == []


async def test_semaphore_runs_at_most_n_at_once(zk_hosts: str, zk_path: str, tmp_path: os.PathLike[str]) -> None:
    lock, n = f"{zk_path}/pool", 2
    d = str(tmp_path)
    names = [f"r{i}" for i in range(n + 1)]
    release = {name: os.path.join(d, f"release-{name}") for name in names}
    async with zkwire.open_client(zk_hosts) as zk:
        runs = {
            name: await Running.start(
                "run",
                zk_hosts,
                "--semaphore",
                str(n),
                "--identifier",
                name,
                lock,
                *record(d, name, until=release[name]),
            )
            for name in names
        }
        try:
            # Two hold; the third waits for a lease, holding the semaphore's internal lock.
            with trio.fail_after(20):
                while sum(exists(os.path.join(d, f"{name}.start")) for name in names) < n:
                    await trio.sleep(0.05)
            await wait_for_contenders(zk, f"{lock}/locks", 1)
            await trio.sleep(0.3)
            started = [name for name in names if exists(os.path.join(d, f"{name}.start"))]
            assert len(started) == n
            busy = await zkl("run", zk_hosts, "--semaphore", str(n), "--nowait", lock, "--", "true")
            assert busy.code == EXIT_LOCK_BUSY and busy.err == f"zklock: {lock}: all {n} leases are taken\n"
            status = await zkl("status", zk_hosts, "--json", lock)
            doc = json.loads(status.out)
            assert (status.code, doc["state"], doc["recipe"]) == (0, "held", "semaphore")
            assert sorted(h["identifier"] for h in doc["holders"]) == sorted(started)
            # One of the two lets go: the third one runs.
            touch(release[started[0]])
            (waiting,) = set(names) - set(started)
            with trio.fail_after(20):
                while not exists(os.path.join(d, f"{waiting}.start")):
                    await trio.sleep(0.05)
            for name in names:
                touch(release[name])
            for run in runs.values():
                assert (await run.wait(limit=30))[0] == 0
        finally:
            for run in runs.values():
                run.kill()
        spans = [recorded(d, name) for name in names]
        assert all(span is not None for span in spans)
        events = sorted([(s[0], 1) for s in spans if s] + [(s[1], -1) for s in spans if s], key=lambda e: e[0])
        inside = most = 0
        for _, delta in events:
            inside += delta
            most = max(most, inside)
        assert most == n
        assert await contenders(zk, f"{lock}/leases") == []
