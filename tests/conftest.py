"""Fixtures: real ZooKeeper servers for the test suite.

By default a standalone server (and, for tests that ask for it, a 3-member ensemble) is started from
the locally installed ZooKeeper (see ``zkwire.embedded``). Environment:

- ``ZK_TEST_HOSTS=host:port,...``: use that running ensemble instead; tests that need to control the
  server (restart it, read its log, the ``ensemble`` fixture) are skipped.
- ``ZK_TEST_BACKEND=docker``: start the ``zookeeper:3.8`` image with testcontainers (skipped when no
  Docker engine is reachable).

Every test gets a fresh path under ``/zkwire-tests`` (``zk_path``); that parent node is created once.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import time
import uuid
from collections.abc import Generator, Iterator
from typing import Any, Protocol

import pytest

from zkwire.embedded import EmbeddedEnsemble, EmbeddedZooKeeper, four_letter_word

TEST_ROOT = "/zkwire-tests"
TICK_TIME_MS = 200
DOCKER_IMAGE = "zookeeper:3.8"

ZK_TEST_HOSTS = os.environ.get("ZK_TEST_HOSTS", "").strip()
ZK_TEST_BACKEND = os.environ.get("ZK_TEST_BACKEND", "local").strip().lower() or "local"
_BACKENDS = ("local", "docker")


class ZooKeeperUnderTest(Protocol):
    """What every ``zk_server`` offers, whatever runs it."""

    @property
    def hosts(self) -> str: ...

    def log_tail(self, lines: int = 200) -> str: ...


class ExternalZooKeeper:
    """An ensemble started by someone else (``ZK_TEST_HOSTS``): a connect string and nothing more."""

    def __init__(self, hosts: str) -> None:
        self._hosts = hosts

    @property
    def hosts(self) -> str:
        return self._hosts

    def log_tail(self, lines: int = 200) -> str:
        return ""


class DockerZooKeeper:
    """The official image in a container (``ZK_TEST_BACKEND=docker``)."""

    def __init__(self, container: Any, hosts: str) -> None:
        self.container = container
        self._hosts = hosts

    @property
    def hosts(self) -> str:
        return self._hosts

    def log_tail(self, lines: int = 200) -> str:
        stdout, stderr = self.container.get_logs()
        text = (stdout + stderr).decode("utf-8", "replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        self.container.stop()


# Servers whose log is shown when a test that used them fails, by fixture name.
_log_sources: dict[str, ZooKeeperUnderTest | EmbeddedEnsemble] = {}


def pytest_configure(config: pytest.Config) -> None:
    if ZK_TEST_BACKEND not in _BACKENDS:
        raise pytest.UsageError(f"ZK_TEST_BACKEND={ZK_TEST_BACKEND!r}: use one of {', '.join(_BACKENDS)}")


def pytest_report_header(config: pytest.Config) -> str:
    if ZK_TEST_HOSTS:
        return f"zookeeper: external ensemble {ZK_TEST_HOSTS} (ZK_TEST_HOSTS)"
    if ZK_TEST_BACKEND == "docker":
        return f"zookeeper: {DOCKER_IMAGE} in Docker (testcontainers)"
    return f"zookeeper: local servers from the installed package (tickTime {TICK_TIME_MS} ms)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Tests that use the ensemble fixture get the marker, so `-m "not ensemble"` leaves them out.
    for item in items:
        if "ensemble" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ensemble)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        used = getattr(item, "fixturenames", ())
        for name, server in list(_log_sources.items()):
            if name not in used:
                continue
            try:
                text = server.log_tail(lines=100)
            except Exception as exc:  # never hide the test's own failure
                text = f"(could not read the log: {exc!r})"
            if text:
                report.sections.append((f"zookeeper log ({name}, {report.when})", text))
    return report


def _ensure_test_root(hosts: str) -> None:
    """Create ``TEST_ROOT`` (persistent, open ACL) if it is missing, with a session opened by hand.

    Done over a raw socket so that the fixtures do not depend on the client under test.
    """

    def ustring(text: str) -> bytes:
        data = text.encode()
        return struct.pack(">i", len(data)) + data

    def recv_exactly(sock: socket.socket, size: int) -> bytes:
        buf = b""
        while len(buf) < size:
            chunk = sock.recv(size - len(buf))
            if not chunk:
                raise ConnectionError(f"{hosts} closed the connection")
            buf += chunk
        return buf

    def call(sock: socket.socket, body: bytes) -> bytes:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (length,) = struct.unpack(">i", recv_exactly(sock, 4))
        return recv_exactly(sock, length)

    server, _, chroot = hosts.split(",")[0].partition("/")
    host, _, port = server.rpartition(":")
    path = f"/{chroot.strip('/')}{TEST_ROOT}" if chroot.strip("/") else TEST_ROOT
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        reply = call(sock, struct.pack(">iqiqi16s?", 0, 0, 10_000, 0, 16, bytes(16), False))
        if len(reply) < 36:
            raise ConnectionError(f"{hosts} refused a session")
        world_anyone = struct.pack(">ii", 1, 31) + ustring("world") + ustring("anyone")
        create = struct.pack(">ii", 1, 1) + ustring(path) + struct.pack(">i", 0) + world_anyone + bytes(4)
        _xid, _zxid, err = struct.unpack_from(">iqi", call(sock, create))
        call(sock, struct.pack(">ii", 2, -11))  # closeSession
    if err not in (0, -110):  # ok, NODEEXISTS
        raise RuntimeError(f"cannot create {path} on {hosts}: ZooKeeper error {err}")


def _start_docker_zookeeper() -> DockerZooKeeper:
    reason = "no Docker engine available (ZK_TEST_BACKEND=docker)"
    try:
        import docker
        from testcontainers.core.container import DockerContainer

        docker.from_env().ping()
    except Exception:
        pytest.skip(reason)
    container = (
        DockerContainer(DOCKER_IMAGE)
        .with_exposed_ports(2181)
        .with_env("ZOO_TICK_TIME", str(TICK_TIME_MS))
        .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
        .with_env("ZOO_CFG_EXTRA", "maxSessionTimeout=60000")
        .with_env("JVMFLAGS", "-Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=1000")
    )
    container.start()
    try:
        host = container.get_container_host_ip()
        host = "127.0.0.1" if host == "localhost" else host
        if not host.startswith("127."):
            pytest.skip(f"the Docker engine is not local (container host {host}); tests only use loopback")
        server = DockerZooKeeper(container, f"{host}:{container.get_exposed_port(2181)}")
        deadline = time.monotonic() + 60
        while True:
            try:
                if "Mode:" in four_letter_word(server.hosts, "srvr", 2.0):
                    return server
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{DOCKER_IMAGE} did not start:\n{server.log_tail(60)}")
            time.sleep(0.2)
    except BaseException:
        container.stop()
        raise


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperUnderTest]:
    """The server the suite runs against (standalone, tickTime 200 ms, TTL nodes on, every 4lw)."""
    server: ZooKeeperUnderTest
    if ZK_TEST_HOSTS:
        server = ExternalZooKeeper(ZK_TEST_HOSTS)
        _ensure_test_root(server.hosts)
        yield server
        return
    if ZK_TEST_BACKEND == "docker":
        docker_server = _start_docker_zookeeper()
        _log_sources["zk_server"] = docker_server
        try:
            _ensure_test_root(docker_server.hosts)
            yield docker_server
        finally:
            _log_sources.pop("zk_server", None)
            docker_server.stop()
        return
    embedded = EmbeddedZooKeeper(tick_time_ms=TICK_TIME_MS, extended_types=True, four_letter_words="*")
    try:
        embedded.start()
        _log_sources["zk_server"] = embedded
        _ensure_test_root(embedded.hosts)
        yield embedded
    finally:
        _log_sources.pop("zk_server", None)
        embedded.stop()


@pytest.fixture(scope="session")
def zk_hosts(zk_server: ZooKeeperUnderTest) -> str:
    """The connect string of ``zk_server``."""
    return zk_server.hosts


@pytest.fixture
def embedded_zk(zk_server: ZooKeeperUnderTest) -> Iterator[EmbeddedZooKeeper]:
    """``zk_server`` when it is a local server this process controls; skips otherwise.

    A test may stop or restart it: it is running again (same port) after the test.
    """
    if not isinstance(zk_server, EmbeddedZooKeeper):
        pytest.skip("needs the local embedded server (not ZK_TEST_HOSTS or Docker)")
    yield zk_server
    if not zk_server.running:
        zk_server.start()
        _ensure_test_root(zk_server.hosts)


@pytest.fixture
def local_zookeeper() -> None:
    """For tests that start servers of their own: skipped when the suite runs against other servers."""
    if ZK_TEST_HOSTS:
        pytest.skip("starts local servers (ZK_TEST_HOSTS is set)")
    if ZK_TEST_BACKEND == "docker":
        pytest.skip("starts local servers (ZK_TEST_BACKEND=docker)")


@pytest.fixture
def zk_path(request: pytest.FixtureRequest) -> str:
    """A fresh absolute path for this test, ``/zkwire-tests/<test name>-<8 hex>`` (not created)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_.")[:80] or "test"
    return f"{TEST_ROOT}/{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def _shared_ensemble() -> Iterator[EmbeddedEnsemble]:
    if ZK_TEST_HOSTS:
        pytest.skip("needs a local ensemble (ZK_TEST_HOSTS is set)")
    ens = EmbeddedEnsemble(3, tick_time_ms=TICK_TIME_MS, extended_types=True, four_letter_words="*")
    try:
        ens.start()
        _ensure_test_root(ens.member_hosts(ens.leader_index()))
        yield ens
    finally:
        _log_sources.pop("ensemble", None)
        ens.stop()


@pytest.fixture
def ensemble(_shared_ensemble: EmbeddedEnsemble) -> Iterator[EmbeddedEnsemble]:
    """A 3-member ensemble (shared by the session); members a test stopped are started again after it."""
    _log_sources["ensemble"] = _shared_ensemble
    try:
        yield _shared_ensemble
    finally:
        _shared_ensemble.start()  # starts the stopped members and waits until every member serves
