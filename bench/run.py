"""Benchmarks: zkwire/zklock beside a raw-socket client, kazoo, aiozk and the Java client / Curator.

``python bench/run.py`` starts a fresh local ZooKeeper (forceSync=no, so the clients' cost is what
differs, not the disk), compiles the Java peer with the machine's javac, then runs every (metric, peer)
pair in interleaved rounds (A B C ... A B C ...), each in a fresh process, discards the first round as
warm-up, and prints a Markdown table of medians with ratios to the Java client (Curator for locks).
Results also go to bench/results/latest.json, and to a PNG chart when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARE = Path("/usr/share/java")
JARS = [
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
]
# metric -> (figure, unit, higher is better, count n per run, full-run n)
METRICS: dict[str, tuple[str, str, bool, int]] = {
    "seq": ("p50_us", "µs", False, 2000),
    "pipelined": ("ops_per_s", "ops/s", True, 20000),
    "create_delete": ("ops_per_s", "ops/s", True, 500),
    "lock_cycle": ("ms", "ms", False, 300),
    "contended": ("grants_per_s", "grants/s", True, 3000),  # n = milliseconds of contention
}
LABELS = {
    "seq": "sequential getData latency, p50",
    "pipelined": "pipelined getData, one session",
    "create_delete": "create+delete (ephemeral sequential)",
    "lock_cycle": "uncontended lock acquire+release",
    "contended": "contended lock, 4 workers / 2 sessions",
}
SUPPORTED = {
    "zkwire": set(METRICS),
    "raw": {"seq", "pipelined"},
    "kazoo": set(METRICS),
    "aiozk": {"seq", "pipelined", "create_delete", "lock_cycle"},
    "java": set(METRICS),
}


def compile_java(out: Path) -> str:
    cp = ":".join(str(SHARE / j) for j in JARS)
    subprocess.run(["javac", "-d", str(out), "-cp", cp, str(HERE / "ZkBench.java")], check=True, timeout=300)
    return f"{out}:{cp}:{SHARE}/*"


def run_child(peer: str, metric: str, hosts: str, path: str, n: int, java_cp: str | None) -> dict[str, float]:
    if peer == "java":
        assert java_cp is not None
        cmd = ["java", "-cp", java_cp, "ZkBench", hosts, metric, path, str(n)]
    else:
        cmd = [sys.executable, str(HERE / "run.py"), "--child", peer, metric, hosts, path, str(n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{peer} {metric} failed: {proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def child(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    from peers import PEERS

    peer, metric, hosts, path, n = argv[0], argv[1], argv[2], argv[3], int(argv[4])
    print(json.dumps(PEERS[peer](metric, hosts, path, n)))
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds including the discarded warm-up round")
    parser.add_argument("--quick", action="store_true", help="2 rounds, smaller counts")
    parser.add_argument("--peers", default="zkwire,raw,kazoo,aiozk,java")
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--hosts", help="use this server instead of starting one")
    parser.add_argument("--json", default=str(HERE / "results" / "latest.json"))
    parser.add_argument("--png", default=str(HERE / "results" / "latest.png"))
    args = parser.parse_args()
    peers = args.peers.split(",")
    metrics = args.metrics.split(",")
    rounds = 2 if args.quick else args.rounds
    scale = 0.25 if args.quick else 1.0

    sys.path.insert(0, str(HERE.parent))
    from zkwire.embedded import EmbeddedZooKeeper

    server = None
    if args.hosts:
        hosts = args.hosts
    else:
        server = EmbeddedZooKeeper(tick_time_ms=2000, jvm_flags=["-XX:TieredStopAtLevel=4", "-Xmx1g"])
        server.start()
        hosts = server.hosts
    try:
        with tempfile.TemporaryDirectory() as tmp:
            java_cp = compile_java(Path(tmp)) if "java" in peers else None
            path = f"/bench-{os.getpid()}"
            _prepare(hosts, path)
            results: dict[str, dict[str, list[dict[str, float]]]] = {m: {p: [] for p in peers} for m in metrics}
            for r in range(rounds):
                for metric in metrics:
                    n = max(1, int(METRICS[metric][3] * scale))
                    for peer in peers:
                        if metric not in SUPPORTED[peer]:
                            continue
                        figure = run_child(peer, metric, hosts, path, n, java_cp)
                        print(f"round {r} {metric:<14} {peer:<7} {figure}", file=sys.stderr, flush=True)
                        if r > 0 or rounds == 1:
                            results[metric][peer].append(figure)
    finally:
        if server is not None:
            server.stop()
    report = _report(results, peers, metrics, hosts, rounds)
    print(report["markdown"])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2))
    _chart(report, Path(args.png))
    return 0


def _prepare(hosts: str, path: str) -> None:
    import trio

    import zkwire

    async def go() -> None:
        async with zkwire.open_client(hosts) as zk:
            await zk.create(path, b"x" * 100)

    trio.run(go)


def _report(
    results: dict[str, dict[str, list[dict[str, float]]]], peers: list[str], metrics: list[str], hosts: str, rounds: int
) -> dict[str, object]:
    medians: dict[str, dict[str, dict[str, float]]] = {}
    for metric in metrics:
        medians[metric] = {}
        for peer in peers:
            runs = results[metric][peer]
            if runs:
                medians[metric][peer] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    head = "| metric | " + " | ".join(peers) + " | zkwire / java |"
    lines = [head, "|" + "---|" * (len(peers) + 2)]
    for metric in metrics:
        figure, unit, higher, _ = METRICS[metric]
        cells = []
        for peer in peers:
            m = medians[metric].get(peer)
            cells.append("n/a" if m is None else f"{m[figure]:,.0f}" if m[figure] >= 100 else f"{m[figure]:.2f}")
        ratio = "n/a"
        z, j = medians[metric].get("zkwire"), medians[metric].get("java")
        if z and j:
            ratio = f"{z[figure] / j[figure]:.2f}x"
        lines.append(
            f"| {LABELS[metric]} ({unit}, {'higher' if higher else 'lower'} is better) | "
            + " | ".join(cells)
            + f" | {ratio} |"
        )
        if metric == "seq":
            p99 = [("n/a" if medians[metric].get(p) is None else f"{medians[metric][p]['p99_us']:,.0f}") for p in peers]
            zr = medians[metric].get("zkwire")
            jr = medians[metric].get("java")
            r99 = f"{zr['p99_us'] / jr['p99_us']:.2f}x" if zr and jr else "n/a"
            lines.append("| sequential getData latency, p99 (µs, lower is better) | " + " | ".join(p99) + f" | {r99} |")
    md = "\n".join(lines)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "server": "ZooKeeper 3.8.0 (Debian), standalone, tickTime 2000, forceSync=no, loopback",
        "rounds_measured": max(1, rounds - 1),
        "medians": medians,
        "markdown": md,
        "hosts": hosts,
    }


def _chart(report: dict[str, object], png: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no chart)", file=sys.stderr)
        return
    medians = report["medians"]
    assert isinstance(medians, dict)
    fig, axes = plt.subplots(1, len(medians), figsize=(4 * len(medians), 3.5))
    for ax, (metric, by_peer) in zip(axes if len(medians) > 1 else [axes], medians.items(), strict=False):
        figure, unit, _, _ = METRICS[metric]
        names = list(by_peer)
        ax.bar(names, [by_peer[p][figure] for p in names])
        ax.set_title(LABELS[metric], fontsize=8)
        ax.set_ylabel(unit)
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
