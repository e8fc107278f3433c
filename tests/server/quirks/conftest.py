"""The quirks pinned here are 3.8.0's: every test in this directory skips on another server version."""

from __future__ import annotations

import pytest
from helpers.quirks import four_letter


@pytest.fixture(autouse=True)
def _server_is_3_8_0(zk_hosts: str) -> None:
    """These pins describe 3.8.0 exactly; several of them changed in later 3.8.x and 3.9 releases."""
    version = four_letter(zk_hosts, b"srvr").split(b"\n", 1)[0]
    if not version.startswith(b"Zookeeper version: 3.8.0-"):
        pytest.skip(f"pins 3.8.0 behaviour; the server says {version.decode(errors='replace')!r}")
