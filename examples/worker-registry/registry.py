"""A small application on zkwire: workers announce themselves and draw unique job numbers.

* :func:`register` -- a worker's ephemeral node under ``/workers``: it goes away with the worker's session;
* :func:`workers` -- who is there;
* :func:`next_job_number` -- a counter shared by every worker, incremented with a versioned write
  (compare-and-set: two workers never draw the same number).
"""

from __future__ import annotations

import zkwire

WORKERS = "/workers"
COUNTER = "/jobs/counter"


async def register(client: zkwire.Client, name: str, address: str = "") -> str:
    """Announce worker ``name``; returns its node. The node lives as long as ``client``'s session."""
    await _ensure(client, WORKERS)
    return await client.create(f"{WORKERS}/{name}", address.encode(), ephemeral=True)


async def workers(client: zkwire.Client) -> dict[str, str]:
    """The registered workers and their addresses."""
    try:
        names = await client.get_children(WORKERS)
    except zkwire.NoNodeError:
        return {}
    found = {}
    for name in sorted(names):
        try:
            data, _ = await client.get_data(f"{WORKERS}/{name}")
        except zkwire.NoNodeError:
            continue  # gone meanwhile
        found[name] = data.decode()
    return found


async def next_job_number(client: zkwire.Client) -> int:
    """Draw the next job number (1, 2, 3...), unique across every worker."""
    await _ensure(client, COUNTER, b"0")
    while True:
        data, stat = await client.get_data(COUNTER)
        number = int(data) + 1
        try:
            await client.set_data(COUNTER, str(number).encode(), version=stat.version)
        except zkwire.BadVersionError:
            continue  # another worker drew one meanwhile: try again
        return number


async def _ensure(client: zkwire.Client, path: str, data: bytes = b"") -> None:
    """Create ``path`` (and its parents) unless it exists."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts) + 1):
        node = "/" + "/".join(parts[:depth])
        try:
            await client.create(node, data if depth == len(parts) else b"")
        except zkwire.NodeExistsError:
            pass
