"""What is specific to this project's suite; the servers come from zkwire's pytest plugin.

The plugin (``-p zkwire.testing.plugin`` in pyproject.toml) starts a standalone server and, for the
tests that ask for it, a 3-member ensemble: local JVMs by default, containers with
``ZKWIRE_TEST_BACKEND=docker``, an existing ensemble with ``ZKWIRE_TEST_HOSTS=host:port,...`` (tests
that control the servers are then skipped). See ``zkwire/testing/pytest_options.py`` for the settings.

Every test gets a fresh path under ``/zkwire-tests`` (``zk_path``, not created; the plugin creates that
parent, its ``zk_root``). Tests that use a server carry the ``server`` marker (the docker pass of
``.ci/test`` selects them); tests that use the ensemble carry ``ensemble``.
"""

from __future__ import annotations

import importlib
import re
import uuid
from collections.abc import Iterator
from types import ModuleType

import pytest
from helpers.kerberos import (  # noqa: F401  (a KDC, a server and an ensemble requiring GSSAPI)
    kerberos_ensemble,
    kerberos_realm,
    kerberos_server,
)
from helpers.reconfig import reconfigurable  # noqa: F401  (ensembles whose membership changes)
from helpers.sasl import sasl_ensemble, sasl_server  # noqa: F401  (real servers requiring SASL)
from helpers.tls import (  # noqa: F401  (real servers with TLS and mutual TLS, for the client, the tools and the tracer)
    mtls13_server,
    mtls_server,
    tls_certs,
    tls_server,
)

from zkwire.testing import ZooKeeperEnsemble, pytest_options
from zkwire.testing.embedded import EmbeddedZooKeeper
from zkwire.testing.handles import EnsembleHandle, ServerHandle

TEST_ROOT = "/zkwire-tests"

# Fixtures that reach a server: a test using any of them carries the `server` marker.
_SERVER_FIXTURES = {"zk_server", "zk_hosts", "zk", "zk_chroot", "zk_connect_string", "zk_ensemble", "ensemble"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        # `-m "not ensemble"` leaves out the tests that need a 3-member ensemble.
        if names & {"ensemble", "zk_ensemble", "zk_netns_ensemble"}:
            item.add_marker(pytest.mark.ensemble)


@pytest.fixture
def embedded_zk(zk_server: ServerHandle) -> Iterator[EmbeddedZooKeeper]:
    """The session's server when it is a local JVM this process controls; skips otherwise.

    A test may stop or restart it: it is running again (same port) after the test.
    """
    if not isinstance(zk_server.server, EmbeddedZooKeeper):
        pytest.skip(f"needs the local embedded server (backend: {zk_server.backend})")
    yield zk_server.server


@pytest.fixture
def local_zookeeper(pytestconfig: pytest.Config) -> None:
    """For tests that start local servers of their own: skipped on the other backends."""
    backend = pytest_options.settings(pytestconfig).backend
    if backend != "local":
        pytest.skip(f"starts local servers (backend: {backend})")


@pytest.fixture
def faultproxy() -> ModuleType:
    """The suite's TCP fault proxy (``tests/helpers/faultproxy.py``): imported, never skipped."""
    return importlib.import_module("helpers.faultproxy")


@pytest.fixture
def zk_path(request: pytest.FixtureRequest) -> str:
    """A fresh absolute path for this test, ``/zkwire-tests/<test name>-<8 hex>`` (not created)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_.")[:80] or "test"
    return f"{TEST_ROOT}/{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def ensemble(zk_ensemble: EnsembleHandle) -> ZooKeeperEnsemble:
    """The session's 3-member ensemble, with blocking controls; members a test stopped are started
    again after it."""
    return zk_ensemble.ensemble
