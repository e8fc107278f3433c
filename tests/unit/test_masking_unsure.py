"""Secrets stay hidden when the decoder cannot be sure what it reads: a stream decoded as the wrong side,
a length prefix or a secret's own length corrupted, a conversation whose client seems to open with a
four-letter word.  Known secret bytes are planted in a session password (both ways), an auth credential
and SASL tokens (both ways); every line of every variant is searched for them, in each reading of records
with the views that use it (tests/helpers/planted.py).

Seeded and bounded: a fixed number of variants per case, and a time limit on the whole run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from tests.helpers.planted import SEED, conversation, corrupt, decode, layouts, leaked, rendered
from zkwire.trace.frames import CLIENT, SERVER

VARIANTS = 150  # per case
TIME_LIMIT = 60.0  # seconds for the whole file's fuzzing, well above what it takes


def cases() -> Iterator[tuple[str, bytes | None, bytes | None]]:
    client, server = conversation()
    yield "as sent", client, server
    yield "client stream read as the server's", None, client
    yield "server stream read as the client's", server, None
    yield "both sides swapped", server, client
    for word in (b"ruok", b"stat", b"mntr"):
        yield f"client opens with {word.decode()}", word + client[4:], server


def test_the_planted_secrets_are_where_the_decoder_expects_them() -> None:
    client, server = conversation()
    frames = decode(client, server)
    assert [f.kind for f in frames].count("malformed") == 0
    assert not leaked(frames)
    shown = rendered(frames)
    assert "**" in shown


@pytest.mark.parametrize(("name", "client", "server"), list(cases()), ids=[c[0] for c in cases()])
def test_secrets_stay_hidden_when_the_decoder_reads_the_wrong_side(
    name: str, client: bytes | None, server: bytes | None
) -> None:
    for reading in ("fast", "notes", "headers"):
        for handshake in (True, False):
            assert not leaked(decode(client, server, handshake=handshake, reading=reading), reading), name


@pytest.mark.parametrize("reading", ["fast", "notes", "headers"])
@pytest.mark.parametrize("case", range(6))
def test_secrets_stay_hidden_in_corrupted_streams(case: int, reading: str) -> None:
    """Each reading in the views that use it (see tests/helpers/planted.py): the one-line view reads only
    some records, and the summary only the header facts, so fewer frames are found not to decode."""
    rng = random.Random(SEED + case)
    client, server = conversation()
    started = time.monotonic()
    found: list[str] = []
    for i in range(VARIANTS):
        assert time.monotonic() - started < TIME_LIMIT, f"stopped after {i} variants"
        c = corrupt(rng, client) if case % 3 != 1 else client
        s = corrupt(rng, server) if case % 3 != 0 else server
        sides = layouts(c, s)
        got_client, got_server = sides[rng.randrange(len(sides))] if case >= 3 else (c, s)
        frames = decode(got_client, got_server, handshake=rng.random() < 0.8, reading=reading)
        found += [f"variant {i}: {leak}" for leak in leaked(frames, reading)]
    assert not found, f"{len(found)} leaks, first: {found[:5]}"


def test_a_text_answer_that_is_not_text_is_hidden() -> None:
    _, server = conversation()
    frames = decode(b"ruok", server)
    answer = [f for f in frames if f.direction == SERVER]
    assert answer and answer[0].kind == "four_letter"
    assert not leaked(frames)
    assert all(f.direction in (CLIENT, SERVER) for f in frames)


# Found by the fuzz campaign's ``unsure`` target (tests/fuzz.py): the planted conversation, damaged, as hex
# (client side | server side).
FOUND = {
    # The server's ConnectResponse read as the client's, its password's length cut to 9: it read as a
    # ConnectRequest of 37 bytes whose session id was the password's first bytes.
    "connect response read as a request": (
        "000000250000000000002710000000000000123400000010f669bbc700000009b6c6f4fc9738aa030000000010fffffffc00"
        "00000000000000000000000000003400000001000000000000000500000000000000202805e9e227efa37e43609e30e0e581"
        "7bd826ab44a881395c87838db75a69ba9900000010000000020000000000000006ffffff9b",
        "",
    ),
    # The SASL reply token misframed into a reply of no request seen: its header fields were the token's.
    "token as an unpaired reply": (
        "000000001b0000000000000000000000000027100000000000000000000000103dc5ff750549521d75c6e9bbe814a2e20000"
        "000032fffffffc0000",
        "000000250000000000002710000000000000123400000010f669bbc7e8396c18b6c6f4fc9738aa030000000010fffffffc00"
        "00000000000000000000000000001000000001000000000000000500000000000000202805e9e227efa37e43609e30e0e581"
        "7bd826ab44a881395c87838db75a69ba9900000010000000020000000000000006ffffff9b",
    ),
    # The two sides swapped: the client's SASL request read as a reply paired with a misread request, its
    # token's first bytes in the error code.
    "token as the error code of a paired reply": (
        "000000250000000000000000030000000000123400000010f669bbc7e8396c18b6c6f4fc9738aa030000000010fffffffc00"
        "00000000000000000000000000003400000001000000000000000500000000000000202805e9e227efa37e43609e30e0e581"
        "7bd826ab44a881395c87838db75a69ba9900000010000000020000000000000006ffffff9b",
        "0000002d000000000000000000000000000027100000000000000000000000103dc5ff750549521d75c6e9bbe814a2e20000"
        "000032fffffffc00000064000000000000000664696765737400000018bf7ec7a38c74d464fd68e96369c4225cc18de3ee18"
        "60658c0000001000000001000000660000002050752bdd0b9a60b229238e0e5de09b3b2b7684be21f5d05b20df88189e68e0"
        "a40000000f0000000200000004000000022f6100",
    ),
}


@pytest.mark.parametrize("name", list(FOUND))
def test_what_the_fuzz_campaign_found_stays_hidden(name: str) -> None:
    client, server = (bytes.fromhex(side) or None for side in FOUND[name])
    for reading in ("fast", "notes", "headers"):
        for handshake in (True, False):
            frames = decode(client, server, handshake=handshake, reading=reading)
            assert not leaked(frames, reading), (reading, handshake)
