"""The checker's model of a run: its configuration, what the parent found at the end, a finding, and the holds
built from the records (with the pauses and process ends they are cut by).  Terms: the package docstring."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..history import Record

EXCLUSIVE_ROLES = frozenset({"mutex", "write"})


@dataclass(frozen=True)
class CheckConfig:
    recipe: str  #: mutex, rwlock or semaphore
    session_timeout: float
    max_leases: int = 1
    pause_grace: float = 1.0
    stall_bound: float | None = None  #: default 3 x session_timeout

    @property
    def bound(self) -> float:
        return 3 * self.session_timeout if self.stall_bound is None else self.stall_bound

    @property
    def min_expiry(self) -> float:
        """The earliest a frozen client's session can expire after the freeze began."""
        return max(0.0, 2 * self.session_timeout / 3 - 0.25)


@dataclass
class FinalState:
    """What the parent found after the workers stopped (None: not measured)."""

    counter_value: int | None = None
    counter_version: int | None = None
    #: Lock nodes seen right after shutdown whose owner session the worker closed while connected.
    closed_session_nodes: list[dict[str, Any]] = field(default_factory=list)
    #: Lock nodes still there once every session had time to end.
    leftover_nodes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Finding:
    check: str  #: overlap, token, counter, liveness, ghost, orphan, excused
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "message": self.message, **self.data}


@dataclass
class Hold:
    worker: int
    pid: int
    incarnation: int
    cycle: int
    session: int
    role: str
    grant_t: float
    token: int
    node: str
    born_lost: bool = False
    attempt_t: float | None = None
    release_t: float | None = None
    lost_t: float | None = None
    error_t: float | None = None
    cut_t: float | None = None  #: the process was killed or exited while holding
    lost_exc: str | None = None
    lost_via: str | None = None
    outcome: str | None = None
    grant_lb: float = 0.0  #: earliest moment the grant may have been observed (see (b))
    contender: int | None = None  #: its contender in the worker, when the worker runs several

    @property
    def key(self) -> str:
        who = f"w{self.worker}.{self.incarnation}" + ("" if self.contender is None else f"/c{self.contender}")
        return f"{who}#{self.cycle}"

    @property
    def end(self) -> float:
        ends = [t for t in (self.release_t, self.lost_t, self.error_t, self.cut_t) if t is not None]
        return min(ends) if ends else math.inf

    @property
    def ended_by(self) -> str:
        end = self.end
        for name, t in (("release", self.release_t), ("lost", self.lost_t), ("error", self.error_t)):
            if t is not None and t == end:
                return name
        return "killed" if self.cut_t is not None else "open"

    @property
    def exclusive(self) -> bool:
        return self.role in EXCLUSIVE_ROLES

    def describe(self) -> str:
        return f"{self.key} pid {self.pid} session 0x{self.session:x} {self.role} token {self.token} {self.node}"


# ------------------------------------------------------------------------------------------ parsing


def pause_windows(parent: Sequence[Record]) -> dict[int, list[tuple[float, float]]]:
    """SIGSTOP..SIGCONT windows per pid (a stop never continued lasts until the process died)."""
    out: dict[int, list[tuple[float, float]]] = defaultdict(list)
    open_: dict[int, float] = {}
    for r in parent:
        if r["ev"] == "sigstop":
            open_.setdefault(r["pid"], r["t"])
        elif r["ev"] in ("sigcont", "kill", "exit") and r.get("pid") in open_:
            out[r["pid"]].append((open_.pop(r["pid"]), r["t"]))
    for pid, t in open_.items():
        out[pid].append((t, math.inf))
    return dict(out)


def process_ends(parent: Sequence[Record]) -> dict[int, float]:
    """pid -> the first moment the parent killed it or saw it gone."""
    ends: dict[int, float] = {}
    for r in parent:
        if r["ev"] in ("kill", "exit") and "pid" in r:
            ends.setdefault(r["pid"], r["t"])
    return ends


def build_holds(workers: Sequence[Record], parent: Sequence[Record]) -> list[Hold]:
    """Assemble holds from the worker records (sorted by time) and the parent's kill/exit/pause records."""
    holds: dict[tuple[int, int, int, int], Hold] = {}
    attempts: dict[tuple[int, int, int, int], float] = {}
    for r in workers:
        ev = r["ev"]
        if "cycle" not in r:
            continue
        key = (r["w"], r["inc"], r.get("c", -1), r["cycle"])
        if ev == "attempt":
            attempts[key] = r["t"]
        elif ev == "grant":
            holds[key] = Hold(
                worker=r["w"],
                pid=r["pid"],
                incarnation=r["inc"],
                cycle=r["cycle"],
                session=r.get("sid", 0),
                role=r["role"],
                grant_t=r["t"],
                token=r["token"],
                node=r["node"],
                born_lost=bool(r.get("lost")),
                attempt_t=attempts.get(key),
                contender=r.get("c"),
            )
        elif key in holds:
            h = holds[key]
            if ev == "release" and h.release_t is None:
                h.release_t = r["t"]
            elif ev == "lost" and h.lost_t is None:
                h.lost_t = r["t"]
                h.lost_exc = r.get("exc")
                h.lost_via = r.get("via")
            elif ev == "body_exc":
                h.lost_exc = r.get("exc")
            elif ev == "body_error" and h.error_t is None:
                h.error_t = r["t"]
            elif ev == "outcome":
                h.outcome = r.get("exc")
    ends = process_ends(parent)
    pauses = pause_windows(parent)
    out = sorted(holds.values(), key=lambda h: h.grant_t)
    for h in out:
        if h.end == math.inf and h.pid in ends:
            h.cut_t = max(ends[h.pid], h.grant_t)
        h.grant_lb = h.grant_t
        lo = h.attempt_t if h.attempt_t is not None else -math.inf
        for s, _c in pauses.get(h.pid, ()):
            if lo < s < h.grant_t:
                h.grant_lb = min(h.grant_lb, s)
    return out
