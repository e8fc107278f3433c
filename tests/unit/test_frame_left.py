"""Where a direction's current frame ends, as the capture decoder asks after a gap in a capture: the
conversation decoder's own account (:meth:`ConversationDecoder.frame_left`) against the length prefixes
followed alone (:class:`zkwire.trace.resync.FrameTracker`, what the tracing proxy uses), over the corpus
cut into random pieces, whole and mutated."""

from __future__ import annotations

import random

import tests.helpers.fuzzing as F
from zkwire.constants import DEFAULT_MAX_FRAME
from zkwire.trace.decoder import ConversationDecoder
from zkwire.trace.resync import FrameTracker

CONVERSATIONS = F.load_conversations()


def _compare(rng: random.Random, client: bytes, server: bytes) -> int:
    decoder = ConversationDecoder()
    compared = 0
    for direction, stream in (("client", client), ("server", server)):
        tracker = FrameTracker(DEFAULT_MAX_FRAME)
        for piece in F.chunks(rng, stream):
            tracker.feed(piece)
            decoder.feed(direction, piece)
            sides = (decoder._client, decoder._server)
            if any(s.state == "broken" or s.mode in ("4lw", "text") for s in sides):
                # The decoder stopped reading (a secret past a frame's end), or the stream is a four-letter
                # word and its text answer: the tracker reads lengths on where there are none.
                break
            expected = tracker.need if tracker.framed and not tracker.head else None
            assert decoder.frame_left(direction) == expected
            compared += 1
    return compared


def test_the_decoder_knows_where_its_frame_ends_as_the_length_prefixes_say() -> None:
    rng = random.Random(7)
    compared = sum(_compare(rng, c.client, c.server) for c in CONVERSATIONS)
    for _ in range(300):
        conv = rng.choice(CONVERSATIONS)
        compared += _compare(rng, F.mutate_stream(rng, conv.client), F.mutate_stream(rng, conv.server))
    assert compared > 1000


def test_a_length_prefix_cut_short_or_a_four_letter_word_leave_it_unknown() -> None:
    decoder = ConversationDecoder()
    decoder.feed("client", b"\x00\x00")
    assert decoder.frame_left("client") is None
    decoder.feed("client", b"\x00\x2d" + bytes(10))  # a 45-byte ConnectRequest, 10 bytes of it here
    assert decoder.frame_left("client") == 35
    words = ConversationDecoder()
    words.feed("client", b"ruok")
    assert words.frame_left("client") is None
