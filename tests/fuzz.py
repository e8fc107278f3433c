"""A fuzz campaign against the project's decoders, seeded from the captured corpus.

::

    .venv/bin/python -m tests.fuzz --seconds 600 --seed 1        # from the repository's root
    .venv/bin/python tests/fuzz.py --seconds 60 --seed 7 --target framing

Mutated inputs go round the targets in turn until the time is up: the reply, request, event and connect
decoders (the fast codec against the construct schemas, interpreted and compiled), the frame splitter
(and the tracer's frame-boundary follower), the traffic decoder on whole mutated conversations, secret
masking, and masking when unsure (a conversation with planted secrets damaged or read as the wrong
sides, in each reading of records: tests/helpers/planted.py).  It prints, per target, the inputs tried
and their outcomes by class (decoded / ProtocolError / split / other; see ``tests/helpers/fuzzing.py``),
then up to 20 failing inputs in hex; it exits 1 if any input was classed "other" (a bug).  The same seed
and time give the same inputs in the same order; a run is only as long as the machine lets it be, so its
count of inputs varies.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from helpers import fuzzing as F

TARGETS = ("codecs", "framing", "traffic", "secrets", "unsure")


def campaign(seconds: float, seed: int, targets: tuple[str, ...], report_every: float = 60.0) -> F.Tally:
    rng = random.Random(seed)
    conversations = F.load_conversations()
    seeds = F.frame_seeds(conversations)
    payloads = [s.payload for s in seeds]
    sites = F.secret_sites(conversations)
    framed_convs = [c for c in conversations if not c.name.startswith("four-letter")]
    tally = F.Tally()
    start = time.monotonic()
    deadline = start + seconds
    next_report = start + report_every
    while time.monotonic() < deadline:
        for target in targets:
            if target == "codecs":
                for _ in range(20):
                    seed_ = rng.choice(seeds)
                    payload, op = F.mutate_codec_input(rng, seed_, payloads)
                    F.check_codec(tally, seed_, payload, op=op)
            elif target == "framing":
                picked = rng.sample(payloads, rng.randint(1, 6))
                stream = F.framed(picked)
                if rng.random() < 0.5:
                    stream = F.mutate(rng, stream, payloads, max_steps=2)
                F.check_framing(tally, rng, stream)
            elif target == "traffic":
                conv = rng.choice(conversations)
                client, server = conv.client, conv.server
                if conv in framed_convs or rng.random() < 0.3:
                    client = F.mutate_stream(rng, client, payloads) if rng.random() < 0.8 else client
                    server = F.mutate_stream(rng, server, payloads) if rng.random() < 0.8 else server
                F.check_conversation(tally, rng, client, server)
            elif target == "secrets" and sites:
                site = rng.choice(sites)
                what, variant = F.secret_variants(rng, site)
                F.check_secret(tally, site, variant, what, handshake=rng.random() < 0.9)
            elif target == "unsure":
                for _ in range(5):
                    F.check_unsure(tally, rng)
        now = time.monotonic()
        if now >= next_report:
            print(f"[{now - start:,.0f}s] {tally.total():,} inputs, {tally.of(F.OTHER)} failures", flush=True)
            next_report = now + report_every
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description="Fuzz zkwire's decoders from the captured corpus.")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to run (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="the random seed (default: %(default)s)")
    parser.add_argument("--target", action="append", choices=TARGETS, help="only these targets (repeatable)")
    args = parser.parse_args()
    targets = tuple(args.target or TARGETS)
    started = time.monotonic()
    tally = campaign(args.seconds, args.seed, targets)
    elapsed = time.monotonic() - started
    print(f"\nseed {args.seed}, {elapsed:,.0f} s, {tally.total():,} inputs ({tally.total() / elapsed:,.0f}/s)\n")
    print(tally.table())
    for failure in tally.failures:
        print(f"\n--- {failure.target}: {failure.detail}\n{failure.data}")
    return 1 if tally.of(F.OTHER) else 0


if __name__ == "__main__":
    raise SystemExit(main())
