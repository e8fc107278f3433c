"""The toolbox nemesis (tests/nemesis/toolbox.py), bounded: each recipe under about 12 s of faults on
the test server.  ``NEMESIS_SEED`` fixes the seed (recipe index added), ``NEMESIS_DURATION`` the seconds."""

from __future__ import annotations

import os

import pytest

from .toolbox import TOOLBOX_RECIPES, ToolboxConfig, run_toolbox

pytestmark = [pytest.mark.slow]


@pytest.mark.parametrize("recipe", TOOLBOX_RECIPES)
async def test_toolbox_nemesis(recipe: str, zk_hosts: str, local_zookeeper: None) -> None:
    seed_text = os.environ.get("NEMESIS_SEED")
    seed = int(seed_text) + TOOLBOX_RECIPES.index(recipe) if seed_text else None
    cfg = ToolboxConfig(recipe, float(os.environ.get("NEMESIS_DURATION", "12")), 4, seed)
    result = await run_toolbox(cfg, zk_hosts)
    print(f"{recipe}: seed {result.seed} {result.figures} faults {result.faults}")
    assert result.ok, (result.seed, result.problems)
    assert sum(result.faults.values()) >= 3, result.faults  # the faults really happened
