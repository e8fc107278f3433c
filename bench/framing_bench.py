"""FrameDecoder alone: what a large reply costs to split, and what a length prefix alone costs to hold,
this tree's ``zkwire/protocol/framing.py`` beside another revision's (``--base``, loaded from git into
the same process as ``zkwire.protocol._framing_base``).

* **per reply** -- a getData reply (``--sizes`` bytes of data; 1 MB is ``bench/run.py``'s scale row) arriving
  in reads of 64 KiB, one decoder for all of them (as on a connection: its buffers reused):

  - ``feed``: every read fed (the stream driver, the fault proxy, the tools);
  - ``into``: the first read fed, the rest read into the decoder's buffer (``receive_buffer`` then
    ``received``, as the fast path's ``recv_into`` does; a copy stands in for the kernel's).

  Client CPU (``time.process_time``) and minor page faults per reply over ``--replies`` replies, in
  ``--rounds`` rounds that alternate base and tree (ABBA): the median round and the lowest.  With
  ``--instructions``, also user-space instructions per reply, counted by valgrind's callgrind in a
  child process (a short run and a long one; their difference over the extra replies), which do not
  depend on what else the machine runs.
* **hostile prefix** -- a 4-byte length prefix announcing ``--hostile`` bytes fed to a
  ``FrameDecoder(max_frame=that)``, in a fresh child process per tree and size: CPU time, the growth of
  the resident set, and tracemalloc's peak.

    .venv/bin/python bench/framing_bench.py --base REV [--sizes 1000000,1048576,8388608]
                                            [--replies 200] [--rounds 6] [--instructions]
                                            [--hostile 268435456,1073741824] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from instructions import callgrind  # noqa: E402

from zkwire.protocol import framing  # noqa: E402
from zkwire.protocol.framing import READ_SIZE  # noqa: E402
from zkwire.protocol.records import GetDataResponse, ReplyHeader, Stat  # noqa: E402

#: The environment variable naming the base revision's framing.py (for the children).
BASE_FILE = "ZKWIRE_FRAMING_BASE"
CHILD = "--child"
MODES = ("feed", "into")
STAT = Stat(0x100000002, 0x100000005, 1_700_000_000_000, 1_700_000_001_000, 3, 0, 0, 0, 100, 0, 0x100000002)


def load_base(path: str) -> ModuleType:
    """The base revision's framing.py as ``zkwire.protocol._framing_base`` (its relative imports resolve
    against this tree's unchanged modules)."""
    spec = importlib.util.spec_from_file_location("zkwire.protocol._framing_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def implementation(name: str) -> ModuleType:
    return framing if name == "tree" else load_base(os.environ[BASE_FILE])


def reply_stream(data_size: int) -> bytes:
    """A getData reply frame (length prefix included) carrying ``data_size`` bytes."""
    out = bytearray()
    ReplyHeader(7, 0x100000009, 0).write(out)
    GetDataResponse(b"\x5a" * data_size, STAT).write(out)
    return struct.pack(">i", len(out)) + bytes(out)


def replier(module: ModuleType, mode: str, stream: bytes) -> Callable[[int], int]:
    """A function splitting ``n`` replies ``stream`` as ``mode`` reads them; it returns the frames seen."""
    decoder = module.FrameDecoder(max_frame=max(len(stream), framing.DEFAULT_MAX_FRAME))
    source = memoryview(stream)
    reads = [source[at : at + READ_SIZE] for at in range(0, len(stream), READ_SIZE)]
    first = reads[0]

    def feed(n: int) -> int:
        frames = 0
        for _ in range(n):
            for data in reads:
                frames += len(decoder.feed(data))
        return frames

    def into(n: int) -> int:
        frames = 0
        end = len(stream)
        for _ in range(n):
            frames += len(decoder.feed(first))
            pos = len(first)
            while pos < end:  # a read takes what the buffer has room for, up to READ_SIZE
                view = decoder.receive_buffer()
                k = min(len(view), READ_SIZE, end - pos)
                view[:k] = source[pos : pos + k]
                view.release()
                frames += len(decoder.received(k))
                pos += k
        return frames

    return feed if mode == "feed" else into


# ------------------------------------------------------------------------------------------ per reply


def time_replies(module: ModuleType, mode: str, stream: bytes, replies: int) -> tuple[float, float]:
    """Client CPU (µs) and minor page faults per reply."""
    run = replier(module, mode, stream)
    run(3)  # the decoder's buffers in place, as on a connection that has had large replies
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.process_time()
    assert run(replies) == replies
    cpu = time.process_time() - start
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return cpu / replies * 1e6, faults / replies


def count_instructions(impl: str, mode: str, size: int, replies: int, out_dir: Path) -> int:
    """User-space instructions of a child process splitting ``replies`` replies."""
    args = [str(Path(__file__).resolve()), CHILD, "replies", impl, mode, str(size), str(replies)]
    return callgrind(args, out_dir / f"callgrind.{impl}.{mode}.{size}.{replies}", f"{impl} {mode} {size}")


# ------------------------------------------------------------------------------------------ hostile prefix


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def hostile(module: ModuleType, announced: int) -> dict[str, float]:
    """What one length prefix announcing ``announced`` bytes costs a fresh decoder."""
    prefix = struct.pack(">i", announced)
    decoder = module.FrameDecoder(max_frame=announced)
    rss = _rss()
    start = time.process_time()
    assert decoder.feed(prefix) == []
    cpu = time.process_time() - start
    grown = _rss() - rss
    del decoder
    tracemalloc.start()
    decoder = module.FrameDecoder(max_frame=announced)
    assert decoder.feed(prefix) == []
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"cpu_s": cpu, "rss_growth_bytes": grown, "tracemalloc_peak_bytes": peak}


def run_child(args: list[str]) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), CHILD, *args], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def child(argv: list[str]) -> None:
    if argv[0] == "replies":
        impl, mode, size, replies = argv[1], argv[2], int(argv[3]), int(argv[4])
        run = replier(implementation(impl), mode, reply_stream(size))
        assert run(replies) == replies
    else:
        impl, announced = argv[1], int(argv[2])
        print(json.dumps(hostile(implementation(impl), announced)))


# ------------------------------------------------------------------------------------------ main


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        child(sys.argv[2:])
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", required=True, help="the git revision whose framing.py to compare with")
    p.add_argument("--sizes", default="1000000,1048576,8388608", help="getData sizes in bytes")
    p.add_argument("--replies", type=int, default=200, help="replies per round and size (default 200)")
    p.add_argument("--rounds", type=int, default=6, help="ABBA rounds (default 6)")
    p.add_argument("--instructions", action="store_true", help="also count instructions (callgrind)")
    p.add_argument("--calls", default="20,80", help="the short and long callgrind runs, in replies (default 20,80)")
    p.add_argument("--hostile", default="268435456,1073741824", help="announced lengths (bytes); '' for none")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.base}:zkwire/protocol/framing.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    document: dict[str, Any] = {"base": args.base, "replies": args.replies, "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="zkwire-framing-") as tmp:
        base_file = Path(tmp) / "framing_base.py"
        base_file.write_text(source)
        os.environ[BASE_FILE] = str(base_file)
        modules = {"base": load_base(str(base_file)), "tree": framing}

        print(f"per reply, reads of {READ_SIZE} bytes: client CPU µs (median round, lowest), minor faults")
        per_reply: dict[str, Any] = {}
        for size in sizes:
            stream = reply_stream(size)
            for mode in MODES:
                cpu: dict[str, list[float]] = {"base": [], "tree": []}
                faults: dict[str, list[float]] = {"base": [], "tree": []}
                for r in range(args.rounds):
                    order = ("base", "tree") if r % 4 in (0, 3) else ("tree", "base")  # ABBA
                    for impl in order:
                        us, flt = time_replies(modules[impl], mode, stream, args.replies)
                        cpu[impl].append(us)
                        faults[impl].append(flt)
                row = {impl: {"cpu_us": cpu[impl], "minflt": faults[impl]} for impl in cpu}
                per_reply[f"{size}/{mode}"] = row
                med = {impl: statistics.median(cpu[impl]) for impl in cpu}
                flt = {impl: statistics.median(faults[impl]) for impl in faults}
                print(
                    f"  {size:>9} B {mode:4}: base {med['base']:8.1f} ({min(cpu['base']):.1f}), "
                    f"tree {med['tree']:8.1f} ({min(cpu['tree']):.1f}), tree/base {med['tree'] / med['base']:.3f}; "
                    f"faults base {flt['base']:.1f}, tree {flt['tree']:.1f}",
                    flush=True,
                )
        document["per_reply"] = per_reply

        if args.instructions:
            if shutil.which("valgrind") is None:
                print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
                return 1
            short, long = (int(c) for c in args.calls.split(","))
            print(f"per reply: user-space instructions (callgrind, runs of {long} and {short} replies)")
            counts: dict[str, Any] = {}
            for size in sizes:
                for mode in MODES:
                    row = {}
                    for impl in ("base", "tree"):
                        n = [count_instructions(impl, mode, size, k, Path(tmp)) for k in (short, long)]
                        row[impl] = (n[1] - n[0]) / (long - short)
                    counts[f"{size}/{mode}"] = row
                    print(
                        f"  {size:>9} B {mode:4}: base {row['base']:>12,.0f}, tree {row['tree']:>12,.0f}, "
                        f"tree/base {row['tree'] / row['base']:.3f}",
                        flush=True,
                    )
            document["instructions"] = counts

        hostile_rows: dict[str, Any] = {}
        announced = [int(s) for s in args.hostile.split(",") if s]
        if announced:
            print("one length prefix alone, a fresh process each: CPU, RSS growth, tracemalloc peak")
        for n in announced:
            for impl in ("base", "tree"):
                row = run_child(["hostile", impl, str(n)])
                hostile_rows[f"{n}/{impl}"] = row
                print(
                    f"  {n:>10} {impl}: {row['cpu_s'] * 1e3:9.2f} ms CPU, RSS +{_mib(row['rss_growth_bytes'])}, "
                    f"peak {_mib(row['tracemalloc_peak_bytes'])}",
                    flush=True,
                )
        document["hostile"] = hostile_rows
    if args.json:
        args.json.write_text(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
