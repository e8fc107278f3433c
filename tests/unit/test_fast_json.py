"""A record's JSON text written by shape (:func:`zkwire.trace.fastjson.record_json`) is byte for byte the
plain version's (the encoder json.dumps uses, bytes as hex): on every record of the corpus, and on values
of the usual shapes with keys, types and text that are not usual."""

from __future__ import annotations

import enum
import json
import random
from typing import Any

import tests.helpers.fuzzing as F
from zkwire.trace.decoder import decode_conversation
from zkwire.trace.fastjson import _WRITERS, plain_json, record_json
from zkwire.trace.render import json_default

STAT = {
    "czxid": 1,
    "mzxid": 2,
    "ctime": 1_700_000_000_000,
    "mtime": -1,
    "version": 0,
    "cversion": 2**31 - 1,
    "aversion": -(2**31),
    "ephemeral_owner": 2**63 - 1,
    "data_length": 100,
    "num_children": 0,
    "pzxid": -(2**63),
}


class _Int(enum.IntEnum):
    ONE = 1


class _Dict(dict):  # type: ignore[type-arg]
    pass


#: Values of another type in a place of the usual shapes: each is written otherwise, or refused alike.
ODD_VALUES: list[Any] = [
    True,
    False,
    None,
    _Int.ONE,
    1.5,
    float("nan"),
    "",
    "x",
    b"\x00\xff",
    bytearray(b"ab"),
    memoryview(b"cd"),
    [],
    ["a"],
    (1, 2),
    {"k": 1},
    _Dict(a=1),
    2**70,
    -0,
]
TEXTS = ["", "/a", "/a/b-0000000001", 'a"b', "a\\b", "\x00", "\x1f", "\x7f", "é", "\u2028", "~ !#", "/zookeeper/config"]


def _usual(rng: random.Random) -> dict[str, Any]:
    names = [f"n{i}" for i in range(rng.choice([0, 1, 5, 100]))]
    stat = dict(STAT)
    shapes: list[dict[str, Any]] = [
        {"path": rng.choice(TEXTS), "watch": rng.random() < 0.5},
        {"path": rng.choice(TEXTS), "data": rng.choice([None, b"", b"v" * 100]), "version": rng.randrange(-1, 9)},
        {"data": rng.choice([None, b"", bytes(range(256))]), "stat": stat},
        {"stat": stat},
        {"children": names},
        {"children": names, "stat": stat},
        {"path": rng.choice(TEXTS)},
    ]
    return rng.choice(shapes)


def _odd(rng: random.Random, record: dict[str, Any]) -> Any:
    """``record`` with one thing unusual: a value of another type (at the top or in its Stat), a name of
    its children that needs escaping or is no str, keys in another order, a key more or less."""
    out = _Dict(record) if rng.random() < 0.05 else dict(record)
    key = rng.choice(list(out))
    change = rng.randrange(6)
    if change == 0:
        out[key] = rng.choice(ODD_VALUES)
    elif change == 1 and "stat" in out:
        stat = dict(out["stat"])
        stat[rng.choice(list(stat))] = rng.choice(ODD_VALUES)
        if rng.random() < 0.3:
            stat = dict(reversed(stat.items()))
        out["stat"] = stat
    elif change == 2 and "children" in out:
        names = list(out["children"])
        names.insert(rng.randrange(len(names) + 1), rng.choice(TEXTS + ODD_VALUES))
        out["children"] = names
    elif change == 3:
        out = dict(reversed(out.items()))
    elif change == 4:
        out["extra"] = 1
    else:
        del out[key]
    return out


def test_the_usual_shapes_are_written_by_their_writers_as_the_plain_version_writes_them() -> None:
    rng = random.Random(5)
    written = 0
    for _ in range(3000):
        record = _usual(rng)
        text = record_json(record)
        assert text == plain_json(record) == json.dumps(record, default=json_default)
        written += _WRITERS[tuple(record)](record) is not None
    assert written > 2500  # most take the writer (a text that needs escaping, in a children list, does not)


def test_unusual_values_of_those_shapes_are_written_as_the_plain_version_writes_them() -> None:
    rng = random.Random(6)
    for _ in range(6000):
        record = _odd(rng, _usual(rng))
        try:
            expected = plain_json(record)
        except (TypeError, ValueError) as e:
            expected = type(e).__name__
        try:
            text = record_json(record)
        except (TypeError, ValueError) as e:
            text = type(e).__name__
        assert text == expected, record


def test_every_record_of_the_corpus_is_written_as_the_plain_version_writes_it() -> None:
    records = [
        f.record
        for conv in F.load_conversations()
        for reading in ("fast", "schemas")
        for f in decode_conversation(conv.client, conv.server, reading=reading)
    ]
    assert len(records) > 300
    for record in records:
        assert record_json(record) == plain_json(record)
