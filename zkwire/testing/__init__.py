"""Real ZooKeeper servers for tests: the tools beside the client.

* :mod:`zkwire.testing.embedded` -- servers and ensembles run from the locally installed package;
* :mod:`zkwire.testing.containers` -- the same in Docker containers (testcontainers), with
  ``image/build.sh`` building a ZooKeeper image from Debian packages;
* :mod:`zkwire.testing.netns` -- an ensemble whose members live in network namespaces of their own,
  so that tests can cut the links between them (partitions, one-way loss) and heal them;
* :mod:`zkwire.testing.plugin` -- a pytest plugin with fixtures for all of it (opt-in: ``--zk``,
  ``-p zkwire.testing.plugin`` or ``zk_enable = true`` in the pytest configuration).

Nothing here is imported by ``import zkwire``, only the plugin module imports pytest, and the names
below are imported on first use: loading :mod:`zkwire.testing.pytest_options` (zkwire's ``pytest11``
entry point, present in every pytest run once zkwire is installed) loads nothing else of this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import (
        EmbeddedZooKeeperError,
        ExternalZooKeeper,
        PortInUseError,
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

_WHERE = {
    "EmbeddedZooKeeperError": "base",
    "ExternalZooKeeper": "base",
    "PortInUseError": "base",
    "ServerOptions": "base",
    "ZooKeeperEnsemble": "base",
    "ZooKeeperNotInstalledError": "base",
    "ZooKeeperServer": "base",
    "ZooKeeperStartError": "base",
    "ensure_path": "base",
    "four_letter_word": "base",
    "free_port": "base",
    "EmbeddedEnsemble": "embedded",
    "EmbeddedZooKeeper": "embedded",
    "EnsembleHandle": "handles",
    "NetnsEnsembleHandle": "handles",
    "ServerHandle": "handles",
}

__all__ = [
    "EmbeddedEnsemble",
    "EmbeddedZooKeeper",
    "EmbeddedZooKeeperError",
    "EnsembleHandle",
    "ExternalZooKeeper",
    "NetnsEnsembleHandle",
    "PortInUseError",
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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
