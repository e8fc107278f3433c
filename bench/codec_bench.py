"""Micro-benchmark of the jute codec: the fast hand-written path against the construct schemas.

Measures the per-message cost of the two commonest operations of a read-heavy client: decoding a
getData reply (100 bytes of data and a Stat) and encoding a getData request.  Each is timed with
the fast codec (zkwire.protocol.codec), construct interpreted, and construct compiled (zkwire.trace.schema).

    python bench/codec_bench.py [--repeat N] [--json PATH]

Prints a Markdown table of the best of ``--repeat`` runs, in microseconds per operation.
"""

from __future__ import annotations

import argparse
import json
import platform
import struct
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import construct

from zkwire.constants import OpCode
from zkwire.protocol.codec import decode_reply, encode_request
from zkwire.protocol.records import GetDataRequest, GetDataResponse, ReplyHeader, Stat
from zkwire.trace import schema

#: The fast path's budget for decoding a getData reply, in microseconds.
GET_DATA_DECODE_BUDGET_US = 3.0

_LEN = struct.Struct(">i")


def _get_data_reply() -> bytes:
    stat = Stat(0x100000002, 0x100000005, 1_700_000_000_000, 1_700_000_001_000, 3, 0, 0, 0, 100, 0, 0x100000002)
    out = bytearray()
    ReplyHeader(42, 0x100000007, 0).write(out)
    GetDataResponse(bytes(range(100)), stat).write(out)
    return bytes(out)


def _cases() -> list[tuple[str, str, Callable[[], Any]]]:
    reply = _get_data_reply()
    request = GetDataRequest("/app/config/feature-flags", True)
    request_plain = {"path": request.path, "watch": request.watch}
    op = int(OpCode.GET_DATA)

    # Sanity: all three agree before anything is timed.
    fast_decoded = schema.record_to_plain(decode_reply(op, reply)[1])
    for compiled in (False, True):
        assert schema.to_plain(schema.parse_reply(op, reply, compiled=compiled))["body"] == fast_decoded
        payload = schema.build_request(42, op, request_plain, compiled=compiled)
        assert _LEN.pack(len(payload)) + payload == encode_request(42, op, request)

    def construct_encode(compiled: bool) -> Callable[[], bytes]:
        def run() -> bytes:
            payload = schema.build_request(42, op, request_plain, compiled=compiled)
            return _LEN.pack(len(payload)) + payload

        return run

    return [
        ("decode getData reply (100 B + Stat)", "fast", lambda: decode_reply(op, reply)),
        ("decode getData reply (100 B + Stat)", "construct", lambda: schema.parse_reply(op, reply)),
        (
            "decode getData reply (100 B + Stat)",
            "construct compiled",
            lambda: schema.parse_reply(op, reply, compiled=True),
        ),
        ("encode getData request", "fast", lambda: encode_request(42, op, request)),
        ("encode getData request", "construct", construct_encode(False)),
        ("encode getData request", "construct compiled", construct_encode(True)),
    ]


def _best_us(func: Callable[[], Any], repeat: int) -> float:
    timer = timeit.Timer(func)
    number, _ = timer.autorange()  # enough calls for >= 0.2 s
    number = max(1, number // 2)
    best = min(timer.repeat(repeat=repeat, number=number))
    return best / number * 1e6


def run(repeat: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    fast: dict[str, float] = {}
    for operation, implementation, func in _cases():
        us = _best_us(func, repeat)
        if implementation == "fast":
            fast[operation] = us
        results.append(
            {
                "operation": operation,
                "implementation": implementation,
                "us_per_op": us,
                "relative_to_fast": us / fast[operation],
            }
        )
    return results


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| operation | implementation | µs / op | vs fast |",
        "|---|---|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['operation']} | {r['implementation']} | {r['us_per_op']:.2f} | {r['relative_to_fast']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="timing runs per case; the best is kept (default 7)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)

    results = run(args.repeat)
    env = f"Python {platform.python_version()} ({platform.python_implementation()}), construct {construct.__version__}"
    print(f"codec micro-benchmark: best of {args.repeat}, {env}\n")
    print(markdown(results))
    decode = next(r for r in results if r["implementation"] == "fast" and r["operation"].startswith("decode"))
    verdict = "within" if decode["us_per_op"] <= GET_DATA_DECODE_BUDGET_US else "OVER"
    print(
        f"\nfast getData reply decode: {decode['us_per_op']:.2f} µs, "
        f"{verdict} the {GET_DATA_DECODE_BUDGET_US:.0f} µs budget"
    )
    if args.json is not None:
        document = {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "construct": construct.__version__,
            "repeat": args.repeat,
            "budget_us": {"decode getData reply (fast)": GET_DATA_DECODE_BUDGET_US},
            "results": results,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
