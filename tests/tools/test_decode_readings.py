"""``zkwire decode`` with the fast codec: ``--verify`` (both readings compared), ``--stats`` from the header
facts alone, ``--stats-json PATH``, and the progress shown on a terminal (and only there)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from test_capture_decode import _run, _write_pcap, conversation, segments

from zkwire.trace.progress import Progress


def _capture(tmp_path: Path, n: int = 12) -> Path:
    path = tmp_path / "c.pcap"
    _write_pcap(path, segments(conversation(n), t0=1_700_000_000.0))
    return path


def test_verify_finds_no_disagreement_and_says_so_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _capture(tmp_path)
    proc = _run(capsys, "decode", "--verify", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    summary = objs.pop()
    frames = [o for o in objs if o["kind"] != "connection"]
    assert not [o for o in frames if "disagreement" in o]
    assert summary["verified"] == len(frames) and summary["disagreements"] == 0
    text = _run(capsys, "decode", "--verify", str(path)).stdout
    assert f"== verify: {len(frames)} frames read by the fast codec and the construct schemas, 0 disagreements" in text
    assert "verify:" not in _run(capsys, "decode", str(path)).stdout  # only when asked


def test_stats_from_header_facts_match_the_full_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _capture(tmp_path)
    stats_json = tmp_path / "summary.json"
    proc = _run(capsys, "decode", "--stats", "--stats-json", str(stats_json), str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("== summary: 1 connections")
    written = json.loads(stats_json.read_text())
    full = _run(capsys, "decode", "--json", str(path)).stdout.splitlines()[-1]
    assert written == json.loads(full)
    assert written["kind"] == "summary" and written["requests"] and written["paths"]
    assert not (tmp_path / "summary.json.partial").exists()


def test_stats_json_into_a_directory_that_is_not_there_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _capture(tmp_path, 3)
    proc = _run(capsys, "decode", "--stats", "--stats-json", str(tmp_path / "no" / "s.json"), str(path))
    assert proc.returncode == 0
    assert "zkwire: cannot write the summary to" in proc.stderr and "Traceback" not in proc.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Position:
    def __init__(self) -> None:
        self.at = 0

    def tell(self) -> int:
        return self.at


def test_progress_shows_bytes_read_and_frames_per_second_on_a_terminal_only() -> None:
    position = _Position()
    out = _Terminal()
    progress = Progress(2_000_000, position, out=out, interval=0.0)
    for i in range(5000):  # bounded: a few looks at the clock
        position.at = i * 400
        progress.frame()
    progress.done()
    text = out.getvalue()
    assert "MB of 2.0 MB (" in text and "frames/s" in text and text.endswith("\r\x1b[K")
    quiet = io.StringIO()  # not a terminal: nothing at all
    progress = Progress(2_000_000, position, out=quiet, interval=0.0)
    for _ in range(5000):
        progress.frame()
    progress.done()
    assert quiet.getvalue() == "" and not progress.active


def test_a_decode_piped_elsewhere_shows_no_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proc = _run(capsys, "decode", "--stats", str(_capture(tmp_path)))
    assert proc.stderr == ""


@pytest.mark.parametrize("ops", ["create", "getData", "setData,exists", "ping", "999"])
def test_an_op_filter_shows_the_same_frames_reading_only_those_ops_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ops: str
) -> None:
    path = _capture(tmp_path)
    only = _run(capsys, "decode", "--json", "--op", ops, str(path))
    full = _run(capsys, "decode", "--json", "--verify", "--op", ops, str(path))  # every record read, both ways
    assert only.returncode == full.returncode == 0, (only.stderr, full.stderr)
    left = [json.loads(line) for line in only.stdout.splitlines()]
    right = [json.loads(line) for line in full.stdout.splitlines()]
    for summary in [o for o in left + right if o.get("kind") == "summary"]:
        del summary["verified"], summary["disagreements"]
    assert left == right


def test_records_of_other_ops_are_not_read_for_an_op_filter() -> None:
    from zkwire.constants import OpCode
    from zkwire.protocol.codec import encode_request
    from zkwire.protocol.records import GetDataRequest, SetDataRequest
    from zkwire.trace.fastbodies import OpBodies

    bodies = OpBodies(frozenset({OpCode.GET_DATA}))
    get = bytes(encode_request(1, OpCode.GET_DATA, GetDataRequest("/a", False)))[4:]
    put = bytes(encode_request(2, OpCode.SET_DATA, SetDataRequest("/b", b"x", -1)))[4:]
    assert bodies.request(get) == {"path": "/a", "watch": False}
    assert bodies.request(put) is None and bodies.path(OpCode.SET_DATA, put, None) == "/b"
    assert bodies.reply(OpCode.SET_DATA, b"\x00" * 16 + b"not read") is None
