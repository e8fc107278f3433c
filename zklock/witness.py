"""Transactions applied exactly once although a reply may be lost: a *witness* node in the transaction.

A write whose reply is lost with the connection may or may not have been applied; sending it again may
apply it twice (a queue item put twice, a counter incremented twice).  A :class:`Witnessed` object owns
one node, ``<directory>/zklock-w-<uuid>``, and every transaction it applies also writes a fresh token
into that node.  After a lost reply it reconnects (the next session, given a :class:`zkwire.Sessions`
stream), ``sync``\\ s and reads the node: our token, the transaction was applied; anything else, it was
not.  The node is persistent, so the answer survives the session's expiry.  The object's transactions
go one at a time (the token must be the last one written), which costs nothing to a single task and
orders the tasks sharing one object.

Writing the token (a ``setData`` in the same ``multi``) is the whole cost: no node is created or
deleted per transaction.  :meth:`Witnessed.aclose` deletes the node; a process that dies leaves one
small node per object.  The directory is a container node when it has to be made.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import trio

from zkwire import (
    Client,
    ConnectionLossError,
    Create,
    NodeExistsError,
    NoNodeError,
    RuntimeInconsistencyError,
    ServerError,
    SessionExpiredError,
    SessionSource,
    SetData,
    WriteOp,
    current_client,
)

from .retrying import repeat

__all__ = ["Witnessed", "WITNESS_PREFIX"]

#: The name prefix of a witness node.
WITNESS_PREFIX = "zklock-w-"


class Witnessed:
    """Exactly-once transactions witnessed by one node under ``directory``."""

    def __init__(self, source: SessionSource, directory: str) -> None:
        self.source = source
        self.directory = directory.rstrip("/") or "/"
        self.node = f"{self.directory.rstrip('/')}/{WITNESS_PREFIX}{uuid.uuid4().hex}"
        self._exists = False  # whether the witness node was made (then it is written, not created)
        self._one_at_a_time = trio.Lock()

    async def apply(
        self, zk: Client, ops: Sequence[WriteOp], *, same_session: bool = False
    ) -> list[str | object | None] | None:
        """Apply ``ops`` atomically, exactly once; returns their results, or None when the reply was
        lost and the transaction found applied (the results are then unknown).

        With ``same_session`` the transaction is only ever sent in ``zk``'s session (it deletes nodes of
        that session, say): if that session ends before it is known to be applied, it is not sent again
        and :class:`~zkwire.SessionExpiredError` is raised (it was not applied).

        Raises:
            ServerError: an op failed (nothing was applied); ``error.results`` covers ``ops`` only.
            ConnectionLossError: never (it is settled here).
            SessionExpiredError: ``source`` is one client and its session ended with a transaction in
                flight, which may have been applied.
        """
        async with self._one_at_a_time:
            token = uuid.uuid4().hex.encode()
            n = len(ops)
            while True:
                witness: WriteOp = SetData(self.node, token) if self._exists else Create(self.node, token)
                try:
                    results = await zk.multi([*ops, witness])
                except (ConnectionLossError, SessionExpiredError):
                    if isinstance(self.source, Client) and zk.ended is not None:
                        raise
                    session = zk.session_id
                    zk, found = await self._settle()
                    self._exists = found is not None
                    if found == token:
                        return None
                    if same_session and zk.session_id != session:
                        raise SessionExpiredError(
                            self.node, "the session ended; the transaction was not applied"
                        ) from None
                    continue
                except ServerError as e:
                    failed = _failed_index(e)
                    if failed == n and isinstance(e, NoNodeError):
                        if self._exists:
                            self._exists = False  # deleted by someone: made again
                        else:
                            await self._make_directory(zk)
                        continue
                    if failed == n and isinstance(e, NodeExistsError):
                        self._exists = True  # made by a transaction whose reply was lost
                        continue
                    e.results = e.results[:n] if e.results is not None else None
                    raise
                self._exists = True
                return list(results[:n])

    async def _make_directory(self, zk: Client) -> None:
        try:
            await zk.ensure_path(self.directory, container=True)
        except ConnectionLossError:
            pass  # the transaction is sent again (after the reconnection) and tells

    async def _settle(self) -> tuple[Client, bytes | None]:
        """After a lost reply: the client to go on with, and the witness's token now (None: no node),
        read after a ``sync`` (the member we reach has then applied every write of our session)."""
        while True:
            zk = await current_client(self.source)
            try:
                await zk.wait_connected()
                await zk.sync(self.directory)
                data, _ = await zk.get_data(self.node)
                return zk, data
            except NoNodeError:
                return zk, None
            except ConnectionLossError:
                continue
            except SessionExpiredError:
                if isinstance(self.source, Client):
                    raise
                continue  # the stream's next session looks

    async def aclose(self) -> None:
        """Delete the witness node (after the transaction in progress, if any: its answer may depend on
        the node)."""
        async with self._one_at_a_time:
            if not self._exists:
                return
            zk = self.source if isinstance(self.source, Client) else self.source.current
            if zk is None or zk.ended is not None:
                return

            async def delete(zk: Client) -> None:
                try:
                    await zk.delete(self.node)
                except NoNodeError:
                    pass

            await repeat(self.source, delete)
            self._exists = False


def _failed_index(error: ServerError) -> int | None:
    """The index of the op whose failure failed a multi (the ops after it report a rollback)."""
    results = error.results
    if results is None:
        return None
    for i, r in enumerate(results):
        if isinstance(r, ServerError) and not isinstance(r, RuntimeInconsistencyError):
            return i
    return None
