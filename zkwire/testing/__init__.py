"""Real ZooKeeper servers for tests: the tools beside the client.

* :mod:`zkwire.testing.embedded` -- servers and ensembles run from the locally installed package;
* :mod:`zkwire.testing.containers` -- the same in Docker containers (testcontainers), with
  ``image/build.sh`` building a ZooKeeper image from Debian packages;
* :mod:`zkwire.testing.netns` -- an ensemble whose members live in network namespaces of their own,
  so that tests can cut the links between them (partitions, one-way loss) and heal them;
* :mod:`zkwire.testing.plugin` -- a pytest plugin with fixtures for all of it (opt-in: ``--zk``,
  ``-p zkwire.testing.plugin`` or ``zk_enable = true`` in the pytest configuration).

Nothing here is imported by ``import zkwire``; only the plugin module imports pytest.
"""

from __future__ import annotations

from .base import (
    EmbeddedZooKeeperError,
    ExternalZooKeeper,
    ServerOptions,
    ZooKeeperEnsemble,
    ZooKeeperNotInstalledError,
    ZooKeeperServer,
    ZooKeeperStartError,
    ensure_path,
    four_letter_word,
    free_port,
)
from .embedded import EmbeddedEnsemble, EmbeddedZooKeeper
from .handles import EnsembleHandle, NetnsEnsembleHandle, ServerHandle

__all__ = [
    "EmbeddedEnsemble",
    "EmbeddedZooKeeper",
    "EmbeddedZooKeeperError",
    "EnsembleHandle",
    "ExternalZooKeeper",
    "NetnsEnsembleHandle",
    "ServerHandle",
    "ServerOptions",
    "ZooKeeperEnsemble",
    "ZooKeeperNotInstalledError",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "ensure_path",
    "four_letter_word",
    "free_port",
]
