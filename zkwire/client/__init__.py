"""Layer 3: the trio layer, the only one importing trio.

* :mod:`~zkwire.client.api` -- :class:`Client`, :class:`Transaction` and :func:`open_client`: the op API;
* :mod:`~zkwire.client.handle` -- the client's base: its options, state, life, credentials and the one
  path every request takes to the server;
* :mod:`~zkwire.client.connection` -- the connection driver: streams (an injectable ``connect``), the
  reader, the writer and timer, reconnection;
* :mod:`~zkwire.client.watchers` -- watch handles and the session-state stream;
* :mod:`~zkwire.client.fourletter` -- the four-letter-word client;
* helpers built on the client: :mod:`~zkwire.client.retry`, :mod:`~zkwire.client.continuity`,
  :mod:`~zkwire.client.nodes`, :mod:`~zkwire.client.nodewatch`, :mod:`~zkwire.client.treecache`,
  :mod:`~zkwire.client.aio` (asyncio through trio guest mode).
"""

from __future__ import annotations

from .api import Client, Transaction, open_client

__all__ = ["Client", "Transaction", "open_client"]
