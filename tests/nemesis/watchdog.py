"""Liveness while the run goes on, through an observer session of the parent's own (not proxied).

- Stall: no grant for longer than the bound (3T by default) plus the fault time in the stall, while at
  least one worker waits in acquire (the rule of ``checker.liveness.check_liveness``, applied live).  A stall is
  logged once per episode as a ``stuck`` record naming the node at the head of the queue: its name,
  its ephemeralOwner session, and whether that session belongs to a live worker and what it does.
- Ghosts: two nodes carrying the same protected uuid at the same time are two nodes for one acquire.
  A persistent recursive watch on each queue follows every creation and deletion as it happens (a
  ghost may live less than a second, if its owner is granted on it and releases); a census of the
  nodes and their owners every second backs it up, and also reports one session owning more nodes
  of one queue than it has contenders (one, unless the workers run several contenders per session)
  for longer than 2T.  Each is logged once as a ``ghost`` record.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

import zkwire
from zklock.naming import Contender, parse_contender, sort_contenders

from .checker import stall_excess
from .fleet import Fleet
from .history import ParentLog

__all__ = ["Watchdog", "Queue", "NodeInfo", "census"]


@dataclass(frozen=True)
class Queue:
    path: str
    markers: tuple[str, ...]
    #: The node at the head is always granted and its owner does nothing else meanwhile (a mutex, a
    #: read/write lock; not a semaphore, whose guard holder waits there for a lease).
    head_holds: bool = True


@dataclass
class NodeInfo:
    path: str
    name: str
    owner: int
    czxid: int
    contender: Contender | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "owner": self.owner, "czxid": self.czxid}


async def census(zk: zkwire.Client, queue: Queue) -> list[NodeInfo]:
    """The queue's nodes in queue order (nodes that vanish while we look are left out)."""
    try:
        children = await zk.get_children(queue.path)
    except zkwire.NoNodeError:
        return []
    order = {c.name: c for c in sort_contenders(children, queue.markers)}
    out = []
    for name in sorted(children, key=lambda n: (order[n].sequence, n) if n in order else (1 << 62, n)):
        stat = await zk.exists(f"{queue.path}/{name}")
        if stat is not None:
            out.append(NodeInfo(f"{queue.path}/{name}", name, stat.ephemeral_owner, stat.czxid, order.get(name)))
    return out


class Watchdog:
    def __init__(
        self,
        fleet: Fleet,
        log: ParentLog,
        queues: Sequence[Queue],
        session_timeout: float,
        fault_windows: Callable[[], list[tuple[float, float]]],
        bound: float | None = None,
        nodes_per_session: int = 1,
    ) -> None:
        self.fleet = fleet
        #: How many nodes one session may own in one queue (its contenders, one node each).
        self.nodes_per_session = nodes_per_session
        self.log = log
        self.queues = list(queues)
        self.T = session_timeout
        self.bound = 3 * session_timeout if bound is None else bound
        self.fault_windows = fault_windows
        self.stuck_episodes: list[dict[str, Any]] = []
        self.ghosts: list[dict[str, Any]] = []
        self._episode_open = False
        self._reported_uuids: set[str] = set()
        self._pairs_seen: dict[tuple[int, str], float] = {}  # (session, queue) with too many nodes -> first seen
        self._reported_pairs: set[tuple[int, str]] = set()
        self._ghost_nodes: set[str] = set()  # names of the nodes of the ghosts reported
        self._head_since: dict[str, tuple[str, float]] = {}  # queue -> (blocking head node, since when)
        self._heads_reported: set[str] = set()
        self.census_errors = 0

    def stall(self, now: float) -> tuple[float, float] | None:
        """(stall start, excess) if workers wait; None otherwise."""
        if self.fleet.waiting_since is None:
            return None
        start = max(self.fleet.last_grant or 0.0, self.fleet.waiting_since)
        return start, stall_excess(start, now, self.fault_windows(), self.bound)

    async def follow(self, zk: zkwire.Client, queue: Queue) -> None:
        """Follow creations and deletions in ``queue`` through a persistent recursive watch."""
        live: dict[str, str] = {}  # node name -> uuid
        while not zk.state.is_terminal:
            try:
                async with zk.add_watch(queue.path, recursive=True) as events:
                    async for ev in events:
                        name = ev.path.rsplit("/", 1)[1] if ev.path else ""
                        c = parse_contender(name, queue.markers)
                        if c is None or not c.uuid:
                            continue
                        if ev.type == zkwire.EventType.NODE_CREATED:
                            twins = [n for n, u in live.items() if u == c.uuid]
                            live[name] = c.uuid
                            if twins and c.uuid not in self._reported_uuids:
                                self._reported_uuids.add(c.uuid)
                                await self._ghost_from_names(zk, queue, [*twins, name], c.uuid)
                        elif ev.type == zkwire.EventType.NODE_DELETED:
                            live.pop(name, None)
            except zkwire.WatchOverflowError:
                live.clear()
            except zkwire.ConnectionLossError:
                with trio.move_on_after(self.T):
                    await zk.wait_connected()
            except zkwire.ZKError:
                return
            await trio.sleep(0.05)

    async def _ghost_from_names(self, zk: zkwire.Client, queue: Queue, names: list[str], uid: str) -> None:
        nodes = []
        for name in names:
            stat = None
            with trio.move_on_after(2):
                try:
                    stat = await zk.exists(f"{queue.path}/{name}")
                except zkwire.ZKError:
                    pass
            owner = stat.ephemeral_owner if stat is not None else 0
            czxid = stat.czxid if stat is not None else 0
            nodes.append(NodeInfo(f"{queue.path}/{name}", name, owner, czxid, parse_contender(name, queue.markers)))
        self._ghost(queue, "same-uuid", nodes, time.monotonic(), f"{len(names)} nodes for one acquire (uuid {uid})")

    async def run(self, zk: zkwire.Client) -> None:
        async with trio.open_nursery() as nursery:
            for q in self.queues:
                nursery.start_soon(self.follow, zk, q)
            await self._watch(zk)

    async def _watch(self, zk: zkwire.Client) -> None:
        next_census = 0.0
        while True:
            now = time.monotonic()
            stall = self.stall(now)
            try:
                if stall is None or stall[1] <= 0:
                    self._episode_open = False
                elif not self._episode_open:
                    await self._report_stuck(zk, stall[0], now)
                    self._episode_open = True
                if now >= next_census:
                    next_census = now + 1.0
                    await self._census(zk)
            except zkwire.ZKError:
                self.census_errors += 1
            await trio.sleep(0.25)

    async def describe_queue(self, zk: zkwire.Client) -> list[dict[str, Any]]:
        out = []
        for q in self.queues:
            with trio.move_on_after(5):
                nodes = await census(zk, q)
                out.append(
                    {
                        "queue": q.path,
                        "nodes": [
                            {**n.to_json(), "owner_desc": self.fleet.describe_session(n.owner)} for n in nodes[:12]
                        ],
                        "length": len(nodes),
                    }
                )
        return out

    async def _report_stuck(self, zk: zkwire.Client, start: float, now: float) -> None:
        queues = await self.describe_queue(zk)
        heads = [
            f"{q['queue']}: head {q['nodes'][0]['path'].rsplit('/', 1)[1]} owned by {q['nodes'][0]['owner_desc']}"
            for q in queues
            if q["nodes"]
        ]
        waiting = sorted(wp.worker for wp in self.fleet.live() if wp.any_in("waiting") and not wp.stopped)
        message = f"no grant for {now - start:.1f} s while workers {waiting} wait; " + (
            "; ".join(heads) if heads else "the queue is empty"
        )
        record = self.log.write("stuck", start=start, detected=now, waiting=waiting, queues=queues, message=message)
        self.stuck_episodes.append(record)
        print(f"nemesis watchdog: STUCK: {message}", flush=True)

    async def _census(self, zk: zkwire.Client) -> None:
        now = time.monotonic()
        for q in self.queues:
            try:
                with trio.move_on_after(2) as scope:
                    nodes = await census(zk, q)
                if scope.cancelled_caught:
                    continue
            except zkwire.ZKError:
                self.census_errors += 1
                continue
            if q.head_holds:
                await self._check_head(zk, q, nodes[0] if nodes else None, now)
            by_uuid: dict[str, list[NodeInfo]] = defaultdict(list)
            by_session: dict[int, list[NodeInfo]] = defaultdict(list)
            for n in nodes:
                if n.contender is not None and n.contender.uuid:
                    by_uuid[n.contender.uuid].append(n)
                by_session[n.owner].append(n)
            for uid, same in by_uuid.items():
                if len(same) > 1 and uid not in self._reported_uuids:
                    self._reported_uuids.add(uid)
                    self._ghost(q, "same-uuid", same, now, f"{len(same)} nodes for one acquire (uuid {uid})")
            for sid, owned in by_session.items():
                key = (sid, q.path)
                if len(owned) <= self.nodes_per_session:
                    self._pairs_seen.pop(key, None)
                    continue
                first = self._pairs_seen.setdefault(key, now)
                if any(n.name in self._ghost_nodes for n in owned):
                    continue  # explained by a ghost already reported
                if now - first > 2 * self.T and key not in self._reported_pairs:
                    self._reported_pairs.add(key)
                    self._ghost(
                        q,
                        "same-session",
                        owned,
                        now,
                        f"session 0x{sid:x} has owned {len(owned)} nodes for {now - first:.1f} s",
                    )

    async def _check_head(self, zk: zkwire.Client, q: Queue, head: NodeInfo | None, now: float) -> None:
        """The head of a mutex or read/write queue is granted at once: a head owned, for longer than the
        bound, by the current session of a live worker that does not hold the lock through that very
        node blocks the queue, whatever faults are going on meanwhile."""
        info = self.fleet.owner_of(head.owner) if head is not None else None
        wp = self.fleet.current.get(info.worker) if info is not None else None
        if head is None or info is None or wp is None or wp.exited or wp.incarnation != info.incarnation:
            self._head_since.pop(q.path, None)
            return
        if not wp.owns_session(head.owner) or wp.holds_node(head.name):
            self._head_since.pop(q.path, None)
            return
        path, since = self._head_since.setdefault(q.path, (head.path, now))
        if path != head.path:
            self._head_since[q.path] = (head.path, now)
            return
        if now - since > self.bound and head.path not in self._heads_reported:
            self._heads_reported.add(head.path)
            queues = await self.describe_queue(zk)
            message = (
                f"{q.path}: head {head.name} has been owned for {now - since:.1f} s by "
                f"{self.fleet.describe_session(head.owner)}, which does not hold the lock through it: "
                "the queue is blocked"
            )
            record = self.log.write("stuck", start=since, detected=now, queues=queues, message=message)
            self.stuck_episodes.append(record)
            print(f"nemesis watchdog: STUCK: {message}", flush=True)

    def _ghost(self, q: Queue, kind: str, nodes: list[NodeInfo], now: float, what: str) -> None:
        self._ghost_nodes.update(n.name for n in nodes)
        owners = {n.owner for n in nodes}
        desc = "; ".join(self.fleet.describe_session(o) for o in owners)
        message = f"ghost ({kind}) in {q.path}: {what}: {[n.name for n in nodes]}; owner {desc}"
        record = self.log.write(
            "ghost",
            kind=kind,
            queue=q.path,
            nodes=[n.to_json() for n in nodes],
            owners=[self.fleet.describe_session(o) for o in owners],
            seen=now,
            message=message,
        )
        self.ghosts.append(record)
        print(f"nemesis watchdog: {message}", flush=True)
