"""The one-line view's reading (``reading="notes"``, :class:`zkwire.trace.fastbodies.NoteBodies`): the records
its lines show something of are read in full, the others are not, and the lines are those of the full
reading.  What it gives up, and what it keeps refusing, is pinned here."""

from __future__ import annotations

import argparse
import random
import struct

import pytest

import tests.helpers.fuzzing as F
from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.records import ConnectRequest, CreateRequest, GetDataRequest
from zkwire.trace.decoder import DecodedFrame, decode_conversation
from zkwire.trace.fastbodies import NOTE_REPLY_OPS, NOTE_REQUEST_OPS
from zkwire.trace.render import format_frame
from zkwire.trace.stats import TraceStats
from zkwire.trace.tracer import _reading

CONVERSATIONS = F.load_conversations()
HANDSHAKE = bytes(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
CONNECTED = struct.pack(">iiiq", 36, 0, 10000, 0x1234) + struct.pack(">i", 16) + bytes(16)


def _lines(frames: list[DecodedFrame]) -> list[str]:
    return [format_frame(f, False, reveal_secrets=reveal) for f in frames for reveal in (False, True)]


def _reply(xid: int, err: int, body: bytes = b"") -> bytes:
    payload = struct.pack(">iqi", xid, 7, err) + body
    return struct.pack(">i", len(payload)) + payload


def _decode(client: bytes, server: bytes, reading: str) -> list[DecodedFrame]:
    frames = decode_conversation(HANDSHAKE + client, CONNECTED + server, reading=reading)
    return [f for f in frames if f.kind not in ("connect", "connect_response")]


@pytest.mark.parametrize("conv", CONVERSATIONS, ids=[c.name for c in CONVERSATIONS])
def test_the_lines_are_those_of_the_full_reading(conv: F.Conversation) -> None:
    full = decode_conversation(conv.client, conv.server, reading="fast")
    notes = decode_conversation(conv.client, conv.server, reading="notes")
    assert _lines(notes) == _lines(full)
    summaries = []
    for frames in (full, notes):
        stats = TraceStats()
        for f in frames:
            stats.add(1, f)
        summaries.append(stats.to_json())
    assert summaries[0] == summaries[1]
    # Every record the lines show something of was read; the corpus has creates, multis, auth and events.
    for a, b in zip(full, notes, strict=True):
        shown = b.op in (NOTE_REQUEST_OPS if b.direction == "client" else NOTE_REPLY_OPS)
        if shown or b.kind in ("event", "connect", "connect_response"):
            assert b.record == a.record, a


def test_the_corpus_holds_records_read_and_records_not_read() -> None:
    read = skipped = 0
    for conv in CONVERSATIONS:
        for f in decode_conversation(conv.client, conv.server, reading="notes"):
            if f.kind in ("request", "reply") and f.err == 0:
                read += f.record is not None
                skipped += f.record is None and f.op in (OpCode.GET_DATA, OpCode.GET_CHILDREN2, OpCode.SET_DATA)
    assert read > 10 and skipped > 5, (read, skipped)


def test_records_it_shows_are_still_refused_when_damaged() -> None:
    create = bytes(encode_request(1, OpCode.CREATE, CreateRequest("/a", b"x", (), 0)))
    cut = struct.pack(">i", len(create) - 4 - 3) + create[4:-3]  # its flags cut short
    [frame] = _decode(cut, b"", "notes")
    assert frame.kind == "malformed" and frame.op == OpCode.CREATE
    unknown = struct.pack(">iii", 8, 2, 9999)  # an op the table does not have
    [frame] = _decode(unknown, b"", "notes")
    assert frame.kind == "malformed" and "9999" in (frame.error or "")
    get = bytes(encode_request(3, OpCode.GET_DATA, GetDataRequest("/a", False)))
    frames = _decode(get, _reply(3, -101, b"\x00\x00"), "notes")  # NONODE, with two bytes after it
    assert [f.kind for f in frames] == ["request", "malformed"]
    assert "unexpected body bytes" in (frames[1].error or "")


def test_a_damaged_record_it_does_not_show_is_for_the_full_reading_to_refuse() -> None:
    get = bytes(encode_request(3, OpCode.GET_DATA, GetDataRequest("/a", False)))
    damaged = _reply(3, 0, struct.pack(">i", 500) + b"short")  # data of 500 bytes announced, 5 there
    notes = _decode(get, damaged, "notes")
    assert [f.kind for f in notes] == ["request", "reply"] and notes[1].record is None
    full = _decode(get, damaged, "fast")
    assert [f.kind for f in full] == ["request", "malformed"]


def test_the_configuration_of_a_get_data_of_zookeeper_config_is_read() -> None:
    get = bytes(encode_request(3, OpCode.GET_DATA, GetDataRequest("/zookeeper/config", False)))
    data = b"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\nversion=100000000"
    stat = struct.pack(">qqqqiiiqiiq", 1, 2, 3, 4, 5, 6, 7, 0, len(data), 0, 8)
    reply = _reply(3, 0, struct.pack(">i", len(data)) + data + stat)
    notes, full = _decode(get, reply, "notes"), _decode(get, reply, "fast")
    assert notes[1].config == full[1].config and notes[1].config is not None
    assert _lines(notes) == _lines(full)


def test_mutated_conversations_are_framed_and_paired_alike() -> None:
    rng = random.Random(31)
    for _ in range(200):
        conv = rng.choice(CONVERSATIONS)
        client = F.mutate_stream(rng, conv.client)
        server = F.mutate_stream(rng, conv.server)
        full = decode_conversation(client, server, reading="fast")
        notes = decode_conversation(client, server, reading="notes")
        # A frame only the full reading refused is the one difference allowed: the rest follow alike.
        assert [(f.direction, f.offset, f.size) for f in notes] == [(f.direction, f.offset, f.size) for f in full]
        for a, b in zip(full, notes, strict=True):
            if a.kind != "malformed" and b.kind != "malformed" and not (a.note or "").startswith("not a reply"):
                assert (a.xid, a.op, a.err) == (b.xid, b.op, b.err)


@pytest.mark.parametrize(
    ("flags", "reading"),
    [
        ({}, "notes"),
        ({"verbose": True}, "fast"),
        ({"json": True}, "fast"),
        ({"stats": True}, "headers"),
        ({"stats": True, "path": ["/a"]}, "notes"),
        ({"verify": True}, "verify"),
    ],
)
def test_the_decode_command_reads_what_its_view_shows(flags: dict[str, object], reading: str) -> None:
    args = argparse.Namespace(verbose=False, json=False, stats=False, path=None, verify=False, op=None)
    vars(args).update(flags)
    assert _reading(args) == reading


def test_bytes_after_a_bare_reply_header_are_refused_as_the_full_reading_refuses_them() -> None:
    """Found by the masking fuzz: an auth reply with bytes after its header (a secret's, misframed) was
    taken as a good reply, so the frames after it were not held as unsure and one showed a token's bytes
    in its header fields."""
    frames = _decode(b"", _reply(-4, 0, bytes(range(20))), "notes")
    assert [f.kind for f in frames] == ["malformed"]
    assert "unexpected bytes" in (frames[0].error or "")
    request = struct.pack(">iii", 9, 5, OpCode.CLOSE_SESSION) + b"\x01"  # a closeSession has no record
    frames = _decode(request, b"", "notes")
    assert [f.kind for f in frames] == ["malformed"]
