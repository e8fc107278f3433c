"""Apache Curator peers for the interoperability tests: Debian's libcurator-recipes-java and
``java/CuratorLockWorker.java``, compiled once per session with the machine's javac."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

JAVA_DIR = Path(__file__).resolve().parents[1] / "java"
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


#: What the discovery worker needs besides: Debian's libcurator-discovery-java and Jackson.
DISCOVERY_CP = ":".join(
    str(SHARE / jar)
    for jar in ("curator-x-discovery.jar", "jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar")
)

_compiled: dict[str, Path] = {}


def compile_worker(tmp_path_factory: pytest.TempPathFactory, name: str = "CuratorLockWorker") -> Path:
    """Compiles ``java/<name>.java`` once per session (skips the test when javac or Curator is missing);
    returns its class directory."""
    if shutil.which("javac") is None or not (SHARE / "curator-recipes.jar").exists():
        pytest.skip("javac or Debian's libcurator-recipes-java is not installed")
    discovery = name == "CuratorDiscoveryWorker"
    if discovery and not (SHARE / "curator-x-discovery.jar").exists():
        pytest.skip("Debian's libcurator-discovery-java is not installed")
    if name not in _compiled:
        out = tmp_path_factory.mktemp("curator")
        classpath = f"{COMPILE_CP}:{DISCOVERY_CP}" if discovery else COMPILE_CP
        subprocess.run(
            ["javac", "-Xlint:none", "-d", str(out), "-cp", classpath, str(JAVA_DIR / f"{name}.java")],
            check=True,
            timeout=120,
        )
        _compiled[name] = out
    return _compiled[name]


def _java_cmd(curator_classes: Path, *args: str, main: str = "CuratorLockWorker") -> list[str]:
    return ["java", "-cp", f"{curator_classes}:{COMPILE_CP}:{SHARE}/*", main, *args]


class CuratorPeer:
    """A ``CuratorLockWorker serve`` process: one Curator client answering ``try`` / ``release``."""

    main = "CuratorLockWorker"
    args: tuple[str, ...] = ("serve",)

    def __init__(self, curator_classes: Path, hosts: str) -> None:
        self.process = subprocess.Popen(
            _java_cmd(curator_classes, hosts, *self.args, main=self.main),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.read() == "READY"

    def read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the Curator peer exited"
        return line.strip()

    def ask_line(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    async def try_(self, kind: str, path: str, millis: int) -> bool:
        answer = await trio.to_thread.run_sync(self.ask_line, f"try {kind} {path} {millis}")
        assert answer in ("GOT", "BUSY"), answer
        return answer == "GOT"

    async def release(self) -> None:
        assert await trio.to_thread.run_sync(self.ask_line, "release") == "RELEASED"

    def close(self) -> None:
        try:
            self.ask_line("quit")
        except (AssertionError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class CuratorWorker:
    """A ``CuratorLockWorker`` loop process, started and waited for from trio."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.output = b""

    @classmethod
    async def start(cls, curator_classes: Path, *args: str) -> CuratorWorker:
        process = await trio.lowlevel.open_process(
            _java_cmd(curator_classes, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        worker = cls(process)
        assert process.stdout is not None
        with trio.fail_after(60):
            while b"READY\n" not in worker.output:
                data = await process.stdout.receive_some(65536)
                assert data, worker.output.decode()
                worker.output += data
        return worker

    async def finish(self) -> str:
        assert self.process.stdout is not None
        while data := await self.process.stdout.receive_some(65536):
            self.output += data
        code = await self.process.wait()
        text = self.output.decode()
        assert code == 0, text[-3000:]
        return text

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


class CuratorRecipes(CuratorPeer):
    """A ``CuratorRecipeWorker`` process: one Curator client answering the toolbox commands (see
    ``java/CuratorRecipeWorker.java``) one line at a time."""

    main = "CuratorRecipeWorker"
    args = ()

    def _ask(self, command: str) -> str:
        answer = self.ask_line(command)
        assert not answer.startswith("ERR"), (command, answer)
        return answer

    async def ask(self, *words: object) -> str:
        return await trio.to_thread.run_sync(self._ask, " ".join(str(w) for w in words))

    async def members(self, path: str) -> dict[str, str]:
        answer = (await self.ask("members", path)).split()
        assert answer[0] == "MEMBERS", answer
        return dict(w.split("=", 1) for w in answer[1:])  # type: ignore[misc]


class CuratorDiscovery(CuratorRecipes):
    """A ``CuratorDiscoveryWorker`` process (see ``java/CuratorDiscoveryWorker.java``)."""

    main = "CuratorDiscoveryWorker"

    def __init__(self, classes: Path, hosts: str, base_path: str) -> None:
        self.args = (base_path,)
        super().__init__(classes, hosts)

    async def instances(self, command: str, service: str) -> list[str]:
        answer = (await self.ask(command, service)).split()
        assert answer[0] == "INSTANCES", answer
        return answer[1:]


@asynccontextmanager
async def curator_recipes(tmp_path_factory: pytest.TempPathFactory, hosts: str) -> AsyncIterator[CuratorRecipes]:
    """A running ``CuratorRecipeWorker`` for the block."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    classes = compile_worker(tmp_path_factory, "CuratorRecipeWorker")
    with trio.fail_after(60):
        worker = await trio.to_thread.run_sync(CuratorRecipes, classes, hosts)
    try:
        yield worker
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(worker.close)


@asynccontextmanager
async def curator_discovery(
    tmp_path_factory: pytest.TempPathFactory, hosts: str, base_path: str
) -> AsyncIterator[CuratorDiscovery]:
    """A running ``CuratorDiscoveryWorker`` on ``base_path`` for the block."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    classes = compile_worker(tmp_path_factory, "CuratorDiscoveryWorker")
    with trio.fail_after(60):
        worker = await trio.to_thread.run_sync(CuratorDiscovery, classes, hosts, base_path)
    try:
        yield worker
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(worker.close)
