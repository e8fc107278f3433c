"""The cost of a SASL handshake, beside the peers in the same run: time from a new session to its first
answered request, plain and with DIGEST-MD5, for zkwire, kazoo (+ pure-sasl) and the Java client; and
whether a SASL session's requests cost what a plain session's do (zkwire, sequential exists).

One server (the project's launcher, SASL offered but not required, so plain sessions work too); the
clients take turns in ABBA order per round (the machine's load drifts).  Prints a table of medians and,
with ``--json FILE``, every sample.  Dated results go in bench/results/.

    .venv/bin/python bench/handshake.py --rounds 4 --sessions 40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import zkwire  # noqa: E402
from zkwire.sasl import DigestMD5  # noqa: E402
from zkwire.testing.embedded import EmbeddedZooKeeper  # noqa: E402
from zkwire.testing.secured import digest_login_section, jaas_value, sasl_server_options, write_jaas  # noqa: E402

USER, PASSWORD = "bench", "bench-password"
SHARE = Path("/usr/share/java")
JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar")

#: One measurement: per-session wall times (s) and the client's CPU per session (s).
Sample = tuple[list[float], float]


def zkwire_sessions(hosts: str, sasl: bool, warmup: int, count: int) -> Sample:
    mechanism = DigestMD5(USER, PASSWORD) if sasl else None

    async def one() -> float:
        start = time.perf_counter()
        async with zkwire.open_client(hosts, sasl=mechanism) as zk:
            await zk.exists("/")
            return time.perf_counter() - start

    async def main() -> Sample:
        for _ in range(warmup):
            await one()
        cpu = time.process_time()
        walls = [await one() for _ in range(count)]
        return walls, (time.process_time() - cpu) / count

    return trio.run(main)


def kazoo_sessions(hosts: str, sasl: bool, warmup: int, count: int) -> Sample:
    from kazoo.client import KazooClient

    options = {"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD} if sasl else None

    def one() -> float:
        start = time.perf_counter()
        client = KazooClient(hosts=hosts, timeout=10, sasl_options=options)
        client.start(timeout=20)
        client.exists("/")
        wall = time.perf_counter() - start
        client.stop()
        client.close()
        return wall

    for _ in range(warmup):
        one()
    cpu = time.process_time()
    walls = [one() for _ in range(count)]
    return walls, (time.process_time() - cpu) / count


def java_sessions(classes: Path, jaas: Path, hosts: str, sasl: bool, warmup: int, count: int) -> Sample:
    cp = ":".join([str(classes), *(str(SHARE / j) for j in JARS), f"{SHARE}/*"])
    flags = [f"-Djava.security.auth.login.config={jaas}"] if sasl else ["-Dzookeeper.sasl.client=false"]
    cmd = ["java", "-Xshare:auto", *flags, "-cp", cp, "HandshakeBench", hosts, str(warmup), str(count)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout.split("\n")
    walls = [int(line.split()[1]) / 1e9 for line in out if line.startswith("wall ")]
    cpu = next(int(line.split()[1]) for line in out if line.startswith("cpu ")) / 1e9
    return walls, cpu / count


def request_cost(hosts: str, sasl: bool, calls: int) -> Sample:
    """Sequential exists on one session: each call's wall time, and the CPU per call."""
    mechanism = DigestMD5(USER, PASSWORD) if sasl else None

    async def main() -> Sample:
        async with zkwire.open_client(hosts, sasl=mechanism) as zk:
            for _ in range(200):
                await zk.exists("/")
            walls = []
            cpu = time.process_time()
            for _ in range(calls):
                start = time.perf_counter()
                await zk.exists("/")
                walls.append(time.perf_counter() - start)
            return walls, (time.process_time() - cpu) / calls

    return trio.run(main)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=4, help="ABBA rounds (default 4)")
    parser.add_argument("--sessions", type=int, default=40, help="measured sessions per client per round")
    parser.add_argument("--warmup", type=int, default=5, help="sessions before measuring, per run")
    parser.add_argument("--calls", type=int, default=5000, help="sequential requests per request-cost run")
    parser.add_argument("--peers", default="zkwire,kazoo,java", help="comma list of zkwire, kazoo, java")
    parser.add_argument("--json", type=Path, help="write every sample here")
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]
    work = Path(tempfile.mkdtemp(prefix="zkwire-handshake-"))
    server_jaas = write_jaas(work / "server.conf", {"Server": digest_login_section({USER: PASSWORD})})
    client_jaas = write_jaas(
        work / "client.conf",
        {
            "Client": "org.apache.zookeeper.server.auth.DigestLoginModule required "
            f"username={jaas_value(USER)} password={jaas_value(PASSWORD)};"
        },
    )
    classes = work / "classes"
    if "java" in peers:
        cp = ":".join(str(SHARE / j) for j in JARS)
        subprocess.run(
            ["javac", "-nowarn", "-d", str(classes), "-cp", cp, str(ROOT / "bench/java/HandshakeBench.java")],
            check=True,
        )
    server = EmbeddedZooKeeper(sasl_server_options(server_jaas, required=False), max_session_timeout_ms=60_000)
    server.start()
    runners: dict[str, Callable[[bool], Sample]] = {
        "zkwire": lambda sasl: zkwire_sessions(server.hosts, sasl, args.warmup, args.sessions),
        "kazoo": lambda sasl: kazoo_sessions(server.hosts, sasl, args.warmup, args.sessions),
        "java": lambda sasl: java_sessions(classes, client_jaas, server.hosts, sasl, args.warmup, args.sessions),
    }
    samples: dict[str, list[Sample]] = {}
    try:
        for r in range(args.rounds):
            order = [(p, s) for p in peers for s in (False, True)]
            if r % 2:
                order.reverse()
            for peer, sasl in order:
                key = f"{peer} {'DIGEST-MD5' if sasl else 'plain'}"
                samples.setdefault(key, []).append(runners[peer](sasl))
                print(f"round {r + 1}: {key} done", file=sys.stderr, flush=True)
            for sasl in (False, True) if r % 2 == 0 else (True, False):
                key = f"zkwire requests on a {'DIGEST-MD5' if sasl else 'plain'} session"
                samples.setdefault(key, []).append(request_cost(server.hosts, sasl, args.calls))
    finally:
        server.stop()
    print(f"{'':44} {'median wall':>12} {'p90 wall':>10} {'CPU/each':>10}   (medians over {args.rounds} rounds)")
    for key, runs in samples.items():
        walls = sorted(w for run in runs for w in run[0])
        unit, scale = ("µs", 1e6) if "requests" in key else ("ms", 1e3)
        med = statistics.median(walls) * scale
        p90 = walls[int(len(walls) * 0.9)] * scale
        cpu = statistics.median(run[1] for run in runs) * scale
        print(f"{key:44} {med:9.2f} {unit} {p90:7.2f} {unit} {cpu:7.2f} {unit}")
    if args.json:
        args.json.write_text(json.dumps({k: [{"walls": w, "cpu": c} for w, c in v] for k, v in samples.items()}))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
