"""``python -m tests.nemesis``: a nemesis run on a 3-member ensemble this command starts (and stops).

    .venv/bin/python -m tests.nemesis --recipe mutex --duration 600 --workers 8 --seed 1234 --json out.json
    .venv/bin/python -m tests.nemesis --recipe all --duration 120 --reconfig --seed 1   # membership changes

Prints the seed first and the summary at the end; exits 0 if the verdict is PASS, 1 if FAIL, 2 on a
usage error.  ``--recipe all`` runs the three recipes one after the other on the same ensemble.
``--reconfig`` (implied by ``--faults reconfig``) is the membership mode: a reconfigurable ensemble,
workers connected to its members directly and following its configuration, the ``reconfig`` fault
(a member removed, a fresh one added) with the faults that need no proxy (see faults.py).
Ctrl-C stops the run: faults are undone and every process started is killed.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import trio

from zkwire.testing.embedded import EmbeddedEnsemble

from .faults import DEFAULT_WEIGHTS, FAULTS, PROXY_FAULTS, RECONFIG_WEIGHTS, check_weights, default_weights
from .harness import RECIPES, RunConfig, RunResult, run_nemesis
from .report import summary_text, write_json


def _weights(spec: str | None, only: str | None, membership: bool) -> dict[str, float]:
    defaults = default_weights(membership)
    weights = dict(defaults)
    if only:
        kinds = [k.strip() for k in only.split(",") if k.strip()]
        weights = {k: defaults.get(k, 1.0) for k in kinds}
    if spec:
        for item in spec.split(","):
            kind, _, w = item.partition("=")
            weights[kind.strip()] = float(w)
    try:
        check_weights(weights, membership)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    return weights


def _membership(args: argparse.Namespace) -> bool:
    """The membership mode: asked for, or implied by a ``reconfig`` fault named in --faults/--weights."""
    named = f"{args.faults or ''},{args.weights or ''}".replace("=", ",").split(",")
    return bool(args.reconfig or "reconfig" in (k.strip() for k in named))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.nemesis", description=__doc__.split("\n\n")[0])
    p.add_argument("--recipe", choices=[*RECIPES, "all"], default="mutex")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of faults per recipe (default 60)")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument(
        "--contenders-per-worker",
        type=int,
        default=1,
        metavar="K",
        help="lock contenders (tasks) per worker process, sharing its session(s) (default 1)",
    )
    p.add_argument(
        "--sessions-per-worker",
        type=int,
        default=1,
        metavar="S",
        help="sessions per worker process, 1..K; contender k uses session k mod S (default 1)",
    )
    p.add_argument("--seed", type=int, default=None, help="replay a run's fault plan (printed at the start)")
    p.add_argument("--session-timeout", type=float, default=4.0)
    p.add_argument("--max-leases", type=int, default=2, help="semaphore leases (default 2)")
    p.add_argument("--faults", default=None, help="only these kinds, comma-separated (default: all)")
    p.add_argument(
        "--reconfig",
        action="store_true",
        help="membership mode: a reconfigurable ensemble, workers connected directly and following it, "
        "the reconfig fault and the faults that need no proxy (implied by --faults reconfig)",
    )
    p.add_argument("--weights", default=None, help="kind=weight,... (0 disables a kind)")
    p.add_argument(
        "--gap",
        type=float,
        nargs=2,
        default=(0.5, 2.0),
        metavar=("MIN", "MAX"),
        help="quiet time between faults, seconds",
    )
    p.add_argument("--tick", type=int, default=200, help="the ensemble's tickTime in ms (default 200)")
    p.add_argument("--out", type=Path, default=None, help="keep the histories under this directory")
    p.add_argument("--json", type=Path, default=None, help="write the results as JSON to this file")
    p.add_argument("--list-faults", action="store_true", help="list the fault kinds and exit")
    return p.parse_args(argv)


class Terminated(Exception):
    """SIGTERM: stop the run as for Ctrl-C."""


async def _run(args: argparse.Namespace, ensemble: EmbeddedEnsemble, results: list[RunResult]) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_on_sigterm)
        await _recipes(args, ensemble, results)
        nursery.cancel_scope.cancel()


async def _on_sigterm() -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            raise Terminated


async def _recipes(args: argparse.Namespace, ensemble: EmbeddedEnsemble, results: list[RunResult]) -> None:
    recipes = list(RECIPES) if args.recipe == "all" else [args.recipe]
    membership = _membership(args)
    weights = _weights(args.weights, args.faults, membership)
    for i, recipe in enumerate(recipes):
        cfg = RunConfig(
            recipe=recipe,
            duration=args.duration,
            workers=args.workers,
            contenders_per_worker=args.contenders_per_worker,
            sessions_per_worker=args.sessions_per_worker,
            seed=None if args.seed is None else args.seed + i,
            session_timeout=args.session_timeout,
            max_leases=args.max_leases,
            weights=weights,
            gap=tuple(args.gap),
            out_dir=args.out,
            reconfig=membership,
        )
        result = await run_nemesis(cfg, ensemble)
        print(summary_text(result), flush=True)
        results.append(result)
        if args.json:
            write_json(results, args.json)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list_faults:
        print(f"{'kind':24} {'weights':13} (default mode / --reconfig; 'proxy': needs the proxies)")
        for kind, fn in FAULTS.items():
            doc = (fn.__doc__ or "").strip().splitlines()
            weights = f"{DEFAULT_WEIGHTS.get(kind, 0):g} / {RECONFIG_WEIGHTS.get(kind, 0):g}"
            proxy = "proxy" if kind in PROXY_FAULTS else ""
            print(f"{kind:24} {weights:13} {proxy:5} {doc[0] if doc else ''}")
        return 0
    if args.workers < 1 or args.duration <= 0:
        print("--workers and --duration must be positive", file=sys.stderr)
        return 2
    if args.contenders_per_worker < 1 or not 1 <= args.sessions_per_worker <= args.contenders_per_worker:
        print("--contenders-per-worker must be >= 1 and --sessions-per-worker between 1 and it", file=sys.stderr)
        return 2
    # Ctrl-C must work even if this process was started with SIGINT ignored (a background job).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Started from the main thread, so that the kernel kills the servers if this process dies
    # (members restarted during the run are stopped by the cleanup below and at exit).
    membership = _membership(args)
    _weights(args.weights, args.faults, membership)  # a usage error before any server starts
    ensemble = EmbeddedEnsemble(
        3, tick_time_ms=args.tick, extended_types=True, four_letter_words="*", reconfigurable=membership
    )
    results: list[RunResult] = []
    try:
        ensemble.start()
        print(f"nemesis: ensemble {ensemble.hosts}", flush=True)
        trio.run(_run, args, ensemble, results)
    except (KeyboardInterrupt, Terminated, BaseExceptionGroup) as e:
        if isinstance(e, BaseExceptionGroup) and not e.subgroup((KeyboardInterrupt, Terminated)):
            raise
        print("nemesis: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
    finally:
        ensemble.stop()
    if args.json:
        print(f"nemesis: results in {args.json}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
