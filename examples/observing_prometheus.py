"""A zkwire client's metrics served to Prometheus through OpenTelemetry.

The OpenTelemetry SDK's meter provider reads the metrics of an :class:`OpenTelemetryObserver` with the
Prometheus exporter's reader (``PrometheusMetricReader``), which prometheus_client's HTTP server serves on
``http://127.0.0.1:PORT/metrics``; the client makes a few requests in a loop meanwhile::

    python examples/observing_prometheus.py 127.0.0.1:2181 9464 [--seconds 60] [--path /zkwire-example]
    curl -s http://127.0.0.1:9464/metrics | grep -E '^(db_client|zkwire)_'

It needs the ``otel`` extra, the OpenTelemetry SDK and its Prometheus exporter (the ``test`` extra has
them all).  ``docs/observing-otel.rst`` lists what is served.
"""

from __future__ import annotations

import argparse
import sys

import trio
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from prometheus_client import start_http_server

import zkwire
from zkwire.observing.otel import OpenTelemetryObserver


async def traffic(hosts: str, path: str, seconds: float, observer: OpenTelemetryObserver) -> int:
    """Requests for ``seconds``: writes, reads, a read of a missing node (a NoNode error), a
    transaction; the number of rounds made."""
    rounds = 0
    async with zkwire.open_client(hosts, observers=[observer]) as zk:
        observer.attach(zk)  # it sees the session from its first connection; now its gauges too
        await zk.ensure_path(path)
        with trio.move_on_after(seconds):
            while True:
                await zk.set_data(path, str(rounds).encode())
                await zk.get_data(path)
                await zk.get_children(path)
                try:
                    await zk.get_data(f"{path}/missing")
                except zkwire.NoNodeError:
                    pass
                await zk.multi([zkwire.Create(f"{path}/item", b""), zkwire.Delete(f"{path}/item")])
                rounds += 1
                await trio.sleep(0.05)
        await zk.delete(path)
    return rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a zkwire client's metrics to Prometheus.")
    parser.add_argument("hosts", help="ZooKeeper connect string, e.g. 127.0.0.1:2181")
    parser.add_argument("port", type=int, help="port of the /metrics endpoint on 127.0.0.1 (0: any free one)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to make requests (default 60)")
    parser.add_argument("--path", default="/zkwire-example", help="the node the requests use (deleted after)")
    args = parser.parse_args(argv)

    reader = PrometheusMetricReader()  # registers with prometheus_client's default registry
    meters = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "zkwire-example"}))
    observer = OpenTelemetryObserver(meters, spans=False)
    server, _thread = start_http_server(args.port, addr="127.0.0.1")
    print(f"metrics on http://127.0.0.1:{server.server_port}/metrics", flush=True)
    try:
        rounds = trio.run(traffic, args.hosts, args.path, args.seconds, observer)
    finally:
        server.shutdown()
        server.server_close()
        meters.shutdown()
    print(f"{rounds} rounds of requests made")
    return 0


if __name__ == "__main__":
    sys.exit(main())
