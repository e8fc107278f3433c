"""Moved to :mod:`zkwire.testing.embedded`; this module re-exports it so that existing imports and
``python -m zkwire.embedded`` keep working."""

from __future__ import annotations

import sys

from .testing.embedded import (
    DEFAULT_JVM_FLAGS,
    EmbeddedEnsemble,
    EmbeddedZooKeeper,
    EmbeddedZooKeeperError,
    ServerOptions,
    ZooKeeperNotInstalledError,
    ZooKeeperStartError,
    find_java,
    four_letter_word,
    free_port,
    main,
    server_classpath,
)

__all__ = [
    "DEFAULT_JVM_FLAGS",
    "EmbeddedEnsemble",
    "EmbeddedZooKeeper",
    "EmbeddedZooKeeperError",
    "ServerOptions",
    "ZooKeeperNotInstalledError",
    "ZooKeeperStartError",
    "find_java",
    "four_letter_word",
    "free_port",
    "main",
    "server_classpath",
]

if __name__ == "__main__":
    sys.exit(main())
