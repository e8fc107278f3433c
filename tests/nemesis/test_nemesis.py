"""Bounded nemesis runs on the test ensemble, one per recipe (about 20 s of faults each).

Environment: ``NEMESIS_SEED`` fixes the seed (each recipe uses seed + its index; otherwise a random seed
is printed), ``NEMESIS_DURATION`` the seconds of faults per recipe (default 20), ``NEMESIS_WORKERS``
the number of worker processes (default 8).  The histories are kept in pytest's ``tmp_path``.

``test_nemesis_contenders`` runs four contenders in each worker process on one session (mutex and
read/write lock): the waiters of one process share their listings of the queue, and a lost session
loses every lease of the process at once.

``test_nemesis_reconfig`` runs the membership mode on a reconfigurable ensemble of its own: workers
connected to the members directly, following the configuration, while members are removed (the
leader, a holder's member, another) and fresh ones added (about 30 s of faults, mostly ``reconfig``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkwire.testing.embedded import EmbeddedEnsemble

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


@pytest.fixture
def reconfigurable_ensemble(local_zookeeper: None) -> Iterator[EmbeddedEnsemble]:
    """A 3-member reconfigurable ensemble of the test's own, started from the main thread."""
    ens = EmbeddedEnsemble(3, tick_time_ms=200, extended_types=True, four_letter_words="*", reconfigurable=True)
    ens.start()
    try:
        yield ens
    finally:
        ens.stop()


async def test_nemesis_reconfig(reconfigurable_ensemble: EmbeddedEnsemble, tmp_path: Path) -> None:
    seed_env = os.environ.get("NEMESIS_SEED")
    cfg = RunConfig(
        recipe="mutex",
        duration=float(os.environ.get("NEMESIS_DURATION", "30")),
        workers=int(os.environ.get("NEMESIS_WORKERS", "6")),
        seed=None if not seed_env else int(seed_env) + 20,
        weights={"reconfig": 3.0, "pause_short": 0.5, "kill_holder": 0.5},
        out_dir=tmp_path,
        reconfig=True,
    )
    result = await _run_and_judge(cfg, reconfigurable_ensemble, tmp_path)
    assert result.faults.get("reconfig", 0) >= 1, summary_text(result)
    assert len(result.members_after) == 3, summary_text(result)


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
