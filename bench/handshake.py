"""The cost of a SASL handshake, beside the peers in the same run: time from a new session to its first
answered request, plain, with DIGEST-MD5 and with GSSAPI (Kerberos), for zkwire, kazoo (+ pure-sasl)
and the Java client; and whether a SASL session's requests cost what a plain session's do (zkwire,
sequential exists).

Two servers (the project's launcher, SASL offered but not required, so plain sessions work too): one
with DIGEST-MD5 users (plain and DIGEST-MD5 sessions), one with the Kerberos principal
``zookeeper/localhost`` of a throw-away MIT KDC (``zkwire.testing.kerberos``; GSSAPI sessions, reached
as ``localhost:<port>``).  A ZooKeeper server offers one SASL mechanism: hence two.  The Kerberos
clients authenticate as ``bench@ZKWIRE.TEST``: zkwire from a ticket cache ``kinit`` filled, the Java
client with a JAAS ``Client`` section (``Krb5LoginModule``, the client's keytab) and
``-Djava.security.krb5.conf``, kazoo through pure-sasl's GSSAPI, which needs the ``kerberos`` package
(``pip install kerberos``; builds against libkrb5-dev): without it kazoo's GSSAPI row is left out,
saying why.  The clients take turns in ABBA order per round (the machine's load drifts).  Prints a
table of medians and, with ``--json FILE``, every sample.  Dated results go in bench/results/.

    .venv/bin/python bench/handshake.py --rounds 4 --sessions 40
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import zkwire  # noqa: E402
from zkwire.sasl import DigestMD5, Kerberos  # noqa: E402
from zkwire.sasl.mechanism import SaslMechanism  # noqa: E402
from zkwire.testing.embedded import EmbeddedZooKeeper  # noqa: E402
from zkwire.testing.kerberos import KerberosRealm, kerberos_missing  # noqa: E402
from zkwire.testing.secured import (  # noqa: E402
    digest_login_section,
    jaas_value,
    kerberos_login_section,
    kerberos_server_options,
    sasl_server_options,
    write_jaas,
)

USER, PASSWORD = "bench", "bench-password"
SHARE = Path("/usr/share/java")
JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar")
#: The session kinds: no SASL, and the two mechanisms.
MODES = ("plain", "DIGEST-MD5", "GSSAPI")

#: One measurement: per-session wall times (s) and the client's CPU per session (s).
Sample = tuple[list[float], float]


@dataclass
class Setup:
    """Where each kind of session goes, and what its clients authenticate with."""

    digest_hosts: str
    work: Path
    kerberos_hosts: str | None = None
    ccache: str | None = None
    client_keytab: Path | None = None
    client_principal: str | None = None
    krb5_conf: Path | None = None

    def hosts(self, mode: str) -> str:
        if mode == "GSSAPI":
            assert self.kerberos_hosts is not None
            return self.kerberos_hosts
        return self.digest_hosts

    def mechanism(self, mode: str) -> SaslMechanism | None:
        if mode == "DIGEST-MD5":
            return DigestMD5(USER, PASSWORD)
        if mode == "GSSAPI":
            return Kerberos(ccache=self.ccache)
        return None


def zkwire_sessions(setup: Setup, mode: str, warmup: int, count: int) -> Sample:
    hosts, mechanism = setup.hosts(mode), setup.mechanism(mode)

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


def kazoo_gssapi_missing() -> str | None:
    """Why kazoo cannot do GSSAPI here (pure-sasl's GSSAPI imports the ``kerberos`` package), or None."""
    try:
        import kerberos  # noqa: F401
    except ImportError:
        return "pure-sasl's GSSAPI needs the kerberos package (pip install kerberos), which is not installed"
    return None


def kazoo_sessions(setup: Setup, mode: str, warmup: int, count: int) -> Sample:
    from kazoo.client import KazooClient

    options: dict[str, str] | None = None
    if mode == "DIGEST-MD5":
        options = {"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD}
    elif mode == "GSSAPI":
        options = {"mechanism": "GSSAPI", "service": "zookeeper"}  # the ticket cache of KRB5CCNAME
    hosts = setup.hosts(mode)

    def one() -> float:
        start = time.perf_counter()
        client = KazooClient(hosts=hosts, timeout=10, sasl_options=dict(options) if options else None)
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


def java_sessions(classes: Path, setup: Setup, mode: str, warmup: int, count: int) -> Sample:
    cp = ":".join([str(classes), *(str(SHARE / j) for j in JARS), f"{SHARE}/*"])
    if mode == "DIGEST-MD5":
        jaas = write_jaas(
            setup.work / "client-digest.conf",
            {
                "Client": "org.apache.zookeeper.server.auth.DigestLoginModule required "
                f"username={jaas_value(USER)} password={jaas_value(PASSWORD)};"
            },
        )
        flags = [f"-Djava.security.auth.login.config={jaas}"]
    elif mode == "GSSAPI":
        assert setup.client_keytab is not None and setup.client_principal is not None
        jaas = write_jaas(
            setup.work / "client-kerberos.conf",
            {"Client": kerberos_login_section(setup.client_keytab, setup.client_principal)},
        )
        flags = [f"-Djava.security.auth.login.config={jaas}", f"-Djava.security.krb5.conf={setup.krb5_conf}"]
    else:
        flags = ["-Dzookeeper.sasl.client=false"]
    hosts = setup.hosts(mode)
    cmd = ["java", "-Xshare:auto", *flags, "-cp", cp, "HandshakeBench", hosts, str(warmup), str(count)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout.split("\n")
    walls = [int(line.split()[1]) / 1e9 for line in out if line.startswith("wall ")]
    cpu = next(int(line.split()[1]) for line in out if line.startswith("cpu ")) / 1e9
    return walls, cpu / count


def request_cost(setup: Setup, mode: str, calls: int) -> Sample:
    """Sequential exists on one session: each call's wall time, and the CPU per call."""
    hosts, mechanism = setup.hosts(mode), setup.mechanism(mode)

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


@contextlib.contextmanager
def kerberos_server(setup: Setup) -> Iterator[None]:
    """A realm (KDC, ``zookeeper/localhost``, the client ``bench`` with a ticket in a cache) and a
    server that offers GSSAPI; this process's Kerberos library points at the realm meanwhile."""
    with KerberosRealm() as realm, realm.activate():
        service = realm.service_principal("zookeeper", "localhost")
        client = realm.user_principal(USER)
        ccache = realm.kinit(client)
        jaas = write_jaas(
            setup.work / "server-kerberos.conf", {"Server": kerberos_login_section(service.keytab, service.name)}
        )
        server = EmbeddedZooKeeper(
            kerberos_server_options(jaas, realm.krb5_conf, required=False), max_session_timeout_ms=60_000
        )
        server.start()
        setup.kerberos_hosts = f"localhost:{server.port}"
        setup.ccache, setup.client_keytab, setup.client_principal = ccache, client.keytab, client.name
        setup.krb5_conf = realm.krb5_conf
        saved = os.environ.get("KRB5CCNAME")
        os.environ["KRB5CCNAME"] = ccache  # kazoo's GSSAPI (pykerberos) reads the default cache
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("KRB5CCNAME", None)
            else:
                os.environ["KRB5CCNAME"] = saved
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=4, help="ABBA rounds (default 4)")
    parser.add_argument("--sessions", type=int, default=40, help="measured sessions per client per round")
    parser.add_argument("--warmup", type=int, default=5, help="sessions before measuring, per run")
    parser.add_argument("--calls", type=int, default=5000, help="sequential requests per request-cost run")
    parser.add_argument("--peers", default="zkwire,kazoo,java", help="comma list of zkwire, kazoo, java")
    parser.add_argument(
        "--modes", default=",".join(MODES), help=f"comma list of {', '.join(MODES)} (GSSAPI needs MIT Kerberos)"
    )
    parser.add_argument("--json", type=Path, help="write every sample here")
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")
    if "GSSAPI" in modes and (missing := kerberos_missing()) is not None:
        parser.error(f"GSSAPI: {missing}")
    left_out: dict[tuple[str, str], str] = {}
    if "GSSAPI" in modes and "kazoo" in peers and (why := kazoo_gssapi_missing()) is not None:
        left_out[("kazoo", "GSSAPI")] = why
    print(f"load average at the start: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="zkwire-handshake-"))
    server_jaas = write_jaas(work / "server.conf", {"Server": digest_login_section({USER: PASSWORD})})
    classes = work / "classes"
    if "java" in peers:
        cp = ":".join(str(SHARE / j) for j in JARS)
        subprocess.run(
            ["javac", "-nowarn", "-d", str(classes), "-cp", cp, str(ROOT / "bench/java/HandshakeBench.java")],
            check=True,
        )
    server = EmbeddedZooKeeper(sasl_server_options(server_jaas, required=False), max_session_timeout_ms=60_000)
    server.start()
    setup = Setup(server.hosts, work)
    runners: dict[str, Callable[[str], Sample]] = {
        "zkwire": lambda mode: zkwire_sessions(setup, mode, args.warmup, args.sessions),
        "kazoo": lambda mode: kazoo_sessions(setup, mode, args.warmup, args.sessions),
        "java": lambda mode: java_sessions(classes, setup, mode, args.warmup, args.sessions),
    }
    samples: dict[str, list[Sample]] = {}
    try:
        with kerberos_server(setup) if "GSSAPI" in modes else contextlib.nullcontext():
            for r in range(args.rounds):
                order = [(p, m) for p in peers for m in modes if (p, m) not in left_out]
                if r % 2:
                    order.reverse()
                for peer, mode in order:
                    key = f"{peer} {mode}"
                    samples.setdefault(key, []).append(runners[peer](mode))
                    print(f"round {r + 1}: {key} done", file=sys.stderr, flush=True)
                for mode in modes if r % 2 == 0 else modes[::-1]:
                    key = f"zkwire requests on a {mode} session"
                    samples.setdefault(key, []).append(request_cost(setup, mode, args.calls))
    finally:
        server.stop()
    print(f"{'':44} {'median wall':>12} {'p90 wall':>10} {'CPU/each':>10}   (medians over {args.rounds} rounds)")
    medians: dict[str, float] = {}
    for key in sorted(samples, key=lambda k: ("requests" in k, k)):
        runs = samples[key]
        walls = sorted(w for run in runs for w in run[0])
        unit, scale = ("µs", 1e6) if "requests" in key else ("ms", 1e3)
        medians[key] = statistics.median(walls)
        p90 = walls[int(len(walls) * 0.9)] * scale
        cpu = statistics.median(run[1] for run in runs) * scale
        print(f"{key:44} {medians[key] * scale:9.2f} {unit} {p90:7.2f} {unit} {cpu:7.2f} {unit}")
    for mode in modes:
        ratios = [
            f"zkwire/{peer} {medians[f'zkwire {mode}'] / medians[f'{peer} {mode}']:.2f}"
            for peer in ("kazoo", "java")
            if f"zkwire {mode}" in medians and f"{peer} {mode}" in medians
        ]
        if ratios:
            print(f"{mode}: median wall {', '.join(ratios)}")
    for (peer, mode), why in left_out.items():
        print(f"{peer} {mode}: left out: {why}")
    if args.json:
        args.json.write_text(json.dumps({k: [{"walls": w, "cpu": c} for w, c in v] for k, v in samples.items()}))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
