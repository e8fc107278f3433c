"""The fast writers of the common frames (:mod:`zkwire.trace.fastrender`) against the general ones
(:func:`~zkwire.trace.render.format_frame`, :func:`~zkwire.trace.render.frame_to_json` and
:func:`json.dumps`): byte for byte the same text lines and JSON objects, over the frames of the corpus,
mutated conversations and frames made odd on purpose (control characters, long values, secrets, values of
other types); and taken for the common frames, declined for the others.
"""

from __future__ import annotations

import dataclasses
import io
import math
import random
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import tests.helpers.fuzzing as F
import zkwire.trace.output as output
from zkwire.constants import OpCode
from zkwire.trace.decoder import decode_conversation
from zkwire.trace.fastrender import fast_json_line, fast_text_rest
from zkwire.trace.frames import DecodedFrame
from zkwire.trace.render import format_frame, time_column

CONVERSATIONS = F.load_conversations()
MUTATED = 120  # mutated conversations
MAX_LINES = (None, 4096, 600, 200, 90, 40, 1)
COMMON: list[Any] = ["request", "reply", "ping", "event"]


def _corpus_frames() -> list[DecodedFrame]:
    return [
        f
        for c in CONVERSATIONS
        for reading in ("fast", "schemas")
        for f in decode_conversation(c.client, c.server, reading=reading)
    ]


def _mutated_frames() -> list[DecodedFrame]:
    rng = random.Random(20240611)
    donors = [c.client for c in CONVERSATIONS] + [c.server for c in CONVERSATIONS]
    out: list[DecodedFrame] = []
    for _ in range(MUTATED):
        conv = rng.choice(CONVERSATIONS)
        client, server = conv.client, conv.server
        if rng.random() < 0.5:
            client = F.mutate_stream(rng, client, donors)
        else:
            server = F.mutate_stream(rng, server, donors)
        out += decode_conversation(client, server)
    return out


CORPUS = _corpus_frames()
TIME = 1_700_000_123.456789

#: Values that make a frame odd: escapes, quotes, long values, other types, odd numbers.
ODD_TEXTS = [
    "",
    "a b",
    "/x\x1b[2Jy",
    "/tab\there",
    "/new\nline",
    "/\u202eevil",
    "/ideographic\u3000space",
    "/nbsp\xa0",
    "/caf\xe9/\u00fc\U0001f600",
    '/quote"and\\back',
    "/per%cent",
    "/" + "long" * 700,
    "/" + "x" * 250,
]
ODD_RECORDS = [
    {"path": "/p", "watch": True},
    {"children": ["a", "b c", 'q"', "back\\slash", "\x01", "\xe9", ""]},
    {"children": []},
    {"children": ["n" + str(i) for i in range(600)]},
    {"data": b"\x00\xff" * 3, "stat": {"czxid": 1, "mzxid": True}},
    {"data": bytearray(b"ab"), "view": memoryview(b"cd"), "t": (1, 2.5, None, False)},
    {"f": 1.5, "inf": math.inf, "nan": math.nan, "neg": -0.0, "big": 10**30},
    {1: "int key", "nested": {"l": [{"x": [[]]}, {}]}},
    {"passwd": b"secret-pass", "x": 1},
    {"auth": b"alice:pw", "scheme": "digest"},
    {"token": None},
    {"text": "a\x1bb"},
    [1, "two", b"3"],
    "a bare string",
    OpCode.GET_DATA,
]


def _odd(frame: DecodedFrame, **changes: Any) -> DecodedFrame:
    return dataclasses.replace(frame, **changes)


def _odd_frames() -> Iterator[DecodedFrame]:
    base = [f for f in CORPUS if f.kind in COMMON]
    rng = random.Random(7)
    for frame in base:
        yield _odd(frame, time=TIME, latency=0.00123 if frame.kind == "reply" else None)
    for i, text in enumerate(ODD_TEXTS):
        frame = base[i * 7 % len(base)]
        yield _odd(frame, path=text, time=TIME)
        yield _odd(frame, note=text)
        yield _odd(frame, error=text, time=-1.5)
        yield _odd(frame, disagreement=text)
        yield _odd(frame, op_name=text, err_name=text or None)
    for i, record in enumerate(ODD_RECORDS):
        frame = base[i * 5 % len(base)]
        yield _odd(frame, record=record)
        yield _odd(frame, config=record, kind=rng.choice(COMMON))
    for value in (None, 0.0, -0.0, 1e300, -1e16, math.nan, math.inf, 3, True):
        frame = rng.choice(base)
        yield _odd(frame, time=value)
        yield _odd(frame, latency=value)
    changes: list[tuple[str, Any]] = [
        ("xid", True),
        ("xid", -2),
        ("op", OpCode.EXISTS),
        ("err", 0),
        ("err", -101),
        ("err", False),
        ("zxid", -1),
        ("zxid", 1 << 64),
        ("zxid", 0xFFFFFFFFFFFFFFFF),
        ("index", None),
        ("size", 1.0),
        ("direction", "sideways"),
        ("kind", "four_letter"),
        ("kind", "malformed"),
        ("kind", "connect"),
        ("kind", "skipped"),
        ("payload", bytes(range(256)) * 20),
        ("payload", b"\x01" * 300),
        ("payload", b""),
        ("secret_spans", ((2, 6),)),
        ("secret_spans", ((0, 10**6),)),
    ]
    for field, change in changes:
        for frame in rng.sample(base, 4):
            yield _odd(frame, **{field: change})


ODD = list(_odd_frames())
MUTATIONS = _mutated_frames()
ALL = CORPUS + ODD + MUTATIONS


def _general_json(frame: DecodedFrame, conn: int | None, wall: float, max_line: int | None, reveal: bool) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(output, "fast_json_line", lambda *args: None)
        return output.TraceOptions(reveal_secrets=reveal)._json_line(conn, frame, wall, max_line)


def _wall(frame: DecodedFrame) -> float:
    """The frame's own time (the object: as a capture's events give it) when it is a time of day."""
    return frame.time if type(frame.time) is float and 0 < frame.time < 1e10 else TIME


def test_the_odd_frames_are_odd_enough() -> None:
    """The whitespace of a path the fast text writer quotes: a space, or a character it declines."""
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert " " in spaces and all(not c.isprintable() for c in spaces if c != " ")
    assert len(ALL) > 1500


@pytest.mark.parametrize("max_line", MAX_LINES)
def test_the_fast_text_line_is_format_frames(max_line: int | None) -> None:
    taken = 0
    for frame in ALL:
        rest = fast_text_rest(frame, max_line)
        if rest is not None:
            taken += 1
            assert time_column(frame) + " " + rest == format_frame(frame, max_line=max_line), frame
    if max_line is None or max_line >= 200:
        assert taken > len(ALL) // 3


@pytest.mark.parametrize("max_line", MAX_LINES)
@pytest.mark.parametrize("reveal", [False, True])
def test_the_fast_json_line_is_json_dumps_of_frame_to_json(max_line: int | None, reveal: bool) -> None:
    taken = 0
    for i, frame in enumerate(ALL):
        conn = None if i % 5 == 0 else i % 3
        wall = _wall(frame) if i % 2 else TIME + i
        text = fast_json_line(frame, conn, wall, max_line, reveal)
        if text is not None:
            taken += 1
            assert text == _general_json(frame, conn, wall, max_line, reveal), frame
    if max_line is None or max_line >= 4096:
        assert taken > len(ALL) // 3


def test_the_common_frames_of_the_corpus_take_the_fast_writers() -> None:
    common = [f for f in CORPUS if f.kind in COMMON and not f.secret_spans]
    assert len(common) > 150
    for frame in common:
        assert fast_text_rest(frame, 4096) is not None, frame
        secret_keys = isinstance(frame.record, dict) and {"passwd", "auth", "token"} & frame.record.keys()
        if not secret_keys and len(frame.payload) <= 512:  # else cut (and written by the general writer)
            assert fast_json_line(frame, 1, TIME, 4096, False) is not None, frame


def test_secrets_and_escapes_are_left_to_the_general_writers() -> None:
    frame = next(f for f in CORPUS if f.kind == "request" and f.path)
    assert fast_json_line(_odd(frame, secret_spans=((0, 4),)), 1, TIME, 4096, False) is None
    assert fast_json_line(_odd(frame, record={"auth": b"pw"}), 1, TIME, 4096, False) is None
    assert fast_text_rest(_odd(frame, path="/a\x1bb"), 4096) is None
    assert fast_text_rest(_odd(frame, note="x" * 5000), 4096) is None
    assert fast_json_line(_odd(frame, payload=bytes(5000)), 1, TIME, 4096, False) is None


class _Sink(io.StringIO):
    flushes = 0

    def flush(self) -> None:  # counted: a live trace shows each frame as it comes
        self.flushes += 1


def _emitted(frames: list[DecodedFrame], fast: bool, **options: Any) -> tuple[str, int]:
    sink = _Sink()
    trace = output.TraceOptions(out=sink, **options)
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(output, "fast_text_rest", lambda *args: None)
            patch.setattr(output, "fast_json_line", lambda *args: None)
        for i, frame in enumerate(frames):
            trace.emit(None if i % 7 == 0 else 1 + i % 3, frame, _wall(frame))
    return sink.getvalue(), sink.flushes


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"json_lines": True},
        {"max_line": 0},
        {"max_line": 0, "json_lines": True},
        {"max_line": 150},
        {"max_line": 700, "json_lines": True},
        {"verbose": True},
        {"verbose": True, "reveal_secrets": True, "max_line": 300},
        {"reveal_secrets": True, "json_lines": True},
        {"hide_pings": True},
    ],
    ids=repr,
)
def test_what_is_printed_is_the_same_with_or_without_the_fast_writers(options: dict[str, Any]) -> None:
    fast, fast_flushes = _emitted(ALL, True, **options)
    general, general_flushes = _emitted(ALL, False, **options)
    assert fast == general
    assert fast_flushes == general_flushes > 1000  # a flush for each frame printed, as before


def test_equal_times_of_another_sign_or_object_are_written_each_its_own_way() -> None:
    """The fast JSON writer keeps the text of the last time it wrote (the frames of a packet share theirs):
    an equal time that is another object (0.0 and -0.0 are equal) is written afresh."""
    frame = next(f for f in CORPUS if f.kind == "reply")
    for first, second in [(0.0, -0.0), (-0.0, 0.0), (TIME, TIME + 0.0), (1.0, 1)]:
        for value in (first, second):
            odd = _odd(frame, time=value, latency=value)
            text = fast_json_line(odd, 1, value, 4096, False)
            assert text is None or text == _general_json(odd, 1, value, 4096, False)


class _Record(dict[str, Any]):
    """A record of a dict's subclass: still masked."""


def test_a_secret_in_a_record_of_a_dict_subclass_is_masked() -> None:
    frame = next(f for f in CORPUS if f.kind == "request" and f.path)
    odd = _odd(frame, record=_Record(auth=b"s3cret"))
    text = fast_json_line(odd, 1, TIME, 4096, False) or _general_json(odd, 1, TIME, 4096, False)
    assert b"s3cret".hex() not in text and "<6 bytes hidden>" in text
