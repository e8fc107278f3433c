"""What a large frame costs before its bytes have come: a length prefix announcing up to ``max_frame`` bytes
(2**28 at most) must not buy a buffer of that size.  The bound these tests hold the decoder and the
session core to: at most :data:`BOUND` (2 MiB) plus three times what has arrived, and never more than
:data:`BOUND` plus four times what has arrived at the peak (while a buffer is grown, old and new are
alive together).  Memory is measured with tracemalloc around the decoder's (the core's) calls only."""

from __future__ import annotations

import random
import struct
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

from helpers import fuzzing as F
from helpers.fakeserver import STAT, FakeServer
from helpers.sessioncore import connected, get, only
from hypothesis import given, settings
from hypothesis import strategies as st

from zkwire.protocol import framing
from zkwire.protocol.framing import (
    LARGE_FRAME,
    OVERSIZE_HEAD,
    READ_SIZE,
    REPLY_HEADER,
    FrameDecoder,
    OversizeFrame,
    frame,
)
from zkwire.protocol.records import GetDataResponse
from zkwire.sansio.options import MAX_MAX_FRAME
from zkwire.sansio.session import Event, Reply

MiB = 1 << 20
#: What a large frame in progress may cost on top of three times its bytes that have arrived.
BOUND = 2 * MiB
#: The largest ``max_frame`` a session accepts (2**28).
HUGE = MAX_MAX_FRAME


class Traced:
    """tracemalloc's figures for what happened inside :func:`traced`: what is still held, and the peak."""

    held = 0
    peak = 0


@contextmanager
def traced() -> Iterator[Traced]:
    figures = Traced()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        yield figures
        held, peak = tracemalloc.get_traced_memory()
        figures.held, figures.peak = held - before, peak - before
    finally:
        tracemalloc.stop()


def prefix(n: int) -> bytes:
    return struct.pack(">i", n)


def _within_bound(figures: Traced, arrived: int, what: str) -> None:
    assert figures.held <= BOUND + 3 * arrived, f"{what}: {figures.held} bytes held after {arrived} arrived"
    assert figures.peak <= BOUND + 4 * arrived, f"{what}: peak of {figures.peak} bytes after {arrived} arrived"


# ------------------------------------------------------------------------------------------ the decoder


def test_a_length_prefix_alone_costs_at_most_the_bound() -> None:
    decoder = FrameDecoder(max_frame=HUGE)
    with traced() as figures:
        assert decoder.feed(prefix(HUGE)) == []
        view = decoder.receive_buffer()
    assert view is not None
    _within_bound(figures, 4, "prefix fed")
    assert len(view) <= BOUND  # what a driver reads at most next (recv_into, or a stream's receive_some)
    assert decoder.buffered == 4


def test_a_length_prefix_with_the_start_of_its_frame_costs_at_most_the_bound() -> None:
    """As the driver reads it: one read of up to READ_SIZE bytes fed, then recv_into the decoder's buffer."""
    first = prefix(HUGE) + bytes(READ_SIZE - 4)
    decoder = FrameDecoder(max_frame=HUGE, skip_oversize=True)
    with traced() as figures:
        assert decoder.feed(first) == []
        view = decoder.receive_buffer()
        assert view is not None
        view[:1000] = bytes(1000)
        view.release()
        assert decoder.received(1000) == []
        view = decoder.receive_buffer()
    assert view is not None and len(view) <= BOUND
    _within_bound(figures, READ_SIZE + 1000, "a read fed, then recv_into")


def test_memory_follows_the_bytes_of_a_huge_frame_as_they_come() -> None:
    """A hostile server that trickles its huge frame: at every step the decoder holds no more than the bound
    plus three times what came, fed or read into its buffer."""
    decoder = FrameDecoder(max_frame=HUGE)
    decoder.feed(prefix(HUGE))
    chunk = bytes(256 * 1024)
    arrived = 4
    with traced() as figures:
        for step in range(40):  # 10 MiB
            if step % 2:
                assert decoder.feed(chunk) == []
            else:
                view = decoder.receive_buffer()
                assert view is not None and len(view) <= max(BOUND, 3 * arrived)
                n = min(len(view), len(chunk))
                view[:n] = chunk[:n]
                view.release()
                assert decoder.received(n) == []
                arrived -= len(chunk) - n
            arrived += len(chunk)
            assert decoder.buffered == arrived
            held = tracemalloc.get_traced_memory()[0]
            assert held <= BOUND + 3 * arrived + 64 * 1024, f"{held} bytes held after {arrived} arrived"
    _within_bound(figures, arrived, "10 MiB trickled")


def test_frames_up_to_a_megabyte_still_get_one_buffer_of_their_size_at_once() -> None:
    """No change for the frames a default max_frame allows: the buffer is sized from the prefix, and the
    driver is asked to read the rest of the frame at once."""
    for size in (LARGE_FRAME, 1_000_088, MiB):
        decoder = FrameDecoder(max_frame=HUGE)
        assert decoder.feed(prefix(size) + bytes(100)) == []
        view = decoder.receive_buffer()
        assert view is not None and len(view) == size - 100


# ------------------------------------------------------------------------------------------ the session core


def test_a_sessions_hostile_length_prefix_costs_at_most_the_bound() -> None:
    """After the handshake, a reply's length prefix and header announcing 2**28 bytes: fed, then read into
    the core's buffer as the fast path reads it."""
    for recv_into in (False, True):
        pair = connected(max_frame=HUGE)
        get(pair, "big")
        [request] = pair.to_server()
        head = FakeServer.bad_length(HUGE) + REPLY_HEADER.pack(request.xid, 5, 0)
        core = pair.core
        with traced() as figures:
            if not recv_into:
                assert core.receive_data(head, 1.1) == []
                arrived = len(head)
            else:
                assert core.receive_buffer() is None  # between frames: a read of READ_SIZE is fed
                assert core.receive_data(head + bytes(READ_SIZE - len(head)), 1.1) == []
                view = core.receive_buffer()
                assert view is not None
                view[:4096] = bytes(4096)
                view.release()
                assert core.received_into(4096, 1.2) == []
                arrived = READ_SIZE + 4096
            view = core.receive_buffer()
        assert view is not None and len(view) <= BOUND
        _within_bound(figures, arrived, f"a session's huge reply begun ({recv_into=})")


def test_a_session_still_reads_a_huge_reply_that_does_come() -> None:
    """A reply of 8 MiB on a session allowing 2**28 bytes, read as the fast path reads it: the first read
    fed, the rest into the core's buffer (which grows as the bytes come)."""
    pair = connected(max_frame=HUGE)
    get(pair, "big")
    [request] = pair.to_server()
    data = bytes(range(256)) * (8 * MiB // 256)
    stream = pair.server.reply(request, GetDataResponse(data, STAT))
    core = pair.core
    events: list[Event] = []
    pos = 0
    while pos < len(stream):
        view = core.receive_buffer()
        if view is None:
            events += core.receive_data(stream[pos : pos + READ_SIZE], 1.1)
            pos += READ_SIZE
        else:
            n = min(len(view), len(stream) - pos, 3 * READ_SIZE)
            view[:n] = stream[pos : pos + n]
            view.release()
            events += core.received_into(n, 1.1)
            pos += n
    [reply] = only(events, Reply)
    assert reply.token == "big" and reply.body == GetDataResponse(data, STAT)


# ------------------------------------------------------------------------------------------ growing buffers


def _read_into(decoder: FrameDecoder, data: bytes) -> list[bytes | OversizeFrame]:
    """``data`` into the view the decoder offers (it must offer one): the frames completed, copied."""
    view = decoder.receive_buffer()
    assert view is not None and len(view) >= len(data)
    view[: len(data)] = data
    view.release()
    return [bytes(f) if isinstance(f, memoryview) else f for f in decoder.received(len(data))]


def test_a_huge_frames_buffer_doubles_as_its_bytes_come_then_takes_its_whole_length() -> None:
    size = 13 * MiB + 3
    payload = random.Random(1).randbytes(size)
    stream = frame(payload, HUGE)
    decoder = FrameDecoder(max_frame=HUGE)
    with patch.object(framing, "_spares", framing._SpareBuffers()):  # no buffer reused: the sizes are exact
        assert decoder.feed(stream[:4]) == []
        offered = []
        pos = 4
        while True:
            view = decoder.receive_buffer()
            assert view is not None
            offered.append(len(view))
            n = len(view)
            view.release()
            got = _read_into(decoder, stream[pos : pos + n])
            pos += n
            if got:
                break
    assert got == [payload] and pos == len(stream)
    # Filled each time: 1 MiB, then buffers of 2 MiB (1 MiB free), 4 MiB (2 free), 8 MiB (4 free), and the
    # frame's whole 13 MiB + 3 (more than a third of it in).
    assert offered == [MiB, MiB, 2 * MiB, 4 * MiB, 5 * MiB + 3]


def test_feeds_grow_the_buffer_to_what_has_come_and_a_third_of_the_frame_buys_the_whole() -> None:
    size = 24 * MiB
    payload = random.Random(2).randbytes(size)
    stream = frame(payload, HUGE)
    decoder = FrameDecoder(max_frame=HUGE)

    def capacity() -> int:
        assert decoder._large is not None
        return len(decoder._large)

    with patch.object(framing, "_spares", framing._SpareBuffers()):
        assert decoder.feed(stream[: 3 * MiB]) == []  # more than FIRST_CAPACITY at once: a buffer that long
        assert capacity() == 3 * MiB - 4
        assert decoder.feed(stream[3 * MiB : 7 * MiB]) == []  # more than twice that: as long as what came
        assert capacity() == 7 * MiB - 4
        view = decoder.receive_buffer()  # full: twice as long
        assert view is not None and len(view) == 7 * MiB - 4 and capacity() == 14 * MiB - 8
        view.release()
        assert decoder.feed(stream[7 * MiB : 14 * MiB]) == []  # a third of the frame in: its whole length
        assert capacity() == size
        [whole] = decoder.feed(stream[14 * MiB :])
    assert whole == payload


def test_outgrown_buffers_serve_the_next_large_frames() -> None:
    spares = framing._SpareBuffers()
    with patch.object(framing, "_spares", spares):
        decoder = FrameDecoder(max_frame=HUGE)
        huge = bytes(range(256)) * (3 * MiB // 256)
        stream = frame(huge, HUGE)
        got = []
        for at in range(0, len(stream), READ_SIZE):
            got += [bytes(f) for f in decoder.feed(stream[at : at + READ_SIZE]) if isinstance(f, memoryview)]
        assert got == [huge]
        # Outgrown on the way: its first buffer (1 MiB), kept; its own (3 MiB: a third was in) is not.
        assert [len(b) for b in spares._free] == [MiB]
        kept = {id(b) for b in spares._free}
        small = b"\x07" * (MiB - 100)
        stream = frame(small, HUGE)
        assert decoder.feed(stream[:1000]) == []
        view = decoder.receive_buffer()
        assert view is not None and len(view) == len(small) - 996  # the rest of the frame, at once
        assert id(view.obj) in kept  # a spare, not a new buffer
        view.release()
        [again] = _read_into(decoder, stream[1000:])
        assert again == small


# ------------------------------------------------------------------------------------------ properties

SMALL_SIZES = st.integers(0, 300)
#: Sizes about the large frame threshold and FIRST_CAPACITY as the next test patches it (LARGE_FRAME).
GROWING_SIZES = st.integers(LARGE_FRAME - 20, 12 * LARGE_FRAME)


def _expected(payloads: list[bytes], max_frame: int) -> list[bytes | OversizeFrame]:
    return [p if len(p) <= max_frame else OversizeFrame(len(p), p[:OVERSIZE_HEAD]) for p in payloads]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    sizes=st.lists(st.one_of(SMALL_SIZES, GROWING_SIZES), min_size=1, max_size=6),
    oversize=st.booleans(),
    into=st.sampled_from((0.0, 0.5, 1.0)),
    seed=st.integers(0, 2**32),
)
def test_frames_whose_buffers_grow_come_out_the_same_however_read(
    sizes: list[int], oversize: bool, into: float, seed: int
) -> None:
    """With FIRST_CAPACITY brought down to LARGE_FRAME, so that most large frames grow their buffers several
    times: any sizes, pieces from one byte up, fed or read into the decoder's buffer in any mix, give the
    frames sent; with ``oversize``, the frames over max_frame are skipped as before (reported, never held)."""
    rng = random.Random(seed)  # (drawn from hypothesis's own randomness: the base example is too large)
    payloads = [rng.randbytes(n) for n in sizes]
    max_frame = 6 * LARGE_FRAME if oversize else 16 * LARGE_FRAME
    stream = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    decoder = FrameDecoder(max_frame=max_frame, skip_oversize=oversize)
    with patch.object(framing, "FIRST_CAPACITY", LARGE_FRAME):
        got = F.read_as_a_driver(decoder, stream, rng, (1, 7, 100, 4096, LARGE_FRAME), into)
    assert got == _expected(payloads, max_frame)
    assert decoder.buffered == 0 and decoder.receive_buffer() is None


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(
    sizes=st.lists(
        st.one_of(SMALL_SIZES, st.sampled_from((MiB - 1, MiB, MiB + 1)), st.integers(MiB + 2, 8 * MiB)),
        min_size=1,
        max_size=4,
    ),
    into=st.sampled_from((0.0, 0.5, 1.0)),
    seed=st.integers(0, 2**32),
)
def test_huge_frames_that_do_arrive_come_out_whole(sizes: list[int], into: float, seed: int) -> None:
    """Frames of up to 8 MiB (announced lengths far over FIRST_CAPACITY, whose bytes then do come), in
    pieces the size of reads, fed or read into the decoder's buffer in any mix: the frames sent."""
    rng = random.Random(seed)
    payloads = [rng.randbytes(n) for n in sizes]
    stream = b"".join(frame(p, HUGE) for p in payloads)
    decoder = FrameDecoder(max_frame=HUGE)
    got = F.read_as_a_driver(decoder, stream, rng, (7, 4096, READ_SIZE, 3 * READ_SIZE, MiB), into)
    assert got == payloads
    assert decoder.buffered == 0 and decoder.receive_buffer() is None
