"""Programmes, promotions and pay bands planted by the generator, re-derived from its CSV exports.

One company is generated for the module (10,000 employees x 4 years, with level selection into
programmes switched on and a balanced programme mix so that each programme has enough
episodes). The episodes, engineer-months and pay rows are rebuilt here with pandas from the raw
exports alone, independently of the generator's state; every tolerance is a 99.9 % interval of
the sampling error around the planted value in ground_truth.json.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pipelines.lib.contracts import EXPORTS
from tools.generate import PlantedModel, generate_company
from tools.validate.frames import programme_episodes, simulate

END = date(2026, 9, 30)
EMPLOYEES, YEARS, SEED = 10_000, 4, 5
MODEL = replace(
    PlantedModel(),
    programme_level_selection=0.5,
    programme_probabilities={
        "online": 0.3,
        "bootcamp": 0.2,
        "vendor_partnership": 0.2,
        "apprenticeship": 0.2,
        "internal": 0.1,
    },
    # the default plants no retention difference: plant one, as the programmes worlds do
    programme_exit_hazard_ratio={
        "online": 1.0,
        "bootcamp": 1.0,
        "vendor_partnership": 0.8,
        "apprenticeship": 0.7,
        "internal": 1.0,
    },
)
INFRA = "AI Infrastructure"
PRIORITY = ("bootcamp", "vendor_partnership", "apprenticeship", "internal", "online")
Z999 = stats.norm.ppf(0.9995)  # two-sided 99.9 %
MONTH_DAYS = 30.4375


# ----------------------------------------------------------------------------- the exports
def read(out: Path, export: str) -> pd.DataFrame:
    """Current rows of one export (clean delivery: latest monthly file wins per key)."""
    spec = EXPORTS[export]
    files = sorted((out / spec.folder).glob(f"{export}_*.csv"))
    frame = pd.concat([pd.read_csv(f, dtype=str, keep_default_na=False) for f in files])
    frame = frame.replace("", None)
    return frame.drop_duplicates(list(spec.key), keep="last").reset_index(drop=True)


class Exports:
    def __init__(self, out: Path) -> None:
        self.truth = json.loads((out / "ground_truth.json").read_text())
        self.end = pd.Timestamp(self.truth["counts"]["end"])
        self.start = pd.Timestamp(self.truth["counts"]["start"])
        emp = read(out, "employees")
        for c in ("hire_date", "termination_date"):
            emp[c] = pd.to_datetime(emp[c])
        self.spells = emp
        self.person_of = dict(zip(emp["work_email"].str.lower(), emp["employee_id"], strict=False))
        jobs = read(out, "job_history")
        jobs["effective_date"] = pd.to_datetime(jobs["effective_date"])
        jobs["skill_level"] = jobs["skill_level"].astype(int)
        jobs["annual_salary_usd"] = jobs["annual_salary_usd"].astype(float)
        self.jobs = jobs.sort_values(["employee_id", "effective_date"], kind="stable")
        courses = read(out, "courses").set_index("course_id")
        courses["cost_usd"] = courses["cost_usd"].astype(float)
        self.courses = courses
        enr = read(out, "enrolments")
        enr["employee_id"] = enr["learner_email"].str.lower().map(self.person_of)
        enr["enrolled_on"] = pd.to_datetime(enr["enrolled_on"])
        catalogue = courses[["programme_type", "certification_code", "cost_usd"]]
        enr = enr.join(catalogue.rename(columns={"cost_usd": "list_price_usd"}), "course_id")
        enr["charged_usd"] = enr["cost_usd"].astype(float)
        self.enrolments = enr
        att = read(out, "certifications")
        att["employee_id"] = att["learner_email"].str.lower().map(self.person_of)
        for c in ("exam_date", "issued_on", "expires_on"):
            att[c] = pd.to_datetime(att[c])
        self.attempts = att.sort_values(["employee_id", "exam_date"], kind="stable")
        self.bands = (
            pd.read_csv(Path(__file__).resolve().parents[1] / "dbt_project/seeds/skill_levels.csv")
            .set_index("skill_level")[["salary_min_usd", "salary_max_usd"]]
            .astype(float)
        )

    def job_on(self, pid: str, day: pd.Timestamp) -> pd.Series | None:
        rows = self.jobs_by_person.get(pid)
        if rows is None:
            return None
        before = rows[rows["effective_date"] <= day]
        return before.iloc[-1] if len(before) else None

    @property
    def jobs_by_person(self) -> dict[str, pd.DataFrame]:
        if not hasattr(self, "_jobs_by_person"):
            self._jobs_by_person = dict(tuple(self.jobs.groupby("employee_id", sort=False)))
        return self._jobs_by_person

    def awards(self) -> dict[str, list[tuple[pd.Timestamp, pd.Timestamp]]]:
        passed = self.attempts[self.attempts["result"] == "pass"]
        out: dict[str, list] = {}
        for pid, iss, exp in zip(
            passed["employee_id"], passed["issued_on"], passed["expires_on"], strict=True
        ):
            out.setdefault(pid, []).append((iss, exp if pd.notna(exp) else pd.Timestamp.max))
        return out

    def episodes(self) -> pd.DataFrame:
        """int_programme_episodes from the exports, with the contract's rules."""
        enr = self.enrolments[self.enrolments["certification_code"].notna()]
        rows = []
        att_by = dict(tuple(self.attempts.groupby(["employee_id", "certification_code"])))
        exits = self.spells[self.spells["termination_date"].notna()].sort_values("termination_date")
        exits_by = dict(tuple(exits.groupby("employee_id")))
        for (pid, code), group in enr.groupby(["employee_id", "certification_code"]):
            start = group["enrolled_on"].min()
            job = self.job_on(pid, start)
            if job is None or job["division"] != INFRA or job["employment_type"] != "employee":
                continue
            window = group[group["enrolled_on"] <= start + pd.Timedelta(days=90)]
            programme = next(p for p in PRIORITY if (window["programme_type"] == p).any())
            left = exits_by.get(pid)
            left = left[left["termination_date"] >= start] if left is not None else None
            exit_on = left["termination_date"].iloc[0] if left is not None and len(left) else None
            exit_type = left["termination_type"].iloc[0] if exit_on is not None else None
            until = min(exit_on, self.end) if exit_on is not None else self.end
            att = att_by.get((pid, code))
            att = (
                att[(att["exam_date"] >= start) & (att["exam_date"] <= until)]
                if att is not None
                else None
            )
            passes = att[att["result"] == "pass"] if att is not None else None
            certified_on = (
                passes["exam_date"].iloc[0] if passes is not None and len(passes) else None
            )
            followed = certified_on if certified_on is not None else until
            att = att[att["exam_date"] <= followed] if att is not None else None
            group = group[group["enrolled_on"] <= followed]  # the episode's enrolments
            year_later = start + pd.DateOffset(months=12)
            left_12m = exit_on is not None and exit_on <= year_later
            rows.append(
                {
                    "person_key": pid,
                    "certification_code": code,
                    "programme_type": programme,
                    "first_enrolled_on": start,
                    "skill_level_at_entry": int(job["skill_level"]),
                    "enrolments": len(group),
                    "attempts": 0 if att is None else len(att),
                    "first_attempt_on": att["exam_date"].iloc[0]
                    if att is not None and len(att)
                    else None,
                    "first_attempt_passed": (
                        att["result"].iloc[0] == "pass" if att is not None and len(att) else None
                    ),
                    "certified": certified_on is not None,
                    "certified_on": certified_on,
                    "followed_until": followed,
                    "months_followed": (followed - start).days / MONTH_DAYS,
                    "fees_usd": group["charged_usd"].fillna(group["list_price_usd"]).sum(),
                    "apprenticeship": bool((group["programme_type"] == "apprenticeship").any()),
                    "voluntary_exit_12m": bool(left_12m and exit_type == "voluntary"),
                    "followed_12m": bool(year_later <= self.end or left_12m),
                    "exit_on": exit_on,
                    "exit_type": exit_type,
                }
            )
        return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Exports:
    out = tmp_path_factory.mktemp("programmes")
    generate_company(out, EMPLOYEES, YEARS, END, SEED, progress=False, dirt=False, model=MODEL)
    return Exports(out)


@pytest.fixture(scope="module")
def episodes(exports) -> pd.DataFrame:
    return exports.episodes()


@pytest.fixture(scope="module")
def truth(exports) -> dict:
    return exports.truth


def within(estimate: float, se: float, planted: float) -> bool:
    return abs(estimate - planted) <= Z999 * se


def binomial_holds(k: int, n: int, p: float) -> bool:
    """The two-sided 99.9 % Clopper-Pearson interval of k/n holds p."""
    lo = stats.beta.ppf(0.0005, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(0.9995, k + 1, n - k) if k < n else 1.0
    return lo <= p <= hi


# ----------------------------------------------------------------------------- episodes
def test_the_harness_episodes_are_the_episodes_of_the_exports(exports, episodes):
    """tools.validate.frames.programme_episodes (from the simulation's logs, no files) gives the
    same episodes as the contract's rules applied to the delivered files."""
    harness = programme_episodes(simulate(EMPLOYEES, YEARS, SEED, MODEL, END))
    harness["person_key"] = harness["person_key"].map(lambda k: f"E{int(k[1:]) + 1:06d}")
    key = ["person_key", "certification_code"]
    left = episodes.set_index(key).sort_index()
    right = harness.set_index(key).sort_index()
    assert len(left) > 800 and left.index.equals(right.index)
    for column in (
        "programme_type",
        "first_enrolled_on",
        "skill_level_at_entry",
        "enrolments",
        "attempts",
        "first_attempt_on",
        "first_attempt_passed",
        "certified",
        "certified_on",
        "followed_until",
        "apprenticeship",
        "voluntary_exit_12m",
        "followed_12m",
        "exit_on",
        "exit_type",
    ):
        a, b = left[column], right[column]
        same = (a == b) | (a.isna() & b.isna())
        assert same.all(), (column, left.loc[~same, column].head(), right.loc[~same, column].head())
    for column in ("months_followed", "fees_usd"):
        assert np.allclose(left[column], right[column]), column
    # the planted certification day is the observed one whenever the episode certified
    done = right[right["certified"]]
    assert np.allclose(done["months_followed"], done["planted_certify_months"])


def test_programme_choice_follows_the_level_selection(exports, episodes, truth):
    """Juniors go to bootcamps and apprenticeships, seniors to vendor courses as planted: the
    counts per (track, level, programme) fit the planted probabilities (chi-square), and
    among bootcamp and vendor episodes the log odds of a bootcamp fall by 2 x
    programme_level_selection per level (logistic regression)."""
    import statsmodels.api as sm

    planted = truth["programmes"]
    selection = planted["programme_level_selection"]
    courses = exports.courses
    chi2 = dof = 0.0
    tracks = ("NCA-AIIO", "NCP-AII")
    for (code, level), cell in episodes[episodes["certification_code"].isin(tracks)].groupby(
        ["certification_code", "skill_level_at_entry"]
    ):
        offered = {"online"} | set(
            courses.loc[courses["certification_code"] == code, "programme_type"]
        )
        tilt = {"bootcamp": -1, "apprenticeship": -1, "vendor_partnership": 1}
        weights = {
            t: p * math.exp(tilt.get(t, 0) * selection * (level - 3))
            for t, p in planted["programme_probabilities"].items()
            if t in offered and p > 0
        }
        total = sum(weights.values())
        counts = cell["programme_type"].value_counts()
        assert set(counts.index) <= set(weights), (code, level, counts)
        n = len(cell)
        if n < 20:
            continue
        chi2 += sum(
            (counts.get(t, 0) - n * w / total) ** 2 / (n * w / total) for t, w in weights.items()
        )
        dof += len(weights) - 1
    assert dof >= 10 and stats.chi2.sf(chi2, dof) > 0.001, (chi2, dof)
    pair = episodes[episodes["programme_type"].isin(["bootcamp", "vendor_partnership"])]
    fit = sm.Logit(
        (pair["programme_type"] == "bootcamp").astype(float),
        sm.add_constant(pair["skill_level_at_entry"].astype(float)),
    ).fit(disp=0)
    slope, se = fit.params["skill_level_at_entry"], fit.bse["skill_level_at_entry"]
    assert within(slope, se, -2 * selection), (slope, se)
    assert slope + Z999 * se < 0  # the tilt is there to see, not just compatible


def test_first_attempt_pass_odds_ratios_at_equal_level(episodes, truth):
    """Logistic regression of the first attempt's result on the programme and the level at
    entry, for episodes that started at least 18 months before the end (so that censoring
    hardly selects early, failed attempts): the planted odds ratios and level slope."""
    import statsmodels.api as sm

    planted = truth["programmes"]
    sat = episodes[
        episodes["first_attempt_passed"].notna()
        & (episodes["first_enrolled_on"] <= pd.Timestamp(END) - pd.DateOffset(months=18))
    ]
    x = pd.get_dummies(sat["programme_type"], dtype=float).drop(columns="online")
    x["level"] = sat["skill_level_at_entry"] - 2.0
    fit = sm.Logit(sat["first_attempt_passed"].astype(float), sm.add_constant(x)).fit(disp=0)
    base = planted["exam_pass_base"]
    assert within(fit.params["const"], fit.bse["const"], math.log(base / (1 - base)))
    assert within(fit.params["level"], fit.bse["level"], planted["exam_pass_level_slope"])
    for programme in ("bootcamp", "vendor_partnership", "apprenticeship"):
        odds = planted["programme_pass_odds_ratio"][programme]
        assert within(fit.params[programme], fit.bse[programme], math.log(odds)), (
            programme,
            math.exp(fit.params[programme]),
            fit.bse[programme],
        )


def test_weibull_aft_recovers_the_planted_time_ratios(episodes, truth):
    """A Weibull AFT (lifelines) of months to the passing exam on programme, level at entry and
    track, with leavers and the end of the data censored, holds the planted time ratios, level
    slope, track scales and shape."""
    from lifelines import WeibullAFTFitter

    planted = truth["programmes"]
    tracks = ("NCA-AIIO", "NCP-AII")
    data = episodes[episodes["certification_code"].isin(tracks) & (episodes["months_followed"] > 0)]
    frame = pd.get_dummies(data["programme_type"], dtype=float).drop(columns="online")
    frame["level"] = data["skill_level_at_entry"] - 2.0
    frame["ncp_aii"] = (data["certification_code"] == "NCP-AII").astype(float)
    frame["months"] = data["months_followed"]
    frame["certified"] = data["certified"]
    fit = WeibullAFTFitter().fit(frame, "months", "certified")
    coef, se = fit.params_["lambda_"], fit.standard_errors_["lambda_"]
    for programme, ratio in planted["programme_time_ratio"].items():
        if programme == "online":
            continue
        assert within(coef[programme], se[programme], math.log(ratio)), (
            programme,
            math.exp(coef[programme]),
            se[programme],
        )
    assert coef["bootcamp"] + Z999 * se["bootcamp"] < 0  # half the time: clearly visible
    assert within(coef["level"], se["level"], planted["certify_time_level_slope"])
    scales = planted["certify_time_scale_months"]
    assert within(coef["Intercept"], se["Intercept"], math.log(scales["NCA-AIIO"]))
    assert within(coef["ncp_aii"], se["ncp_aii"], math.log(scales["NCP-AII"] / scales["NCA-AIIO"]))
    rho, rho_se = fit.params_["rho_"]["Intercept"], fit.standard_errors_["rho_"]["Intercept"]
    assert within(rho, rho_se, math.log(planted["certify_time_shape"]))


def test_vendor_partnerships_are_charged_at_the_planted_discount(exports, truth):
    enr = exports.enrolments
    vendor = enr[
        (enr["programme_type"] == "vendor_partnership") & enr["certification_code"].notna()
    ]
    other = enr[enr["programme_type"] != "vendor_partnership"]
    assert len(vendor) > 100 and other["charged_usd"].isna().all()
    discount = 1 - vendor["charged_usd"] / vendor["list_price_usd"]
    planted = truth["programmes"]
    assert discount.between(
        planted["vendor_discount_low"] - 1e-3, planted["vendor_discount_high"] + 1e-3
    ).all()
    # Uniform(low, high): the mean within its 99.9 % interval
    lo, hi = planted["vendor_discount_low"], planted["vendor_discount_high"]
    assert within(discount.mean(), (hi - lo) / math.sqrt(12 * len(discount)), (lo + hi) / 2)


# ----------------------------------------------------------------------------- careers
@pytest.fixture(scope="module")
def engineer_months(exports) -> pd.DataFrame:
    """Infrastructure employees at each month start, as the generator decides moves and exits:
    employed before the first of the month, the level and certified status on that day, a
    promotion or demotion effective that day, leaving (voluntarily) within the month, and the
    programme of the latest episode that started before the month."""
    jobs = exports.jobs
    infra = jobs.loc[
        (jobs["division"] == INFRA) & (jobs["employment_type"] == "employee"), "employee_id"
    ].unique()
    months = pd.date_range(exports.start, exports.end, freq="MS")
    grid = pd.MultiIndex.from_product([infra, months], names=["employee_id", "month"])
    grid = grid.to_frame(index=False)
    spells = exports.spells[["employee_id", "hire_date", "termination_date", "termination_type"]]
    grid = grid.merge(spells, on="employee_id")
    grid = grid[
        (grid["hire_date"] < grid["month"])
        & (grid["termination_date"].isna() | (grid["termination_date"] >= grid["month"]))
    ].drop_duplicates(["employee_id", "month"])
    before = jobs[["employee_id", "effective_date", "division", "employment_type", "skill_level"]]
    grid = pd.merge_asof(
        grid.sort_values("month"),
        before.sort_values("effective_date"),
        left_on="month",
        right_on="effective_date",
        by="employee_id",
        allow_exact_matches=False,
    )
    grid = grid[(grid["division"] == INFRA) & (grid["employment_type"] == "employee")]
    enr = exports.enrolments[exports.enrolments["certification_code"].notna()]
    starts = (
        enr.groupby(["employee_id", "enrolled_on"])["programme_type"]
        .agg(lambda s: next(p for p in PRIORITY if (s == p).any()))
        .rename("programme")
        .reset_index()
    )
    grid = pd.merge_asof(
        grid.sort_values("month"),
        starts.sort_values("enrolled_on"),
        left_on="month",
        right_on="enrolled_on",
        by="employee_id",
        allow_exact_matches=False,
    ).reset_index(drop=True)
    on_day = jobs.groupby(["employee_id", "effective_date"])["change_reason"].agg(set)
    reasons = on_day.reindex(pd.MultiIndex.from_frame(grid[["employee_id", "month"]]))
    reasons = reasons.apply(lambda r: r if isinstance(r, set) else set()).to_numpy()
    month_end = grid["month"] + pd.offsets.MonthEnd(0)
    leaves = (grid["termination_date"] <= month_end).to_numpy()
    passed = exports.attempts[exports.attempts["result"] == "pass"]
    awards = passed[["employee_id", "issued_on", "expires_on"]].merge(
        grid[["employee_id", "month"]], on="employee_id"
    )
    held = (awards["issued_on"] <= awards["month"]) & (
        awards["expires_on"].isna() | (awards["month"] <= awards["expires_on"])
    )
    certified = set(zip(awards.loc[held, "employee_id"], awards.loc[held, "month"], strict=True))
    return pd.DataFrame(
        {
            "person_key": grid["employee_id"].to_numpy(),
            "month": grid["month"].to_numpy(),
            "level": grid["skill_level"].astype(int).to_numpy(),
            "certified": [
                (p, m) in certified for p, m in zip(grid["employee_id"], grid["month"], strict=True)
            ],
            "leaves": leaves,
            "voluntary_exit": leaves & (grid["termination_type"] == "voluntary").to_numpy(),
            "promoted": ["promotion" in r for r in reasons] & ~leaves,
            "demoted": ["demotion" in r for r in reasons] & ~leaves,
            "programme": grid["programme"].to_numpy(),
        }
    )


def test_promotion_hazard_ratio_of_certified_months_at_equal_level(engineer_months, truth):
    """Promotions per engineer-month, certified at the month start vs not, within level
    (Mantel-Haenszel risk ratio, Greenland-Robins variance): the planted 1.5; and the
    uncertified monthly rate of each level is its planted hazard."""
    careers = truth["careers"]
    stay = engineer_months[~engineer_months["leaves"]]
    num = den = var_num = 0.0
    for level, cell in stay[stay["level"] < 5].groupby("level"):
        a = cell.loc[cell["certified"], "promoted"].sum()
        n1 = cell["certified"].sum()
        b = cell.loc[~cell["certified"], "promoted"].sum()
        n0 = (~cell["certified"]).sum()
        n = n1 + n0
        if not (n1 and n0):
            continue
        r, s = a * n0 / n, b * n1 / n
        num += r
        den += s
        var_num += ((n1 * n0 * (a + b)) - (a * b * n)) / n**2
        hazard = careers["promotion_hazard"][str(level)]
        assert binomial_holds(int(b), int(n0), hazard), (level, b, n0, hazard)
    rr = num / den
    se = math.sqrt(var_num / (num * den))
    assert within(math.log(rr), se, math.log(careers["promotion_certified_hazard_ratio"])), (rr, se)
    assert math.log(rr) - Z999 * se > 0, (rr, se)


def test_skips_and_demotions_happen_at_the_planted_rates(exports, engineer_months, truth):
    careers = truth["careers"]
    jobs = exports.jobs
    step = jobs.groupby("employee_id")["skill_level"].diff()
    promoted = jobs[jobs["change_reason"] == "promotion"].assign(step=step)
    from_below_4 = promoted[promoted["skill_level"] - promoted["step"] <= 3]
    skips = int((from_below_4["step"] == 2).sum())
    assert skips and binomial_holds(skips, len(from_below_4), careers["promotion_skip_probability"])
    stay = engineer_months[~engineer_months["leaves"] & (engineer_months["level"] > 1)]
    demoted = int(stay["demoted"].sum())
    # demotions are drawn for everyone but applied only to people not promoted that month
    at_risk = int((~stay["promoted"]).sum())
    assert demoted and binomial_holds(demoted, at_risk, careers["demotion_hazard"]), (
        demoted,
        at_risk,
    )


def test_voluntary_exits_after_a_programme_follow_the_planted_multipliers(engineer_months, truth):
    """Poisson regression (log link) of voluntary exits per engineer-month on certified status
    and the programme of the latest episode: the planted attrition and programme ratios."""
    import statsmodels.api as sm

    months = engineer_months
    x = pd.get_dummies(months["programme"].fillna("none"), dtype=float)
    x = x.drop(columns=["online"])
    x["certified"] = months["certified"].astype(float)
    fit = sm.GLM(
        months["voluntary_exit"].astype(float), sm.add_constant(x), family=sm.families.Poisson()
    ).fit()
    planted = truth["programmes"]["programme_exit_hazard_ratio"]
    for programme in ("vendor_partnership", "apprenticeship", "bootcamp"):
        assert within(fit.params[programme], fit.bse[programme], math.log(planted[programme])), (
            programme,
            math.exp(fit.params[programme]),
        )
    assert within(
        fit.params["certified"], fit.bse["certified"], math.log(truth["attrition_hazard_ratio"])
    )


def test_a_planted_share_of_infrastructure_hires_is_paid_below_the_band(exports, truth):
    """From the raw job_history: the infrastructure division's hire rows below the low end of
    their level's band (dbt seed skill_levels.csv) make up below_band_share, 3-15 % below."""
    jobs = exports.jobs
    hires = jobs[(jobs["division"] == INFRA) & (jobs["change_reason"] == "hire")]
    low = hires["skill_level"].map(exports.bands["salary_min_usd"])
    high = hires["skill_level"].map(exports.bands["salary_max_usd"])
    below = hires["annual_salary_usd"] < low
    share = truth["careers"]["below_band_share"]
    assert binomial_holds(int(below.sum()), len(hires), share), (below.mean(), len(hires))
    ratio = hires.loc[below, "annual_salary_usd"] / low[below]
    assert ratio.between(0.85 - 0.002, 0.97 + 0.002).all(), ratio.describe()
    assert (hires.loc[~below, "annual_salary_usd"] <= high[~below]).all()
