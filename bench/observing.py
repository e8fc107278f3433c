"""What observing costs a client: client CPU per sequential getData and pipelined getData ops/s, with no
observer, a no-op observer, the OpenTelemetry adapter (the SDK with an in-memory metric reader; metrics
only, then metrics and spans to an in-memory exporter), and -- with ``--base-tree`` -- the same client
code before observing existed (a checkout of an older commit), all against one ZooKeeper server, each
setting in a child process of its own, the settings interleaved in ABBA order over ``--rounds`` rounds.

Client CPU is the child's whole process time (the observers' delivery thread included), measured after
the observers caught up (``flush_observers``), divided by the requests made.

    git worktree add /tmp/zkwire-base <commit before observing>
    .venv/bin/python bench/observing.py [--rounds 4] [--ops 3000] [--pipelined 20000]
                                        [--base-tree /tmp/zkwire-base] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PATH = "/bench-observing"
SETTINGS = ("base", "none", "noop", "otel-metrics", "otel-spans")


class NoOp:
    def on_event(self, event: object) -> None:
        pass


def _observers(setting: str) -> tuple[list[Any], Any]:
    """The observers of a setting, and what keeps the SDK's providers alive."""
    if setting == "noop":
        return [NoOp()], None
    if setting.startswith("otel"):
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from zkwire.observing.otel import OpenTelemetryObserver

        reader = InMemoryMetricReader()
        meters = MeterProvider(metric_readers=[reader])
        spans = setting == "otel-spans"
        tracers = TracerProvider()
        exporter = InMemorySpanExporter()
        tracers.add_span_processor(SimpleSpanProcessor(exporter))
        observer = OpenTelemetryObserver(meter_provider=meters, tracer_provider=tracers, spans=spans)
        return [observer], (reader, meters, tracers, exporter)
    return [], None


async def _child_main(setting: str, hosts: str, ops: int, pipelined: int) -> dict[str, float]:
    import trio

    import zkwire

    observers, keep = ([], None) if setting == "base" else _observers(setting)
    kwargs: dict[str, Any] = {} if setting == "base" else {"observers": observers}
    async with zkwire.open_client(hosts, **kwargs) as zk:
        for _ in range(500):  # warm-up
            await zk.get_data(PATH)
        flush = getattr(zk, "flush_observers", None)
        if flush is not None:
            await flush()
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(ops):
            await zk.get_data(PATH)
        if flush is not None:
            await flush()
        seq_cpu = (time.process_time() - cpu) / ops
        seq_wall = (time.perf_counter() - wall) / ops

        per_task = pipelined // 64

        async def reader() -> None:
            for _ in range(per_task):
                await zk.get_data(PATH)

        cpu, wall = time.process_time(), time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(64):
                nursery.start_soon(reader)
        if flush is not None:
            await flush()
        n = per_task * 64
        pipe_cpu = (time.process_time() - cpu) / n
        pipe_rate = n / (time.perf_counter() - wall)
    del keep
    assert zkwire.__file__ is not None
    if setting == "base":
        assert not hasattr(zkwire.Client, "add_observer"), zkwire.__file__
    return {
        "seq_cpu_us": seq_cpu * 1e6,
        "seq_wall_us": seq_wall * 1e6,
        "pipe_cpu_us": pipe_cpu * 1e6,
        "pipe_ops": pipe_rate,
    }


def child(setting: str, hosts: str, ops: int, pipelined: int) -> None:
    import trio

    print(json.dumps(trio.run(_child_main, setting, hosts, ops, pipelined)))


def run_child(setting: str, hosts: str, args: argparse.Namespace) -> dict[str, float]:
    tree = args.base_tree if setting == "base" else ROOT
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, __file__, "--child", setting, hosts, str(args.ops), str(args.pipelined)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"child {setting} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--ops", type=int, default=3000)
    p.add_argument("--pipelined", type=int, default=20000)
    p.add_argument("--base-tree", type=Path)
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    settings = [s for s in args.settings.split(",") if s != "base" or args.base_tree is not None]
    sys.path.insert(0, str(ROOT))
    import trio

    import zkwire
    from zkwire.testing.embedded import EmbeddedZooKeeper

    samples: dict[str, list[dict[str, float]]] = {s: [] for s in settings}
    with EmbeddedZooKeeper() as server:

        async def prepare() -> None:
            async with zkwire.open_client(server.hosts) as zk:
                await zk.ensure_path(PATH)
                await zk.set_data(PATH, b"x" * 100)

        trio.run(prepare)
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        for r in range(args.rounds):
            for setting in settings if r % 2 == 0 else list(reversed(settings)):
                samples[setting].append(run_child(setting, server.hosts, args))
                print(f"round {r + 1} {setting:13} {samples[setting][-1]}", file=sys.stderr)
    print(
        f"observing bench, {started}, {args.rounds} rounds, {args.ops} sequential, "
        f"{args.pipelined} pipelined (64 tasks)"
    )
    medians = {s: {k: statistics.median(row[k] for row in samples[s]) for k in samples[s][0]} for s in settings}
    ref = medians["none"]
    head = ("setting", "seq CPU/op", "ratio", "seq wall/op", "pipe CPU/op", "ratio", "pipe ops/s", "ratio")
    print("{:14} {:>12} {:>6} {:>12} {:>12} {:>6} {:>11} {:>6}".format(*head))
    for s in settings:
        m = medians[s]
        print(
            f"{s:14} {m['seq_cpu_us']:10.1f}us {m['seq_cpu_us'] / ref['seq_cpu_us']:6.3f} {m['seq_wall_us']:10.1f}us "
            f"{m['pipe_cpu_us']:10.1f}us {m['pipe_cpu_us'] / ref['pipe_cpu_us']:6.3f} {m['pipe_ops']:11.0f} "
            f"{m['pipe_ops'] / ref['pipe_ops']:6.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"started": started, "samples": samples, "medians": medians}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
