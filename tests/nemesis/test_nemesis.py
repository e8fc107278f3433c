"""Bounded nemesis runs on the test ensemble, one per recipe (about 20 s of faults each).

Environment: ``NEMESIS_SEED`` fixes the seed (each recipe uses seed + its index; otherwise a random seed
is printed), ``NEMESIS_DURATION`` the seconds of faults per recipe (default 20), ``NEMESIS_WORKERS``
the number of worker processes (default 8).  The histories are kept in pytest's ``tmp_path``.

``test_nemesis_contenders`` runs four contenders in each worker process on one session (mutex and
read/write lock): the waiters of one process share their listings of the queue, and a lost session
loses every lease of the process at once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .checker import build_holds
from .harness import RECIPES, RunConfig, RunResult, run_nemesis
from .history import load_dir
from .report import summary_text, write_json

pytestmark = [pytest.mark.slow, pytest.mark.ensemble]


@pytest.mark.parametrize("recipe", RECIPES)
async def test_nemesis(recipe: str, ensemble, local_zookeeper: None, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seed_env = os.environ.get("NEMESIS_SEED")
    cfg = RunConfig(
        recipe=recipe,
        duration=float(os.environ.get("NEMESIS_DURATION", "20")),
        workers=int(os.environ.get("NEMESIS_WORKERS", "8")),
        seed=None if not seed_env else int(seed_env) + RECIPES.index(recipe),
        out_dir=tmp_path,
    )
    await _run_and_judge(cfg, ensemble, tmp_path)


@pytest.mark.parametrize("recipe", ["mutex", "rwlock"])
async def test_nemesis_contenders(recipe: str, ensemble, local_zookeeper: None, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seed_env = os.environ.get("NEMESIS_SEED")
    cfg = RunConfig(
        recipe=recipe,
        duration=float(os.environ.get("NEMESIS_DURATION", "20")),
        workers=3,
        contenders_per_worker=4,
        seed=None if not seed_env else int(seed_env) + 10 + RECIPES.index(recipe),
        out_dir=tmp_path,
    )
    result = await _run_and_judge(cfg, ensemble, tmp_path)
    contenders = {(r.worker, r.contender) for r in build_holds(*load_dir(result.run_dir))}
    assert len(contenders) == cfg.workers * cfg.contenders_per_worker, f"only {sorted(contenders)} were granted"


async def _run_and_judge(cfg: RunConfig, ensemble, tmp_path: Path) -> RunResult:  # type: ignore[no-untyped-def]
    result = await run_nemesis(cfg, ensemble)
    summary = summary_text(result)
    print(summary)
    write_json([result], tmp_path / "result.json")
    assert result.grants > 0, summary
    assert not result.problems, summary
    failures = {name: [f.message for f in found] for name, found in result.verdict.failures.items() if found}
    assert not failures, summary
    return result
