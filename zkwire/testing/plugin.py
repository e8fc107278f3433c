"""pytest fixtures for testing applications against real ZooKeeper servers.

Opt in with ``pytest --zk``, ``zk_enable = true`` in the pytest configuration or
``-p zkwire.testing.plugin`` (see :mod:`zkwire.testing.pytest_options` for every setting). Then::

    async def test_registers_itself(zk):                  # a client chrooted to a fresh node
        await my_app.register(zk, "worker-1")
        assert await zk.get_children("/workers") == ["worker-1"]

    async def test_survives_a_restart(zk_server, zk_connect_string):
        async with my_app.run(zk_connect_string) as app:  # the app opens its own client
            await zk_server.restart()
            await app.wait_healthy()

Fixtures:

``zk_server`` (session)
    The server: :class:`~zkwire.testing.handles.ServerHandle` (``hosts``, ``await stop()``,
    ``await start()``, ``await restart()``, ``log_tail()``...). A JVM from the locally installed
    package by default; a container with ``--zk-backend docker``; an existing ensemble with
    ``--zk-hosts``. ``--zk-port`` pins its client port (a port already in use fails the tests that
    use it with one line saying so). A server a test left stopped is started again after it.
``zk_hosts`` (session)
    Its connect string.
``zk_chroot`` / ``zk_connect_string``
    A fresh node for this test (``<zk_root>/<test name>-<8 hex>``), created before and deleted after
    the test; and the connect string chrooted to it, for applications that open their own clients.
``zk`` (async, trio)
    A connected :class:`zkwire.Client` chrooted to ``zk_chroot``. Needs pytest-trio (``trio_mode =
    true``, or mark the test ``@pytest.mark.trio``).
``zk_ensemble`` (session)
    A 3-member ensemble (local JVMs, or containers with the docker backend):
    :class:`~zkwire.testing.handles.EnsembleHandle`. ``--zk-ensemble-ports`` pins its client ports.
    Members a test stopped are started again after it.
``zk_netns_ensemble`` (session)
    A 3-member ensemble whose members live in network namespaces, with links the test can cut
    (``isolate``, ``partition``, ``cut``, ``cut_clients``, ``heal``); skipped unless the tests run as
    root on Linux. Links are healed and stopped members started after each test.
``zk_server_options`` / ``zk_ensemble_options`` (session)
    The :class:`~zkwire.testing.base.ServerOptions` the servers start with: override them in a
    ``conftest.py`` to configure the servers.
``zk_server_certificates`` (session)
    None by default.  Override it to return test certificates
    (:func:`zkwire.testing.certs.make_test_certificates`) and the local server also listens for TLS,
    requiring client certificates (the ``x509`` identities), on ``zk_server.secure_hosts`` (the local
    backend only).
``zk_client_options`` (session)
    The :func:`zkwire.open_client` keywords the fixtures' own sessions use (``zk``, creating and
    deleting chroots, the root): empty by default.  A suite that secures its server (SASL, see
    :mod:`zkwire.testing.secured`) overrides it with the credentials, e.g. ``{"sasl": DigestMD5(...)}``.

When a test that used one of these fails, the end of the server's log is added to its report.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

import zkwire

from . import pytest_options
from .base import (
    EmbeddedZooKeeperError,
    ExternalZooKeeper,
    ServerOptions,
    ZooKeeperEnsemble,
    ZooKeeperServer,
    delete_tree,
    ensure_path,
)
from .handles import EnsembleHandle, NetnsEnsembleHandle, ServerHandle

if TYPE_CHECKING:
    from .certs import TestCertificates

__all__ = ["EnsembleHandle", "NetnsEnsembleHandle", "ServerHandle"]

_SETTINGS = pytest.StashKey[pytest_options.Settings]()
_STATE = pytest.StashKey["_State"]()

# Which fixtures show which server's log when a test fails.
_SERVER_FIXTURES = ("zk_server", "zk_hosts", "zk", "zk_chroot", "zk_connect_string")


class _State:
    """What the session has started: checked after every test, stopped at the end."""

    def __init__(self) -> None:
        self.server: ServerHandle | None = None
        self.ensemble: EnsembleHandle | None = None
        self.netns: NetnsEnsembleHandle | None = None


def _settings(config: pytest.Config) -> pytest_options.Settings:
    return config.stash[_SETTINGS]


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


# --------------------------------------------------------------------------------------------------------
# hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    # Loaded with -p while the entry point is off (-p no:zkwire): the options are still needed.
    pytest_options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = pytest_options.settings(config)
    problem = settings.check()
    if problem is not None:
        raise pytest.UsageError(problem)
    config.stash[_SETTINGS] = settings
    config.stash[_STATE] = _State()
    config.addinivalue_line("markers", "zk_ensemble: uses an ensemble fixture of zkwire.testing")


def pytest_report_header(config: pytest.Config) -> str:
    s = _settings(config)
    if s.backend == "external":
        return f"zookeeper: external ensemble {s.hosts}"
    pinned = f", the standalone server on port {s.port}" if s.port is not None else ""
    if s.backend == "docker":
        image = s.image or "image chosen at start"
        return f"zookeeper: docker containers ({image}), tickTime {s.tick_time_ms} ms{pinned}"
    return f"zookeeper: local servers from the installed package, tickTime {s.tick_time_ms} ms{pinned}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "zk_ensemble" in names or "zk_netns_ensemble" in names:
            item.add_marker(pytest.mark.zk_ensemble)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if not report.failed:
        return report
    state = _state(item.config)
    lines = _settings(item.config).log_lines
    used = set(getattr(item, "fixturenames", ()))
    sources: list[tuple[str, Any]] = []
    if state.server is not None and used.intersection(_SERVER_FIXTURES):
        sources.append(("zk_server", state.server))
    if state.ensemble is not None and "zk_ensemble" in used:
        sources.append(("zk_ensemble", state.ensemble))
    if state.netns is not None and "zk_netns_ensemble" in used:
        sources.append(("zk_netns_ensemble", state.netns))
    for name, source in sources:
        try:
            text = source.log_tail(lines=lines)
        except Exception as exc:  # never hide the test's own failure
            text = f"(could not read the log: {exc!r})"
        if text:
            report.sections.append((f"zookeeper log ({name}, {report.when})", text))
    return report


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Put back what the test changed: a stopped server, stopped members, cut links."""
    state = _state(item.config)
    if state.server is not None and state.server.controllable and not state.server.running:
        state.server.server.start()
    if state.netns is not None:
        state.netns.heal()
    for handle in (state.ensemble, state.netns):
        if handle is None:
            continue
        if len(handle.running_members()) < handle.size:
            handle.ensemble.start()
        else:  # members that were cut off may still be rejoining
            handle.ensemble.wait_until_serving()


# --------------------------------------------------------------------------------------------------------
# servers


def _new_server(
    settings: pytest_options.Settings, options: ServerOptions, certificates: TestCertificates | None = None
) -> ZooKeeperServer:
    if certificates is not None and settings.backend != "local":
        pytest.fail(f"zkwire: zk_server_certificates needs the local backend (not {settings.backend})", pytrace=False)
    if settings.backend == "external":
        return ExternalZooKeeper(settings.hosts)
    if settings.backend == "docker":
        from .containers import DockerZooKeeper

        return DockerZooKeeper(options, image=settings.image or None, port=settings.port)
    from .embedded import EmbeddedZooKeeper

    return EmbeddedZooKeeper(options, port=settings.port, certificates=certificates)


def _new_ensemble(settings: pytest_options.Settings, options: ServerOptions) -> ZooKeeperEnsemble:
    ports = settings.ensemble_ports
    size = len(ports) if ports else 3
    if settings.backend == "docker":
        from .containers import DockerEnsemble

        return DockerEnsemble(size, options, image=settings.image or None, client_ports=ports)
    from .embedded import EmbeddedEnsemble

    return EmbeddedEnsemble(size, options, client_ports=ports)


@pytest.fixture(scope="session")
def zk_server_options(pytestconfig: pytest.Config) -> ServerOptions:
    """The options of ``zk_server`` (override this fixture to change them)."""
    return ServerOptions(tick_time_ms=_settings(pytestconfig).tick_time_ms)


@pytest.fixture(scope="session")
def zk_ensemble_options(zk_server_options: ServerOptions) -> ServerOptions:
    """The options of ``zk_ensemble`` and ``zk_netns_ensemble`` (by default those of ``zk_server``)."""
    return zk_server_options


@pytest.fixture(scope="session")
def zk_server_certificates() -> TestCertificates | None:
    """Certificates for a TLS port of ``zk_server`` requiring client certificates (override this
    fixture; None: no TLS port)."""
    return None


@pytest.fixture(scope="session")
def zk_client_options() -> dict[str, Any]:
    """The :func:`zkwire.open_client` keywords of the fixtures' own sessions (override this fixture to
    give a secured server's credentials)."""
    return {}


@contextlib.contextmanager
def _serving(
    launcher: ZooKeeperServer | ZooKeeperEnsemble, root: str, what: str, client_options: dict[str, Any]
) -> Iterator[None]:
    """``launcher`` started, with ``root`` created on it, until the block ends; when it cannot start,
    the test fails with one line saying why."""
    try:
        launcher.start()
        ensure_path(launcher.hosts, root, client_options=client_options)
    except EmbeddedZooKeeperError as exc:
        launcher.stop()
        pytest.fail(f"zkwire: no {what}: {exc}", pytrace=False)
    try:
        yield
    finally:
        launcher.stop()


@pytest.fixture(scope="session")
def zk_server(
    pytestconfig: pytest.Config,
    zk_server_options: ServerOptions,
    zk_client_options: dict[str, Any],
    zk_server_certificates: TestCertificates | None,
) -> Iterator[ServerHandle]:
    """The session's ZooKeeper server (see the module's documentation)."""
    settings, state = _settings(pytestconfig), _state(pytestconfig)
    server = _new_server(settings, zk_server_options, zk_server_certificates)
    with _serving(server, settings.root, f"ZooKeeper server ({settings.backend} backend)", zk_client_options):
        state.server = ServerHandle(server)
        try:
            yield state.server
        finally:
            state.server = None


@pytest.fixture(scope="session")
def zk_hosts(zk_server: ServerHandle) -> str:
    """The connect string of ``zk_server``."""
    return zk_server.hosts


@pytest.fixture
def zk_chroot(
    request: pytest.FixtureRequest, zk_server: ServerHandle, zk_client_options: dict[str, Any]
) -> Iterator[str]:
    """A fresh node for this test, created before it and deleted after it (unless ``zk_keep_chroots``)."""
    settings = _settings(request.config)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_.")[:80] or "test"
    path = f"{settings.root}/{name}-{uuid.uuid4().hex[:8]}"
    ensure_path(zk_server.hosts, path, client_options=zk_client_options)
    yield path
    if not settings.keep_chroots and zk_server.running:
        delete_tree(zk_server.hosts, path, client_options=zk_client_options)


@pytest.fixture
def zk_connect_string(zk_server: ServerHandle, zk_chroot: str) -> str:
    """``zk_server``'s connect string chrooted to ``zk_chroot``."""
    return zk_server.connect_string(zk_chroot)


@pytest.fixture
async def zk(zk_connect_string: str, zk_client_options: dict[str, Any]) -> AsyncIterator[zkwire.Client]:
    """A :class:`zkwire.Client` chrooted to ``zk_chroot``, connected for the test (trio)."""
    async with zkwire.open_client(zk_connect_string, **zk_client_options) as client:
        yield client


@pytest.fixture(scope="session")
def zk_ensemble(
    pytestconfig: pytest.Config, zk_ensemble_options: ServerOptions, zk_client_options: dict[str, Any]
) -> Iterator[EnsembleHandle]:
    """A 3-member ensemble for the session (see the module's documentation)."""
    settings, state = _settings(pytestconfig), _state(pytestconfig)
    if settings.backend == "external":
        pytest.skip("zkwire: no ensemble of our own with an external server (--zk-hosts)")
    ensemble = _new_ensemble(settings, zk_ensemble_options)
    with _serving(ensemble, settings.root, f"ensemble ({settings.backend} backend)", zk_client_options):
        state.ensemble = EnsembleHandle(ensemble)
        try:
            yield state.ensemble
        finally:
            state.ensemble = None


@pytest.fixture(scope="session")
def zk_netns_ensemble(
    pytestconfig: pytest.Config, zk_ensemble_options: ServerOptions, zk_client_options: dict[str, Any]
) -> Iterator[NetnsEnsembleHandle]:
    """A 3-member ensemble in network namespaces, its links under the tests' control."""
    from .netns import NetnsEnsemble, netns_unavailable_reason

    reason = netns_unavailable_reason()
    if reason is not None:
        pytest.skip(f"zkwire: {reason}")
    settings, state = _settings(pytestconfig), _state(pytestconfig)
    ensemble = NetnsEnsemble(3, zk_ensemble_options, client_namespace=True)
    with _serving(ensemble, settings.root, "ensemble in network namespaces", zk_client_options):
        state.netns = NetnsEnsembleHandle(ensemble)
        try:
            yield state.netns
        finally:
            state.netns = None
