"""Whole-path helpers every application needs: create a path with its parents, delete a subtree, own
an ephemeral node.

They take a :class:`~zkwire.Client` and are also its methods (:meth:`Client.ensure_path`,
:meth:`Client.delete_recursive`, :meth:`Client.ensure_ephemeral`, which delegate here).  Like the client's
ops they build every request with the client's :class:`~zkwire.sansio.requests.RequestBuilder` and send
it by the client's one send path (:class:`~zkwire.client.handle.SessionHandle`, the client's base, is
all they need: so this module does not import the op API that delegates to it).  They work on the client's view of
paths: under a chroot, ``"/"`` is the chroot, and :func:`ensure_path` also creates the chroot's own nodes
when they are missing (the only way a chrooted client can).

None is atomic: other clients may create or delete nodes meanwhile.  Both converge: a parent deleted
under an :func:`ensure_path` (a container the server removed, say) is created again, and a child created
under a :func:`delete_recursive` is deleted too, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import (
    ConnectionLossError,
    InvalidArgumentError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from ..protocol.records import ACL, Stat
from ..sansio.ops import Create, Delete, GetChildren
from ..sansio.paths import parent_path
from ..sansio.requests import Request
from .handle import SessionHandle
from .watchers import Watcher

__all__ = ["ensure_path", "ensure_ephemeral", "delete_recursive", "MAX_ROUNDS"]

#: How many times a helper starts over when concurrent writers keep changing the tree under it.
MAX_ROUNDS = 20


async def ensure_path(
    client: SessionHandle,
    path: str,
    *,
    container: bool = False,
    data: bytes = b"",
    acl: Sequence[ACL] | None = None,
) -> bool:
    """Make sure ``path`` exists, creating it and every missing parent.

    Costs one round trip when the parent already exists (the node is created, or found to exist), two
    when ancestors are missing (they are all created in one pipelined burst).  Nodes this call creates
    get ``acl`` (default open) and no data, except ``path`` itself, which gets ``data``; an existing node
    is left as it is.  With ``container=True`` every node it creates is a container node (the server
    deletes a container once its last child is gone: use it for parents that exist only to hold
    children, like lock paths).  Under a chroot, the chroot's nodes are created too when missing.

    Returns True if this call created ``path``, False if it existed already.

    Raises:
        InvalidPathError: ``path`` is not a valid znode path.
        NoAuthError: an ACL forbids creating a missing node.
        NoChildrenForEphemeralsError: an existing ancestor is ephemeral.
        NoNodeError: the tree kept changing under the call for :data:`MAX_ROUNDS` attempts.
        ConnectionLossError: the connection broke during a request (calling again is safe: the call
            is idempotent).
        SessionExpiredError, ClientClosedError: the session has ended.
    """
    request = client._requests.create(Create(path, data, acl, container=container))  # checks everything
    if request.path == "/":
        return False  # the root always exists

    async def create(request: Request[tuple[str, Stat | None], Watcher]) -> bool:
        try:
            await client._send(request)
        except NodeExistsError:
            return False
        return True

    # Client-side ancestors, shallowest first ("/" is the chroot itself, when there is one).
    ancestors: list[str] = []
    parent = parent_path(path)
    while parent != "/":
        ancestors.append(parent)
        parent = parent_path(parent)
    if client.chroot and path != "/":
        ancestors.append("/")
    ancestors.reverse()
    for _ in range(MAX_ROUNDS):
        try:
            return await create(request)
        except NoNodeError:
            pass
        # Some ancestor is missing: create them all and the node in one round trip (the server applies
        # one session's requests in order); those that exist answer NodeExists.
        ops = [Create(a, b"", acl, container=container) for a in ancestors]
        ops.append(Create(path, data, acl, container=container))
        results = await client._pipeline(ops)
        outcome = results[-1]
        if not isinstance(outcome, BaseException):
            return True
        if isinstance(outcome, NodeExistsError):
            return False
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, NodeExistsError | NoNodeError):
                raise result
        if client.chroot and isinstance(results[0], NoNodeError):
            # The chroot's own parents are missing: only server paths can name them.
            for ancestor in client._requests.create_chroot_ancestors(acl, container=container):
                try:
                    await create(ancestor)
                except NoNodeError:
                    break  # deleted meanwhile: start over
        # Otherwise an ancestor was deleted meanwhile (a container emptied by someone): again.
    raise NoNodeError(path, f"its parents kept disappearing over {MAX_ROUNDS} attempts")


async def ensure_ephemeral(
    client: SessionHandle, path: str, data: bytes = b"", *, acl: Sequence[ACL] | None = None
) -> Stat:
    """Make sure this session owns an ephemeral node at ``path`` (a registration); returns its Stat.

    Missing parents are created (persistent, as :func:`ensure_path` does).  A create whose reply was
    lost with the connection is not an error: the node found afterwards is this session's own when its
    ``ephemeral_owner`` is this session, and is then kept as it is.  A node of another session is never
    taken over.  With :func:`zkwire.sessions`, a node left by an earlier session of the stream that the
    client had to give up on is removed before the next session is handed out, so calling this again
    in each new session is enough to keep a registration.

    Raises:
        NodeExistsError: another session owns the node, or it is not ephemeral (the message says which).
        NoChildrenForEphemeralsError: a parent is ephemeral.
        NoAuthError: an ACL forbids creating the node or a parent.
        InvalidPathError, InvalidArgumentError, DataTooLargeError: bad input (nothing is sent).
        NoNodeError: the tree kept changing under the call for :data:`MAX_ROUNDS` attempts.
        SessionExpiredError, AuthFailedError, ClientClosedError: the session has ended.
    """
    create = client._requests.create(Create(path, data, acl, ephemeral=True), with_stat=True)
    look = client._requests.exists(path)
    for _ in range(MAX_ROUNDS):
        try:
            _, stat = await client._send(create)
            assert stat is not None  # create2 answers with the Stat
            return stat
        except NoNodeError:
            await ensure_path(client, parent_path(path), acl=acl)
            continue
        except (NodeExistsError, ConnectionLossError):
            pass  # someone's node, or a reply lost with the connection: look at what is there
        try:
            found = await client._send(look)
        except NoNodeError:
            continue  # gone meanwhile (its session ended): create it again
        except ConnectionLossError:
            continue
        if found.ephemeral_owner == client.session_id:
            return found
        owner = "a persistent node" if not found.ephemeral_owner else f"owned by session 0x{found.ephemeral_owner:x}"
        raise NodeExistsError(path, f"{owner}, not by this session 0x{client.session_id:x}")
    raise NoNodeError(path, f"its parents kept disappearing over {MAX_ROUNDS} attempts")


async def delete_recursive(client: SessionHandle, path: str, *, batch: int = 500) -> int:
    """Delete ``path`` and everything under it; returns how many nodes this call deleted.

    The tree is listed level by level and deleted deepest first, ``batch`` requests per round trip
    (pipelined).  A node that is already gone is fine; a child created meanwhile is found and deleted on
    the next round.  A missing ``path`` deletes nothing and returns 0.  ``"/"`` is refused unless the
    client has a chroot (then it means the chroot itself).

    Raises:
        InvalidPathError: ``path`` is not a valid znode path.
        InvalidArgumentError: ``path`` is ``"/"`` on a client without a chroot, or ``batch`` < 1.
        NotEmptyError: other clients kept adding children for :data:`MAX_ROUNDS` rounds.
        NoAuthError: an ACL forbids listing or deleting a node.
        ConnectionLossError: the connection broke during a request (calling again is safe).
        SessionExpiredError, ClientClosedError: the session has ended.
    """
    client._requests.server_path(path)  # validates
    if path == "/" and not client.chroot:
        raise InvalidArgumentError("delete_recursive: refusing to delete everything under /")
    if batch < 1:
        raise InvalidArgumentError(f"batch must be at least 1, not {batch!r}")
    deleted = 0
    for _ in range(MAX_ROUNDS):
        levels = await _list_tree(client, path, batch)
        if not levels:
            return deleted
        not_empty = False
        for level in reversed(levels):
            for start in range(0, len(level), batch):
                chunk = level[start : start + batch]
                results = await client._pipeline([Delete(p) for p in chunk])
                for result in results:
                    if result is None:
                        deleted += 1
                    elif isinstance(result, NotEmptyError):
                        not_empty = True
                    elif not isinstance(result, NoNodeError):
                        assert isinstance(result, BaseException)
                        raise result
            if not_empty:
                break  # a child appeared somewhere below: list again
        if not not_empty:
            return deleted
    raise NotEmptyError(path, f"children kept appearing over {MAX_ROUNDS} rounds")


async def _list_tree(client: SessionHandle, path: str, batch: int) -> list[list[str]]:
    """Every node under ``path`` (inclusive), level by level; [] if ``path`` does not exist."""
    levels: list[list[str]] = []
    current = [path]
    first = True
    while current:
        found: list[str] = []
        listed: list[str] = []
        for start in range(0, len(current), batch):
            chunk = current[start : start + batch]
            results = await client._pipeline([GetChildren(p) for p in chunk])
            for parent, result in zip(chunk, results, strict=True):
                if isinstance(result, NoNodeError):
                    continue  # gone meanwhile
                if isinstance(result, BaseException):
                    raise result
                assert isinstance(result, list)
                listed.append(parent)
                prefix = "" if parent == "/" else parent
                found.extend(f"{prefix}/{name}" for name in result)
        if first and not listed:
            return []
        first = False
        levels.append(listed)
        current = found
    return levels
