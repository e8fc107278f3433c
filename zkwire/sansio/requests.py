"""Requests built once, without I/O: an op's arguments -> op code, record, server path, watch
registration and the conversion of the reply's body into the caller's result.

Every way the client sends an op (a single call, a pipeline, a multi, a multiRead) builds it with a
:class:`RequestBuilder`, so arguments are checked, paths chrooted and replies converted the same way
everywhere.  Checks raise before anything is sent (:class:`~zkwire.errors.InvalidArgumentError`,
:class:`~zkwire.errors.InvalidPathError`, :class:`~zkwire.errors.DataTooLargeError`).

The builder reads the session's watch registry (a one-shot watch already covered by a persistent one
is kept locally only) but never changes it: the core registers a watch when its request succeeds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from ..constants import AddWatchMode, OpCode, WatcherType
from ..errors import DataTooLargeError, InvalidArgumentError, ServerError, ZKError, error_for_code
from ..protocol.multi import MultiOp, MultiRequest, MultiResponse
from ..protocol.records import (
    ACL,
    AddWatchRequest,
    CheckVersionRequest,
    CheckWatchesRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    ExistsRequest,
    ExistsResponse,
    GetACLRequest,
    GetACLResponse,
    GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    GetEphemeralsRequest,
    GetEphemeralsResponse,
    ReconfigRequest,
    Record,
    RemoveWatchesRequest,
    SetACLRequest,
    SetACLResponse,
    SetDataRequest,
    SetDataResponse,
    Stat,
    SyncRequest,
    SyncResponse,
    WhoAmIResponse,
)
from .ensemble import CONFIG_PATH, EnsembleConfig, parse_config
from .events import WatchRequest
from .handshake import WATCH_FRAME_OVERHEAD
from .ops import (
    Check,
    Create,
    Delete,
    GetChildren,
    GetData,
    ReadOp,
    SetData,
    WriteOp,
    check_acl,
    check_data,
    check_version,
    create_op,
)
from .paths import join_chroot, parent_path, strip_chroot, validate_path
from .watches import WatchKind, WatchRegistry, removed_watch_kinds

__all__ = [
    "Request",
    "RequestBuilder",
    "check_watcher_type",
    "encodable",
    "removed_watch_kinds",
    "sorted_names",
    "child_names",
]

#: The caller's result type of a request.
T = TypeVar("T")
#: Whatever the I/O layer uses as a watcher.
W = TypeVar("W")

MultiResult = str | Stat | None
ReadResult = tuple[bytes, Stat] | list[str] | ZKError


@dataclass(slots=True)
class Request(Generic[T, W]):
    """One request, ready for :meth:`~zkwire.sansio.session.SessionCore.send_request` (not frozen:
    a plain class is cheaper to build on the request path; nothing changes it)."""

    op: int
    record: Record | None
    #: The server path the request is about (errors name it, chroot stripped); None if none.
    path: str | None
    #: The reply's body (None for ops without one) -> the caller's result.  May raise (multi).
    convert: Callable[[Record | None], T]
    #: The watch to register when the request succeeds.
    watch: WatchRequest[W] | None = None


def _nothing(body: Record | None) -> None:
    return None


def _data(body: Record | None) -> tuple[bytes, Stat]:
    assert isinstance(body, GetDataResponse)
    return body.data or b"", body.stat


def _config(body: Record | None) -> EnsembleConfig:
    assert isinstance(body, GetDataResponse)
    return parse_config(body.data or b"", body.stat)


def _set_data_stat(body: Record | None) -> Stat:
    assert isinstance(body, SetDataResponse)
    return body.stat


def _exists_stat(body: Record | None) -> Stat:
    assert isinstance(body, ExistsResponse)
    return body.stat


def _sorted_children(body: Record | None) -> list[str]:
    assert isinstance(body, GetChildrenResponse)
    return sorted_names(body.children)


def _server_order_children(body: Record | None) -> list[str]:
    assert isinstance(body, GetChildrenResponse)
    return child_names(body.children)


def _sorted_children_with_stat(body: Record | None) -> tuple[list[str], Stat]:
    assert isinstance(body, GetChildren2Response)
    return sorted_names(body.children), body.stat


def _server_order_children_with_stat(body: Record | None) -> tuple[list[str], Stat]:
    assert isinstance(body, GetChildren2Response)
    return child_names(body.children), body.stat


def _acl(body: Record | None) -> tuple[list[ACL], Stat]:
    assert isinstance(body, GetACLResponse)
    return list(body.acl or ()), body.stat


def _set_acl_stat(body: Record | None) -> Stat:
    assert isinstance(body, SetACLResponse)
    return body.stat


def _total_number(body: Record | None) -> int:
    assert isinstance(body, GetAllChildrenNumberResponse)
    return body.total_number


def _identities(body: Record | None) -> list[tuple[str | None, str | None]]:
    assert isinstance(body, WhoAmIResponse)
    return [(ci.auth_scheme, ci.user) for ci in body.client_info or ()]


class RequestBuilder(Generic[W]):
    """Builds the requests of one session: ``chroot`` is prefixed to every path, ``watches`` is the
    session's registry (read only), ``max_frame`` bounds the paths a watch may be set on."""

    __slots__ = ("chroot", "max_frame", "watches")

    def __init__(self, chroot: str, watches: WatchRegistry[W], max_frame: int) -> None:
        self.chroot = chroot
        self.watches = watches
        self.max_frame = max_frame

    # ------------------------------------------------------------------ paths and watches

    def server_path(self, path: str, *, sequential: bool = False) -> str:
        """``path`` validated and under the chroot."""
        validate_path(path, sequential=sequential)
        chroot = self.chroot
        if not chroot:
            return path
        if sequential and path == "/":
            return chroot + "/"  # children of the chroot, not siblings of it
        return join_chroot(chroot, path)

    def client_path(self, server_path: str | None) -> str:
        """A path from the server as the application knows it (chroot stripped)."""
        return strip_chroot(self.chroot, server_path or "/")

    def _watch(self, kind: WatchKind, server_path: str, watcher: W) -> WatchRequest[W]:
        """A watch must be re-registrable after a reconnect: its path must fit in a SetWatches frame."""
        limit = self.max_frame - WATCH_FRAME_OVERHEAD
        if len(server_path) * 3 > limit and len(server_path.encode()) > limit:
            raise DataTooLargeError(f"a watch on a path of more than {limit} bytes cannot be re-registered")
        return WatchRequest(kind, server_path, watcher)

    def _one_shot(self, kind: WatchKind, server_path: str, watcher: W | None) -> tuple[bool, WatchRequest[W] | None]:
        """The watch flag to send and the watch to register for an optional one-shot ``watcher``.  The
        flag is left off when a persistent watch already brings the events (see WatchRegistry.covered)."""
        if watcher is None:
            return False, None
        watch = self._watch(kind, server_path, watcher)
        return not self.watches.covered(kind, server_path), watch

    # ------------------------------------------------------------------ writes

    def create(self, op: Create, *, with_stat: bool = False) -> Request[tuple[str, Stat | None], W]:
        """A create (op create, or create2 ``with_stat``; container and TTL nodes have their own ops).
        The result is the created path and, from create2 and the container / TTL ops, its Stat."""
        code, mode = create_op(ephemeral=op.ephemeral, sequential=op.sequential, container=op.container, ttl=op.ttl)
        server_path = self.server_path(op.path, sequential=op.sequential)
        data = check_data(op.data)
        acl = check_acl(op.acl)
        record: Record
        if code == OpCode.CREATE_TTL:
            assert op.ttl is not None
            record = CreateTTLRequest(server_path, data, acl, mode, op.ttl)
        else:
            record = CreateRequest(server_path, data, acl, mode)
            if with_stat and code == OpCode.CREATE:
                code = OpCode.CREATE2
        return Request(code, record, server_path, self._created)

    def create_chroot_ancestors(
        self, acl: Sequence[ACL] | None, *, container: bool
    ) -> list[Request[tuple[str, Stat | None], W]]:
        """Creates of the chroot's own ancestors, shallowest first, empty nodes with ``acl`` (none
        without a chroot, or for a chroot at the top): the only requests named by a server path outside
        the chroot, since no client path can name these nodes.
        :func:`~zkwire.client.nodes.ensure_path` sends them when the chroot's parent is missing."""
        code, mode = create_op(ephemeral=False, sequential=False, container=container, ttl=None)
        acl_t = check_acl(acl)
        ancestors: list[str] = []
        parent = parent_path(self.chroot) if self.chroot else "/"
        while parent != "/":
            ancestors.append(parent)
            parent = parent_path(parent)
        return [Request(code, CreateRequest(a, b"", acl_t, mode), a, self._created) for a in reversed(ancestors)]

    def _created(self, body: Record | None) -> tuple[str, Stat | None]:
        if isinstance(body, Create2Response):
            return self.client_path(body.path), body.stat
        assert isinstance(body, CreateResponse)
        return self.client_path(body.path), None

    def delete(self, op: Delete) -> Request[None, W]:
        server_path = self.server_path(op.path)
        return Request(OpCode.DELETE, DeleteRequest(server_path, check_version(op.version)), server_path, _nothing)

    def set_data(self, op: SetData) -> Request[Stat, W]:
        server_path = self.server_path(op.path)
        record = SetDataRequest(server_path, check_data(op.data), check_version(op.version))
        return Request(OpCode.SET_DATA, record, server_path, _set_data_stat)

    def check(self, op: Check) -> Request[None, W]:
        """A version check (only inside a multi)."""
        server_path = self.server_path(op.path)
        record = CheckVersionRequest(server_path, check_version(op.version))
        return Request(OpCode.CHECK, record, server_path, _nothing)

    def set_acl(self, path: str, acl: Sequence[ACL], version: int) -> Request[Stat, W]:
        server_path = self.server_path(path)
        record = SetACLRequest(server_path, check_acl(acl), check_version(version))
        return Request(OpCode.SET_ACL, record, server_path, _set_acl_stat)

    def write(self, op: WriteOp) -> Request[Any, W]:
        """The request of one write op, as a multi sends it (a Create as op create)."""
        if isinstance(op, Create):
            return self.create(op)
        if isinstance(op, Delete):
            return self.delete(op)
        if isinstance(op, SetData):
            return self.set_data(op)
        if isinstance(op, Check):
            return self.check(op)
        raise InvalidArgumentError(f"not a write op for multi: {op!r}")

    # ------------------------------------------------------------------ reads

    def get_data(self, path: str, watcher: W | None = None) -> Request[tuple[bytes, Stat], W]:
        """Data (``b""`` for null data) and Stat; with ``watcher`` a data watch."""
        server_path = self.server_path(path)
        if watcher is None:  # the common case, kept short
            return Request(OpCode.GET_DATA, GetDataRequest(server_path, False), server_path, _data)
        ask, watch = self._one_shot(WatchKind.DATA, server_path, watcher)
        return Request(OpCode.GET_DATA, GetDataRequest(server_path, ask), server_path, _data, watch)

    def get_config(self, watcher: W | None = None) -> Request[EnsembleConfig, W]:
        """The ensemble's configuration (:data:`~zkwire.sansio.ensemble.CONFIG_PATH`, never under the
        chroot), parsed; with ``watcher`` a data watch on it."""
        ask, watch = self._one_shot(WatchKind.DATA, CONFIG_PATH, watcher)
        return Request(OpCode.GET_DATA, GetDataRequest(CONFIG_PATH, ask), CONFIG_PATH, _config, watch)

    def get_config_data(self, watcher: W | None = None) -> Request[tuple[bytes, Stat], W]:
        """:meth:`get_config` unparsed (the node's bytes and Stat): for a reader that must keep its watch
        even when the text cannot be parsed."""
        ask, watch = self._one_shot(WatchKind.DATA, CONFIG_PATH, watcher)
        return Request(OpCode.GET_DATA, GetDataRequest(CONFIG_PATH, ask), CONFIG_PATH, _data, watch)

    def exists(self, path: str, watcher: W | None = None) -> Request[Stat, W]:
        """The Stat (a missing node is a NoNodeError, for the caller to turn into None); with ``watcher``
        a data watch (the core registers an exist watch instead when the node is missing)."""
        server_path = self.server_path(path)
        ask, watch = self._one_shot(WatchKind.DATA, server_path, watcher)
        return Request(OpCode.EXISTS, ExistsRequest(server_path, ask), server_path, _exists_stat, watch)

    def get_children(self, path: str, watcher: W | None = None, *, sort: bool = True) -> Request[list[str], W]:
        """Child names (sorted unless ``sort`` is false); with ``watcher`` a child watch."""
        server_path = self.server_path(path)
        ask, watch = self._one_shot(WatchKind.CHILD, server_path, watcher)
        convert = _sorted_children if sort else _server_order_children
        return Request(OpCode.GET_CHILDREN, GetChildrenRequest(server_path, ask), server_path, convert, watch)

    def get_children2(
        self, path: str, watcher: W | None = None, *, sort: bool = True
    ) -> Request[tuple[list[str], Stat], W]:
        """Child names and the node's Stat (op getChildren2)."""
        server_path = self.server_path(path)
        ask, watch = self._one_shot(WatchKind.CHILD, server_path, watcher)
        convert = _sorted_children_with_stat if sort else _server_order_children_with_stat
        return Request(OpCode.GET_CHILDREN2, GetChildren2Request(server_path, ask), server_path, convert, watch)

    def get_acl(self, path: str) -> Request[tuple[list[ACL], Stat], W]:
        server_path = self.server_path(path)
        return Request(OpCode.GET_ACL, GetACLRequest(server_path), server_path, _acl)

    def sync(self, path: str) -> Request[str, W]:
        server_path = self.server_path(path)
        return Request(OpCode.SYNC, SyncRequest(server_path), server_path, self._synced)

    def _synced(self, body: Record | None) -> str:
        assert isinstance(body, SyncResponse)
        return self.client_path(body.path)

    def get_ephemerals(self, prefix: str) -> Request[list[str], W]:
        """This session's ephemeral nodes under ``prefix`` (sorted, as the application names them)."""
        server_prefix = self.server_path(prefix) if prefix != "/" or self.chroot else ""
        return Request(OpCode.GET_EPHEMERALS, GetEphemeralsRequest(server_prefix), server_prefix, self._ephemerals)

    def _ephemerals(self, body: Record | None) -> list[str]:
        assert isinstance(body, GetEphemeralsResponse)
        return sorted(self.client_path(p) for p in body.ephemerals or ())

    def get_all_children_number(self, path: str) -> Request[int, W]:
        server_path = self.server_path(path)
        record = GetAllChildrenNumberRequest(server_path)
        return Request(OpCode.GET_ALL_CHILDREN_NUMBER, record, server_path, _total_number)

    def read(self, op: ReadOp) -> Request[Any, W]:
        """The request of one read op (as a pipeline sends it)."""
        if isinstance(op, GetData):
            return self.get_data(op.path)
        if isinstance(op, GetChildren):
            if op.with_stat:
                return self.get_children2(op.path, sort=op.sort)
            return self.get_children(op.path, sort=op.sort)
        raise InvalidArgumentError(f"not a read op: {op!r}")

    def pipelined(self, op: WriteOp | ReadOp) -> Request[Any, W]:
        """The request of one op of a pipeline: a Create as create2 (its result is ``(path, stat)``)."""
        if isinstance(op, Create):
            return self.create(op, with_stat=True)
        if isinstance(op, Delete | SetData):
            return self.write(op)
        if isinstance(op, GetData | GetChildren):
            return self.read(op)
        raise InvalidArgumentError(f"not an op for pipeline: {op!r}")

    # ------------------------------------------------------------------ transactions

    def multi(self, ops: Iterable[WriteOp]) -> Request[list[MultiResult], W] | None:
        """An atomic multi of write ops (None for no ops: nothing to send).  Its conversion raises the
        first failing op's error, with ``error.results`` holding every op's outcome."""
        subs: list[MultiOp] = []
        paths: list[str | None] = []
        for op in ops:
            if not isinstance(op, Create | Delete | SetData | Check):
                raise InvalidArgumentError(f"not a write op for multi: {op!r}")
            sub = self.write(op)
            assert sub.record is not None  # every write op has a record
            subs.append(MultiOp(sub.op, sub.record))
            paths.append(sub.path)
        if not subs:
            return None
        record = MultiRequest(tuple(subs))

        def results(body: Record | None) -> list[MultiResult]:
            return self._multi_results(body, paths)

        return Request(OpCode.MULTI, record, None, results)

    def _multi_results(self, body: Record | None, paths: list[str | None]) -> list[MultiResult]:
        assert isinstance(body, MultiResponse)
        results: list[MultiResult] = []
        failure: ServerError | None = None
        outcomes: list[object] = []
        for path, (rtype, err, rbody) in zip(paths, body.results, strict=True):
            if rtype == OpCode.ERROR:
                error = error_for_code(err, self.client_path(path)) if err else None
                outcomes.append(error)
                if error is not None and failure is None and err != -2:
                    failure = error
                results.append(None)
                continue
            value: MultiResult = None
            if isinstance(rbody, CreateResponse | Create2Response):
                value = self.client_path(rbody.path)
            elif isinstance(rbody, SetDataResponse):
                value = rbody.stat
            results.append(value)
            outcomes.append(value)
        if failure is None:
            failure = next((o for o in outcomes if isinstance(o, ServerError)), None)
        if failure is not None:
            failure.results = outcomes
            raise failure
        return results

    def multi_read(self, ops: Iterable[ReadOp]) -> Request[list[ReadResult], W] | None:
        """Several reads in one request (None for no ops).  Each result is ``(data, stat)``, the sorted
        names, or the op's error (not raised)."""
        subs: list[MultiOp] = []
        paths: list[str] = []
        for op in ops:
            if isinstance(op, GetData):
                path = self.server_path(op.path)
                subs.append(MultiOp(OpCode.GET_DATA, GetDataRequest(path, False)))
            elif isinstance(op, GetChildren):
                path = self.server_path(op.path)
                subs.append(MultiOp(OpCode.GET_CHILDREN, GetChildrenRequest(path, False)))
            else:
                raise InvalidArgumentError(f"not a read op for multi_read: {op!r}")
            paths.append(path)
        if not subs:
            return None

        def results(body: Record | None) -> list[ReadResult]:
            assert isinstance(body, MultiResponse)
            out: list[ReadResult] = []
            for path, (rtype, err, rbody) in zip(paths, body.results, strict=True):
                if rtype == OpCode.ERROR:
                    out.append(error_for_code(err, self.client_path(path)))
                elif isinstance(rbody, GetDataResponse):
                    out.append(_data(rbody))
                elif isinstance(rbody, GetChildrenResponse):
                    out.append(sorted_names(rbody.children))
            return out

        return Request(OpCode.MULTI_READ, MultiRequest(tuple(subs)), None, results)

    # ------------------------------------------------------------------ watches and administration

    def add_watch(self, path: str, watcher: W, *, recursive: bool) -> Request[None, W]:
        """A persistent watch (addWatch), recursive or not, registered as ``watcher``."""
        server_path = self.server_path(path)
        kind = WatchKind.RECURSIVE if recursive else WatchKind.PERSISTENT
        mode = AddWatchMode.PERSISTENT_RECURSIVE if recursive else AddWatchMode.PERSISTENT
        watch = self._watch(kind, server_path, watcher)

        def added(body: Record | None) -> None:
            if isinstance(body, ErrorResponse) and body.err:
                raise error_for_code(body.err, path)

        return Request(OpCode.ADD_WATCH, AddWatchRequest(server_path, mode), server_path, added, watch)

    def check_watches(self, path: str, watcher_type: object) -> Request[None, W]:
        checked = check_watcher_type(watcher_type)
        server_path = self.server_path(path)
        record = CheckWatchesRequest(server_path, checked)
        return Request(OpCode.CHECK_WATCHES, record, server_path, _nothing)

    def remove_watches(self, path: str, watcher_type: object) -> Request[None, W]:
        checked = check_watcher_type(watcher_type)
        server_path = self.server_path(path)
        record = RemoveWatchesRequest(server_path, checked)
        return Request(OpCode.REMOVE_WATCHES, record, server_path, _nothing)

    def reconfig(
        self, joining: str | None, leaving: str | None, members: str | None, from_config: int
    ) -> Request[EnsembleConfig, W]:
        """A reconfig request: ``joining``, ``leaving``, ``members`` as the server takes them (comma
        separated member lines, ids, member lines; None: left out); the answer is the new configuration."""
        for name, value in (("joining", joining), ("leaving", leaving), ("members", members)):
            if value is not None and (not isinstance(value, str) or not encodable(value)):
                raise InvalidArgumentError(
                    f"{name} must be a str (UTF-8 encodable) or None, not {type(value).__name__}"
                )
        if (
            isinstance(from_config, bool)
            or not isinstance(from_config, int)
            or not -(1 << 63) <= from_config < (1 << 63)
        ):
            raise InvalidArgumentError(f"from_config must be an int64 config version (-1: any), not {from_config!r}")
        return Request(OpCode.RECONFIG, ReconfigRequest(joining, leaving, members, from_config), None, _config)

    def who_am_i(self) -> Request[list[tuple[str | None, str | None]], W]:
        return Request(OpCode.WHO_AM_I, None, None, _identities)


def check_watcher_type(value: object) -> WatcherType:
    """``value`` as a :class:`~zkwire.constants.WatcherType`, or a clear InvalidArgumentError."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return WatcherType(value)
        except ValueError:
            pass
    names = ", ".join(f"{w.name} ({w.value})" for w in WatcherType)
    raise InvalidArgumentError(f"watcher_type must be a WatcherType: {names}; not {value!r}")


def encodable(text: str) -> bool:
    """Whether ``text`` can be sent (UTF-8 encodable: no lone surrogates)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def sorted_names(names: Sequence[str | None] | None) -> list[str]:
    """Child names from a reply, sorted (a null entry, which no server sends, is dropped).

    A list (what a decoded reply holds) is sorted in place and returned, not copied: the reply is read
    once.  Sorting also finds a null entry (it cannot be compared), so no separate scan is needed.
    """
    if not names:
        return []
    out = names if type(names) is list else list(names)
    try:
        out.sort()
    except TypeError:
        out = [c for c in out if c is not None]
        out.sort()
    if len(out) == 1 and out[0] is None:
        return []
    return cast("list[str]", out)


def child_names(names: Sequence[str | None] | None) -> list[str]:
    """Child names from a reply, in the server's order (a null entry, which no server sends, is dropped).

    A list (what a decoded reply holds) is returned as it is, not copied: the reply is read once.
    """
    if not names:
        return []
    if not all(names):  # a null (or an empty name, kept): all() is a cheaper scan than ``None in``
        return [c for c in names if c is not None]
    return cast("list[str]", names if type(names) is list else list(names))
