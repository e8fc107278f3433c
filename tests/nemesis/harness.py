"""One nemesis run, from an ensemble to a verdict.

1. An observer session (direct, not proxied) creates ``/nemesis/<run>/`` with the counter at "0".
2. Per worker, one fault proxy per member; the workers start, each through its own proxies.  In the
   membership mode (``reconfig``: a reconfigurable ensemble whose membership the ``reconfig`` fault
   changes) there is no proxy: the workers connect to the members and follow the ensemble's
   configuration (faults.py says why).
3. For ``duration`` seconds the nemesis applies faults while the watchdog watches for stalls and ghosts,
   and the observer writes a ticker node that every worker watches (server->client traffic).
4. Every fault is undone (members resumed and restarted, the membership restored, proxies thawed);
   then the run waits until every worker (every contender of it) was granted again after that
   (bounded: the liveness bound plus a second).
5. The workers are stopped cleanly; the lock nodes left are listed at once and again after the
   sessions of killed workers had time to expire; the counter is read (after a sync).
6. The checker judges the histories.

Every step is bounded in time; every process is killed on the way out, whatever happened.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import trio

import zkwire
from zklock.naming import LOCK_MARKERS
from zkwire.testing.embedded import EmbeddedEnsemble

from .checker import CheckConfig, FinalState, Verdict, check
from .faults import FaultContext, check_weights, default_weights
from .fleet import Fleet
from .history import ParentLog, load_dir
from .members import Members
from .nemesis import Nemesis
from .proxies import open_proxy_sets
from .watchdog import Queue, Watchdog, census
from .worker import WorkerConfig

__all__ = ["RunConfig", "RunResult", "run_nemesis", "RECIPES"]

RECIPES = ("mutex", "rwlock", "semaphore")
ROOT = "/nemesis"


@dataclass
class RunConfig:
    recipe: str = "mutex"
    duration: float = 20.0
    workers: int = 8
    seed: int | None = None
    session_timeout: float = 4.0
    max_leases: int = 2
    #: Fault kind -> relative frequency (None: the mode's defaults, see faults.default_weights).
    weights: dict[str, float] | None = None
    gap: tuple[float, float] = (0.5, 2.0)
    max_per_kind: dict[str, int] = field(default_factory=dict)
    hold: tuple[float, float] = (0.01, 0.1)
    think_max: float = 0.05
    write_ratio: float = 0.3
    pause_grace: float = 1.0
    watch_traffic: bool = True  #: workers watch the run's directory (see worker.WorkerConfig.watch_path)
    #: The observer writes ``<run>/ticker`` this often (0: never): with ``watch_traffic`` every worker,
    #: the lock holder included, then receives a notification that often, as in an application whose
    #: shared state keeps changing.
    ticker_interval: float = 0.1
    #: Lock contenders per worker process (trio tasks sharing the process's sessions, see worker.py).
    contenders_per_worker: int = 1
    #: zkwire sessions per worker process (contender k uses session k mod this); at most the contenders.
    sessions_per_worker: int = 1
    out_dir: Path | None = None
    #: The membership mode: the ensemble is reconfigurable, workers connect to the members directly and
    #: follow its configuration, the proxy faults are left out and ``reconfig`` applies.
    reconfig: bool = False

    def __post_init__(self) -> None:
        if self.weights is None:
            self.weights = default_weights(self.reconfig)
        check_weights(self.weights, self.reconfig)
        if self.recipe not in RECIPES:
            raise ValueError(f"recipe must be one of {RECIPES}, not {self.recipe!r}")
        if self.workers < 1 or self.duration <= 0 or self.session_timeout <= 0:
            raise ValueError("workers, duration and session_timeout must be positive")
        if self.contenders_per_worker < 1 or not 1 <= self.sessions_per_worker <= self.contenders_per_worker:
            raise ValueError("contenders_per_worker must be >= 1 and sessions_per_worker between 1 and it")


@dataclass
class RunResult:
    config: RunConfig
    seed: int
    run_dir: Path
    verdict: Verdict
    faults: dict[str, int]
    faults_skipped: dict[str, int]
    faults_fired: dict[str, int]
    grants: int
    grants_per_worker: dict[int, int]
    incarnations: int
    wall_time: float
    phases: dict[str, float]
    final: FinalState
    recovered: bool
    outcomes: dict[str, int]
    proxy_stats: dict[str, int]
    #: Connections the workers' sessions made, from their ``server`` records (see :func:`_connections`).
    connections: dict[str, int] = field(default_factory=dict)
    #: The ensemble's members (indices) at the end of the run.
    members_after: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Failures of the run itself (a worker process that died by itself): the verdict is then void.
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict.ok and not self.problems

    def to_json(self) -> dict[str, Any]:
        cfg = asdict(self.config)
        cfg["out_dir"] = str(self.config.out_dir) if self.config.out_dir else None
        return {
            "config": cfg,
            "seed": self.seed,
            "run_dir": str(self.run_dir),
            "ok": self.ok,
            "problems": self.problems,
            "grants": self.grants,
            "grants_per_worker": self.grants_per_worker,
            "incarnations": self.incarnations,
            "faults": self.faults,
            "faults_skipped": self.faults_skipped,
            "faults_fired": self.faults_fired,
            "outcomes": self.outcomes,
            "wall_time": self.wall_time,
            "phases": self.phases,
            "recovered": self.recovered,
            "final": asdict(self.final),
            "proxy_stats": self.proxy_stats,
            "connections": self.connections,
            "members_after": self.members_after,
            "verdict": self.verdict.to_json(),
            "notes": self.notes,
        }


def _queues(recipe: str, lock_path: str) -> list[Queue]:
    if recipe == "mutex":
        return [Queue(lock_path, LOCK_MARKERS)]
    if recipe == "rwlock":
        return [Queue(lock_path, LOCK_MARKERS)]
    return [
        Queue(f"{lock_path}/leases", ("lease-",), head_holds=False),
        Queue(f"{lock_path}/locks", LOCK_MARKERS, head_holds=False),
    ]


async def _remove_tree(zk: zkwire.Client, path: str) -> None:
    """Delete ``path`` and what is under it (best effort: the run's nodes, once everything is checked)."""
    try:
        for child in await zk.get_children(path):
            await _remove_tree(zk, f"{path}/{child}")
        await zk.delete(path)
    except (zkwire.NoNodeError, zkwire.NotEmptyError):
        pass


async def _all_nodes(zk: zkwire.Client, queues: list[Queue]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for q in queues:
        out.extend(n.to_json() for n in await census(zk, q))
    return out


async def _ticker(zk: zkwire.Client, path: str, interval: float) -> None:
    n = 0
    while True:
        await trio.sleep(interval)
        n += 1
        try:
            with trio.move_on_after(2):
                await zk.set_data(path, str(n).encode())
        except zkwire.ZKError:
            pass


async def run_nemesis(cfg: RunConfig, ensemble: EmbeddedEnsemble, *, echo: bool = True) -> RunResult:
    """One run against a running ``ensemble`` (members it stops are started again before it returns)."""
    seed = cfg.seed if cfg.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    if echo:
        print(
            f"nemesis: recipe {cfg.recipe}, {cfg.workers} workers x {cfg.contenders_per_worker} contenders "
            f"on {cfg.sessions_per_worker} session(s), {cfg.duration:g} s, seed {seed}"
            + (", membership mode (direct connections, following the ensemble)" if cfg.reconfig else ""),
            flush=True,
        )
    run_id = f"{cfg.recipe}-{seed}-{uuid.uuid4().hex[:6]}"
    run_dir = cfg.out_dir / run_id if cfg.out_dir else Path(tempfile.mkdtemp(prefix=f"nemesis-{run_id}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    log = ParentLog(run_dir / "parent.jsonl")
    base = f"{ROOT}/{run_id}"
    lock_path = f"{base}/{'sem' if cfg.recipe == 'semaphore' else 'lock'}"
    counter_path = f"{base}/counter"
    queues = _queues(cfg.recipe, lock_path)
    T = cfg.session_timeout
    if cfg.reconfig and not ensemble.reconfigurable:
        raise ValueError("the membership mode (reconfig=True) needs EmbeddedEnsemble(reconfigurable=True)")
    check_cfg = CheckConfig(cfg.recipe, T, cfg.max_leases if cfg.recipe == "semaphore" else 1, cfg.pause_grace)
    members = Members(ensemble)
    phases: dict[str, float] = {}
    notes: list[str] = []
    t_begin = time.monotonic()

    def phase(name: str) -> None:
        phases[name] = log.write("phase", name=name)["t"]

    log.write(
        "config",
        recipe=cfg.recipe,
        seed=seed,
        workers=cfg.workers,
        contenders_per_worker=cfg.contenders_per_worker,
        sessions_per_worker=cfg.sessions_per_worker,
        duration=cfg.duration,
        session_timeout=T,
        lock_path=lock_path,
        counter_path=counter_path,
        hosts=ensemble.hosts,
        reconfig=cfg.reconfig,
    )
    final = FinalState()
    recovered = False
    fleet: Fleet | None = None
    nemesis: Nemesis | None = None
    watchdog: Watchdog | None = None
    proxy_stats: Counter[str] = Counter()
    try:
        with trio.fail_after(60):
            async with zkwire.open_client(ensemble.hosts, session_timeout=10) as setup:
                await setup.ensure_path(lock_path)
                await setup.create(counter_path, b"0")
                await setup.create(f"{base}/ticker", b"0")
        async with (
            zkwire.open_client(ensemble.hosts, session_timeout=10) as observer,
            open_proxy_sets(0 if cfg.reconfig else cfg.workers, members.addresses) as proxies,
        ):

            def make_config(worker: int, incarnation: int, history: Path) -> WorkerConfig:
                return WorkerConfig(
                    worker=worker,
                    incarnation=incarnation,
                    # The members as the ensemble has them now (a worker started after a change is given
                    # the current ones; the others follow the configuration).
                    hosts=proxies[worker].hosts if proxies else members.hosts,
                    follow_ensemble=cfg.reconfig,
                    recipe=cfg.recipe,
                    lock_path=lock_path,
                    counter_path=counter_path,
                    history=str(history),
                    parent_pid=os.getpid(),
                    session_timeout=T,
                    seed=seed,
                    max_leases=cfg.max_leases,
                    write_ratio=cfg.write_ratio,
                    hold_min=cfg.hold[0],
                    hold_max=cfg.hold[1],
                    think_max=cfg.think_max,
                    acquire_timeout=3 * T + 30,
                    max_runtime=cfg.duration + 30 * T + 120,
                    watch_path=base if cfg.watch_traffic else "",
                    contenders=cfg.contenders_per_worker,
                    sessions=cfg.sessions_per_worker,
                )

            fleet = Fleet(run_dir, log, cfg.workers, make_config)
            async with trio.open_nursery() as nursery:
                await nursery.start(fleet.run)
                await fleet.start_all()
                with trio.move_on_after(30 + 2 * T):
                    while any(len(wp.slot_sessions) < wp.session_count for wp in fleet.live()):
                        await trio.sleep(0.1)
                ctx = FaultContext(fleet, proxies, members, rng, T, lock_path, counter_path, f"{base}/ticker")
                assert cfg.weights is not None
                nemesis = Nemesis(ctx, log, cfg.weights, rng, cfg.gap, cfg.max_per_kind)
                per_session = -(-cfg.contenders_per_worker // cfg.sessions_per_worker)
                watchdog = Watchdog(fleet, log, queues, T, nemesis.windows, check_cfg.bound, per_session)
                async with trio.open_nursery() as watching:
                    watching.start_soon(watchdog.run, observer)
                    if cfg.ticker_interval > 0:
                        watching.start_soon(_ticker, observer, f"{base}/ticker", cfg.ticker_interval)
                    phase("running")
                    try:
                        await nemesis.run(time.monotonic() + cfg.duration)
                    finally:
                        with trio.CancelScope(shield=True):
                            for ps in proxies:
                                ps.heal()
                            for wp in fleet.live():
                                if wp.stopped:
                                    fleet.sigcont(wp)
                            with trio.move_on_after(90):
                                await members.heal()
                    phase("healed")
                    # Recovery: every worker must be granted again once the faults are over.  Wait until
                    # that, or until a stall in progress exceeds the liveness bound (so that the checker
                    # sees it), whichever comes first.
                    healed = phases["healed"]
                    stall = watchdog.stall(healed)
                    excess = stall[1] if stall is not None else -check_cfg.bound
                    with trio.move_on_after(max(0.0, -excess) + 1.0):
                        while not all(wp.granted_all_since(healed) for wp in fleet.live()):
                            await trio.sleep(0.1)
                    recovered = all(wp.granted_all_since(healed) for wp in fleet.live())
                    if not recovered:
                        late = [wp.worker for wp in fleet.live() if not wp.granted_all_since(healed)]
                        notes.append(
                            f"workers {late} (some contender of each) were not granted within the bound "
                            "after the faults ended"
                        )
                    phase("stopping")
                    watching.cancel_scope.cancel()
                stragglers = await fleet.stop_all(grace=10 + T)
                if stragglers:
                    notes.append(f"workers {[wp.worker for wp in stragglers]} did not stop within {10 + T:g} s: killed")
                phase("stopped")
                fleet.poll()
                # (e) lock nodes: at once, then once every lingering session has had time to expire.
                await observer.sync(lock_path)
                clean_sessions = {s.session for s in fleet.sessions.values() if s.end_reason == "stopped"}
                closed_connected = _closed_while_connected(run_dir)
                immediate = await _all_nodes(observer, queues)
                final.closed_session_nodes = [n for n in immediate if n["owner"] in closed_connected & clean_sessions]
                deadline = time.monotonic() + T * 1.5 + 3
                remaining = immediate
                while remaining and time.monotonic() < deadline:
                    await trio.sleep(0.25)
                    remaining = await _all_nodes(observer, queues)
                final.leftover_nodes = remaining
                for n in remaining:
                    n["owner_desc"] = fleet.describe_session(n["owner"])
                for n in final.closed_session_nodes:
                    n["owner_desc"] = fleet.describe_session(n["owner"])
                await observer.sync(counter_path)
                data, stat = await observer.get_data(counter_path)
                final.counter_value, final.counter_version = int(data), stat.version
                if not final.leftover_nodes:
                    with trio.move_on_after(10):
                        await _remove_tree(observer, base)
                for ps in proxies:
                    proxy_stats.update(ps.stats())
                nursery.cancel_scope.cancel()
    finally:
        if fleet is not None:
            fleet.kill_all()
        with trio.CancelScope(shield=True), trio.move_on_after(90):
            await members.heal()
        log.close()
    workers_records, parent_records = load_dir(run_dir)
    verdict = check(check_cfg, workers_records, parent_records, final)
    assert fleet is not None and nemesis is not None
    outcomes: Counter[str] = Counter()
    for r in workers_records:
        if r["ev"] == "outcome":
            outcomes[r["exc"] or "released"] += 1
        elif r["ev"] == "acquire_fail":
            outcomes[f"acquire:{r['exc']}"] += 1
    grants_per_worker: Counter[int] = Counter()
    for r in workers_records:
        if r["ev"] == "grant":
            grants_per_worker[r["w"]] += 1
    result = RunResult(
        config=cfg,
        seed=seed,
        run_dir=run_dir,
        verdict=verdict,
        faults=dict(nemesis.counts),
        faults_skipped=dict(nemesis.skipped),
        faults_fired=dict(nemesis.fired),
        grants=sum(grants_per_worker.values()),
        grants_per_worker=dict(sorted(grants_per_worker.items())),
        incarnations=len(fleet.all),
        wall_time=time.monotonic() - t_begin,
        phases={k: v - t_begin for k, v in phases.items()},
        final=final,
        recovered=recovered,
        outcomes=dict(outcomes),
        proxy_stats=dict(proxy_stats),
        connections=_connections(workers_records),
        members_after=ensemble.members(),
        notes=notes + verdict.notes,
        problems=[
            f"worker {wp.worker}.{wp.incarnation} (pid {wp.pid}) exited by itself with {wp.rc}; its output ends:\n"
            + fleet.output_tail(wp)
            for wp in fleet.unexpected_exits
        ],
    )
    if result.grants == 0:
        result.problems.append("no grant at all: the run tested nothing")
    return result


def _closed_while_connected(run_dir: Path) -> set[int]:
    workers, _ = load_dir(run_dir)
    return {r["sid"] for r in workers if r["ev"] == "session_end" and r.get("connected") and r.get("sid")}


def _connections(records: list[dict[str, Any]]) -> dict[str, int]:
    """From the workers' ``server`` records: ``connections`` (a session's connection opened to a server),
    ``server changes`` (one opened to another server than the session's previous one: a move, or a
    reconnection elsewhere) and ``servers`` (distinct servers connected to)."""
    last: dict[tuple[int, int, int, int], str] = {}
    servers: set[str] = set()
    opened = changed = 0
    for r in records:
        if r["ev"] != "server" or not r.get("host"):
            continue
        key = (r["w"], r["inc"], r.get("s", 0), r.get("sid", 0))
        opened += 1
        servers.add(r["host"])
        if key in last and last[key] != r["host"]:
            changed += 1
        last[key] = r["host"]
    return {"connections": opened, "server changes": changed, "servers": len(servers)}
