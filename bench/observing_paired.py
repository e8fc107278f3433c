"""What observing costs, measured in one process: one client, one connection, the observer settings taking
turns in short blocks, so that the machine's drift (other work, frequency, the server's state) is shared
by the settings compared.

``bench/observing.py`` gives each setting a child process of its own; on a shared 2-core machine its
rounds spread by 10-15 %, more than the differences it is after.  Here each round runs a block of
``--ops`` sequential getData calls (then ``--pipelined`` calls from 64 tasks) under each setting in turn
(the order alternates between rounds), attaching the setting's observers before the block and
detaching them after it; a block's client CPU (process time, the observers' delivery thread included,
measured after ``flush_observers``) is divided by its requests.  Each round's ratio is a setting's block
against the no-observer block of the same round; the median of those ratios over ``--rounds`` rounds is
reported, with their quartiles.

``sdk-record`` attaches no observer: the loop itself calls the OpenTelemetry SDK's ``Histogram.record``
once per request, with the four attributes the adapter gives ``db.client.operation.duration`` (an
in-memory reader): the SDK's share of any adapter, paid in the caller's thread.

    .venv/bin/python bench/observing_paired.py [--rounds 30] [--ops 1000] [--pipelined 6400]
                                               [--settings none,noop,otel-metrics] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from observing import PATH, _observers  # noqa: E402  (the settings' observers, as the other bench)

SETTINGS = ("none", "noop", "otel-metrics", "otel-spans", "sdk-record")
TASKS = 64


async def _rounds(hosts: str, args: argparse.Namespace, settings: list[str]) -> dict[str, dict[str, list[float]]]:
    import trio

    import zkwire
    from zkwire.observing.otel import OpenTelemetryObserver

    made = {s: _observers(s) for s in settings if s != "sdk-record"}  # they live for the whole run
    record = _sdk_record() if "sdk-record" in settings else None
    rows: dict[str, dict[str, list[float]]] = {s: {"seq": [], "pipe": [], "pipe_ops": []} for s in settings}
    async with zkwire.open_client(hosts) as zk:
        await zk.ensure_path(PATH)
        await zk.set_data(PATH, b"x" * 100)

        def attach(setting: str, on: bool) -> None:
            for observer in made[setting][0] if setting in made else ():
                if isinstance(observer, OpenTelemetryObserver):
                    observer.attach(zk) if on else observer.detach(zk)
                else:
                    zk.add_observer(observer) if on else zk.remove_observer(observer)

        async def seq_block(setting: str) -> float:
            cpu = time.process_time()
            if setting == "sdk-record" and record is not None:
                for _ in range(args.ops):
                    started = time.perf_counter()
                    await zk.get_data(PATH)
                    record(time.perf_counter() - started)
            else:
                for _ in range(args.ops):
                    await zk.get_data(PATH)
            await zk.flush_observers()
            return (time.process_time() - cpu) / args.ops

        async def pipe_block() -> tuple[float, float]:
            per_task = args.pipelined // TASKS

            async def reader() -> None:
                for _ in range(per_task):
                    await zk.get_data(PATH)

            cpu, wall = time.process_time(), time.perf_counter()
            async with trio.open_nursery() as nursery:
                for _ in range(TASKS):
                    nursery.start_soon(reader)
            await zk.flush_observers()
            n = per_task * TASKS
            return (time.process_time() - cpu) / n, n / (time.perf_counter() - wall)

        # warm-up: every setting's code paths and the SDK's instruments
        for setting in [s for s in settings if s != "sdk-record"]:
            attach(setting, True)
            for _ in range(300):
                await zk.get_data(PATH)
            await zk.flush_observers()
            attach(setting, False)
        for r in range(args.rounds):
            for setting in settings if r % 2 == 0 else list(reversed(settings)):
                attach(setting, True)
                try:
                    rows[setting]["seq"].append(await seq_block(setting))
                    if args.pipelined and setting != "sdk-record":
                        pipe_cpu, pipe_ops = await pipe_block()
                        rows[setting]["pipe"].append(pipe_cpu)
                        rows[setting]["pipe_ops"].append(pipe_ops)
                finally:
                    attach(setting, False)
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    return rows


def _sdk_record() -> Any:
    """``record(seconds)``: the SDK's histogram record with the adapter's attributes of a getData."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])
    histogram = meters.get_meter("bench").create_histogram("db.client.operation.duration", unit="s")
    attributes = {
        "db.system.name": "zookeeper",
        "db.operation.name": "getData",
        "server.address": "127.0.0.1",
        "server.port": 2181,
    }

    def record(seconds: float) -> None:
        histogram.record(seconds, attributes)

    record.keep = meters  # type: ignore[attr-defined]
    return record


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--pipelined", type=int, default=6400)
    p.add_argument("--settings", default="none,noop,otel-metrics")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    settings = args.settings.split(",")
    if settings[0] != "none" or any(s not in SETTINGS for s in settings):
        p.error(f"--settings: 'none' first, then any of {', '.join(SETTINGS[1:])}")
    import trio

    from zkwire.testing.embedded import EmbeddedZooKeeper

    with EmbeddedZooKeeper() as server:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        rows = trio.run(_rounds, server.hosts, args, settings)
    print(
        f"observing bench (paired blocks), {started}, {args.rounds} rounds, blocks of {args.ops} sequential "
        f"and {args.pipelined} pipelined ({TASKS} tasks) getData"
    )
    print(f"{'setting':14} {'seq CPU/op':>11} {'ratio (q1-q3)':>22} {'pipe CPU/op':>12} {'ratio (q1-q3)':>22}")
    result: dict[str, Any] = {"started": started, "rows": rows, "ratios": {}}
    for s in settings:
        line = f"{s:14} {statistics.median(rows[s]['seq']) * 1e6:9.1f}us "
        ratios: dict[str, tuple[float, float, float]] = {}
        for kind in ("seq", "pipe") if args.pipelined and s != "sdk-record" else ("seq",):
            per_round = [a / b for a, b in zip(rows[s][kind], rows["none"][kind], strict=True)]
            ratios[kind] = _quartiles(per_round)
            q1, med, q3 = ratios[kind]
            if kind == "pipe":
                line += f"{statistics.median(rows[s]['pipe']) * 1e6:10.1f}us "
            line += f"{med:8.3f} ({q1:.3f}-{q3:.3f}) "
        result["ratios"][s] = ratios
        print(line)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
