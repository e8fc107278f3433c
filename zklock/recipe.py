"""What every node-queue lock recipe shares: contend, wait, hold, release, clean up.

One ephemeral sequential node per contender under the lock path; a recipe decides from the sorted
contenders whether ours may proceed and, if not, which single node to wait for.  The steps:

1. Create ``<path>/<name>`` (ephemeral, sequential; the name carries a fresh uuid: ``_c_<uuid>-<marker>``
   in the ``"curator"`` naming, ``<uuid hex><marker>`` in the ``"kazoo"`` naming, see
   :mod:`zklock.naming`) and list the children *in one round trip*: both requests go out back to back
   and the server applies them in order.  While another waiter of this process is listing the path,
   the create goes alone and the waiter joins the next listing sent after the create's reply (one
   listing serves every waiter of the process that queued meanwhile, see :mod:`zklock.sharedqueue`).  A
   missing parent is created as a container node (the server
   removes it once it is empty again) in the ``"curator"`` naming, as a persistent node in the
   ``"kazoo"`` naming (kazoo creates its lock paths once per lock object and would fail on a reaped
   container).
2. If the create's reply is lost (connection loss), wait for the session to reconnect, ``sync`` the lock
   path (the member we re-attached to may not have applied our create yet: after the sync it has
   applied every write our session made), list the children and adopt the node carrying our uuid --
   only if its ephemeralOwner is our session; any other node carrying our uuid is deleted.  Never two
   nodes for one acquire; should duplicates exist anyway, the attempt's own listings delete all but our
   node, and grant, release and clean-up agree on that one node.
3. If the recipe says we may proceed, check that our node's ephemeralOwner is the current session and
   hold.  Otherwise watch just the one node we wait for, with a getData watch (an exists watch on a node
   that is already gone would linger).  When it goes, the next node to wait for is found in the
   process's shared view of the queue (:mod:`zklock.sharedqueue`: nodes below ours can only disappear), so a
   handoff costs one small request; the queue is listed again only when the view is in doubt (a watch
   request failed with the connection), once per lock path for all the waiters of the process.
4. Any failure or cancellation before the lock is held deletes our node (shielded); if the session is
   disconnected at that moment, the delete is retried in the background while the session lives.

While held, the lease watches its own node and the session.  Suspension (the connection is lost: the
session may be expiring on the server, and another contender may be granted the lock) and expiry mark
the lease lost before anyone else can be granted the lock: the server only deletes our node once our
session is gone, a timeout after it last heard from us, and the client drops a connection on which
nothing it sent for two thirds of the timeout was answered.  The deletion of our node by another party
is learnt only eventually (its notification and the next contender's travel independently): fencing
tokens and :meth:`Lease.fenced` writes cover that window.  ``async with`` then cancels its body and
raises :class:`LockLostError`.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import cast

import trio

from zkwire import (
    Client,
    ConnectionLossError,
    Create,
    EventType,
    GetChildren,
    NodeExistsError,
    NoNodeError,
    Stat,
    Watch,
    ZKError,
    validate_path,
)

from .errors import NotHeldError
from .lease import REVOKE_DATA, Lease
from .naming import (
    FAMILY_MARKERS,
    KAZOO_LOCK,
    LOCK_MARKERS,
    MUTEX,
    Contender,
    Naming,
    check_naming,
    new_node_prefix,
    parse_contender,
    sort_contenders,
)
from .reporting import AcquireReport
from .sharedqueue import Listing, SharedQueue, nearest_below, release_queue, shared_queue

__all__ = [
    "LockRecipe",
    "default_identifier",
    "delete_node",
    "request_revocation",
    "CLEANUP_TIMEOUT",
    "ANY_CHANGE",
]

log = logging.getLogger("zklock")

#: How long shielded clean-up may block its caller before it is handed to the background.
CLEANUP_TIMEOUT = 5.0


#: Returned by :meth:`LockRecipe._blocker` to wait for any change among the children (semaphores).
ANY_CHANGE = Contender(0, "", "", None)

#: Lock paths already warned about (a warning once per path and process); bounded.
_WARNED_PATHS: set[str] = set()
_WARNED_LIMIT = 4096

#: Parses a children listing into the contenders of one recipe, in queue order.
ContenderParser = Callable[[list[str]], list[Contender]]


def default_identifier() -> str:
    """``hostname:pid``: what a lock node's data says about its holder by default."""
    return f"{socket.gethostname()}:{os.getpid()}"


class LockRecipe:
    """Base of the node-queue locks.  Subclasses set the markers and :meth:`_blocker`.

    Reentrant per trio task: the task holding the lock may acquire it again (counted); other tasks of
    the same process queue like any other contender.

    ``naming`` chooses the names of the nodes this recipe creates (see :mod:`zklock.naming`):
    ``"curator"`` (default) or ``"kazoo"``.  Whatever it writes, a recipe understands the nodes of both
    families on its path.
    """

    #: The marker in our own node names, per naming.
    curator_marker = MUTEX
    kazoo_marker = KAZOO_LOCK
    #: Markers of the nodes that take part in this queue (ours and compatible clients').
    markers: tuple[str, ...] = LOCK_MARKERS
    #: Whether our node is sequential (kazoo's semaphore leases are not).
    sequential = True
    #: Waiters wait for any change among the children (see :meth:`_blocker`), not for one node.
    watches_children = False
    #: The recipe's name in its events (:mod:`zklock.reporting`); None: it reports none (a lock inside
    #: another recipe).
    event_name: str | None = "lock"

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        identifier: str | None = None,
        lose_on_suspend: bool = True,
        cancel_on_loss: bool = True,
        naming: Naming = "curator",
    ) -> None:
        self.client = client
        self.path = validate_path(path)
        self.identifier = identifier if identifier is not None else default_identifier()
        self.lose_on_suspend = lose_on_suspend
        self.cancel_on_loss = cancel_on_loss
        self.naming: Naming = check_naming(naming)
        #: The marker in the names of the nodes this recipe creates.
        self.marker = self.kazoo_marker if self.naming == "kazoo" else self.curator_marker
        self._own_family = FAMILY_MARKERS[self.naming]
        self._held: dict[trio.lowlevel.Task, Lease] = {}
        #: Per task, the leases of its open ``async with`` blocks (innermost last).
        self._blocks: dict[trio.lowlevel.Task, list[Lease]] = {}

    def _blocked_by(self, other: Contender) -> bool:
        """Whether ``other``, a node queued before ours, keeps ours from proceeding.  Default: any."""
        return True

    def _blocker(self, contenders: list[Contender], index: int) -> Contender | None:
        """The node ours must wait for, or None if ours may proceed: the nearest node before ours that
        :meth:`_blocked_by` says (recipes with ``watches_children`` may return :data:`ANY_CHANGE`)."""
        for i in range(index - 1, -1, -1):
            if self._blocked_by(contenders[i]):
                return contenders[i]
        return None

    def _contenders(self, children: list[str]) -> list[Contender]:
        """The contenders among ``children``, in queue order."""
        return sort_contenders(children, self.markers)

    async def _ensure_parent(self) -> None:
        """Create the lock path and its missing ancestors: containers in the ``"curator"`` naming (as
        Curator does), persistent nodes in the ``"kazoo"`` naming (as kazoo does)."""
        await self.client.ensure_path(self.path, container=self.naming == "curator")

    def _warn_foreign(self, contenders: list[Contender], path: str | None = None) -> None:
        """Log once per path when it holds nodes of the other naming family (or, under a semaphore's
        lease parent, children no recipe wrote): a default peer of the other family does not see
        (kazoo) or cannot order (Curator) this recipe's nodes."""
        own = self._own_family
        for c in contenders:
            if c.marker not in own:
                break
        else:
            return
        path = path or self.path
        if path in _WARNED_PATHS:
            return
        if len(_WARNED_PATHS) >= _WARNED_LIMIT:
            _WARNED_PATHS.clear()
        _WARNED_PATHS.add(path)
        log.warning("%s", foreign_warning(path, self.naming, type(self).__name__, c))

    # ------------------------------------------------------------------ inspection

    async def _sorted(self) -> list[Contender]:
        try:
            children = await self.client.get_children(self.path)
        except NoNodeError:
            return []
        return self._contenders(children)

    async def contenders(self) -> list[str]:
        """Node names of all contenders, in queue order."""
        return [c.name for c in await self._sorted()]

    async def holders(self) -> list[str]:
        """Identifiers (node data) of the contenders currently allowed to proceed."""
        contenders = await self._sorted()
        out = []
        for i, c in enumerate(contenders):
            if self._blocker(contenders, i) is None:
                try:
                    data, _ = await self.client.get_data(f"{self.path}/{c.name}")
                except NoNodeError:
                    continue
                out.append(data.decode("utf-8", "replace"))
        return out

    async def holder(self) -> str | None:
        """The identifier of the (first) current holder, or None if nobody holds the lock."""
        holders = await self.holders()
        return holders[0] if holders else None

    async def is_locked(self) -> bool:
        return bool(await self._sorted())

    async def request_revocation(self) -> bool:
        """Ask the current holder(s) to release: they see ``lease.revocation_requested``.

        Returns False if nobody holds the lock.  The holder decides; nothing is forced.
        """
        contenders = await self._sorted()
        asked = False
        for i, c in enumerate(contenders):
            if self._blocker(contenders, i) is None:
                asked = await request_revocation(self.client, f"{self.path}/{c.name}") or asked
        return asked

    @property
    def lease(self) -> Lease | None:
        """The current task's lease, if it holds this lock."""
        return self._held.get(trio.lowlevel.current_task())

    # ------------------------------------------------------------------ acquire / release

    async def acquire(self, blocking: bool = True) -> bool:
        """Acquire; with ``blocking=False`` give up at once (returning False) if we would have to wait.

        Bound a blocking wait with a cancel scope: ``with trio.move_on_after(5): await lock.acquire()``.
        """
        return await self._acquire(blocking) is not None

    async def _acquire(self, blocking: bool) -> Lease | None:
        task = trio.lowlevel.current_task()
        held = self._held.get(task)
        if held is not None and not held.lost:
            held.hold_again()
            return held
        attempt = _Attempt(self)
        try:
            lease = await attempt.run(blocking)
        except BaseException:
            with trio.CancelScope(shield=True):
                await attempt.abandon()
            raise
        if lease is None:
            with trio.CancelScope(shield=True):
                await attempt.abandon()
            return None
        self._held[task] = lease
        return lease

    async def release(self) -> None:
        """Release one level of the current task's hold; the last one deletes the lock node."""
        task = trio.lowlevel.current_task()
        lease = self._held.get(task)
        if lease is None:
            raise NotHeldError(f"the current task does not hold {self.path}")
        if not lease.let_go():
            return
        del self._held[task]
        with trio.CancelScope(shield=True):
            await delete_node(self.client, lease.node)
            if lease.create_uuid is not None:
                # This acquire once lost a create reply: make sure no other node carries its uuid.
                await delete_uuid_nodes(self.client, self.path, lease.create_uuid, self._contenders)

    async def acquire_lease(self) -> Lease:
        """Wait for the lock and return the current task's :class:`Lease` (counted, like :meth:`acquire`).

        With ``async with lease:`` after it, a cancel scope around this call bounds only the wait::

            with trio.fail_after(5):
                lease = await lock.acquire_lease()
            async with lease:      # the body is not bounded; released at the end
                ...
        """
        lease = await self._acquire(True)
        assert lease is not None
        return lease

    async def __aenter__(self) -> Lease:
        lease = await self.acquire_lease()
        self._blocks.setdefault(trio.lowlevel.current_task(), []).append(lease)
        return await lease.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        task = trio.lowlevel.current_task()
        blocks = self._blocks[task]
        lease = blocks.pop()
        if not blocks:
            del self._blocks[task]
        return await lease.__aexit__(exc_type, exc, tb)


class _Attempt:
    """One acquire attempt: its uuid, its node once known, and the clean-up if it fails."""

    def __init__(self, recipe: LockRecipe) -> None:
        self.recipe = recipe
        self.client = recipe.client
        self.uuid, prefix = new_node_prefix(recipe.naming, recipe.marker)
        self.node_prefix = f"{recipe.path}/{prefix}"
        self.node: str | None = None
        self.node_session = 0
        self.czxid = 0
        self.create_sent = False
        #: A create reply was lost at least once: nodes carrying our uuid may exist besides ours.
        self.create_lost = False
        self.report = AcquireReport(recipe.client, recipe.event_name, recipe.path)

    async def run(self, blocking: bool) -> Lease | None:
        recipe = self.recipe
        if recipe.watches_children:
            return await self._wait_on_children(blocking)
        queue = shared_queue(self.client, recipe.path, recipe.markers)
        queue.users += 1
        try:
            return await self._wait_in_queue(blocking, queue)
        finally:
            release_queue(self.client, recipe.path, queue)

    async def _wait_in_queue(self, blocking: bool, queue: SharedQueue) -> Lease | None:
        """Wait for the one node that blocks ours; when it goes, find the next one in the shared view of
        the queue.  One small request per handoff, whatever the length of the queue; a listing only to
        queue (shared by the waiters of this process that queue at once) and when the view is in
        doubt (our watch request failed with the connection: one listing per lock path, shared)."""
        recipe = self.recipe
        me, found, blocker = await self._enqueue(queue)
        while True:
            if not found:
                # Our node vanished (deleted by someone else): start over with a new node.
                self.node = None
                me, found, blocker = await self._enqueue(queue)
                continue
            if blocker is None:
                return await self._grant()
            if not blocking:
                return None
            try:
                _, _, watch = await self.client.get_data(f"{recipe.path}/{blocker.name}", watch=True)
            except NoNodeError:
                queue.saw_gone(blocker.name)
                found, blocker = queue.blocker(me, recipe._blocked_by)
                continue
            except ConnectionLossError:
                await queue.listing_after(queue.mark(), self._list)
                found, blocker = queue.blocker(me, recipe._blocked_by)
                continue
            event = await watch.wait()
            log.debug("lock %s: %s: %s", recipe.path, blocker.name, event.type)
            if event.type == EventType.NODE_DELETED:
                queue.saw_gone(blocker.name)
            found, blocker = queue.blocker(me, recipe._blocked_by)

    async def _enqueue(self, queue: SharedQueue) -> tuple[Contender, bool, Contender | None]:
        """Create our node and place it in the queue: our node, whether it is there, and the nearest node
        below it that blocks it.

        The children are listed in the create's round trip, unless another waiter of this process is
        listing the path at that moment: then the create goes alone and the view is fed a listing sent
        after its reply, shared with every waiter that asked before that listing went out.  So N
        waiters queueing at once cost a few listings, not N."""
        if not queue.listing_in_flight:
            listing = await queue.send_listing(lambda: self._create_and_list(listed=True))
            assert listing is not None
            return await self._place(listing, queue)
        listing = await self._create_and_list(listed=False)
        if listing is not None:
            # A create reply was lost: our own listing, which also clears any second node of ours.
            return await self._place(listing, queue)
        await queue.listing_after(queue.mark(), self._list)
        self._check_foreign(queue, queue.names)
        me = self._me()
        found, blocker = queue.blocker(me, self.recipe._blocked_by)
        return me, found, blocker

    def _me(self) -> Contender:
        assert self.node is not None
        me = parse_contender(self.node.rsplit("/", 1)[1], self.recipe.markers)
        assert me is not None
        return me

    def _check_foreign(self, queue: SharedQueue, names: Sequence[str]) -> None:
        if not queue.checked_foreign:
            # Once per shared view (not per waiter of a long local queue).
            queue.checked_foreign = True
            markers = self.recipe.markers
            self.recipe._warn_foreign([c for n in names if (c := parse_contender(n, markers)) is not None])

    async def _place(self, listing: Listing, queue: SharedQueue) -> tuple[Contender, bool, Contender | None]:
        """Our node, whether ``listing`` shows it, and the nearest node below it that blocks it (one pass
        over the unsorted listing).  The listing feeds the shared view; any other node carrying our uuid
        (only a lost create reply can have made one) is deleted and left out, so that grant, release
        and clean-up all mean the one node in ``self.node``."""
        names, cversion, parent_czxid = listing
        queue.saw_listing(names, cversion, parent_czxid)
        self._check_foreign(queue, names)
        me = self._me()
        mine = me.name
        uuid_ = self.uuid
        ghosts = [n for n in names if uuid_ in n and n != mine]
        if ghosts:
            for name in ghosts:
                log.warning("lock %s: deleting %s, a second node of one acquire", self.recipe.path, name)
                await delete_node(self.client, f"{self.recipe.path}/{name}")
                queue.saw_gone(name)
            names = [n for n in names if n not in ghosts]
        found, blocker = nearest_below(names, mine, self.recipe.markers, self.recipe._blocked_by)
        return me, found, blocker

    async def _wait_on_children(self, blocking: bool) -> Lease | None:
        """For recipes that wait for any change among the children (a semaphore's leases): each change
        costs one listing, which also sets the watch for the next one."""
        listing = await self._create_and_list(listed=True)
        assert listing is not None
        names = listing[0]
        watch: Watch | None = None
        first = True
        while True:
            contenders, index = await self._locate(names)
            if first:
                self.recipe._warn_foreign(contenders)
                first = False
            if index is None:
                self.node = None
                listing = await self._create_and_list(listed=True)
                assert listing is not None
                names, watch = listing[0], None
                continue
            blocker = self.recipe._blocker(contenders, index)
            del contenders
            if blocker is None:
                return await self._grant()
            if not blocking:
                return None
            if watch is not None:
                # The listing came with this watch: any change since fires it.
                del names
                await watch.wait()
            try:
                names, watch = await self.client.get_children(self.recipe.path, watch=True)
            except (NoNodeError, ConnectionLossError):
                names, watch = list((await self._list())[0]), None

    async def _locate(self, children: Sequence[str]) -> tuple[list[Contender], int | None]:
        """The queue in ``children``, and our node's index in it (None if it is gone); other nodes
        carrying our uuid are deleted and left out (see :meth:`_place`)."""
        contenders = self.recipe._contenders(list(children))
        mine = self.node.rsplit("/", 1)[1] if self.node is not None else None
        index = None
        ghosts = False
        for i, c in enumerate(contenders):
            if c.uuid == self.uuid:
                if c.name == mine:
                    index = i
                else:
                    ghosts = True
        if not ghosts:
            return contenders, index
        for c in contenders:
            if c.uuid == self.uuid and c.name != mine:
                log.warning("lock %s: deleting %s, a second node of one acquire", self.recipe.path, c.name)
                await delete_node(self.client, f"{self.recipe.path}/{c.name}")
        contenders = [c for c in contenders if c.uuid != self.uuid or c.name == mine]
        return contenders, next((i for i, c in enumerate(contenders) if c.name == mine), None)

    async def _list(self) -> Listing:
        while True:
            try:
                [result] = await self.client.pipeline([GetChildren(self.recipe.path, with_stat=True, sort=False)])
            except ConnectionLossError:
                continue
            if isinstance(result, NoNodeError):
                return [], -1, 0
            if isinstance(result, ConnectionLossError):
                continue
            if isinstance(result, BaseException):
                raise result
            names, stat = cast(tuple[list[str], Stat], result)
            return names, stat.cversion, stat.czxid

    async def _create_and_list(self, *, listed: bool) -> Listing | None:
        """Create our node; with ``listed``, list the children in the same round trip (the listing then
        shows every node below ours).  Without, None -- unless a create reply was lost: the listing
        made after recovering our node is returned then."""
        data = self.recipe.identifier.encode()
        sequential = self.recipe.sequential
        listing = [GetChildren(self.recipe.path, with_stat=True, sort=False)] if listed else []
        while True:
            self.create_sent = True
            created, *children = await self.client.pipeline(
                [Create(self.node_prefix, data, ephemeral=True, sequential=sequential), *listing]
            )
            if isinstance(created, NoNodeError):
                await self.recipe._ensure_parent()
                continue
            if isinstance(created, ConnectionLossError) or (not sequential and isinstance(created, NodeExistsError)):
                # A non-sequential name exists already only if an earlier create of ours (whose reply was
                # lost) made it: recovered like a lost reply.
                self.create_lost = True
                if await self._recover_lost_create():
                    self.report.node_queued()
                    return await self._list()
                continue
            if isinstance(created, BaseException):
                raise created
            assert isinstance(created, tuple)
            self.node, stat = created
            self.node_session = stat.ephemeral_owner
            self.czxid = stat.czxid
            self.report.node_queued()
            if not children:
                return None
            [result] = children
            if isinstance(result, ConnectionLossError):
                return await self._list()
            if isinstance(result, BaseException):
                raise result
            names, parent = cast(tuple[list[str], Stat], result)
            return names, parent.cversion, parent.czxid

    async def _recover_lost_create(self) -> bool:
        """After a lost create reply: adopt our node if the server made it in this session.

        The listing comes after a ``sync``: the member we re-attached to has then applied every write
        our session made (a create still on its way through the old member is refused by the leader
        once the session has moved).  The first node carrying our uuid and owned by this session is
        adopted; every other one is deleted.
        """
        while True:
            await self.client.wait_connected()
            try:
                adopted = False
                for path in await uuid_nodes(self.client, self.recipe.path, self.uuid, self.recipe._contenders):
                    stat = await self.client.exists(path)
                    if stat is None:
                        continue
                    if not adopted and stat.ephemeral_owner == self.client.session_id:
                        log.info("lock %s: adopted %s after a lost create reply", self.recipe.path, path)
                        self.node, self.node_session, self.czxid = path, stat.ephemeral_owner, stat.czxid
                        adopted = True
                    else:
                        await delete_node(self.client, path)
                return adopted
            except ConnectionLossError:
                continue

    async def _grant(self) -> Lease:
        client = self.client
        assert self.node is not None
        if self.node_session != client.session_id:
            # A node of a dying older session must not count as ours.
            raise ConnectionLossError(self.node, "lock node belongs to an older session")
        lease = Lease(
            self.recipe,
            self.node,
            self.czxid,
            self.node_session,
            create_uuid=self.uuid if self.create_lost else None,
            context=self.report.context,
        )
        self.report.granted(self.czxid)
        lease.start()
        self.node = None  # the lease owns the node now
        return lease

    async def abandon(self) -> None:
        """Remove whatever this attempt created (the caller shields this)."""
        self.report.abandoned()
        client = self.client
        if self.node is not None:
            node, self.node = self.node, None
            await delete_node(client, node)
            return
        if not self.create_sent:
            return
        # The create may or may not have reached the server: look for our uuid.
        await delete_uuid_nodes(client, self.recipe.path, self.uuid, self.recipe._contenders)


def foreign_warning(path: str, naming: Naming, recipe: str, node: Contender) -> str:
    """The warning for a lock path that holds ``node``, a node of the naming family other than ours."""
    if naming == "curator":
        return (
            f"lock {path} holds {node.name}, which is not a Curator-style node: a default kazoo client "
            f"(which ignores this {recipe}'s Curator-style nodes) may hold it at the same time; give every "
            "zklock user of the path naming='kazoo' (see the README's interoperability matrix)"
        )
    return (
        f"lock {path} holds {node.name}, which is not a kazoo-style node: a Curator client (which cannot "
        f"order this {recipe}'s kazoo-style nodes) may hold it at the same time; give every zklock user of "
        "the path naming='curator' (see the README's interoperability matrix)"
    )


async def uuid_nodes(client: Client, path: str, uuid_: str, contenders: ContenderParser) -> list[str]:
    """Every node under ``path`` carrying ``uuid_``, in queue order, as seen after a ``sync`` of ``path``
    (so that the member we are connected to has applied every write our session made)."""
    try:
        await client.sync(path)
        children = await client.get_children(path)
    except NoNodeError:
        return []
    return [f"{path}/{c.name}" for c in contenders(children) if c.uuid == uuid_]


async def delete_uuid_nodes(client: Client, path: str, uuid_: str, contenders: ContenderParser) -> None:
    """Delete every node carrying ``uuid_`` under ``path`` now, or keep trying in the background while
    the session lives (like :func:`delete_node`)."""

    async def sweep() -> None:
        while not client.state.is_terminal:
            await client.wait_connected()
            try:
                for node in await uuid_nodes(client, path, uuid_, contenders):
                    await delete_node(client, node)
                return
            except ConnectionLossError:
                continue

    if client.state.is_terminal:
        return
    if client.state.is_connected:
        with trio.move_on_after(CLEANUP_TIMEOUT):
            await sweep()
            return
    _spawn(client, sweep, f"zklock cleanup {path}")


def _spawn(client: Client, fn: object, name: str) -> None:
    try:
        client.spawn(fn, name=name)  # type: ignore[arg-type]
    except ZKError:
        pass  # the client is closing: the session's end removes ephemeral nodes anyway


async def delete_node(client: Client, path: str) -> None:
    """Delete a lock node now, or keep trying in the background while the session lives."""

    async def attempt() -> bool:
        try:
            await client.delete(path)
        except NoNodeError:
            pass
        except ConnectionLossError:
            return False
        return True

    if client.state.is_terminal:
        return  # the session is gone, and its ephemeral nodes with it
    if client.state.is_connected:
        with trio.move_on_after(CLEANUP_TIMEOUT):
            if await attempt():
                return

    async def retry() -> None:
        while not client.state.is_terminal:
            await client.wait_connected()
            if await attempt():
                return

    _spawn(client, retry, f"zklock delete {path}")


async def request_revocation(client: Client, node: str) -> bool:
    """Ask the holder of lock node ``node`` to release (writes the revoke marker into its data)."""
    try:
        await client.set_data(node, REVOKE_DATA)
    except NoNodeError:
        return False
    return True
