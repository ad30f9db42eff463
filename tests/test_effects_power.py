"""The minimum detectable effect and the engineer-months needed, against Schoenfeld's published
worked figure and against a simulation of the test the effects use."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipelines.lib.effects import power
from pipelines.lib.effects.result import Effect


def test_schoenfelds_worked_figure_380_events_detect_a_hazard_ratio_of_075():
    # Schoenfeld (1983): a hazard ratio of 0.75 with 1:1 allocation, two-sided 5 %, 80 % power
    # needs 4 (1.96 + 0.84)^2 / ln(0.75)^2 = 379.5, i.e. 380 events
    se = power.se_from_events(380, 0.5)
    assert power.minimum_detectable_ratio(se) == pytest.approx(0.75, abs=0.002)
    # with half the events, the engineer-months have to double
    se_half = power.se_from_events(190, 0.5)
    more = power.more_needed(1000, se_half, 0.75)
    assert more == pytest.approx(1000, rel=0.01)
    assert power.more_needed(1000, se, 0.70) == 0  # a larger effect needs no more data


def simulated_power(ratio: float, events: float, share: float, rng) -> float:
    """How often the Wald test on the log rate ratio rejects at 5 % (two-sided) when the
    certified share ``share`` of 2,400 engineer-months has ``ratio`` times the rate that gives
    ``events`` incidents over all of them."""
    exposure = 2400.0
    rate = events / exposure
    x1, x0 = exposure * share, exposure * (1 - share)
    y1 = rng.poisson(rate * ratio * x1, 40000)
    y0 = rng.poisson(rate * x0, 40000)
    ok = (y1 > 0) & (y0 > 0)
    z = np.log((y1[ok] / x1) / (y0[ok] / x0)) / np.sqrt(1 / y1[ok] + 1 / y0[ok])
    return float(np.mean(np.abs(z) > 1.959964))


@pytest.mark.parametrize(("events", "share"), [(120, 0.4), (1000, 0.3), (60, 0.5)])
def test_a_true_ratio_at_the_minimum_detectable_effect_is_found_four_times_in_five(events, share):
    """Poisson counts of certified and not certified engineer-months, the incident model's
    scale: at the size the formula says is detectable the test finds it about 80 % of the time
    (a little more: the Wald test's variance at small counts), where the null variance alone
    (Schoenfeld's, kept for hazards) would promise a size found far less often."""
    rng = np.random.default_rng(54)
    mde = power.minimum_detectable_ratio(power.rate_ratio_se(events, share))
    assert 0.78 <= simulated_power(mde, events, share, rng) <= 0.86
    null_mde = power.minimum_detectable_ratio(power.se_from_events(events, share))
    assert null_mde > mde and simulated_power(null_mde, events, share, rng) < 0.78


def test_the_interval_gives_back_its_standard_error():
    se = 0.12
    lo, hi = math.exp(math.log(0.8) - 1.959964 * se), math.exp(math.log(0.8) + 1.959964 * se)
    assert power.se_from_interval(lo, hi) == pytest.approx(se, rel=1e-4)
    assert math.isnan(power.se_from_interval(math.nan, 1.2))


def test_the_power_columns_of_an_estimable_and_a_not_estimable_effect():
    m = pd.DataFrame({"is_certified": [True] * 300 + [False] * 700})
    inc = pd.DataFrame({"is_certified": [True, False] * 50, "minutes": [30.0, 60.0] * 50})
    shown = Effect("incident_rate_ratio", "", "", "", 0.9, 0.7, 1.15, n_events=400)
    gone = Effect("attrition_hazard_ratio", "", "", "", n_events=20)
    gone.not_estimable("too few")
    frame = pd.DataFrame({"metric": ["incident_rate_ratio", "attrition_hazard_ratio"]})
    out = power.add_power(frame, [shown, gone], m, inc, {"incident_rate_ratio": 0.8})
    row = out.iloc[0]
    se = power.se_from_interval(0.7, 1.15)
    assert row["mde_ratio"] == pytest.approx(math.exp(-power.MULTIPLIER * se))
    assert row["engineer_months"] == 1000 and row["claimed_ratio"] == 0.8
    assert row["more_engineer_months_needed"] == math.ceil(
        1000 * (power.MULTIPLIER * se / abs(math.log(0.8))) ** 2 - 1000
    )
    # not estimable: Schoenfeld from 20 exits at a certified share of 30 %, no claimed size
    other = out.iloc[1]
    assert other["mde_ratio"] == pytest.approx(
        math.exp(-power.MULTIPLIER / math.sqrt(20 * 0.3 * 0.7))
    )
    assert math.isnan(other["more_engineer_months_needed"])


def test_the_claimed_sizes_are_the_business_cases():
    from pipelines.lib.roi.assumptions import DEFAULT_ASSUMPTIONS_PATH, load_assumptions

    entries = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)
    assert {m: entries[m].base for m in power.CLAIMED_RATIOS} == power.CLAIMED_RATIOS
