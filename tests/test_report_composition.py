"""Team composition against the seed's templates, and the cost of reaching them, checked
against the seed's own figures (seed-facts.md: team composition, skill-level salary bands)."""

from __future__ import annotations

import pandas as pd
import pytest

from pipelines.lib.report.sections.composition import CostBasis, role_plans, template_levels
from tools.generate.reference import SALARY_BANDS

# seed-facts.md, "Skill levels": salary bands in USD a year, as the generator plants them
SALARY = SALARY_BANDS


def _small_team(ops: int, lead: int = 1, network: int = 1) -> pd.DataFrame:
    """One small cluster (10-100 GPUs): 1 lead (4), 2 operations engineers (2-3), 1 network
    specialist (3), with the given headcounts; half of each role fully certified."""
    rows = [
        ("infrastructure_lead", 4, 4, 1, lead),
        ("operations_engineer", 2, 3, 2, ops),
        ("network_specialist", 3, 3, 1, network),
    ]
    return pd.DataFrame(
        [
            dict(team="t", role_family=r, level_min=lo, level_max=hi, template_headcount=tpl,
                 headcount=hc, required_cert_compliant_headcount=hc // 2)
            for r, lo, hi, tpl, hc in rows
        ]
    )  # fmt: skip


def test_small_template_level_mix_follows_the_seed():
    # 1 seat at level 4, 2 seats spread over 2-3, 1 seat at 3: 4 -> 1, 2 -> 1, 3 -> 2 of 4
    assert template_levels(_small_team(ops=2)) == {4: 0.25, 2: 0.25, 3: 0.5}


def test_hiring_to_the_template_is_priced_at_the_middle_of_the_seed_band():
    plans = {
        p.role: p for p in role_plans(_small_team(ops=0, network=0), CostBasis(SALARY, 15_400))
    }
    ops = plans["operations_engineer"]
    # two operations seats empty, each at the mean of the level 2 and 3 midpoints
    assert ops.hires == 2
    assert ops.hire_cost == pytest.approx(2 * (110_000 + 150_000) / 2)
    assert plans["network_specialist"].hire_cost == pytest.approx(150_000)
    assert plans["infrastructure_lead"].hires == 0
    # the lead is not fully certified (1 // 2 = 0 compliant): one engineer to train
    assert plans["infrastructure_lead"].to_train == 1
    assert plans["infrastructure_lead"].train_cost == pytest.approx(15_400)


def test_a_team_above_its_template_needs_no_hire():
    plans = role_plans(_small_team(ops=5), CostBasis(SALARY, 15_400))
    assert sum(p.hires for p in plans) == 0


def test_empty_seats_are_filled_by_moving_engineers_of_the_role_before_hiring():
    # operations engineers: team a has 0 of 2 seats, team b 3 of 2 (one above template)
    rows = pd.concat([_small_team(ops=0).assign(team="a"), _small_team(ops=3).assign(team="b")])
    ops = {p.role: p for p in role_plans(rows, CostBasis(SALARY, 15_400))}["operations_engineer"]
    assert (ops.short, ops.surplus, ops.hires) == (2, 1, 1)
    # the one hire is priced at the mean salary of the empty seats (levels 2-3)
    assert ops.hire_cost == pytest.approx((110_000 + 150_000) / 2)
