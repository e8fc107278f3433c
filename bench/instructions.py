"""User-space instructions per sequential getData, counted by valgrind's callgrind: zkwire beside the trio
floor, the blocking raw socket, and ``least``: one trio task doing only what any session client must per
getData (build, encode and remember the request; split, match and decode the reply into a reply event),
so that zkwire's count reads as floor + least work + its layers.  ``zkwire-plain`` (on request) is
zkwire without its fast path (``zkwire.client.fastpath.FAST_PATH`` off: the reader task reads every
reply and wakes the caller).  ``zkwire-noop`` is zkwire with a no-op observer attached (what making and
delivering the events costs: :mod:`zkwire.observing`), ``zkwire-otel`` with the OpenTelemetry adapter's
metrics (the SDK, an in-memory reader), ``zkwire-base`` the zkwire of another checkout
(``--base-tree``: the commit before a change, measured in the same run).

    .venv/bin/python bench/instructions.py [--ops 1000] [--peers zkwire,least,trio,raw,zkwire-plain]
                                           [--hosts H:P] [--base-tree DIR]
                                           [--json out.json]

Client CPU time per request (``bench/run.py``'s seq row) moves by ±20 % between rounds on a shared
2-core machine; an instruction count does not: the same code, server and inputs count the same
instructions whatever else the machine runs.  It leaves out the kernel's share (the system calls, which
every peer pays alike) and says nothing about cache misses, so it complements the CPU row and does not
replace it.

For each peer, a child process runs under ``valgrind --tool=callgrind`` twice: a short run (``--base``
calls) and a long one (``--base`` + ``--ops`` calls) against the same fresh server; the difference of the
two totals divided by ``--ops`` is the cost of one request, without the start-up (imports, connecting).
zkwire's reader is told to stay away for the whole run (``reader_handback``), as it does in a real run of
back-to-back requests: under valgrind each request takes tens of times longer, which would otherwise
bring it back between requests.  Needs valgrind (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PATH = "/bench-instructions"

#: The child: ``python instructions.py --child PEER HOSTS N`` makes N sequential getData calls.
CHILD = "--child"


def child(peer: str, hosts: str, n: int) -> None:
    # zkwire-base: the zkwire of another checkout (--base-tree), e.g. the commit before a change.
    sys.path.insert(0, os.environ["ZKWIRE_BENCH_BASE"] if peer == "zkwire-base" else str(ROOT))
    sys.path.insert(0, str(HERE))
    import trio

    if peer == "raw":
        from peers.raw_peer import GET_DATA, RawConnection

        from zkwire.protocol.codec import encode_request
        from zkwire.protocol.records import GetDataRequest

        conn = RawConnection(hosts)
        record = GetDataRequest(PATH, False)
        for _ in range(n):
            conn.sock.sendall(encode_request(conn.next_xid(), GET_DATA, record))
            conn.frame()
        return

    async def main() -> None:
        import zkwire

        if peer == "least":
            await _least(hosts, n)
            return
        if peer == "trio":
            from peers.raw_peer import GET_DATA, RawConnection
            from peers.trio_peer import _call

            from zkwire.protocol.codec import encode_request
            from zkwire.protocol.records import GetDataRequest

            conn = RawConnection(hosts)
            conn.sock.setblocking(False)
            record = GetDataRequest(PATH, False)
            for _ in range(n):
                await _call(conn, encode_request(conn.next_xid(), GET_DATA, record))
            return
        from zkwire.client import fastpath

        fastpath.FAST_PATH = peer != "zkwire-plain"  # off: the reader task reads every reply
        options: dict[str, object] = {"observers": [_NoOp()]} if peer == "zkwire-noop" else {}
        if peer == "zkwire-otel":
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader

            from zkwire.observing.otel import OpenTelemetryObserver

            meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
            options = {"observers": [OpenTelemetryObserver(meter_provider=meters, spans=False)]}
        async with zkwire.open_client(hosts, **options) as zk:
            if isinstance(zk._driver, fastpath.FastPathDriver):
                zk._driver.reader_handback = 3600.0  # see the module docstring
            for _ in range(n):
                await zk.get_data(PATH)

    trio.run(main)


class _NoOp:
    """An observer that does nothing (zkwire-noop: what delivering the events costs)."""

    def on_event(self, event: object) -> None:
        pass


async def _least(hosts: str, n: int) -> None:
    """bench/peers/least_peer.py's request loop, ``n`` times."""
    from peers.least_peer import LeastClient
    from peers.raw_peer import RawConnection

    conn = RawConnection(hosts)
    conn.sock.setblocking(False)
    client = LeastClient(conn)
    for _ in range(n):
        await client.get_data(PATH)


def count(peer: str, hosts: str, n: int, out_dir: Path) -> int:
    """Instructions of one child run of ``n`` calls."""
    script = str(Path(__file__).resolve())
    return callgrind([script, CHILD, peer, hosts, str(n)], out_dir / f"callgrind.{peer}.{n}", peer)


def callgrind(args: list[str], out: Path, what: str) -> int:
    """User-space instructions of ``python ARGS`` under valgrind's callgrind (its profile goes to ``out``)."""
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    m = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"{what}: callgrind run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(m.group(1))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", type=int, default=1000, help="calls counted per peer (default 1,000)")
    p.add_argument("--base", type=int, default=200, help="calls of the short run that is subtracted (default 200)")
    p.add_argument("--peers", default="zkwire,least,trio,raw")
    p.add_argument("--hosts", help="a running server (default: start a fresh one, as bench/run.py does)")
    p.add_argument("--base-tree", type=Path, help="the checkout whose zkwire the zkwire-base peer runs")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if args.base_tree is not None:
        os.environ["ZKWIRE_BENCH_BASE"] = str(args.base_tree.resolve())
    elif "zkwire-base" in args.peers.split(","):
        p.error("the zkwire-base peer needs --base-tree")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 1
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    from run import Server

    import zkwire

    server = None
    hosts = args.hosts
    if hosts is None:
        server = Server()
        server.start()
        hosts = server.hosts
    try:
        import trio

        async def setup() -> None:
            async with zkwire.open_client(hosts) as zk:
                await zk.ensure_path(PATH, data=b"x" * 100)

        trio.run(setup)
        results: dict[str, float] = {}
        with tempfile.TemporaryDirectory(prefix="zkwire-callgrind-") as tmp:
            for peer in args.peers.split(","):
                short = count(peer, hosts, args.base, Path(tmp))
                long = count(peer, hosts, args.base + args.ops, Path(tmp))
                results[peer] = (long - short) / args.ops
                print(f"{peer:12} {results[peer]:>10,.0f} instructions per getData", flush=True)
    finally:
        if server is not None:
            server.stop()
    floor = results.get("trio")
    if floor and "zkwire" in results:
        print(f"zkwire ÷ trio floor: {results['zkwire'] / floor:.2f}x")
    if floor and "least" in results and "zkwire" in results:
        least, own = results["least"] - floor, results["zkwire"] - floor
        print(f"over the floor: least {least:,.0f}, zkwire {own:,.0f} instructions")
    if args.json:
        args.json.write_text(json.dumps({"ops": args.ops, "base": args.base, "per_getdata": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
