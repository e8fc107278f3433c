"""Whole-path helpers every application needs: create a path with its parents, delete a subtree, own
an ephemeral node.

They take a :class:`~zkwire.Client` and are also its methods (:meth:`Client.ensure_path`,
:meth:`Client.delete_recursive`, :meth:`Client.ensure_ephemeral`).  They work on the client's view of
paths: under a chroot, ``"/"`` is the chroot, and :func:`ensure_path` also creates the chroot's own nodes
when they are missing (the only way a chrooted client can).

None is atomic: other clients may create or delete nodes meanwhile.  Both converge: a parent deleted
under an :func:`ensure_path` (a container the server removed, say) is created again, and a child created
under a :func:`delete_recursive` is deleted too, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..constants import OpCode
from ..errors import (
    ConnectionLossError,
    InvalidArgumentError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    ZKError,
)
from ..protocol.records import ACL, CreateRequest, Stat
from ..sansio.ops import Create, Delete, GetChildren, check_acl, check_data, create_op

if TYPE_CHECKING:
    from .api import Client

__all__ = ["ensure_path", "ensure_ephemeral", "delete_recursive", "chroot_hint", "MAX_ROUNDS"]

#: How many times a helper starts over when concurrent writers keep changing the tree under it.
MAX_ROUNDS = 20


def _parent(server_path: str) -> str:
    return server_path.rsplit("/", 1)[0] or "/"


async def ensure_path(
    client: Client,
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
    server_path = client._path(path)
    code, mode = create_op(ephemeral=False, sequential=False, container=container, ttl=None)
    acl_t = check_acl(acl)
    body = check_data(data)
    if server_path == "/":
        return False  # the root always exists

    async def create(target: str, payload: bytes) -> bool:
        try:
            await client._call(code, CreateRequest(target, payload, acl_t, mode), target)
        except NodeExistsError:
            return False
        return True

    # Client-side ancestors, shallowest first ("/" is the chroot itself, when there is one).
    ancestors: list[str] = []
    parent = _parent(path)
    while parent != "/":
        ancestors.append(parent)
        parent = _parent(parent)
    if client.chroot and path != "/":
        ancestors.append("/")
    ancestors.reverse()
    for _ in range(MAX_ROUNDS):
        try:
            return await create(server_path, body)
        except NoNodeError:
            pass
        # Some ancestor is missing: create them all and the node in one round trip (the server applies
        # one session's requests in order); those that exist answer NodeExists.
        ops = [Create(a, b"", acl, container=container) for a in ancestors]
        ops.append(Create(path, body, acl, container=container))
        results = await client.pipeline(ops)
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
            chroot_parents: list[str] = []
            parent = _parent(client.chroot)
            while parent != "/":
                chroot_parents.append(parent)
                parent = _parent(parent)
            for target in reversed(chroot_parents):
                try:
                    await create(target, b"")
                except NoNodeError:
                    break  # deleted meanwhile: start over
        # Otherwise an ancestor was deleted meanwhile (a container emptied by someone): again.
    raise NoNodeError(path, f"its parents kept disappearing over {MAX_ROUNDS} attempts")


async def ensure_ephemeral(client: Client, path: str, data: bytes = b"", *, acl: Sequence[ACL] | None = None) -> Stat:
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
    for _ in range(MAX_ROUNDS):
        try:
            _, stat = await client.create_with_stat(path, data, acl=acl, ephemeral=True)
            return stat
        except NoNodeError:
            await ensure_path(client, _parent(path), acl=acl)
            continue
        except (NodeExistsError, ConnectionLossError):
            pass  # someone's node, or a reply lost with the connection: look at what is there
        try:
            found = await client.exists(path)
        except ConnectionLossError:
            continue
        if found is None:
            continue  # gone meanwhile (its session ended): create it again
        if found.ephemeral_owner == client.session_id:
            return found
        owner = "a persistent node" if not found.ephemeral_owner else f"owned by session 0x{found.ephemeral_owner:x}"
        raise NodeExistsError(path, f"{owner}, not by this session 0x{client.session_id:x}")
    raise NoNodeError(path, f"its parents kept disappearing over {MAX_ROUNDS} attempts")


async def delete_recursive(client: Client, path: str, *, batch: int = 500) -> int:
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
    client._path(path)  # validates
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
                results = await client.pipeline([Delete(p) for p in chunk])
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


async def _list_tree(client: Client, path: str, batch: int) -> list[list[str]]:
    """Every node under ``path`` (inclusive), level by level; [] if ``path`` does not exist."""
    levels: list[list[str]] = []
    current = [path]
    first = True
    while current:
        found: list[str] = []
        listed: list[str] = []
        for start in range(0, len(current), batch):
            chunk = current[start : start + batch]
            results = await client.pipeline([GetChildren(p) for p in chunk])
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


def chroot_hint(chroot: str, op: int, path: str | None) -> str | None:
    """What a NoNode error of a chrooted client should add to its message (no round trip needed).

    A create whose parent is the chroot, or any request on the chroot itself (client path ``"/"``),
    fails with NoNode only when the chroot does not exist: the hint says so.  Any other NoNode names the
    server-side path, so the chroot is never hidden.
    """
    if not chroot or path is None:
        return None
    creates = (OpCode.CREATE, OpCode.CREATE2, OpCode.CREATE_CONTAINER, OpCode.CREATE_TTL)
    if path == "/" or (op in creates and _parent(path) == "/"):
        return f"the chroot {chroot} does not exist; create it with ensure_path('/')"
    return f"server path {chroot}{path}, under the chroot {chroot}"


def with_chroot_hint(error: ZKError, chroot: str, op: int) -> ZKError:
    """``error`` itself, or for a NoNode error a copy whose message carries :func:`chroot_hint`."""
    if type(error) is not NoNodeError or error.detail:
        return error
    hint = chroot_hint(chroot, op, error.path)
    if hint is None:
        return error
    return NoNodeError(error.path, hint)
