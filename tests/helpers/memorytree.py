"""An in-memory stand-in for one zkwire session, for server-free tests of the lock recipes' own logic.

:class:`MemoryClient` keeps a tree of znodes and answers the handful of :class:`zkwire.Client` calls the
recipes of :mod:`zklock` make (``pipeline`` of Create / GetChildren, ``get_data`` with a watch,
``get_children``, ``create``, ``ensure_path``, ``delete``, ``exists``, ``sync``, state listeners and
``spawn``), each
after a checkpoint, so that other tasks run between a request and its reply.  It counts the requests
by kind.  It is deliberately simple: one session, no connection loss, no ACLs, no containers reaped.
What it shows is the recipes' logic (queue order, who watches whom, how many requests a handoff
costs); what the server does is tested against the real server.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import trio

from zkwire import Create, EventType, GetChildren, NodeExistsError, NoNodeError, SessionState, Stat, WatchedEvent

SESSION = 0x5E55


@dataclass
class _Node:
    data: bytes
    czxid: int
    owner: int
    cversion: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


class MemoryWatch:
    """A one-shot watch on a node's data or children."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fired = trio.Event()
        self._event: WatchedEvent | None = None

    def fire(self, type_: EventType) -> None:
        if self._event is None:
            self._event = WatchedEvent(type_, self.path)
            self._fired.set()

    async def wait(self) -> WatchedEvent:
        await self._fired.wait()
        assert self._event is not None
        return self._event


class MemoryClient:
    """One session over an in-memory tree (see the module's docstring)."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self.root = _Node(b"", 0, 0)
        self.zxid = 0
        self.state = SessionState.CONNECTED
        self.session_id = SESSION
        self.requests: Counter[str] = Counter()
        self._data_watches: dict[str, list[MemoryWatch]] = {}
        self._child_watches: dict[str, list[MemoryWatch]] = {}
        self._listeners: list[Callable[[SessionState], None]] = []
        #: No observers here: the recipes report no events (zkwire.Client.observed).
        self.observed = False

    # ------------------------------------------------------------------ the tree

    def _find(self, path: str) -> _Node | None:
        node = self.root
        for part in path.strip("/").split("/"):
            if not part:
                continue
            child = node.children.get(part)
            if child is None:
                return None
            node = child
        return node

    def _stat(self, node: _Node) -> Stat:
        return Stat(
            node.czxid, node.czxid, 0, 0, 0, node.cversion, 0, node.owner, len(node.data), len(node.children), 0
        )

    def _create(self, op: Create) -> tuple[str, Stat]:
        parent_path, _, name = op.path.rpartition("/")
        parent = self._find(parent_path or "/")
        if parent is None:
            raise NoNodeError(op.path)
        if op.sequential:
            name = f"{name}{parent.cversion:010d}"
        if name in parent.children:
            raise NodeExistsError(op.path)
        self.zxid += 1
        node = parent.children[name] = _Node(op.data, self.zxid, self.session_id if op.ephemeral else 0)
        parent.cversion += 1
        path = f"{parent_path}/{name}"
        self._fire(self._child_watches, parent_path or "/", EventType.NODE_CHILDREN_CHANGED)
        return path, self._stat(node)

    def _list(self, op: GetChildren) -> tuple[list[str], Stat]:
        node = self._find(op.path)
        if node is None:
            raise NoNodeError(op.path)
        return list(node.children), self._stat(node)

    def _fire(self, table: dict[str, list[MemoryWatch]], path: str, type_: EventType) -> None:
        for w in table.pop(path, []):
            w.fire(type_)

    def remove(self, path: str) -> None:
        """Delete ``path`` as another party would (no request counted)."""
        parent_path, _, name = path.rpartition("/")
        parent = self._find(parent_path or "/")
        if parent is None or name not in parent.children:
            raise NoNodeError(path)
        if parent.children[name].children:
            raise NodeExistsError(path)
        del parent.children[name]
        parent.cversion += 1
        self._fire(self._data_watches, path, EventType.NODE_DELETED)
        self._fire(self._child_watches, parent_path or "/", EventType.NODE_CHILDREN_CHANGED)

    def children(self, path: str) -> list[str]:
        node = self._find(path)
        return [] if node is None else list(node.children)

    # ------------------------------------------------------------------ what the recipes call

    async def pipeline(self, ops: Sequence[object]) -> list[object]:
        await trio.lowlevel.checkpoint()
        out: list[object] = []
        for op in ops:
            self.requests[type(op).__name__] += 1
            try:
                if isinstance(op, Create):
                    out.append(self._create(op))
                elif isinstance(op, GetChildren):
                    out.append(self._list(op))
                else:
                    raise AssertionError(f"not modelled: {op!r}")
            except (NoNodeError, NodeExistsError) as e:
                out.append(e)
        return out

    async def create(self, path: str, data: bytes = b"", *, container: bool = False, **_: object) -> str:
        [result] = await self.pipeline([Create(path, data)])
        if isinstance(result, Exception):
            raise result
        assert isinstance(result, tuple)
        return str(result[0])

    async def ensure_path(self, path: str, *, container: bool = False, data: bytes = b"") -> bool:
        """The requests of :meth:`zkwire.Client.ensure_path`: a create of ``path``, and when a parent is
        missing, one pipeline creating its ancestors and it."""
        try:
            await self.create(path, data, container=container)
            return True
        except NodeExistsError:
            return False
        except NoNodeError:
            pass
        parts = path.strip("/").split("/")
        ops = [Create("/" + "/".join(parts[:depth])) for depth in range(1, len(parts))]
        results = await self.pipeline([*ops, Create(path, data)])
        return not isinstance(results[-1], Exception)

    async def get_data(self, path: str, watch: bool = False) -> tuple[bytes, Stat, MemoryWatch]:
        await trio.lowlevel.checkpoint()
        self.requests["GetData"] += 1
        node = self._find(path)
        if node is None:
            raise NoNodeError(path)
        w = MemoryWatch(path)
        if watch:
            self._data_watches.setdefault(path, []).append(w)
        return node.data, self._stat(node), w

    async def get_children(self, path: str, watch: bool = False) -> tuple[list[str], MemoryWatch] | list[str]:
        await trio.lowlevel.checkpoint()
        self.requests["GetChildren"] += 1
        names, _ = self._list(GetChildren(path))
        if not watch:
            return names
        w = MemoryWatch(path)
        self._child_watches.setdefault(path, []).append(w)
        return names, w

    async def delete(self, path: str, version: int = -1) -> None:
        await trio.lowlevel.checkpoint()
        self.requests["Delete"] += 1
        self.remove(path)

    async def exists(self, path: str) -> Stat | None:
        await trio.lowlevel.checkpoint()
        self.requests["Exists"] += 1
        node = self._find(path)
        return None if node is None else self._stat(node)

    async def sync(self, path: str) -> None:
        await trio.lowlevel.checkpoint()

    async def wait_connected(self) -> None:
        await trio.lowlevel.checkpoint()

    def add_state_listener(self, fn: Callable[[SessionState], None]) -> None:
        self._listeners.append(fn)

    def remove_state_listener(self, fn: Callable[[SessionState], None]) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def spawn(self, fn: Callable[[], Awaitable[object]], name: str | None = None) -> None:
        self._nursery.start_soon(fn, name=name)
