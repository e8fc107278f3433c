"""Time-bounded leases that do not block: kazoo's ``NonBlockingLease`` and ``MultiNonBlockingLease``.

::

    if await zklock.non_blocking_lease(zk, "/leases/hourly-cleanup", timedelta(minutes=70)):
        await cleanup()      # only one host per 70 minutes gets here

Layout (kazoo's): ``<path>/lease_holder`` holds UTF-8 JSON ``{"version": 1, "holder": <identifier>,
"end": "YYYY-MM-DDTHH:MM:SS"}`` (naive UTC), written under a kazoo-layout :class:`~zklock.Mutex` on
``<path>``.  The lease is obtained when there is no holder, the holder is ``identifier`` (a renewal) or
its end has passed; the holder node is then replaced in one transaction.  The clocks of the clients
must roughly agree (the end is a client's clock, as in kazoo).  The multi-lease tries ``<path>/0`` ..
``<path>/<count-1>`` in turn.  The holder is replaced by a compare-and-set on what was read, and a
lost reply is settled by reading it again after a ``sync``: the lease is ours if it holds exactly what
we wrote.
"""

from __future__ import annotations

import datetime
import json
import socket
from collections.abc import Callable

from zkwire import (
    Client,
    ConnectionLossError,
    Create,
    Delete,
    InvalidArgumentError,
    NoNodeError,
    ServerError,
    SessionExpiredError,
    SessionSource,
    Stat,
    current_client,
    validate_path,
)

from .mutex import Mutex
from .retrying import repeat

__all__ = ["non_blocking_lease", "multi_non_blocking_lease", "LEASE_HOLDER"]

#: The node naming a timed lease's holder.
LEASE_HOLDER = "lease_holder"
_VERSION = 1
_FORMAT = "%Y-%m-%dT%H:%M:%S"
Clock = Callable[[], datetime.datetime]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _duration(path: str, duration: datetime.timedelta | float) -> datetime.timedelta:
    if isinstance(duration, datetime.timedelta):
        value = duration
    elif isinstance(duration, int | float) and not isinstance(duration, bool):
        value = datetime.timedelta(seconds=duration)
    else:
        raise InvalidArgumentError(path, f"duration is a timedelta or seconds, not {type(duration).__name__}")
    if value <= datetime.timedelta(0):
        raise InvalidArgumentError(path, "duration must be positive")
    return value


async def non_blocking_lease(
    source: SessionSource,
    path: str,
    duration: datetime.timedelta | float,
    *,
    identifier: str | None = None,
    clock: Clock = _utcnow,
) -> bool:
    """Try to obtain (or renew, with the same ``identifier``) the lease at ``path`` for ``duration``
    (a timedelta or seconds); whether it was obtained.  ``identifier`` defaults to the host name.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path`` or ``duration`` (nothing is sent).
        SessionExpiredError: ``source`` is one client whose session ended while the holder was
            written (the lease may have been taken: read ``<path>/lease_holder``).
    """
    path = validate_path(path)
    span = _duration(path, duration)
    ident = identifier or socket.gethostname()
    holder = f"{path.rstrip('/')}/{LEASE_HOLDER}"

    async def make_path(zk: Client) -> None:
        await zk.ensure_path(path)

    async def read_holder(zk: Client) -> tuple[bytes, Stat] | None:
        try:
            return await zk.get_data(holder)
        except NoNodeError:
            return None

    async def read_back(zk: Client) -> bytes | None:
        await zk.sync(holder)  # the member we reach has then applied every write of our session
        found = await read_holder(zk)
        return None if found is None else found[0]

    await repeat(source, make_path)
    zk = await current_client(source)
    # The holder node is replaced by a compare-and-set (its version, or its absence), so a write can
    # never overwrite a holder it did not read; the lock is kazoo's protocol, kept for its clients.
    async with Mutex(zk, path, identifier=ident, naming="kazoo", cancel_on_loss=False):
        now = clock()
        ops: list[Create | Delete] = []
        found = await repeat(source, read_holder)
        if found is not None:
            raw, stat = found
            try:
                data = json.loads(raw.decode("utf-8"))
                if data["version"] != _VERSION:
                    return False
                end = datetime.datetime.strptime(data["end"], _FORMAT)
                if data["holder"] != ident and now < end:
                    return False
            except (UnicodeDecodeError, ValueError, KeyError, TypeError):
                return False  # not a lease holder we can read: never overwritten (as kazoo)
            ops.append(Delete(holder, stat.version))
        mine = json.dumps({"version": _VERSION, "holder": ident, "end": (now + span).strftime(_FORMAT)}).encode()
        ops.append(Create(holder, mine))
        try:
            await zk.multi(ops)
            return True
        except (ConnectionLossError, SessionExpiredError):
            if isinstance(source, Client) and zk.ended is not None:
                raise
            return await repeat(source, read_back) == mine  # applied or not: the holder tells
        except ServerError:
            return False  # the holder changed since it was read
    return False  # reached only if the lock's block swallowed the body's end


async def multi_non_blocking_lease(
    source: SessionSource,
    count: int,
    path: str,
    duration: datetime.timedelta | float,
    *,
    identifier: str | None = None,
    clock: Clock = _utcnow,
) -> bool:
    """Try the leases ``<path>/0`` .. ``<path>/<count-1>`` in turn; whether one was obtained.

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path``, ``count`` or ``duration``.
    """
    path = validate_path(path)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidArgumentError(path, f"count must be a positive int, not {count!r}")
    for n in range(count):
        if await non_blocking_lease(source, f"{path.rstrip('/')}/{n}", duration, identifier=identifier, clock=clock):
            return True
    return False
