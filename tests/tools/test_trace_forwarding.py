"""Forwarding through ``zkwire trace`` is not delayed by decoding, on the real server: while other sessions'
large replies (multiRead of 10,000 results, seconds of decoding each) go through the tracer, the time
of a ~1 MB getData right after a large reply on the same connection, and of other connections' small
requests, stays within 10 ms of the direct path (medians of bounded repetitions, direct and proxied
taking turns in the same test)."""

from __future__ import annotations

import io
import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from helpers.tracerproc import TracerProcess, decoding_processes

import zkwire
from zkwire.sansio.ops import GetData

#: Rounds of each measurement (direct and proxied take turns).
ROUNDS = 9
PINGS = 40
#: The largest difference of medians allowed (seconds).
BOUND = 0.010

_LOAD = """
import sys, time, trio, zkwire
from zkwire.sansio.ops import GetData

async def main(hosts: str, path: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    async with zkwire.open_client(hosts) as zk:
        while time.monotonic() < deadline:
            await zk.multi_read([GetData(path)] * 10_000)

trio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3]))
"""


async def _large_and_small(hosts: str, path: str) -> tuple[str, str]:
    """Under ``path``: a node of about 1 MB and one of 20 bytes; their paths."""
    big, small = path + "/big", path + "/small"
    async with zkwire.open_client(hosts) as zk:
        await zk.create(path, b"")
        await zk.create(big, b"x" * 1_000_000)
        await zk.create(small, b"d" * 20)
    return big, small


async def _timed(call: object) -> float:
    start = trio.current_time()
    await call  # type: ignore[misc]
    return trio.current_time() - start


async def test_decoding_large_replies_does_not_delay_forwarding(zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    big, small = await _large_and_small(zk_hosts, zk_path)
    output = (tmp_path / "trace.out").open("w")
    tracer = TracerProcess(zk_hosts, "--json", stdout=output)
    big_times: dict[str, list[float]] = {"direct": [], "proxied": []}
    ping_times: dict[str, list[float]] = {"direct": [], "proxied": []}
    load = await trio.lowlevel.open_process([sys.executable, "-c", _LOAD, tracer.hosts, small, "120"])
    try:
        async with (
            zkwire.open_client(zk_hosts) as direct,
            zkwire.open_client(tracer.hosts) as proxied,
            zkwire.open_client(zk_hosts) as direct_ping,
            zkwire.open_client(tracer.hosts) as proxied_ping,
        ):
            with trio.fail_after(120):
                await trio.sleep(1.0)  # the load's first large replies are being decoded
                for _ in range(ROUNDS):
                    for name, client in (("direct", direct), ("proxied", proxied)):
                        await client.multi_read([GetData(small)] * 10_000)  # a large reply just before
                        big_times[name].append(await _timed(client.get_data(big)))
                for _ in range(PINGS):
                    for name, client in (("direct", direct_ping), ("proxied", proxied_ping)):
                        ping_times[name].append(await _timed(client.exists(small)))
                        await trio.sleep(0.01)
            assert load.poll() is None, "the load ended early: nothing was being decoded"
    finally:
        load.kill()
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await load.wait()
        tracer.stop()
        output.close()
    objs = [json.loads(line) for line in (tmp_path / "trace.out").read_text().splitlines()]
    assert any(o.get("op_name") == "multiRead" for o in objs)  # large replies were being decoded
    for what, times in (("1 MB getData", big_times), ("small request", ping_times)):
        direct_median, proxied_median = statistics.median(times["direct"]), statistics.median(times["proxied"])
        print(f"{what}: direct {direct_median * 1e3:.2f} ms, proxied {proxied_median * 1e3:.2f} ms (medians)")
        assert proxied_median - direct_median <= BOUND, (what, direct_median, proxied_median, times)


async def test_the_latency_reported_for_a_reply_after_a_large_one_is_the_servers(
    zk_hosts: str, zk_path: str, tmp_path: Path
) -> None:
    # The same connection: a multiRead reply of 6,000 results (a second or more of decoding), then a
    # ~1 MB getData.  Its latency in the tracer's output is the time its bytes passed the proxy, within
    # 10 ms of the direct path's, not the time decoding got to them.
    big, small = await _large_and_small(zk_hosts, zk_path)
    output = (tmp_path / "trace.out").open("w")
    tracer = TracerProcess(zk_hosts, "--json", "--max-line", "0", stdout=output)
    direct_times: list[float] = []
    try:
        async with zkwire.open_client(zk_hosts) as direct, zkwire.open_client(tracer.hosts) as proxied:
            with trio.fail_after(120):
                for _ in range(5):
                    await direct.multi_read([GetData(small)] * 6_000)
                    direct_times.append(await _timed(direct.get_data(big)))
                    await proxied.multi_read([GetData(small)] * 6_000)
                    await proxied.get_data(big)

        def decoded() -> list[dict[str, object]]:
            lines = (tmp_path / "trace.out").read_text().splitlines()
            objs = [json.loads(line) for line in lines if line.endswith("}")]
            replies = [o for o in objs if o.get("op_name") == "getData" and o.get("kind") == "reply"]
            return [o for o in replies if int(o["size"]) > 900_000]  # type: ignore[call-overload]

        with trio.fail_after(60):  # decoding catches up, later
            while len(decoded()) < 5:
                await trio.sleep(0.2)
    finally:
        tracer.stop()
        output.close()
    reported = [float(o["latency"]) for o in decoded()]  # type: ignore[arg-type]
    print(f"direct {statistics.median(direct_times) * 1e3:.2f} ms, tracer reported {[r * 1e3 for r in reported]} ms")
    assert statistics.median(reported) <= statistics.median(direct_times) + BOUND, (reported, direct_times)


async def test_a_tracer_stopped_with_a_backlog_keeps_its_statistics_and_stops_in_time(
    zk_hosts: str, zk_path: str
) -> None:
    from helpers.addresses import first_server

    from zkwire.trace.stats import TraceStats
    from zkwire.trace.tracer import TraceOptions, serve_trace

    stats = TraceStats()
    options = TraceOptions(out=io.StringIO(), stats=stats, show_frames=False, drain_seconds=0.3)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), first_server(zk_hosts), options)
        async with zkwire.open_client(f"127.0.0.1:{port}") as zk:
            await zk.create(zk_path, b"d" * 20)
            with trio.fail_after(10):  # the create is counted (in the decoding process) before the backlog
                while True:
                    options.summary(always=True)
                    await trio.sleep(0.2)
                    if '"create"' in options.out.getvalue() or "create 1" in options.out.getvalue():  # type: ignore[attr-defined]
                        break
            for _ in range(4):
                await zk.multi_read([GetData(zk_path)] * 6_000)  # seconds of decoding queued
        stopped = trio.current_time()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - stopped < 0.3 + 3.0 + 2.0
    assert stats.requests["create"] == 1  # the statistics came back from the decoding process


async def test_forwarding_goes_on_when_the_decoding_process_dies(
    zk_hosts: str, zk_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers.addresses import first_server

    from zkwire.trace.tracer import TraceOptions, serve_trace

    out = io.StringIO()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_trace, ("127.0.0.1", 0), first_server(zk_hosts), TraceOptions(out=out))
        [pid] = decoding_processes()
        os.kill(pid, signal.SIGKILL)
        with trio.fail_after(20):
            while "decoding process ended" not in capsys.readouterr().err:
                await trio.sleep(0.05)
            async with zkwire.open_client(f"127.0.0.1:{port}") as zk:
                await zk.create(zk_path, b"still forwarded")
                assert (await zk.get_data(zk_path))[0] == b"still forwarded"
        nursery.cancel_scope.cancel()


async def test_the_proxy_verifies_with_both_readings_when_asked(zk_hosts: str, zk_path: str) -> None:
    """``zkwire trace --verify``: the decoding process reads every record both ways and the summary counts them."""
    tracer = TracerProcess(zk_hosts, "--verify", stdout=subprocess.PIPE)
    try:
        async with zkwire.open_client(tracer.hosts) as zk:
            await zk.create(zk_path, b"v")
            await zk.set_data(zk_path, b"w")
            assert (await zk.get_data(zk_path))[0] == b"w"
            await zk.get_children(zk_path)
            await zk.delete(zk_path)
    finally:
        code, err = tracer.stop()
    text = tracer.output.decode()
    assert code == 130 and err == b"", err.decode()
    [line] = [line for line in text.splitlines() if line.startswith("== verify:")]
    verified = int(line.split()[2])
    assert verified >= 12 and line.endswith(" 0 disagreements"), line
    assert "VERIFY" not in text and "create" in text


async def test_the_proxy_one_line_view_reads_the_records_it_shows(zk_hosts: str, zk_path: str) -> None:
    """Without ``-v``/``--json`` the decoding process reads the records its lines show, and the lines say
    what those records hold (the mode of a create and the node it made)."""
    tracer = TracerProcess(zk_hosts, stdout=subprocess.PIPE)
    try:
        async with zkwire.open_client(tracer.hosts) as zk:
            await zk.create(zk_path, b"v", ephemeral=True)
    finally:
        code, err = tracer.stop()
    text = tracer.output.decode()
    assert code == 130 and err == b"", err.decode()
    assert "[mode ephemeral]" in text and f"[created {zk_path}]" in text, text


async def test_after_the_decoding_process_died_nothing_is_queued_for_it() -> None:
    """A proxy that runs on without decoding must not keep what it would have sent the process: the
    connections' notes and ends were queued for ever before."""
    from zkwire.trace.output import TraceOptions
    from zkwire.trace.worker import TracedConnection, open_decoding_worker

    async with open_decoding_worker(TraceOptions(out=io.StringIO())) as worker:
        [pid] = decoding_processes()
        os.kill(pid, signal.SIGKILL)
        with trio.fail_after(20):
            while not worker._ended.is_set():
                await trio.sleep(0.05)
        await trio.sleep(0.1)  # the feeding task has seen the pipe break and cleared what it held
        for n in range(1000):
            conn = TracedConnection(n)
            worker.open(conn, "127.0.0.1:1")
            worker.note(n, "a note")
            worker.finish(conn, 0.0)
        assert len(worker._jobs) == 0
