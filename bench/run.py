"""Benchmarks: zkwire/zklock beside a raw-socket client, a one-task trio floor, kazoo, aiozk and Java/Curator.

    .venv/bin/python bench/run.py [--quick] [--rounds N] [--json PATH] [--png PATH]
                                  [--peers zkwire,raw,trio,least,kazoo,aiozk,java] [--metrics ...] [--hosts H:P]
                                  [--scale] [--scale-waiters N,N] [--scale-sessions N,N] [--scale-depth N,N]
                                  [--scale-payload N,N] [--scale-children N,N] [--timeout S]

Starts a fresh local ZooKeeper (standalone, tickTime 2000, forceSync=no: the clients' cost differs, not
the disk's), compiles the Java peer with the machine's javac, and runs every (metric, peer) pair in a
child process of its own, in interleaved rounds (A B C ... A B C ...); the first round is a warm-up and
is discarded.  The scale rows (``--scale``, or scale_* groups in ``--metrics``) run in the same rounds,
one child per (size, peer).  The herd check and the memory figures run once per peer after the rounds.
Prints Markdown tables of medians (with each row's range over the rounds) with ratios to the Java
client (Curator for the lock metrics), writes JSON
(default bench/results/latest.json) and a PNG chart (matplotlib, Agg; skipped with a message when
matplotlib is missing).  See bench/README.md for what each metric means.

Read from :func:`main` down: :func:`parser` and :func:`plan` turn the command line into a :class:`Plan` (peers,
metrics, sizes, the tasks of a round, the bounds); :func:`run_all` starts the server and runs
:func:`run_rounds` (each child through :func:`run_child`), the once-metrics and the codec benchmark;
:func:`report` prints :func:`tables` (each built by ``table``) and :func:`write_json` writes the JSON.  What is
measured (the metrics, the rows, the scale groups) is bench/benchlib/rows.py; the tables, their verdicts and
the chart, bench/benchlib/tables.py; the peers' measurement loops, bench/peers/__init__.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))

from benchlib.rows import (  # noqa: E402
    ALL_METRICS,
    FULL,
    ONCE_METRICS,
    QUICK,
    ROUND_METRICS,
    SCALE,
    SCALE_GROUPS,
    Row,
    ScaleGroup,
)
from benchlib.tables import (  # noqa: E402
    chart,
    codec_table,
    fmt,
    medians,
    spreads,
    table,
)
from peers import (  # noqa: E402
    PEERS,
    Params,
    children_path,
    java_peer,
    payload_path,
)

# --------------------------------------------------------------------------------------------------------
# the server


class Server:
    """A fresh standalone ZooKeeper: zkwire.testing.embedded when it is there, else a plain subprocess."""

    SETTINGS = {"tickTime": "2000", "forceSync": "no", "admin.enableServer": "false", "4lw.commands.whitelist": "*"}

    def __init__(self) -> None:
        self.hosts = ""
        self.how = ""
        self._stop: Callable[[], None] = lambda: None

    def start(self) -> None:
        try:
            from zkwire.testing.embedded import EmbeddedZooKeeper
        except ImportError:
            self._start_subprocess()
            return
        zk = EmbeddedZooKeeper(
            tick_time_ms=2000,
            jvm_flags=["-XX:TieredStopAtLevel=4", "-Xms256m", "-Xmx1g"],
            extra_config={"forceSync": "no"},
        )
        zk.start()
        self.hosts = zk.hosts
        self.how = "zkwire.testing.embedded.EmbeddedZooKeeper (C2 JIT, -Xmx1g, serial GC)"
        self._stop = zk.stop

    def _start_subprocess(self) -> None:
        import socket

        tmp = Path(tempfile.mkdtemp(prefix="zkbench-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cfg = tmp / "zoo.cfg"
        cfg.write_text(
            f"dataDir={tmp / 'data'}\nclientPort={port}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n"
            + "".join(f"{k}={v}\n" for k, v in self.SETTINGS.items())
        )
        cp = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/*"
        log = open(tmp / "server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                "java",
                "-Dzookeeper.forceSync=no",
                "-cp",
                cp,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(cfg),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.hosts = f"127.0.0.1:{port}"
        self.how = "ZooKeeperServerMain subprocess (JVM defaults)"

        def stop() -> None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
            shutil.rmtree(tmp, ignore_errors=True)

        self._stop = stop
        from peers import four_letter_word

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if four_letter_word(self.hosts, "ruok", 0.5) == "imok":
                    return
            except OSError:
                pass
            time.sleep(0.1)
        stop()
        raise RuntimeError("ZooKeeper did not start")

    def stop(self) -> None:
        self._stop()


# --------------------------------------------------------------------------------------------------------
# children


def child(argv: list[str]) -> int:
    import importlib

    peer, metric, hosts, path, params = argv
    module = importlib.import_module(f"peers.{PEERS[peer][0]}")
    result = module.run(metric, hosts, path, Params.from_json(json.loads(params)))
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def run_child(peer: str, metric: str, hosts: str, path: str, p: Params, java_cp: str | None) -> dict[str, Any]:
    if peer == "java":
        assert java_cp is not None
        cmd = java_peer.command(java_cp, metric, hosts, path, p)
    else:
        cmd = [sys.executable, str(HERE / "run.py"), "--child", peer, metric, hosts, path, json.dumps(p.to_json())]
    limit = p.warm + p.jit_warm + 2 * p.measure + 3 * p.timeout + 4 * p.arg / 100
    load = os.getloadavg()[0]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {limit:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return {**json.loads(line[7:]), "load1_at_start": load}
    tail = (proc.stderr or proc.stdout)[-1500:]
    return {"error": f"exit {proc.returncode}: {tail}"}


def run_codec(quick: bool) -> dict[str, Any] | None:
    script = HERE / "codec_bench.py"
    if not script.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "codec.json"
        proc = subprocess.run(
            [sys.executable, str(script), "--repeat", "3" if quick else "7", "--json", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
        if proc.returncode != 0 or not out.exists():
            return {"error": proc.stderr[-1500:]}
        return dict(json.loads(out.read_text()))


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    java = ""
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "java": java,
    }


# --------------------------------------------------------------------------------------------------------
# main: the command line, the plan of a run, the rounds, the report

#: A busy loop for --busy-cpus: ends with its parent, and after an hour in any case.
SPIN = (
    "import os, time\n"
    "end = time.monotonic() + 3600\n"
    "while os.getppid() == {parent} and time.monotonic() < end:\n"
    "    pass\n"
)


def parser() -> argparse.ArgumentParser:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2 rounds, shorter phases (about 2 minutes)")
    p.add_argument("--rounds", type=int, help="rounds including the discarded warm-up round (full: 5, quick: 2)")
    p.add_argument(
        "--peers", default="zkwire,raw,trio,least,kazoo,aiozk,java", help="comma-separated: " + ",".join(PEERS)
    )
    p.add_argument(
        "--metrics",
        default=",".join(ALL_METRICS),
        help="comma-separated: " + ",".join(ALL_METRICS + list(SCALE)) + " (the scale_* groups only on request)",
    )
    p.add_argument(
        "--scale", action="store_true", help="add every scale_* group to --metrics (see bench/README.md, Metrics)"
    )
    for group in SCALE_GROUPS:
        p.add_argument(
            f"--scale-{group.name.removeprefix('scale_')}",
            metavar="N,N",
            help=f"sizes of {group.name} (default {','.join(str(n) for n in group.sizes)})",
        )
    p.add_argument("--no-codec", action="store_true", help="skip the codec micro-benchmark")
    p.add_argument(
        "--busy-cpus",
        type=int,
        default=0,
        metavar="N",
        help="run N busy loops at nice 19 meanwhile, so no CPU ever idles (a VM's wake-up from idle "
        "otherwise adds to every latency); default 0",
    )
    _add_bound_options(p)
    p.add_argument("--hosts", help="use this running server instead of starting one")
    p.add_argument("--json", type=Path, default=HERE / "results" / "latest.json")
    p.add_argument("--png", type=Path, default=HERE / "results" / "latest.png")
    return p


def _add_bound_options(p: argparse.ArgumentParser) -> None:
    """The options that size the children's waits and the largest rows."""
    p.add_argument("--herd-waiters", type=int, metavar="N", help="waiters in the herd check (default 100)")
    p.add_argument("--mem-waiters", type=int, metavar="N", help="waiting contenders for the per-waiter memory figure")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="bound on any single wait in a child (default 30 s; the scale waiters and sessions add 10 ms per "
        "waiter or session); raise it on a loaded machine",
    )
    p.add_argument(
        "--big-waiters",
        type=int,
        default=10_000,
        metavar="N",
        help="scale_waiters sizes of N or more run in the last --big-rounds rounds only, never as a warm-up "
        "(default 10000: each such round takes minutes per peer)",
    )
    p.add_argument("--big-rounds", type=int, default=1, metavar="K", help="see --big-waiters (default 1)")
    p.add_argument(
        "--big-peers",
        metavar="P,P",
        help="the peers that run the --big-waiters sizes (default: all; aiozk needs many minutes at 10,000)",
    )


class Task(NamedTuple):
    """One column of a round: ``key`` names its results, ``metric`` the peer metric that runs it; a scale
    task has its ``group`` and ``size``."""

    key: str
    metric: str
    group: ScaleGroup | None
    size: int


@dataclass
class Plan:
    """What a run does, from the command line: who, what, how often, with which bounds."""

    peers: list[str]
    metrics: list[str]
    sizes: dict[str, tuple[int, ...]]
    tasks: list[Task]
    params: Params
    rounds: int
    notes: list[str]
    support: dict[str, set[str]]

    @property
    def scale_rows(self) -> list[Row]:
        return [row for g in SCALE_GROUPS if g.name in self.metrics for n in self.sizes[g.name] for row in g.rows(n)]

    @property
    def once(self) -> list[str]:
        """The metrics run once per peer after the rounds."""
        return [m for m in ONCE_METRICS if m in self.metrics]

    def unsupported(self) -> list[str]:
        """Per peer, the tasks and once-metrics it does not run."""
        out = sorted(
            f"{p}: {', '.join(t.key for t in self.tasks if t.metric not in self.support[p])}"
            for p in self.peers
            if {t.metric for t in self.tasks} - self.support[p]
        )
        return out + sorted(
            f"{p}: {', '.join(m for m in self.once if m not in self.support[p])}"
            for p in self.peers
            if set(self.once) - self.support[p]
        )


def plan(args: argparse.Namespace, p: argparse.ArgumentParser) -> Plan:
    """The run the arguments ask for; a wrong argument ends the program through ``p.error``."""
    peers = [x for x in args.peers.split(",") if x]
    metrics = [m for m in args.metrics.split(",") if m]
    if args.scale:
        metrics += [g for g in SCALE if g not in metrics]
    for peer in peers:
        if peer not in PEERS:
            p.error(f"unknown peer {peer!r}")
    for m in metrics:
        if m not in ALL_METRICS and m not in SCALE:
            p.error(f"unknown metric {m!r}")
    sizes = {group.name: _sizes(args, p, group) for group in SCALE_GROUPS}
    tasks = [Task(m, m, None, 0) for m in ROUND_METRICS if m in metrics]
    tasks += [Task(g.key(n), g.peer_metric, g, n) for g in SCALE_GROUPS if g.name in metrics for n in sizes[g.name]]
    params = QUICK if args.quick else FULL
    if args.herd_waiters is not None:
        params = dataclasses.replace(params, waiters=max(1, args.herd_waiters))
    if args.mem_waiters is not None:
        params = dataclasses.replace(params, mem_waiters=max(1, args.mem_waiters))
    if args.timeout is not None:
        params = dataclasses.replace(params, timeout=max(1.0, args.timeout))
    rounds = max(1, args.rounds if args.rounds is not None else (2 if args.quick else 5))
    notes: list[str] = []
    if "java" in peers and (why := java_peer.missing()):
        notes.append(f"java peer skipped: {why}")
        peers.remove("java")
    support = {peer: set(PEERS[peer][2]) for peer in peers}
    return Plan(peers, metrics, sizes, tasks, params, rounds, notes, support)


def _sizes(args: argparse.Namespace, p: argparse.ArgumentParser, group: ScaleGroup) -> tuple[int, ...]:
    """The sizes given for ``group`` (``--scale-<name>``), or its defaults."""
    option = group.name.removeprefix("scale_")
    given = getattr(args, "scale_" + option)
    try:
        sizes = tuple(int(x) for x in given.split(",") if x) if given else group.sizes
    except ValueError:
        p.error(f"--scale-{option}: comma-separated integers")
    if any(n < 1 for n in sizes):
        p.error(f"--scale-{option}: sizes must be positive")
    return sizes


Results = dict[str, dict[str, list[dict[str, Any]]]]


@dataclass
class Run:
    """What a run measured, and where."""

    results: Results
    hosts: str = ""
    server_how: str = ""
    server_info: str = ""
    codec: dict[str, Any] | None = None


def run_all(pl: Plan, args: argparse.Namespace) -> Run:
    """Start the server (unless ``--hosts``) and the Java compiler, run the rounds, the once-metrics and the
    codec micro-benchmark, then stop what was started."""
    spinners = [
        subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", SPIN.format(parent=os.getpid())])
        for _ in range(max(0, args.busy_cpus))
    ]
    server = Server()
    results: Results = {m: {p: [] for p in pl.peers} for m in pl.metrics if m not in SCALE}
    results.update({t.key: {p: [] for p in pl.peers} for t in pl.tasks if t.group is not None})
    run = Run(results)
    tmp = tempfile.TemporaryDirectory(prefix="zkbench-java-")
    try:
        # Compile while the server starts.
        javac, java_cp = java_peer.start_compile(Path(tmp.name)) if "java" in pl.peers else (None, None)
        if args.hosts:
            run.hosts, server.how = args.hosts, "given with --hosts"
        else:
            server.start()
            run.hosts = server.hosts
        run.server_how = server.how
        if javac is not None and javac.wait(300) != 0:
            raise RuntimeError("javac failed on bench/java/ZkBench.java")
        from peers import four_letter_word

        run.server_info = four_letter_word(run.hosts, "srvr").splitlines()[0]
        path = _prepare(run.hosts)
        log(f"server {run.hosts} ({server.how}); {run.server_info}; {pl.rounds} rounds; peers {','.join(pl.peers)}")
        _prepare_scale_nodes(pl, run.hosts, path)
        run_rounds(pl, args, run, path, java_cp)
        for metric in pl.once:
            for peer in pl.peers:
                if metric in pl.support[peer]:
                    figure = run_child(peer, metric, run.hosts, path, pl.params, java_cp)
                    log(f"once     {metric:<14} {peer:<7} {_brief(figure)}")
                    results[metric][peer].append(figure)
        if not args.no_codec and "zkwire" in pl.peers:
            log("codec micro-benchmark (bench/codec_bench.py)")
            run.codec = run_codec(args.quick)
    finally:
        server.stop()
        tmp.cleanup()
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return run


def _prepare_scale_nodes(pl: Plan, hosts: str, path: str) -> None:
    """The nodes of the payload and children rows, when the run has them."""
    if "scale_payload" not in pl.metrics and "scale_children" not in pl.metrics:
        return
    t = time.monotonic()
    _prepare_scale(
        hosts,
        path,
        pl.sizes["scale_payload"] if "scale_payload" in pl.metrics else (),
        pl.sizes["scale_children"] if "scale_children" in pl.metrics else (),
    )
    log(f"scale nodes created under {path} in {time.monotonic() - t:.1f} s")


def run_rounds(pl: Plan, args: argparse.Namespace, run: Run, path: str, java_cp: str | None) -> None:
    """The interleaved rounds: each task for every peer in turn, round after round; the first round is a
    warm-up (its figures are logged, not kept) unless it is the only one or runs a big size."""
    for r in range(pl.rounds):
        for task in pl.tasks:
            for peer in pl.peers:
                big = task.group is not None and task.group.name == "scale_waiters" and task.size >= args.big_waiters
                if task.metric not in pl.support[peer] or (big and _skips_big(args, pl.rounds, r, peer)):
                    continue
                child_params = task.group.params(pl.params, task.size) if task.group else pl.params
                child_path = task.group.path(path, task.size) if task.group else path
                figure = run_child(peer, task.metric, run.hosts, child_path, child_params, java_cp)
                figure["round"] = r
                tag = "warm-up" if r == 0 and pl.rounds > 1 else f"round {r}"
                log(f"{tag:<8} {task.key:<22} {peer:<7} {_brief(figure)}")
                if r > 0 or pl.rounds == 1 or big:
                    run.results[task.key][peer].append(figure)


def _skips_big(args: argparse.Namespace, rounds: int, r: int, peer: str) -> bool:
    """A big waiters size runs in the last ``--big-rounds`` rounds only, never as a warm-up, and only for
    the ``--big-peers``."""
    if r < rounds - max(1, args.big_rounds) or (r == 0 and rounds > 1):
        return True
    return bool(args.big_peers) and peer not in args.big_peers.split(",")


@dataclass
class Tables:
    """A run's figures summarised: medians, the Markdown tables and their verdicts, what failed."""

    med: dict[str, dict[str, dict[str, float | None]]]
    md: str
    verdicts: list[dict[str, Any]]
    scale_md: str
    scale_verdicts: list[dict[str, Any]]
    codec_md: str
    unsupported: list[str]
    errors: list[str]


def tables(pl: Plan, run: Run) -> Tables:
    results = run.results
    med = medians(results)
    md, verdicts = table(med, pl.peers, pl.metrics, results=results)
    scale_rows = pl.scale_rows
    scale_md, scale_verdicts = table(med, pl.peers, list(results), scale_rows, results) if scale_rows else ("", [])
    errors = [
        f"{peer} {metric}: {r['error']}"
        for metric, by_peer in results.items()
        for peer, runs in by_peer.items()
        for r in runs
        if "error" in r
    ]
    return Tables(med, md, verdicts, scale_md, scale_verdicts, codec_table(run.codec), pl.unsupported(), errors)


def report(pl: Plan, args: argparse.Namespace, run: Run, elapsed: float, load_at_start: tuple[float, ...]) -> int:
    """Print the tables (stdout), write the JSON and the chart; 1 if a child run failed."""
    t = tables(pl, run)
    info = machine()
    info["load_avg_at_start"] = load_at_start
    info["load_avg_at_end"] = os.getloadavg()
    print(_header(pl, args, run, info, elapsed) + "\n")
    if t.md:
        print(t.md)
    if t.scale_md:
        print("\nScale:\n\n" + t.scale_md)
    if t.codec_md:
        print("\n" + t.codec_md)
    for n in pl.notes + [f"n/a: {u}" for u in t.unsupported] + [f"error: {e}" for e in t.errors]:
        print(f"\n- {n}", end="")
    print()
    write_json(pl, args, run, t, info, elapsed)
    log(f"JSON written to {args.json}")
    log(chart(t.med, pl.peers, args.png))
    return 1 if t.errors else 0


def write_json(pl: Plan, args: argparse.Namespace, run: Run, t: Tables, info: dict[str, Any], elapsed: float) -> None:
    """The JSON of the run (``--json``): the machine, the server, the parameters, every round's figures,
    the medians and ranges, the verdicts and the tables."""
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "mode": "quick" if args.quick else "full",
        "rounds": pl.rounds,
        "busy_cpus": args.busy_cpus,
        "measured_rounds": max(1, pl.rounds - 1) if pl.rounds > 1 else 1,
        "elapsed_s": elapsed,
        "machine": info,
        "server": {"how": run.server_how, "srvr": run.server_info, "settings": Server.SETTINGS, "hosts": run.hosts},
        "params": pl.params.to_json(),
        "peers": pl.peers,
        "scale_sizes": {g: list(n) for g, n in pl.sizes.items() if g in pl.metrics},
        "medians": t.med,
        "spreads": spreads(run.results),
        "runs": run.results,
        "verdicts": t.verdicts,
        "scale_verdicts": t.scale_verdicts,
        "scale_markdown": t.scale_md,
        "codec": run.codec,
        "markdown": t.md,
        "codec_markdown": t.codec_md,
        "notes": pl.notes,
        "unsupported": t.unsupported,
        "errors": t.errors,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2, default=str))


def _header(pl: Plan, args: argparse.Namespace, run: Run, info: dict[str, Any], elapsed: float) -> str:
    """The line above the tables: when, where, what kind of run, how loaded."""
    load_at_start, load_at_end = info["load_avg_at_start"], info["load_avg_at_end"]
    return (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {info['cores']} cores ({info['cpu']}), Python {info['python']}, "
        f"{info['java']}; server {run.server_info} standalone on loopback, tickTime 2000, forceSync=no; "
        f"{'quick' if args.quick else 'full'} run, {max(1, pl.rounds - 1)} measured round(s) "
        f"(+1 warm-up discarded), medians; {args.busy_cpus} niced busy loop(s); {elapsed:.0f} s; "
        f"load average {load_at_start[0]:.2f} at start, "
        f"{load_at_end[0]:.2f} at end"
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    p = parser()
    args = p.parse_args()
    pl = plan(args, p)
    started = time.monotonic()
    load_at_start = os.getloadavg()
    run = run_all(pl, args)
    return report(pl, args, run, time.monotonic() - started, load_at_start)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _brief(figure: dict[str, Any]) -> str:
    if "error" in figure:
        return "ERROR " + figure["error"].strip().splitlines()[-1][:200] if figure["error"].strip() else "ERROR"
    return ", ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in figure.items())


def _prepare(hosts: str) -> str:
    """Create the benchmark's node (100 bytes of data), unique to this run; return its path."""
    from peers.raw_peer import CREATE, RawConnection

    from zkwire.acl import OPEN_ACL_UNSAFE
    from zkwire.protocol.records import CreateRequest

    path = f"/zkbench-{os.getpid()}-{int(time.time())}"
    conn = RawConnection(hosts)
    try:
        conn.call(CREATE, CreateRequest(path, bytes(range(100)), OPEN_ACL_UNSAFE, 0))
    finally:
        conn.close()
    return path


def _prepare_scale(hosts: str, path: str, payloads: tuple[int, ...], children: tuple[int, ...]) -> None:
    """Create the nodes of the scale rows under ``path``, once per run: one node per payload size with
    that many bytes, one node per count with that many children (5-digit names, empty data), created in
    pipelined batches of 1,000 over a raw connection."""
    from peers.raw_peer import _HEADER, CREATE, RawConnection

    from zkwire.acl import OPEN_ACL_UNSAFE
    from zkwire.protocol.codec import encode_request
    from zkwire.protocol.records import CreateRequest

    conn = RawConnection(hosts)
    try:
        for size in payloads:
            conn.call(CREATE, CreateRequest(payload_path(path, size), bytes(size), OPEN_ACL_UNSAFE, 0))
        for count in children:
            parent = children_path(path, count)
            conn.call(CREATE, CreateRequest(parent, b"", OPEN_ACL_UNSAFE, 0))
            width = max(5, len(str(count - 1)))
            for start in range(0, count, 1000):
                batch = range(start, min(count, start + 1000))
                conn.sock.sendall(
                    b"".join(
                        encode_request(
                            conn.next_xid(), CREATE, CreateRequest(f"{parent}/{i:0{width}d}", b"", OPEN_ACL_UNSAFE, 0)
                        )
                        for i in batch
                    )
                )
                for _ in batch:
                    err = _HEADER.unpack_from(conn.frame())[2]
                    if err:
                        raise RuntimeError(f"creating the children of {parent}: server error {err}")
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
