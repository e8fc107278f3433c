"""Layer 3: the trio layer, the only one importing trio.

* :mod:`~zkwire.client.api` -- :class:`Client`, :class:`Transaction` and :func:`open_client`: the op API;
* :mod:`~zkwire.client.handle` -- the client's base: its options, state, life, credentials and the one
  path every request takes to the server;
* :mod:`~zkwire.client.connection` -- the connection driver: streams (an injectable ``connect``), the
  reader, the writer and timer, reconnection; the plain design, in which the reader task wakes the caller;
* :mod:`~zkwire.client.fastpath` -- the driver clients run by default: the plain one with its measured
  shortcuts (the caller reads its own reply, waiters parked without an Event), which can be switched off;
* :mod:`~zkwire.client.calls` -- a request's pending call and the backlog beyond ``max_in_flight``;
* :mod:`~zkwire.client.watchers` -- watch handles and the session-state stream;
* :mod:`~zkwire.client.fourletter` -- the four-letter-word client;
* helpers built on the client: :mod:`~zkwire.client.retry`, :mod:`~zkwire.client.continuity`,
  :mod:`~zkwire.client.nodes`, :mod:`~zkwire.client.nodewatch`, :mod:`~zkwire.client.treecache`,
  :mod:`~zkwire.client.aio` (asyncio through trio guest mode).
"""

from __future__ import annotations

from .api import Client, Transaction, open_client

__all__ = ["Client", "Transaction", "open_client"]
