"""The fuzzing engine of the project: seeds from real traffic, mutations, and the properties checked.

Shared by ``tests/unit/test_fuzz.py`` (a bounded, deterministic slice run with the suite, driven by hypothesis)
and ``tests/fuzz.py`` (long campaigns with a seed, reporting figures).  Seeds are the frames of
``tests/corpus/conversations.json`` (captured from a real server by ``tests/helpers/capture_corpus.py``).

Each ``check_*`` function takes one (mutated) input and returns its outcome class:

* ``decoded``: accepted, and every property held (for the codecs: the fast codec and the construct
  schemas, interpreted and compiled, accepted it and agree on the value);
* ``ProtocolError``: refused with :class:`~zkwire.errors.ProtocolError` (by every decoder alike; for the
  traffic decoder: some frame was reported malformed);
* ``split``: one decoder accepted what another refused (reported, not a failure: the brief of the
  differential check is that they agree when both accept);
* ``other``: anything else escaped, or a property failed (a disagreement on the value, output too long,
  a raw control character, a secret shown, a hang): a bug.  :class:`Tally` keeps examples.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import struct
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkwire.constants import DEFAULT_MAX_FRAME
from zkwire.errors import ProtocolError
from zkwire.protocol.codec import (
    REQUEST_RECORDS,
    RESPONSE_RECORDS,
    decode_connect_request,
    decode_connect_response,
    decode_reply,
    decode_request,
    decode_watcher_event,
)
from zkwire.protocol.framing import FrameDecoder, OversizeFrame
from zkwire.trace import schema as S
from zkwire.trace.decoder import (
    CLIENT,
    SERVER,
    ConversationDecoder,
    DecodedFrame,
    decode_conversation,
    secret_spans,
)
from zkwire.trace.resync import FrameTracker
from zkwire.trace.tracer import TraceOptions

CORPUS_FILE = Path(__file__).resolve().parents[1] / "corpus" / "conversations.json"

DECODED = "decoded"
REJECTED = "ProtocolError"
SPLIT = "split"
OTHER = "other"
OUTCOMES = (DECODED, REJECTED, SPLIT, OTHER)

#: A traffic decoder run longer than this counts as a hang.
HANG_SECONDS = 10.0

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
INTERESTING_INT32 = (
    0, 1, -1, -2, 2, 3, 4, 8, 16, 20, 64, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
    DEFAULT_MAX_FRAME, DEFAULT_MAX_FRAME + 1, 0x7FFFFFFF, -0x80000000, -0x7FFFFFFF,
)  # fmt: skip
INTERESTING_INT64 = (0, 1, -1, 0x7FFFFFFFFFFFFFFF, -0x8000000000000000, 0x100000000)


# ------------------------------------------------------------------------------------------ corpus


@dataclass(frozen=True)
class Conversation:
    name: str
    client: bytes
    server: bytes


@dataclass(frozen=True)
class Seed:
    """One frame payload (no length prefix) of the corpus.  ``op``: what a reply answers."""

    kind: str  # "request", "reply", "event", "connect_request", "connect_response"
    op: int | None
    payload: bytes
    source: str


@dataclass(frozen=True)
class SecretSite:
    """A frame of a conversation that carries a secret: where it is, and the secret's bytes."""

    conversation: Conversation
    direction: str
    offset: int  # of the frame's length prefix in that direction's bytes
    length: int  # of the frame, length prefix included
    secret: bytes  # what must never be shown (for a digest credential: the password part)
    role: str


def load_conversations(path: Path = CORPUS_FILE) -> list[Conversation]:
    data = json.loads(path.read_text())
    return [
        Conversation(c["name"], bytes.fromhex(c["client"]), bytes.fromhex(c["server"])) for c in data["conversations"]
    ]


_SEED_KINDS = {
    ("client", "connect"): "connect_request",
    ("server", "connect_response"): "connect_response",
    ("client", "request"): "request",
    ("client", "auth"): "request",
    ("client", "ping"): "request",
    ("server", "reply"): "reply",
    ("server", "auth"): "reply",
    ("server", "ping"): "reply",
    ("server", "event"): "event",
}


def frame_seeds(conversations: Sequence[Conversation]) -> list[Seed]:
    """Every frame of the corpus that decoded, by kind; replies with the op they answer."""
    out: list[Seed] = []
    for conv in conversations:
        for f in decode_conversation(conv.client, conv.server):
            kind = _SEED_KINDS.get((f.direction, f.kind))
            if kind is None or (kind == "reply" and f.op is None):
                continue
            out.append(Seed(kind, f.op, f.payload, f"{conv.name}#{f.direction}{f.index}"))
    return out


def secret_sites(conversations: Sequence[Conversation]) -> list[SecretSite]:
    """The frames that carry a session password, an auth credential or a SASL token worth hiding."""
    sites: list[SecretSite] = []
    for conv in conversations:
        for f in decode_conversation(conv.client, conv.server):
            if not f.secret_spans:
                continue
            start, end = f.secret_spans[0]
            secret = f.payload[start:end]
            role = {"connect": "connect_request", "connect_response": "connect_response", "auth": "auth"}.get(
                f.kind, "sasl_request" if f.direction == CLIENT else "sasl_reply"
            )
            if role == "auth" and b":" in secret:
                secret = secret.split(b":", 1)[1]  # the user name is no secret (whoAmI shows it)
            if len(secret) < 4 or len(set(secret)) < 3:
                continue  # a new session's password of zeros is nothing to find
            sites.append(SecretSite(conv, f.direction, f.offset, f.size + 4, secret, role))
    return sites


# ------------------------------------------------------------------------------------------ mutations


#: Every op code with a reply format, and every op code with a request format.
REPLY_OPS = tuple(sorted(RESPONSE_RECORDS))
REQUEST_OPS = tuple(sorted(REQUEST_RECORDS))


def mutate_codec_input(rng: random.Random, seed: Seed, donors: Sequence[bytes]) -> tuple[bytes, int | None]:
    """A mutated payload for :func:`check_codec`, and sometimes another op to read a reply as (or, for a
    request, another op code written into its header): every decoder gets every kind of body."""
    payload = mutate(rng, seed.payload, donors)
    op = None
    if rng.random() < 0.25:
        if seed.kind == "reply":
            op = rng.choice(REPLY_OPS)
        elif seed.kind == "request" and len(payload) >= 8:
            payload = payload[:4] + _I32.pack(rng.choice(REQUEST_OPS)) + payload[8:]
    return payload, op


def mutate(rng: random.Random, data: bytes, donors: Sequence[bytes] = (), *, max_steps: int = 4) -> bytes:
    """``data`` with 1 to ``max_steps`` random edits: bit flips, bytes and int32/int64 fields set to
    interesting values (lengths, limits, nudged by a little), cuts, insertions, deletions, duplications,
    and splices with ``donors``."""
    out = bytearray(data)
    for _ in range(rng.randint(1, max_steps)):
        choice = rng.randrange(11)
        n = len(out)
        if choice == 0 and n:
            out[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif choice == 1 and n:
            out[rng.randrange(n)] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)))
        elif choice in (2, 3) and n >= 4:
            at = rng.randrange(n - 3)
            if choice == 2 and rng.random() < 0.5:
                at -= at % 4
            current = _I32.unpack_from(out, at)[0]
            value = rng.choice(
                (rng.choice(INTERESTING_INT32), current + rng.randint(-8, 8), rng.randint(-(1 << 31), (1 << 31) - 1))
            )
            _I32.pack_into(out, at, max(-(1 << 31), min((1 << 31) - 1, value)))
        elif choice == 4 and n >= 8:
            _I64.pack_into(out, rng.randrange(n - 7), rng.choice(INTERESTING_INT64))
        elif choice == 5:
            del out[rng.randint(0, n) :]
        elif choice == 6:
            out += rng.randbytes(rng.randint(1, 8))
        elif choice == 7:
            at = rng.randint(0, n)
            out[at:at] = rng.randbytes(rng.randint(1, 8))
        elif choice == 8 and n:
            at = rng.randrange(n)
            del out[at : at + rng.randint(1, 16)]
        elif choice == 9 and n:
            at = rng.randrange(n)
            piece = out[at : at + rng.randint(1, 32)]
            where = rng.randint(0, len(out))
            out[where:where] = piece
        elif choice == 10 and donors:
            donor = rng.choice(donors)
            out = out[: rng.randint(0, n)] + donor[rng.randint(0, len(donor)) :]
    return bytes(out)


def framed(payloads: Sequence[bytes]) -> bytes:
    return b"".join(_I32.pack(len(p)) + p for p in payloads)


def split_frames(stream: bytes) -> list[bytes]:
    """The payloads of a well-framed stream (its own simple splitter, independent of FrameDecoder)."""
    out, pos = [], 0
    while pos + 4 <= len(stream):
        n = _I32.unpack_from(stream, pos)[0]
        out.append(stream[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


def mutate_stream(rng: random.Random, stream: bytes, donors: Sequence[bytes] = ()) -> bytes:
    """A conversation direction mutated frame-wise (drop, duplicate, swap or edit frames) and/or byte-wise."""
    frames = split_frames(stream)
    if frames and rng.random() < 0.7:
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(frames))
            action = rng.randrange(5)
            if action == 0 and len(frames) > 1:
                del frames[i]
            elif action == 1:
                frames.insert(i, frames[i])
            elif action == 2:
                j = rng.randrange(len(frames))
                frames[i], frames[j] = frames[j], frames[i]
            else:
                frames[i] = mutate(rng, frames[i], donors)
        stream = framed(frames)
    if rng.random() < 0.4:
        stream = mutate(rng, stream, donors, max_steps=2)
    return stream


def chunks(rng: random.Random, data: bytes) -> list[bytes]:
    """``data`` cut at random places (sometimes byte by byte, sometimes whole)."""
    mode = rng.randrange(4)
    if mode == 0 or not data:
        return [data]
    if mode == 1:
        return [data[i : i + 1] for i in range(len(data))]
    cuts = sorted({rng.randint(0, len(data)) for _ in range(rng.randint(1, 12))} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(cuts) if b > a]


# ------------------------------------------------------------------------------------------ outcomes


@dataclass
class Failure:
    target: str
    detail: str
    data: str  # hex of the input


@dataclass
class Tally:
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    max_failures: int = 20

    def add(self, target: str, outcome: str, detail: str = "", data: bytes = b"") -> str:
        self.counts[(target, outcome)] += 1
        if outcome == OTHER and len(self.failures) < self.max_failures:
            self.failures.append(Failure(target, detail, data.hex()))
        return outcome

    def total(self, target: str | None = None) -> int:
        return sum(n for (t, _), n in self.counts.items() if target is None or t == target)

    def of(self, outcome: str) -> int:
        return sum(n for (_, o), n in self.counts.items() if o == outcome)

    def table(self) -> str:
        targets = sorted({t for t, _ in self.counts})
        rows = [f"{'target':<22}" + "".join(f"{o:>15}" for o in OUTCOMES) + f"{'tried':>15}"]
        for t in targets:
            rows.append(f"{t:<22}" + "".join(f"{self.counts[(t, o)]:>15,}" for o in OUTCOMES) + f"{self.total(t):>15,}")
        rows.append(f"{'all':<22}" + "".join(f"{self.of(o):>15,}" for o in OUTCOMES) + f"{self.total():>15,}")
        return "\n".join(rows)


def _run(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except ProtocolError as e:
        return REJECTED, str(e)
    except Exception:
        return OTHER, traceback.format_exc(limit=4)


def _judge(results: dict[str, tuple[str, Any]]) -> tuple[str, str]:
    """Outcome class of several decoders' results on one input, and a detail for failures."""
    for name, (status, value) in results.items():
        if status == OTHER:
            return OTHER, f"{name} raised: {value}"
    accepted = {name: value for name, (status, value) in results.items() if status == "ok"}
    if not accepted:
        return REJECTED, ""
    values = list(accepted.values())
    if any(v != values[0] for v in values[1:]):
        return OTHER, "decoders disagree: " + "; ".join(f"{k}={v!r}"[:300] for k, v in accepted.items())
    if len(accepted) < len(results):
        refused = {k: v for k, (s, v) in results.items() if s != "ok"}
        return SPLIT, f"accepted by {sorted(accepted)}, refused by {refused}"
    return DECODED, ""


# ------------------------------------------------------------------------------------------ codecs


def _schema_modes(compiled: bool | None) -> tuple[bool, ...]:
    return (False, True) if compiled is None else (compiled,)


def check_codec(
    tally: Tally, seed: Seed, payload: bytes, *, compiled: bool | None = None, op: int | None = None
) -> str:
    """The fast codec against the construct schemas on ``payload`` read as ``seed``'s kind of frame (a
    reply as the reply to ``op`` when given, else to the op it answered)."""
    if op is not None and seed.kind == "reply":
        seed = Seed(seed.kind, op, seed.payload, f"{seed.source} read as op {op}")
    results: dict[str, tuple[str, Any]] = {}
    modes = _schema_modes(compiled)
    kind = seed.kind
    event = kind == "event" or (kind == "reply" and payload[:4] == b"\xff\xff\xff\xff")
    if event:
        # The body after the ReplyHeader (the session routes xid -1 to the event decoder by itself).
        target = "event decoders"
        body = payload[16:]
        results["fast"] = _run(lambda: S.record_to_plain(decode_watcher_event(payload)))
        for m in modes:
            results[f"schema{'/c' if m else ''}"] = _run(
                lambda m=m: S.to_plain(S.parse(S.WatcherEvent, body, compiled=m)) if len(payload) >= 16 else _short()
            )
    elif kind == "reply":
        target = "reply decoders"
        op = seed.op
        results["fast"] = _run(lambda: S.record_to_plain(decode_reply(op, payload)[1]))  # type: ignore[arg-type]
        for m in modes:
            results[f"schema{'/c' if m else ''}"] = _run(
                lambda m=m: S.to_plain(S.parse_reply(op, payload, compiled=m))["body"]
            )
    elif kind == "request":
        target = "request decoders"
        results["fast"] = _run(lambda: _request_plain(payload))
        for m in modes:
            results[f"schema{'/c' if m else ''}"] = _run(lambda m=m: S.to_plain(S.parse_request(payload, compiled=m)))
    elif kind == "connect_request":
        target = "connect decoders"
        results["fast"] = _run(lambda: S.record_to_plain(decode_connect_request(payload)))
        for m in modes:
            results[f"schema{'/c' if m else ''}"] = _run(
                lambda m=m: S.to_plain(S.parse_connect_request(payload, compiled=m))
            )
    else:
        target = "connect decoders"
        results["fast"] = _run(lambda: S.record_to_plain(decode_connect_response(payload)))
        for m in modes:
            results[f"schema{'/c' if m else ''}"] = _run(
                lambda m=m: S.to_plain(S.parse_connect_response(payload, compiled=m))
            )
    outcome, detail = _judge(results)
    return tally.add(target, outcome, f"{seed.source} op={seed.op}: {detail}", payload)


def _short() -> None:
    raise ProtocolError("shorter than a ReplyHeader")


def _request_plain(payload: bytes) -> dict[str, Any]:
    header, record = decode_request(payload)
    return {"header": S.record_to_plain(header), "body": S.record_to_plain(record)}


# ------------------------------------------------------------------------------------------ framing


def reference_split(stream: bytes, max_frame: int) -> tuple[list[bytes], bool, int]:
    """(complete frames before any bad length, whether a bad length was met, bytes left over)."""
    out, pos = [], 0
    while len(stream) - pos >= 4:
        n = _I32.unpack_from(stream, pos)[0]
        if not 0 <= n <= max_frame:
            return out, True, len(stream) - pos
        if pos + 4 + n > len(stream):
            break
        out.append(stream[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out, False, len(stream) - pos


def frame_starts(stream: bytes, max_frame: int) -> list[int]:
    starts, pos = [], 0
    while len(stream) - pos >= 4:
        n = _I32.unpack_from(stream, pos)[0]
        if not 0 <= n <= max_frame:
            break
        starts.append(pos)
        pos += 4 + n
    else:
        if pos < len(stream):
            starts.append(pos)  # a length prefix begun at the very end
    return starts


def feed_frames(parts: Sequence[bytes], max_frame: int) -> tuple[list[bytes], bool, int]:
    decoder = FrameDecoder(max_frame)
    out: list[bytes] = []
    try:
        for part in parts:
            out += decoder.feed(part)
            if decoder.error is not None:  # frames before a bad length come back, then it stays failed
                raise decoder.error
    except ProtocolError:
        try:
            decoder.feed(b"\x00\x00\x00\x00")
        except ProtocolError:
            return out, True, -1
        raise AssertionError("FrameDecoder accepted bytes after failing") from None
    return out, False, decoder.buffered


def check_framing(tally: Tally, rng: random.Random, stream: bytes, *, strict_bad_length: bool = False) -> str:
    """FrameDecoder fed whole, byte at a time, a frame per read (the decoder's one-frame path) and in
    random chunks gives the same frames (as the reference splitter); after a bad length it stays failed.
    The tracer's boundary follower agrees on where frames start.  ``strict_bad_length`` also wants the
    frames that precede a bad length in the same chunk."""
    max_frame = rng.choice((DEFAULT_MAX_FRAME, 1000, 64))
    try:
        expected, bad, left = reference_split(stream, max_frame)
        whole = feed_frames([stream], max_frame)
        single = feed_frames([stream[i : i + 1] for i in range(len(stream))], max_frame)
        cuts = sorted({0, *frame_starts(stream, max_frame), len(stream)})
        aligned = feed_frames([stream[a:b] for a, b in itertools.pairwise(cuts)], max_frame)
        parts = chunks(rng, stream)
        chunked = feed_frames(parts, max_frame)
        feeds = (("whole", whole), ("bytes", single), ("frames", aligned), ("chunks", chunked))
        for name, (frames, failed, buffered) in feeds:
            assert failed == bad, f"{name}: failed={failed}, reference bad length={bad}"
            if not bad:
                assert frames == expected, f"{name}: {len(frames)} frames, reference {len(expected)}"
                assert buffered == left, f"{name}: {buffered} bytes buffered, reference {left}"
            elif strict_bad_length or name == "bytes":
                assert frames == expected, f"{name}: {len(frames)} frames before the bad length, not {len(expected)}"
            else:
                assert frames == expected[: len(frames)], f"{name}: frames are not a prefix of the reference"
        starts = frame_starts(stream, max_frame)
        bounds = FrameTracker(max_frame)
        pos = 0
        for part in parts:
            first = bounds.feed(part)
            inside = [s for s in starts if pos <= s < pos + len(part)]
            if bounds.framed and not bad:  # a bad length is only known once its 4 bytes are in
                want = inside[0] - pos if inside else None
                assert first == want, f"boundary follower: {first}, frames start at {want} in a chunk at {pos}"
            pos += len(part)
    except AssertionError as e:
        return tally.add("framing", OTHER, str(e), stream)
    except Exception:
        return tally.add("framing", OTHER, traceback.format_exc(limit=4), stream)
    return tally.add("framing", REJECTED if bad else DECODED)


def read_as_a_driver(
    decoder: FrameDecoder, stream: bytes, rng: random.Random, steps: Sequence[int], into: float = 0.7
) -> list[bytes | OversizeFrame]:
    """``stream`` through ``decoder`` as a driver reads it, in pieces of a size drawn from ``steps`` (now
    and then up to three times the largest instead): into the decoder's buffer when it offers one (with
    probability ``into``), fed otherwise.  The frames, each copied as it comes (a large frame's view is valid
    until the next call), as the session core does."""
    got: list[bytes | OversizeFrame] = []
    pos = 0
    while pos < len(stream):
        step = rng.choice(steps) if rng.random() < 0.8 else rng.randint(1, 3 * max(steps))
        view = decoder.receive_buffer()
        if view is not None and rng.random() < into:
            n = min(len(view), step, len(stream) - pos)
            view[:n] = stream[pos : pos + n]
            view.release()
            frames = decoder.received(n)
        else:
            if view is not None:
                view.release()
            n = min(step, len(stream) - pos)
            frames = decoder.feed(stream[pos : pos + n])
        pos += n
        got += [bytes(f) if isinstance(f, memoryview) else f for f in frames]
        del frames  # done with the views: their buffers may serve the next frames
    return got


# ------------------------------------------------------------------------------------------ traffic decoder

_RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class Sink:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def _render(frames: Sequence[DecodedFrame], *, max_line: int = 4096, modes: str = "vj") -> str:
    """What ``zkwire trace`` prints for ``frames``: with ``--verbose`` (v), plain (p), ``--json`` (j)."""
    sink = Sink()
    for mode in modes:
        options = TraceOptions(out=sink, verbose=mode == "v", json_lines=mode == "j", max_line=max_line)  # type: ignore[arg-type]
        for frame in frames:
            options.emit(1, frame, 0.0)
    return "".join(sink.parts)


def check_conversation(tally: Tally, rng: random.Random, client: bytes, server: bytes) -> str:
    """The traffic decoder fed a (mutated) conversation, both sides interleaved in random chunks, with
    random skips: nothing but its documented ValueError may escape (and that only for a bad direction or
    skip count, never used here), it ends in time, and every frame formats within the line cap and without
    a raw control character."""
    max_line = rng.choice((0, 4096, 300))
    decoder = ConversationDecoder(
        handshake=rng.random() < 0.85, compiled=rng.random() < 0.5, max_frame=rng.choice((DEFAULT_MAX_FRAME, 2048))
    )
    started = time.monotonic()
    frames: list[DecodedFrame] = []
    data = client + server
    try:
        pending = [(CLIENT, c) for c in chunks(rng, client)][::-1], [(SERVER, c) for c in chunks(rng, server)][::-1]
        now = 0.0
        while pending[0] or pending[1]:
            side = pending[0] if pending[0] and (not pending[1] or rng.random() < 0.5) else pending[1]
            direction, part = side.pop()
            now += 0.001
            if rng.random() < 0.03:
                frames += decoder.skip(direction, rng.randint(0, 64), now)
            frames += decoder.feed(direction, part, now)
        frames += decoder.finish(now)
        for line in _render(frames, max_line=max_line, modes="vpj").splitlines():
            # JSON objects carry their fixed fields whatever the cap: they may pass it by that much.
            if max_line:
                limit = max_line + 1536 if line.startswith("{") else max_line
                assert len(line) <= limit, f"line of {len(line)} characters (cap {max_line})"
            assert not _RAW_CONTROL.search(line), f"raw control character in {line[:200]!r}"
        elapsed = time.monotonic() - started
        assert elapsed < HANG_SECONDS, f"decoding took {elapsed:.1f}s"
    except AssertionError as e:
        return tally.add("traffic decoder", OTHER, str(e), data)
    except Exception:
        return tally.add("traffic decoder", OTHER, traceback.format_exc(limit=6), data)
    malformed = any(f.kind == "malformed" for f in frames)
    return tally.add("traffic decoder", REJECTED if malformed else DECODED)


# ------------------------------------------------------------------------------------------ secrets


def shows(text: str, secret: bytes) -> bytes | None:
    """A 4-byte piece of ``secret`` that ``text`` shows: as text, hex, a hex dump or a bytes repr."""
    low = text.lower()
    for i in range(len(secret) - 3):
        piece = secret[i : i + 4]
        forms = [piece.hex(), " ".join(f"{b:02x}" for b in piece), repr(piece)[2:-1].lower()]
        if all(32 <= b < 127 for b in piece):
            forms.append(piece.decode("ascii").lower())
        if any(form in low for form in forms):
            return piece
    return None


def secret_variants(rng: random.Random, site: SecretSite) -> tuple[str, bytes]:
    """One variant of the site's frame: cut short, with bytes appended, with a length field changed, or
    with bytes of the secret itself changed (the ways a frame fails to decode without changing its op)."""
    stream = site.conversation.client if site.direction == CLIENT else site.conversation.server
    frame = stream[site.offset : site.offset + site.length]
    payload = bytearray(frame[4:])
    what = rng.randrange(4)
    if what == 0:
        k = rng.randint(0, len(frame))
        return f"cut at {k}", frame[:k]
    if what == 1:
        extra = rng.randbytes(rng.randint(1, 8))
        return "trailing bytes", _I32.pack(len(payload) + len(extra)) + bytes(payload) + extra
    if what == 2:
        fields = {"connect_request": (24,), "connect_response": (16,), "sasl_request": (8,), "sasl_reply": (16,)}
        at = fields.get(site.role)
        if at is None:  # auth: the scheme's length, or the credential's
            scheme = _I32.unpack_from(payload, 12)[0]
            at = (12, 16 + max(scheme, 0))
        where = rng.choice(at)
        if where + 4 <= len(payload):
            current = _I32.unpack_from(payload, where)[0]
            _I32.pack_into(payload, where, rng.choice((current + rng.randint(1, 40), -7, 1 << 30, current - 1)))
        return f"length field at {where}", _I32.pack(len(payload)) + bytes(payload)
    spans = secret_spans(site.role, bytes(payload), exact=True)
    if spans and spans[0][1] > spans[0][0]:
        start, end = spans[0]
        payload[rng.randrange(start, end)] = rng.randrange(256)
    k = rng.randint(0, len(payload))
    return "secret edited, then cut", (_I32.pack(len(payload)) + bytes(payload))[: 4 + k]


def check_secret(tally: Tally, site: SecretSite, variant: bytes, what: str, *, handshake: bool = True) -> str:
    """The frame variant after what came before it in its direction, and the rest of the conversation:
    with ``--verbose`` and ``--json``, no 4-byte piece of the secret may show."""
    conv = site.conversation
    stream = conv.client if site.direction == CLIENT else conv.server
    before = stream[: site.offset]
    try:
        decoder = ConversationDecoder(handshake=handshake)
        if site.direction == SERVER:
            decoder.feed_client(conv.client)
        frames = decoder.feed(site.direction, before + variant) + decoder.finish()
        text = _render(frames)
        leaked = shows(text, site.secret)
    except Exception:
        return tally.add("secret masking", OTHER, traceback.format_exc(limit=4), variant)
    if leaked is not None:
        return tally.add("secret masking", OTHER, f"{site.role} ({what}): {leaked!r} shown", variant)
    malformed = any(f.kind == "malformed" for f in frames)
    return tally.add("secret masking", REJECTED if malformed else DECODED)


def check_unsure(tally: Tally, rng: random.Random) -> str:
    """The planted conversation (tests/helpers/planted.py) damaged, maybe read as the wrong sides, in each
    reading of records with the views that use it: no 4-byte piece of a planted secret may show."""
    from tests.helpers import planted  # planted imports this module

    client, server = planted.conversation()
    c = planted.corrupt(rng, client) if rng.random() < 0.7 else client
    s = planted.corrupt(rng, server) if rng.random() < 0.7 else server
    got_client, got_server = rng.choice(planted.layouts(c, s))
    reading = rng.choice(tuple(planted.READINGS_SHOWN))
    data = (got_client or b"") + b"|" + (got_server or b"")
    try:
        frames = planted.decode(got_client, got_server, handshake=rng.random() < 0.8, reading=reading)
        leaks = planted.leaked(frames, reading)
    except Exception:
        return tally.add("masking when unsure", OTHER, traceback.format_exc(limit=4), data)
    if leaks:
        return tally.add("masking when unsure", OTHER, f"{reading} reading: {leaks[0]} shown", data)
    malformed = any(f.kind == "malformed" for f in frames)
    return tally.add("masking when unsure", REJECTED if malformed else DECODED)
