"""Property-based and mutation tests of the project's decoders, seeded from frames captured from a real
server (``tests/corpus``; the engine is ``tests/helpers/fuzzing.py``).  A bounded, deterministic slice (fixed
hypothesis settings, derandomized): ``python -m tests.fuzz --seconds 600 --seed N`` runs a long campaign.

* every reply decoder (and the request, event and connect decoders): only ProtocolError escapes, and the
  fast codec agrees with the construct schemas, interpreted and compiled, when they accept;
* the frame splitter fed whole, byte at a time and in random chunks gives the same frames; large frames
  read partly with ``feed`` and partly into the decoder's (reused) buffers come out intact;
* the traffic decoder fed mutated conversations: no exception, no hang, bounded and escaped output;
* secret masking at every truncation point of every captured secret, and in mutated secret frames.
"""

from __future__ import annotations

import random

import pytest
from helpers import fuzzing as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkwire.constants import DEFAULT_MAX_FRAME
from zkwire.errors import ProtocolError
from zkwire.protocol.codec import RESPONSE_RECORDS
from zkwire.protocol.framing import LARGE_FRAME, FrameDecoder, frame
from zkwire.trace.decoder import CLIENT, SERVER, ConversationDecoder

CONVERSATIONS = F.load_conversations()
SEEDS = F.frame_seeds(CONVERSATIONS)
PAYLOADS = [s.payload for s in SEEDS]
SITES = F.secret_sites(CONVERSATIONS)
FRAMED = [c for c in CONVERSATIONS if not c.name.startswith("four-letter")]


def _fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _no_failures(tally: F.Tally) -> None:
    assert tally.of(F.OTHER) == 0, "\n".join(f"{f.target}: {f.detail}\n{f.data}" for f in tally.failures)


rngs = st.randoms(use_true_random=False)


def test_the_corpus_has_every_kind_of_frame() -> None:
    kinds = {s.kind for s in SEEDS}
    assert kinds == {"request", "reply", "event", "connect_request", "connect_response"}
    replied = {s.op for s in SEEDS if s.kind == "reply"}
    missing = set(RESPONSE_RECORDS) - replied
    assert len(missing) <= 1, missing  # a top-level check: the 3.8 server closes the connection instead
    assert {site.role for site in SITES} >= {"connect_request", "connect_response", "auth", "sasl_request"}


def test_every_reply_decoder_on_every_captured_reply() -> None:
    tally = F.Tally()
    for seed in SEEDS:
        if seed.kind == "reply":
            for op in F.REPLY_OPS:
                F.check_codec(tally, seed, seed.payload, op=op)
        else:
            F.check_codec(tally, seed, seed.payload)
    _no_failures(tally)
    assert tally.of(F.SPLIT) == 0
    # Read as the op it answered, every captured frame decodes.
    assert all(F.check_codec(F.Tally(), s, s.payload) == F.DECODED for s in SEEDS)


@_fuzz(6000)
@given(seed=st.sampled_from(SEEDS), rng=rngs)
def test_decoders_on_mutated_frames(seed: F.Seed, rng: random.Random) -> None:
    tally = F.Tally()
    payload, op = F.mutate_codec_input(rng, seed, PAYLOADS)
    F.check_codec(tally, seed, payload, op=op)
    _no_failures(tally)


# ------------------------------------------------------------------------------------------ framing


def test_frame_splitter_on_every_captured_stream() -> None:
    tally = F.Tally()
    rng = random.Random(5)
    for conv in FRAMED:
        for stream in (conv.client, conv.server):
            for _ in range(5):
                F.check_framing(tally, rng, stream)
    _no_failures(tally)


@_fuzz(1600)
@given(picked=st.lists(st.sampled_from(PAYLOADS), min_size=1, max_size=8), mutated=st.booleans(), rng=rngs)
def test_frame_splitter_gives_the_same_frames_however_fed(
    picked: list[bytes], mutated: bool, rng: random.Random
) -> None:
    stream = F.framed(picked)
    if mutated:
        stream = F.mutate(rng, stream, PAYLOADS, max_steps=2)
    tally = F.Tally()
    F.check_framing(tally, rng, stream)
    _no_failures(tally)


@_fuzz(60)
@given(
    sizes=st.lists(st.integers(LARGE_FRAME - 16, 3 * LARGE_FRAME), min_size=2, max_size=5),
    small=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_large_frames_through_reused_buffers_come_out_intact(sizes: list[int], small: bool, seed: int) -> None:
    """Large frames (their buffers reused from one to the next, shorter ones in longer buffers) read the
    way the client reads them -- into the decoder's buffer, or fed -- in random pieces, each frame copied
    as it comes (as the session core does): every one is what was sent."""
    rng = random.Random(seed)  # (drawn from hypothesis's own randomness, the pieces' base example is too large)
    payloads = [rng.randbytes(n) for n in sizes]
    if small:
        payloads.insert(1, b"between")
    stream = b"".join(frame(p, 4 * LARGE_FRAME) for p in payloads)
    assert F.read_as_a_driver(FrameDecoder(4 * LARGE_FRAME), stream, rng, (1, 7, 4096, 65536, LARGE_FRAME)) == payloads


def test_frame_splitter_keeps_the_frames_before_a_bad_length_in_the_same_chunk() -> None:
    stream = F.framed(PAYLOADS[:3]) + b"\xff\xff\xff\xf0"
    tally = F.Tally()
    F.check_framing(tally, random.Random(0), stream, strict_bad_length=True)
    _no_failures(tally)


def test_frame_splitter_stays_failed_and_bounds_what_it_holds() -> None:
    decoder = FrameDecoder(max_frame=1000)
    assert decoder.feed(F.framed([b"abc"])) == [b"abc"]
    decoder.feed(b"\x00\x00\x03")
    assert decoder.buffered == 3
    with pytest.raises(ProtocolError):
        decoder.feed(b"\xe9" + b"x" * 10)  # 1001 > 1000
    with pytest.raises(ProtocolError):
        decoder.feed(F.framed([b"ok"]))


# ------------------------------------------------------------------------------------------ traffic decoder


def test_traffic_decoder_on_every_captured_conversation() -> None:
    tally = F.Tally()
    rng = random.Random(11)
    for conv in CONVERSATIONS:
        for _ in range(4):
            F.check_conversation(tally, rng, conv.client, conv.server)
    _no_failures(tally)


@_fuzz(1000)
@given(conv=st.sampled_from(CONVERSATIONS), which=st.sampled_from(["client", "server", "both"]), rng=rngs)
def test_traffic_decoder_on_mutated_conversations(conv: F.Conversation, which: str, rng: random.Random) -> None:
    client, server = conv.client, conv.server
    if which in ("client", "both"):
        client = F.mutate_stream(rng, client, PAYLOADS)
    if which in ("server", "both"):
        server = F.mutate_stream(rng, server, PAYLOADS)
    tally = F.Tally()
    F.check_conversation(tally, rng, client, server)
    _no_failures(tally)


@_fuzz(300)
@given(conv=st.sampled_from(FRAMED), rng=rngs)
def test_traffic_decoder_picks_up_after_a_skip_at_a_frame_boundary(conv: F.Conversation, rng: random.Random) -> None:
    """What the tracer does when decoding falls behind: frames after the skipped ones decode as before."""
    starts = F.frame_starts(conv.client, DEFAULT_MAX_FRAME)
    if len(starts) < 3:
        return
    a, b = sorted(rng.sample(range(1, len(starts)), 2))
    full = ConversationDecoder()
    reference = [f for f in full.feed(CLIENT, conv.client) if f.offset >= starts[b]]
    decoder = ConversationDecoder()
    decoder.feed(CLIENT, conv.client[: starts[a]])
    [skipped] = decoder.skip(CLIENT, starts[b] - starts[a])
    assert (skipped.kind, skipped.size, skipped.offset) == ("skipped", starts[b] - starts[a], starts[a])
    after = decoder.feed(CLIENT, conv.client[starts[b] :])
    assert [(f.kind, f.xid, f.op, f.record, f.offset) for f in after] == [
        (f.kind, f.xid, f.op, f.record, f.offset) for f in reference
    ]
    decoder.feed(SERVER, conv.server)  # replies to skipped requests are unpaired: no error
    decoder.finish()


# ------------------------------------------------------------------------------------------ secrets


def test_secrets_are_masked_at_every_truncation_point_of_every_captured_secret() -> None:
    tally = F.Tally()
    for site in SITES:
        stream = site.conversation.client if site.direction == CLIENT else site.conversation.server
        frame = stream[site.offset : site.offset + site.length]
        for k in range(len(frame) + 1):
            for handshake in (True, False):
                F.check_secret(tally, site, frame[:k], f"cut at {k}", handshake=handshake)
    _no_failures(tally)
    assert tally.total() > 1000


@_fuzz(2400)
@given(site=st.sampled_from(SITES), handshake=st.booleans(), rng=rngs)
def test_secrets_are_masked_in_mutated_secret_frames(site: F.SecretSite, handshake: bool, rng: random.Random) -> None:
    tally = F.Tally()
    what, variant = F.secret_variants(rng, site)
    F.check_secret(tally, site, variant, what, handshake=handshake)
    _no_failures(tally)
