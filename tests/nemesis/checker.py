"""The verdict over a run's histories: pure functions of the records, no I/O.

Terms.  A *hold* is one grant of the lock to one worker, from its ``grant`` record to its *end*: the
earliest of its ``release`` record (written before the node is deleted), its ``lost`` record (the
worker saw the loss), its ``body_error`` record, and the moment the parent killed the process or saw
it exit (``kill`` / ``exit``).  A hold's interval ``[grant, end]`` is therefore inside the time the
worker could believe it held the lock; every recorded time is a ``time.monotonic()`` reading.

(a) Unsignalled overlaps.  Exclusive holds must not overlap: for a mutex every pair, for a read/write
    lock every pair in which one side writes; for a semaphore no more than ``max_leases`` holds at any
    instant.  One exception, which is inherent and reported apart ("excused"): a process stopped by
    SIGSTOP cannot notice anything, so while a holder is frozen for longer than its session can live,
    its session may expire and another worker be granted.  The excused window of such a pause is
    ``[stop + 2T/3 - 0.25 s, cont + grace]`` (T: the session timeout; the server may expire a session
    2T/3 after the client's last ping at the earliest, as the client pings after T/3 of silence; grace:
    the time the resumed process needs to run its overdue timers).  A hold's part inside an excused
    window of its own process does not count; every other overlap is reported with its length.

(b) Fencing-token order.  The rule: if hold H ended before hold G was granted, then G's token is
    greater than H's (for a read/write lock: unless both are reads; tokens are the lock node's czxid).
    Why it is sound: suppose token(G) < token(H), so G's node was created first.  The recipes grant a
    writer (or a mutex holder) only when every older node is gone, and a reader only when the nearest
    older writer -- which itself waited for every node before it -- is gone; so H, younger than G, was
    granted only after G's node had been deleted.  Then G observed its grant (at ``grant``, after H's
    end, hence after H's grant) for a node that no longer existed: G was handed a lock it did not hold,
    and a resource fenced with H's token would have seen G's older token afterwards.  A correct lock
    never does that (its lease is marked lost at once when the session is not connected: such grants,
    ``lost`` at hand-over, are left out).  The grant time used is the ``grant`` record, or the moment
    the process was stopped if a SIGSTOP fell between the ``attempt`` and the ``grant`` records (the
    grant may have been seen before the pause and written after it).  For a semaphore, whose leases
    are held concurrently, the comparison point is G's ``attempt`` record instead (a lease node
    created after H ended must carry a greater czxid): weaker, but sound without any ordering between
    leases.  Tokens must also be unique across grants.

(c) The counter.  Each worker, holding the lock, reads the counter and writes value+1 with the version
    it read.  Starting from "0" at version 0, every applied write leaves value == version.  Checked:
    every acknowledged write (``inc_ok``) has value == version, no two share a version, real-time order
    holds (a write whose read was sent after another write was acknowledged must produce a greater
    value), the final value equals the final version, and the final version equals the acknowledged
    writes plus the unacknowledged ones that were applied (a version no acknowledged write accounts for
    must be explained by a write attempt of unknown outcome -- connection loss, expiry, cancellation,
    a killed process -- that expected the version before it; anything else is a phantom write).

(d) Liveness.  A stall is a time span with no grant while at least one worker waits in acquire.  Its
    length minus the fault time inside it must stay below ``stall_bound`` (default 3T); the watchdog
    applies the same rule during the run and names the node at the head of the queue.

(e) Orphans: lock nodes still present after every worker shut down cleanly and the sessions of killed
    workers had time to expire.

Several contenders per worker.  A worker may run several contenders (records with ``c``) on one or
more sessions of its process.  Each contender is a client of its own for every rule above: its holds,
waits and counter writes are its own (a hold is named ``w<worker>.<incarnation>/c<contender>#<cycle>``,
cycles counted per process), so two contenders of one process holding exclusively at once is an
overlap like any other.  What they share is the process and the session: a SIGSTOP, a kill or the
loss of the session reaches all of them at once, which the rules already take per process (pauses,
kills) and per hold (each lease must be seen lost by its own contender).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .history import Record

__all__ = [
    "CheckConfig",
    "FinalState",
    "Finding",
    "Hold",
    "Verdict",
    "build_holds",
    "check",
    "pause_windows",
    "stall_excess",
    "union_length",
]

EXCLUSIVE_ROLES = frozenset({"mutex", "write"})
#: Exceptions after which a counter write's outcome is unknown.
INDETERMINATE = frozenset({"ConnectionLossError", "SessionExpiredError", "Cancelled", "ClientClosedError"})


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


# ------------------------------------------------------------------------------------------ intervals


def union_length(windows: Iterable[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of ``windows`` clipped to ``[lo, hi]``."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in windows if b > lo and a < hi)
    total = 0.0
    cur_a, cur_b = None, None
    for a, b in clipped:
        if b <= a:
            continue
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_a is not None and cur_b is not None:
        total += cur_b - cur_a
    return total


def stall_excess(start: float, now: float, fault_windows: Iterable[tuple[float, float]], bound: float) -> float:
    """How far a stall from ``start`` to ``now`` exceeds ``bound`` once fault time is taken out (> 0: stuck)."""
    return (now - start) - union_length(fault_windows, start, now) - bound


def _subtract(interval: tuple[float, float], holes: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    pieces = [interval]
    for h0, h1 in holes:
        nxt = []
        for a, b in pieces:
            if h1 <= a or h0 >= b:
                nxt.append((a, b))
                continue
            if a < h0:
                nxt.append((a, h0))
            if h1 < b:
                nxt.append((h1, b))
        pieces = nxt
    return pieces


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


def _process_ends(parent: Sequence[Record]) -> dict[int, float]:
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
    ends = _process_ends(parent)
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


# ------------------------------------------------------------------------------------------ (a)


def _excused_windows(
    cfg: CheckConfig, pauses: dict[int, list[tuple[float, float]]]
) -> dict[int, list[tuple[float, float]]]:
    out: dict[int, list[tuple[float, float]]] = {}
    for pid, windows in pauses.items():
        ex = [(s + cfg.min_expiry, c + cfg.pause_grace) for s, c in windows if c - s >= cfg.min_expiry]
        if ex:
            out[pid] = ex
    return out


def _pieces(holds: Sequence[Hold], excused: dict[int, list[tuple[float, float]]]) -> list[tuple[float, float, Hold]]:
    pieces = []
    for h in holds:
        if h.end <= h.grant_t:
            continue
        for a, b in _subtract((h.grant_t, h.end), excused.get(h.pid, [])):
            if b > a:
                pieces.append((a, b, h))
    pieces.sort(key=lambda p: p[0])
    return pieces


def _pair_overlaps(
    pieces: Sequence[tuple[float, float, Hold]], conflicting: Any
) -> dict[tuple[str, str], tuple[float, float, Hold, Hold]]:
    """(first start, last end, a, b) of the overlapping parts of each conflicting pair."""
    found: dict[tuple[str, str], tuple[float, float, Hold, Hold]] = {}
    active: list[tuple[float, float, Hold]] = []
    for a0, a1, ha in pieces:
        active = [p for p in active if p[1] > a0]
        for b0, b1, hb in active:
            if hb is ha or hb.key == ha.key:
                continue
            if not conflicting(ha, hb):
                continue
            lo, hi = max(a0, b0), min(a1, b1)
            if hi <= lo:
                continue
            first, second = (hb, ha) if hb.grant_t <= ha.grant_t else (ha, hb)
            k = (first.key, second.key)
            prev = found.get(k)
            found[k] = (lo, hi, first, second) if prev is None else (min(prev[0], lo), max(prev[1], hi), first, second)
        active.append((a0, a1, ha))
    return found


def _conflicting(ha: Hold, hb: Hold) -> bool:
    return ha.exclusive or hb.exclusive


def check_overlaps(
    cfg: CheckConfig, holds: Sequence[Hold], parent: Sequence[Record]
) -> tuple[list[Finding], list[Finding]]:
    """(unsignalled overlaps, excused overlaps)."""
    excused_windows = _excused_windows(cfg, pause_windows(parent))
    if cfg.recipe == "semaphore":
        return _semaphore_excess(cfg, holds, excused_windows)
    real = _pair_overlaps(_pieces(holds, excused_windows), _conflicting)
    raw = _pair_overlaps(_pieces(holds, {}), _conflicting)
    findings = []
    for lo, hi, a, b in sorted(real.values(), key=lambda v: v[0]):
        findings.append(
            Finding(
                "overlap",
                f"{b.key} granted at {b.grant_t:.3f} while {a.key} still held (until {a.end:.3f}, ended by "
                f"{a.ended_by}): overlap {hi - lo:.3f} s",
                {
                    "start": lo,
                    "length": hi - lo,
                    "first": a.describe(),
                    "second": b.describe(),
                    "first_end": a.ended_by,
                    "tokens": [a.token, b.token],
                },
            )
        )
    excused = []
    for k, (lo, hi, a, b) in sorted(raw.items(), key=lambda kv: kv[1][0]):
        if k in real:
            continue
        excused.append(
            Finding(
                "excused",
                f"{a.key} and {b.key} overlapped {hi - lo:.3f} s while a holder was stopped (SIGSTOP) past its "
                f"session's life; tokens {a.token} < {b.token}"
                if a.token < b.token
                else f"{a.key} and {b.key} overlapped {hi - lo:.3f} s while a holder was stopped (SIGSTOP)",
                {"start": lo, "length": hi - lo, "first": a.describe(), "second": b.describe()},
            )
        )
    return findings, excused


def _semaphore_excess(
    cfg: CheckConfig, holds: Sequence[Hold], excused_windows: dict[int, list[tuple[float, float]]]
) -> tuple[list[Finding], list[Finding]]:
    def segments(pieces: Sequence[tuple[float, float, Hold]]) -> list[tuple[float, float, list[Hold]]]:
        edges = sorted(
            [(a, 1, i) for i, (a, _, _) in enumerate(pieces)] + [(b, -1, i) for i, (_, b, _) in enumerate(pieces)],
            key=lambda e: (e[0], e[1]),
        )
        active: set[int] = set()
        out: list[tuple[float, float, list[Hold]]] = []
        start: float | None = None
        for t, kind, i in edges:
            if kind == 1:
                active.add(i)
                if len(active) > cfg.max_leases and start is None:
                    start = t
            else:
                if len(active) > cfg.max_leases and start is not None:
                    members = [pieces[j][2] for j in active]
                    active.discard(i)
                    if len(active) <= cfg.max_leases:
                        if t > start:
                            out.append((start, t, members))
                        start = None
                else:
                    active.discard(i)
        return out

    real = segments(_pieces(holds, excused_windows))
    raw = segments(_pieces(holds, {}))
    findings = [
        Finding(
            "overlap",
            f"{len(ms)} leases held at once (max {cfg.max_leases}) for {b - a:.3f} s from {a:.3f}",
            {"start": a, "length": b - a, "holders": [h.describe() for h in ms]},
        )
        for a, b, ms in real
    ]
    real_starts = [a for a, _, _ in real]
    excused = [
        Finding(
            "excused",
            f"{len(ms)} leases at once for {b - a:.3f} s while a holder was stopped (SIGSTOP)",
            {"start": a, "length": b - a, "holders": [h.describe() for h in ms]},
        )
        for a, b, ms in raw
        if not any(abs(a - s) < 1e-9 for s in real_starts)
    ]
    return findings, excused


# ------------------------------------------------------------------------------------------ (b)


def check_tokens(cfg: CheckConfig, holds: Sequence[Hold]) -> list[Finding]:
    findings: list[Finding] = []
    seen: dict[int, Hold] = {}
    for h in holds:
        if h.token in seen:
            o = seen[h.token]
            findings.append(
                Finding(
                    "token",
                    f"token {h.token} granted twice: {o.key} and {h.key}",
                    {"token": h.token, "first": o.describe(), "second": h.describe()},
                )
            )
        else:
            seen[h.token] = h
    semaphore = cfg.recipe == "semaphore"
    by_end = sorted(holds, key=lambda h: h.end)
    ends = [h.end for h in by_end]
    # Running maxima of the token over holds sorted by end: of all holds, and of exclusive ones only.
    best_all: list[Hold] = []
    best_excl: list[Hold | None] = []
    cur_all: Hold | None = None
    cur_excl: Hold | None = None
    for h in by_end:
        if cur_all is None or h.token > cur_all.token:
            cur_all = h
        if h.exclusive and (cur_excl is None or h.token > cur_excl.token):
            cur_excl = h
        best_all.append(cur_all)
        best_excl.append(cur_excl)
    for g in holds:
        if g.born_lost:
            continue
        point = g.attempt_t if semaphore else g.grant_lb
        if point is None:
            continue
        i = bisect.bisect_left(ends, point) - 1  # holds that ended strictly before the point
        if i < 0:
            continue
        if semaphore or cfg.recipe == "mutex" or g.exclusive:
            worst: Hold | None = best_all[i]
        else:  # a reader is ordered only after writers
            worst = best_excl[i]
        if worst is None or worst is g or g.token > worst.token:
            continue
        what = "attempt" if semaphore else "grant"
        findings.append(
            Finding(
                "token",
                f"{g.key} granted token {g.token} ({what} at {point:.3f}) after {worst.key} with token {worst.token} "
                f"ended at {worst.end:.3f} ({worst.ended_by})",
                {
                    "grant": g.describe(),
                    "grant_t": g.grant_t,
                    "point": point,
                    "earlier": worst.describe(),
                    "earlier_end": worst.end,
                },
            )
        )
    return findings


# ------------------------------------------------------------------------------------------ (c)


@dataclass
class CounterStats:
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    indeterminate: int = 0
    applied_indeterminate: int = 0
    reads: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failed": dict(self.failed),
            "indeterminate": self.indeterminate,
            "applied_indeterminate": self.applied_indeterminate,
        }


def check_counter(
    workers: Sequence[Record], parent: Sequence[Record], final: FinalState
) -> tuple[list[Finding], CounterStats]:
    stats = CounterStats()
    findings: list[Finding] = []
    oks: list[Record] = []
    pending: dict[tuple[int, int, int, int], Record] = {}  # inc_write without an outcome yet
    unknown: list[Record] = []  # writes of unknown outcome
    for r in workers:
        ev = r["ev"]
        key = (r["w"], r["inc"], r.get("c", -1), r.get("cycle", -1))
        if ev == "inc_write":
            pending[key] = r
        elif ev == "inc_ok":
            pending.pop(key, None)
            oks.append(r)
        elif ev == "inc_fail":
            if r.get("stage") == "write":
                w = pending.pop(key, None)
                if r.get("indeterminate"):
                    unknown.append(w if w is not None else r)
            stats.failed[r.get("err", "?")] += 1
    unknown.extend(pending.values())  # never answered: the process was killed or the record lost
    stats.ok = len(oks)
    stats.indeterminate = len(unknown)

    by_version: dict[int, Record] = {}
    for r in oks:
        if r["value"] != r["version"]:
            findings.append(
                Finding(
                    "counter", f"lost update: w{r['w']} wrote {r['value']} at version {r['version']}", {"record": r}
                )
            )
        if r["version"] in by_version:
            o = by_version[r["version"]]
            findings.append(
                Finding(
                    "counter",
                    f"two acknowledged writes produced version {r['version']}: "
                    f"w{o['w']} value {o['value']} and w{r['w']} value {r['value']}",
                    {"a": o, "b": r},
                )
            )
        by_version[r["version"]] = r

    # Real-time order: a write whose read began after another write was acknowledged must come later.
    acked = sorted(oks, key=lambda r: r["t"])
    acked_t = [r["t"] for r in acked]
    prefix_max: list[Record] = []
    for r in acked:
        prefix_max.append(r if not prefix_max or r["value"] > prefix_max[-1]["value"] else prefix_max[-1])
    for r in oks:
        i = bisect.bisect_left(acked_t, r["t0"]) - 1
        if i >= 0 and prefix_max[i]["value"] >= r["value"]:
            o = prefix_max[i]
            findings.append(
                Finding(
                    "counter",
                    f"stale write: w{r['w']} wrote {r['value']} from a read sent at {r['t0']:.3f}, after "
                    f"w{o['w']}'s write of {o['value']} was acknowledged at {o['t']:.3f}",
                    {"write": r, "earlier": o},
                )
            )

    if final.counter_value is not None and final.counter_version is not None:
        if final.counter_value != final.counter_version:
            findings.append(
                Finding(
                    "counter",
                    f"final value {final.counter_value} != final version {final.counter_version}: an update was lost",
                    {},
                )
            )
        expected_by_version: dict[int, int] = Counter(
            int(r["expected_version"]) + 1 for r in unknown if r.get("expected_version") is not None
        )
        phantom = []
        for v in range(1, final.counter_version + 1):
            if v in by_version:
                continue
            if expected_by_version.get(v):
                stats.applied_indeterminate += 1
            else:
                phantom.append(v)
        beyond = [v for v in by_version if v > final.counter_version]
        if phantom:
            findings.append(
                Finding(
                    "counter",
                    f"{len(phantom)} applied write(s) nobody attempted with an unknown "
                    f"outcome (versions {phantom[:10]})",
                    {"versions": phantom},
                )
            )
        if beyond:
            findings.append(
                Finding(
                    "counter",
                    f"acknowledged versions beyond the final version {final.counter_version}: {sorted(beyond)[:10]}",
                    {"versions": beyond},
                )
            )
        if final.counter_value < stats.ok:
            findings.append(
                Finding(
                    "counter",
                    f"final value {final.counter_value} < {stats.ok} acknowledged increments: lost updates",
                    {},
                )
            )
    return findings, stats


# ------------------------------------------------------------------------------------------ (d)


def fault_windows(parent: Sequence[Record]) -> list[tuple[float, float]]:
    return [(r["start"], r["end"]) for r in parent if r["ev"] == "fault"]


def waiting_intervals(
    workers: Sequence[Record], parent: Sequence[Record], until: float
) -> list[tuple[float, float, int]]:
    """(start, end, worker) of every wait in acquire (of every contender of a worker)."""
    ends = _process_ends(parent)
    open_: dict[tuple[int, int, int], tuple[float, int, int]] = {}  # (w, inc, c) -> (start, pid, session)
    out: list[tuple[float, float, int]] = []
    for r in workers:
        ev = r["ev"]
        k = (r["w"], r["inc"], r.get("c", -1))
        if ev == "attempt":
            open_[k] = (r["t"], r["pid"], r.get("sid", 0))
            continue
        if ev == "exit" or (ev == "session_end" and "c" not in r and "s" not in r):
            closed = [o for o in open_ if o[:2] == k[:2]]  # every wait of the process
        elif ev == "session_end":
            closed = [o for o in open_ if o[:2] == k[:2] and open_[o][2] == r.get("sid", 0)]  # its session's
        elif ev in ("grant", "acquire_fail"):
            closed = [k] if k in open_ else []
        else:
            continue
        for o in closed:
            t0, _, _ = open_.pop(o)
            out.append((t0, r["t"], r["w"]))
    for (w, _inc, _c), (t0, pid, _) in open_.items():
        out.append((t0, min(ends.get(pid, until), until), w))
    return out


def check_liveness(cfg: CheckConfig, workers: Sequence[Record], parent: Sequence[Record]) -> list[Finding]:
    phases: dict[str, float] = {r["name"]: r["t"] for r in parent if r["ev"] == "phase"}
    start: float = phases.get("running", workers[0]["t"] if workers else 0.0)
    stop: float = phases.get("stopping", workers[-1]["t"] if workers else 0.0)
    grants = sorted(r["t"] for r in workers if r["ev"] == "grant" and start <= r["t"] <= stop)
    waits = sorted(
        (max(a, start), min(b, stop)) for a, b, _ in waiting_intervals(workers, parent, stop) if b > start and a < stop
    )
    # merge the waits into periods during which someone waited
    merged: list[list[float]] = []
    for a, b in waits:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    faults = fault_windows(parent)
    edges = [start, *grants, stop]
    findings = []
    for a, b in merged:
        # split the waiting period at every grant inside it
        i = bisect.bisect_right(edges, a)
        lo = a
        for g in [*edges[i:], math.inf]:
            hi = min(g, b)
            excess = stall_excess(lo, hi, faults, cfg.bound)
            if excess > 0:
                fault_time = union_length(faults, lo, hi)
                findings.append(
                    Finding(
                        "liveness",
                        f"no grant for {hi - lo:.1f} s from {lo:.3f} while workers waited "
                        f"({fault_time:.1f} s of it under faults; bound {cfg.bound:.1f} s)",
                        {"start": lo, "end": hi, "length": hi - lo, "fault_time": fault_time},
                    )
                )
            if g >= b:
                break
            lo = g
    return findings


# ------------------------------------------------------------------------------------------ signal margins


def check_signal_margins(
    cfg: CheckConfig, holds: Sequence[Hold], workers: Sequence[Record], parent: Sequence[Record]
) -> list[Finding]:
    """Informational: losses signalled barely before the next conflicting grant.

    When a holder's session expires on the server, its client should have given up the lease about T/3
    earlier (it stops trusting a silent connection after 2T/3; the server expires the session after T).
    Listed: a loss seen less than T/6 before someone else's grant, where that session's next event was
    its expiry (no grant to it in between) and its process was not stopped meanwhile -- the holder
    learnt of the loss from the expiry itself: it won the race, but only just.
    """
    expired_at = {r["sid"]: r["t"] for r in workers if r["ev"] == "session_end" and r.get("state") == "expired"}
    grants = sorted(holds, key=lambda h: h.grant_t)
    times = [g.grant_t for g in grants]
    by_session: dict[int, list[float]] = defaultdict(list)
    for g in grants:
        by_session[g.session].append(g.grant_t)
    pauses = pause_windows(parent)
    out = []
    for h in holds:
        if h.lost_t is None or h.end != h.lost_t or h.session not in expired_at:
            continue
        expiry = expired_at[h.session]
        if expiry < h.lost_t or any(h.lost_t < t <= expiry for t in by_session[h.session]):
            continue  # the session went on after this loss: it expired later, for another reason
        if any(s < h.lost_t and c > h.grant_t for s, c in pauses.get(h.pid, ())):
            continue  # stopped by SIGSTOP: see the excused overlaps
        i = bisect.bisect_right(times, h.grant_t)
        nxt = next((g for g in grants[i:] if g.session != h.session and _conflicting(h, g)), None)
        if nxt is None:
            continue
        margin = nxt.grant_t - h.lost_t
        if margin < cfg.session_timeout / 6:
            out.append(
                Finding(
                    "margin",
                    f"{h.key} saw its loss only {margin * 1000:.0f} ms before {nxt.key} was granted "
                    f"(its session then expired; expected about T/3 = {cfg.session_timeout / 3:.2f} s earlier)",
                    {"hold": h.describe(), "next": nxt.describe(), "margin": margin, "lost_t": h.lost_t},
                )
            )
    return out


def check_loss_reporting(holds: Sequence[Hold]) -> list[Finding]:
    """Informational: a lost lease whose ``async with`` ended with something else than LockLostError."""
    out = []
    for h in holds:
        if h.lost_t is not None and h.outcome not in (None, "LockLostError") and h.release_t is None:
            out.append(
                Finding(
                    "reporting",
                    f"{h.key}: lease lost ({h.lost_exc or 'no exception'} in the body) but async with raised "
                    f"{h.outcome}, not LockLostError",
                    {"hold": h.describe(), "outcome": h.outcome},
                )
            )
    return out


# ------------------------------------------------------------------------------------------ verdict


@dataclass
class Verdict:
    config: CheckConfig
    holds: int = 0
    holds_by_role: dict[str, int] = field(default_factory=dict)
    ended_by: dict[str, int] = field(default_factory=dict)
    lost_exc: dict[str, int] = field(default_factory=dict)
    counter: CounterStats = field(default_factory=CounterStats)
    overlaps: list[Finding] = field(default_factory=list)
    excused: list[Finding] = field(default_factory=list)
    tokens: list[Finding] = field(default_factory=list)
    counter_findings: list[Finding] = field(default_factory=list)
    liveness: list[Finding] = field(default_factory=list)
    stuck: list[Finding] = field(default_factory=list)
    ghosts: list[Finding] = field(default_factory=list)
    orphans: list[Finding] = field(default_factory=list)
    #: Informational, not failures: late loss signals, losses reported as another exception.
    margins: list[Finding] = field(default_factory=list)
    reporting: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> dict[str, list[Finding]]:
        return {
            "unsignalled overlaps": self.overlaps,
            "token-order violations": self.tokens,
            "lost updates": self.counter_findings,
            "stuck locks": self.liveness + self.stuck,
            "ghost nodes": self.ghosts,
            "orphan nodes": self.orphans,
        }

    @property
    def ok(self) -> bool:
        return not any(self.failures.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "holds": self.holds,
            "holds_by_role": self.holds_by_role,
            "ended_by": self.ended_by,
            "lost_exceptions": self.lost_exc,
            "counter": self.counter.to_json(),
            "failures": {k: [f.to_json() for f in v] for k, v in self.failures.items()},
            "excused_overlaps": [f.to_json() for f in self.excused],
            "late_loss_signals": [f.to_json() for f in self.margins],
            "loss_reported_otherwise": [f.to_json() for f in self.reporting],
            "notes": self.notes,
        }


def _annotate(findings: Iterable[Finding], parent: Sequence[Record], lookback: float) -> None:
    """Name the faults active around each finding's time (from ``lookback`` before it to just after)."""
    faults = [r for r in parent if r["ev"] == "fault"]
    for f in findings:
        t = next((f.data[k] for k in ("start", "lost_t", "point") if isinstance(f.data.get(k), float)), None)
        if t is None:
            continue
        near = [f"{r['kind']}({r.get('target')})" for r in faults if r["start"] <= t + 0.5 and r["end"] >= t - lookback]
        f.data["faults"] = near
        if near:
            f.message += f" [faults: {', '.join(near)}]"


def check(cfg: CheckConfig, workers: Sequence[Record], parent: Sequence[Record], final: FinalState) -> Verdict:
    """All checks over one run (worker records sorted by time, parent records sorted by time)."""
    holds = build_holds(workers, parent)
    v = Verdict(cfg, holds=len(holds))
    v.holds_by_role = dict(Counter(h.role for h in holds))
    v.ended_by = dict(Counter(h.ended_by for h in holds))
    v.lost_exc = dict(
        Counter(h.lost_exc or f"none, seen by {h.lost_via or '?'}" for h in holds if h.lost_t is not None)
    )
    v.overlaps, v.excused = check_overlaps(cfg, holds, parent)
    v.tokens = check_tokens(cfg, holds)
    v.counter_findings, v.counter = check_counter(workers, parent, final)
    v.liveness = check_liveness(cfg, workers, parent)
    v.margins = check_signal_margins(cfg, holds, workers, parent)
    v.reporting = check_loss_reporting(holds)
    _annotate([*v.overlaps, *v.excused, *v.tokens, *v.liveness, *v.margins], parent, cfg.session_timeout * 1.5)
    for r in parent:
        if r["ev"] == "stuck":
            v.stuck.append(Finding("liveness", r.get("message", "stuck"), {k: r[k] for k in r if k not in ("ev",)}))
        elif r["ev"] == "ghost":
            v.ghosts.append(Finding("ghost", r.get("message", "ghost"), {k: r[k] for k in r if k not in ("ev",)}))
    for n in final.closed_session_nodes:
        v.orphans.append(
            Finding(
                "orphan",
                f"{n.get('path')} owned by 0x{n.get('owner', 0):x}, a session its worker "
                "closed while connected, was still there after shutdown",
                n,
            )
        )
    for n in final.leftover_nodes:
        v.orphans.append(
            Finding("orphan", f"{n.get('path')} (owner 0x{n.get('owner', 0):x}) left after every session ended", n)
        )
    open_holds = [h for h in holds if h.end == math.inf]
    if open_holds:
        v.notes.append(
            f"{len(open_holds)} hold(s) without an end record or process end: {[h.key for h in open_holds][:5]}"
        )
    return v
