"""Server calls that are safe to send again, sent again until they have an answer.

A read, ``ensure_path`` or the delete of a node that only we remove may be repeated as often as needed:
:func:`repeat` sends it with the source's current client, again after a lost connection (the client
waits for the reconnection), and -- given a :class:`zkwire.Sessions` stream -- again with the next
session after an expiry.  With a single client an expiry is raised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from zkwire import Client, ConnectionLossError, SessionExpiredError, SessionSource, current_client

__all__ = ["repeat"]

T = TypeVar("T")


async def repeat(source: SessionSource, op: Callable[[Client], Awaitable[T]]) -> T:
    """``op(client)`` until it answers; see the module documentation.

    Raises:
        SessionExpiredError, AuthFailedError, ClientClosedError: the single client ``source`` ended (a
            stream's end raises ClientClosedError).
        and whatever else ``op`` raises.
    """
    while True:
        zk = await current_client(source)
        try:
            return await op(zk)
        except ConnectionLossError:
            await trio.lowlevel.checkpoint()
        except SessionExpiredError:
            if isinstance(source, Client):
                raise
            await trio.lowlevel.checkpoint()
