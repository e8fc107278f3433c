"""What following the ensemble costs a session: the time from a new session to its first answered request
and the client CPU per session, with ``follow_ensemble`` on (the default) and off, on a reconfigurable
3-member ensemble of the project's launcher (whose configuration names the members' client addresses,
so the follower reads it, resolves nothing and keeps the list).  The two settings alternate in ABBA
order over ``--rounds`` rounds; medians over all sessions of a setting.

The request path's cost with the configuration watch held is ``bench/instructions.py``'s row (the watch
is there in every session it measures).

    .venv/bin/python bench/following.py [--rounds 4] [--sessions 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import trio

import zkwire
from zkwire.testing.embedded import EmbeddedEnsemble


async def one_session(hosts: str, follow: bool) -> tuple[float, float]:
    """Seconds from opening a session to its first answer, and the client CPU the whole session took
    (open, the request, a moment for the follower's read, close)."""
    cpu = time.process_time()
    start = trio.current_time()
    async with zkwire.open_client(hosts, follow_ensemble=follow) as zk:
        await zk.exists("/")
        first = trio.current_time() - start
        await trio.sleep(0.1)  # the follower reads the configuration meanwhile (50 ms after connecting)
    return first, time.process_time() - cpu


async def measure(hosts: str, rounds: int, sessions: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {"on": {"first": [], "cpu": []}, "off": {"first": [], "cpu": []}}
    for _ in range(warmup):
        await one_session(hosts, True)
        await one_session(hosts, False)
    for r in range(rounds):
        order = ("on", "off") if r % 2 == 0 else ("off", "on")
        for setting in order:
            for _ in range(sessions):
                first, cpu = await one_session(hosts, setting == "on")
                samples[setting]["first"].append(first)
                samples[setting]["cpu"].append(cpu)
    return samples


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--sessions", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    with EmbeddedEnsemble(3, reconfigurable=True) as ensemble:
        samples = trio.run(measure, ensemble.hosts, args.rounds, args.sessions, args.warmup)
    rows = {}
    for setting in ("on", "off"):
        first = statistics.median(samples[setting]["first"]) * 1000
        cpu = statistics.median(samples[setting]["cpu"]) * 1000
        rows[setting] = (first, cpu)
        print(f"follow_ensemble {setting:3}  first answer {first:6.2f} ms   client CPU per session {cpu:6.2f} ms")
    first_ratio, cpu_ratio = rows["on"][0] / rows["off"][0], rows["on"][1] / rows["off"][1]
    print(f"on / off: first answer {first_ratio:.2f}x, CPU per session {cpu_ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
