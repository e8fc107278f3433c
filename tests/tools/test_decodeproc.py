"""zkwire.trace.decodeproc, the tracing proxy's decoding process, fed by hand: the configuration, a
connection's bytes with their read times, a note with control characters, the end; what comes back is
the printed lines and the statistics (and nothing when the proxy has gone)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.records import ConnectRequest, GetDataRequest
from zkwire.trace.decodeproc import JOB, RESULT, options_config
from zkwire.trace.output import TraceOptions
from zkwire.trace.stats import TraceStats

ROOT = Path(__file__).resolve().parents[2]


def _job(kind: bytes, conn: int = 1, side: int = 0, now: float = 0.0, payload: bytes = b"", size: int = -1) -> bytes:
    return JOB.pack(kind[0], conn, side, now, 1.7e9, len(payload) if size < 0 else size) + payload


def _results(out: bytes) -> list[tuple[str, bytes]]:
    found = []
    while out:
        kind, size = RESULT.unpack_from(out)
        found.append((chr(kind), out[RESULT.size : RESULT.size + size]))
        out = out[RESULT.size + size :]
    return found


def _run(jobs: bytes) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "zkwire.trace.decodeproc"], input=jobs, capture_output=True, timeout=60, env=env
    )


def test_the_decoding_process_prints_what_it_is_fed_and_sends_its_statistics_back() -> None:
    options = TraceOptions(json_lines=True, stats=TraceStats())
    client = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    client += bytes(encode_request(1, OpCode.GET_DATA, GetDataRequest("/a", False)))
    jobs = _job(b"C", payload=options_config(options, None))
    jobs += _job(b"O", payload=b"127.0.0.1:5555")
    jobs += _job(b"N", payload=b"a note \x1b[31m")
    jobs += _job(b"D", now=0.25, payload=client)
    jobs += _job(b"K", side=1, now=0.5, size=100)
    jobs += _job(b"S", side=1)  # a summary, always
    jobs += _job(b"F", now=1.0)
    jobs += _job(b"E", conn=0)
    done = _run(jobs)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    results = _results(done.stdout)
    lines = [json.loads(line) for kind, text in results if kind == "T" for line in text.decode().splitlines()]
    assert [o["op_name"] for o in lines if o["kind"] not in ("connection", "summary")][:2] == ["connect", "getData"]
    notes = [o["note"] for o in lines if o["kind"] == "connection"]
    assert notes[0] == "a note \x1b[31m" and notes[-1] == "closed"  # JSON escapes control characters itself
    assert any(o["kind"] == "skipped" and o["size"] == 100 for o in lines)
    assert [o["kind"] for o in lines].count("summary") == 1
    [stats] = [pickle.loads(payload) for kind, payload in results if kind == "S"]
    assert stats["requests"]["getData"] == 1 and stats["skipped_bytes"] == 100


def test_without_its_configuration_it_stops_and_with_the_proxy_gone_it_stops_quietly() -> None:
    assert _run(_job(b"N", payload=b"no configuration first")).returncode == 2
    options = TraceOptions(stats=TraceStats())
    read, write = os.pipe()
    os.close(read)  # nobody reads what it sends back
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    jobs = _job(b"C", payload=options_config(options, None)) + _job(b"N", payload=b"x") + _job(b"E", conn=0)
    done = subprocess.run(
        [sys.executable, "-m", "zkwire.trace.decodeproc"],
        input=jobs,
        stdout=write,
        stderr=subprocess.PIPE,
        timeout=60,
        env=env,
    )
    os.close(write)
    assert done.returncode == 0 and done.stderr == b""


def test_with_a_filter_on_ops_the_decoding_process_reads_only_their_records() -> None:
    from zkwire.trace.decodeproc import _Decoding
    from zkwire.trace.fastbodies import FastBodies, OpBodies
    from zkwire.trace.filters import FrameFilter

    filtered = TraceOptions(frame_filter=FrameFilter(ops=frozenset({"getData", "connect"})))
    decoding = _Decoding(pickle.loads(options_config(filtered, None)))
    decoding.job(ord("O"), 1, "client", 0.0, 0.0, 0, b"127.0.0.1:5555")
    bodies = decoding.decoders[1].bodies
    assert isinstance(bodies, OpBodies) and bodies.ops == {OpCode.GET_DATA}
    plain = _Decoding(pickle.loads(options_config(TraceOptions(), None)))
    plain.job(ord("O"), 1, "client", 0.0, 0.0, 0, b"127.0.0.1:5555")
    assert type(plain.decoders[1].bodies) is FastBodies
