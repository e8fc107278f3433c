"""Transactions applied exactly once although a reply may be lost: a *witness* node in the transaction.

A write whose reply is lost with the connection may or may not have been applied; sending it again may
apply it twice (a queue item put twice, a counter incremented twice).  :class:`Witnessed` adds the
creation of an empty node ``<directory>/zklock-w-<uuid>``, named for that one attempt, to the
transaction.  After a lost reply it reconnects (the next session, given a :class:`zkwire.Sessions`
stream), ``sync``\\ s and looks for the witness: there, the transaction was applied; absent, it was not.
Witnesses are persistent, so the answer survives the session's expiry.

Clean-up costs no round trip of its own: the witness of a settled transaction is deleted in the next
transaction (or by :meth:`Witnessed.aclose`); a process that dies leaves at most one empty node per
object.  The directory is a container node (the server removes it once it is empty).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from zkwire import (
    Client,
    ConnectionLossError,
    Create,
    Delete,
    NoNodeError,
    ServerError,
    SessionExpiredError,
    SessionSource,
    WriteOp,
    current_client,
)

__all__ = ["Witnessed", "WITNESS_PREFIX"]

#: The name prefix of a witness node.
WITNESS_PREFIX = "zklock-w-"


class Witnessed:
    """Exactly-once transactions whose witnesses live under ``directory``."""

    def __init__(self, source: SessionSource, directory: str) -> None:
        self.source = source
        self.directory = directory.rstrip("/") or "/"
        self._stale: list[str] = []  # witnesses of settled transactions, deleted with the next one

    async def apply(self, zk: Client, ops: Sequence[WriteOp]) -> list[str | object | None] | None:
        """Apply ``ops`` atomically, exactly once; returns their results, or None when the reply was
        lost and the transaction found applied (the results are then unknown).

        Raises:
            ServerError: an op failed (nothing was applied); ``error.results`` covers ``ops`` only.
            ConnectionLossError: never (it is settled here).
            SessionExpiredError: ``source`` is one client and its session ended with a transaction in
                flight, which may have been applied.
        """
        witness = f"{self.directory.rstrip('/')}/{WITNESS_PREFIX}{uuid.uuid4().hex}"
        while True:
            stale = self._stale
            try:
                results = await zk.multi([*ops, Create(witness), *(Delete(w) for w in stale)])
            except (ConnectionLossError, SessionExpiredError):
                if isinstance(self.source, Client) and zk.ended is not None:
                    raise
                zk, applied = await self._settle(witness)
                if not applied:
                    continue
                self._stale = [witness]
                return None
            except NoNodeError as e:
                failed = _failed_index(e)
                if failed == len(ops):  # the directory is missing
                    await zk.ensure_path(self.directory, container=True)
                    continue
                if failed is not None and failed > len(ops):  # a stale witness is gone already
                    self._stale = []
                    continue
                e.results = e.results[: len(ops)] if e.results is not None else None
                raise
            except ServerError as e:
                e.results = e.results[: len(ops)] if e.results is not None else None
                raise
            self._stale = [witness]
            return list(results[: len(ops)])

    async def _settle(self, witness: str) -> tuple[Client, bool]:
        """After a lost reply: the client to go on with, and whether the transaction was applied (seen
        after a ``sync``: the member we reach has then applied every write of our session)."""
        while True:
            zk = await current_client(self.source)
            try:
                await zk.wait_connected()
                await zk.sync(self.directory)
                return zk, await zk.exists(witness) is not None
            except ConnectionLossError:
                continue
            except SessionExpiredError:
                if isinstance(self.source, Client):
                    raise
                continue  # the stream's next session looks for it

    async def aclose(self) -> None:
        """Delete the witness of the last settled transaction."""
        stale, self._stale = self._stale, []
        if not stale:
            return
        zk = self.source if isinstance(self.source, Client) else self.source.current
        if zk is None or zk.ended is not None:
            self._stale = stale
            return
        await zk.pipeline([Delete(w) for w in stale])


def _failed_index(error: ServerError) -> int | None:
    """The index of the op whose failure failed a multi (the others report a rollback)."""
    results = error.results
    if results is None:
        return None
    for i, r in enumerate(results):
        if isinstance(r, NoNodeError):
            return i
    return None
