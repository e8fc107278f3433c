"""Reconfigurable ensembles of a test's own (local backend only): members added and removed at run time."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from zkwire.testing.embedded import EmbeddedEnsemble

__all__ = ["reconfigurable"]


@pytest.fixture
async def reconfigurable(local_zookeeper: None) -> AsyncIterator[EmbeddedEnsemble]:
    """A 3-member reconfigurable ensemble of the test's own (local backend only)."""
    ens = EmbeddedEnsemble(3, reconfigurable=True)
    await trio.to_thread.run_sync(ens.start)
    try:
        yield ens
    finally:
        await trio.to_thread.run_sync(ens.stop)
