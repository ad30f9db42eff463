"""Synthetic company generator with planted ground truth (`python -m tools generate`).

`generate_company` simulates one company month by month and writes a full, coherent export set
(HRIS, LMS, incident tool, fleet inventory; GPU usage, capacity projects and change requests
as Slurm, DCGM/Grafana, Jira and ServiceNow write them; requisitions as a Greenhouse openings
report writes them) exactly as `pipelines.lib.contracts` describes it,
plus `ground_truth.json` with the effects it planted, so the statistics can be checked against
a known answer. Same arguments and seed give byte-identical files.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import date
from pathlib import Path

import numpy as np

from pipelines.lib.contracts import EXPORTS
from tools.generate import reference as ref
from tools.generate.model import PlantedModel
from tools.generate.operations import OPERATIONS_EXPORTS, OperationsModel, write_operations
from tools.generate.recruiting import RecruitingModel, write_recruiting
from tools.generate.simulate import INFRA, Simulation, month_starts
from tools.generate.writer import DirtPlan, ExportWriter

__all__ = [
    "OperationsModel",
    "PlantedModel",
    "RecruitingModel",
    "default_dirt_plan",
    "generate_company",
]

CERTIFIED_DEFINITION = (
    "holds at least one active certification on the date: issued_on <= date <= expires_on, "
    "or no expiry"
)


MODEL_NOTES = {
    "incidents": "primary-responder incidents of an infrastructure employee per month ~ Poisson("
    "incident_base_rate * fleet_index(month) * exp(incident_level_slope*(level-2)) * "
    "frailty * incident_rate_ratio^certified * exposure); certified is evaluated per day, "
    "exposure = days employed in the month / days in the month",
    "fleet_index": "company GPU count at month end / GPU count of the clusters present in the first month",
    "mttr": "resolve minutes ~ LogNormal(log mttr_base_minutes + mttr_severity_effect + mttr_level_slope*level "
    "+ mttr_year_slope*years_since_start + log(mttr_ratio)*certified_at_opening, mttr_sigma); "
    "vendor-led incidents are hardware replacements resolved after Uniform(2, 21) days",
    "attrition": "monthly voluntary exit probability voluntary_hazard * attrition_hazard_ratio^certified "
    "(certified at the start of the month); involuntary and other exits independent of it",
    "confounding": "certification uptake rises with level and tenure; level lowers incidents; fleets grow",
    "selection": "start hazard x frailty ** -proneness_selection (incident-proneness the HR data "
    "does not record); during a bad spell (shock_probability per month, shock_months long) the "
    "incident rate is x shock_incident_multiplier and the start hazard x shock_certify_multiplier",
    "renewals": "renewal_probability of awards are renewed: the renewal exam is sat in the 45 days "
    "before expiry and passes",
    "population": "contractors and interns (employment_type) never act as primary responders and never certify",
    "contractor_hours": "hours per team-month = contractor_hours_per_template_head * template headcount * "
    "(1 - certified share of the team at month end)^contractor_share_exponent * LogNormal(0, 0.15)",
    "vendor_incidents": "vendor_primary_rate * fleet_index per cluster-month, primary responder from a vendor domain "
    "(unmatched in the HRIS); they carry no planted effect",
    "programme_choice": "when an infrastructure employee starts preparing a certification (an episode), the "
    "programme type is drawn from programme_probabilities over the types with a catalogue course for the "
    "track (renormalised; other tracks are online only), the bootcamp and apprenticeship weights x "
    "exp(-programme_level_selection*(level-3)) and the vendor_partnership weight x "
    "exp(+programme_level_selection*(level-3)); the episode enrols, all on its first day, in the "
    "programme's course (not for online) and in 1..n of the track's online courses, so the programme "
    "is the highest-priority type among the track's enrolments within 90 days",
    "vendor_discount": "vendor_partnership courses are charged list price x (1 - Uniform(vendor_discount_low, "
    "vendor_discount_high)); other courses carry no charge (= list price)",
    "time_to_certify": "months from the episode's first enrolment to the passing exam T ~ Weibull(shape "
    "certify_time_shape, scale certify_time_scale_months[track] (else certify_time_scale_default) x "
    "exp(certify_time_level_slope*(level at entry - 2)) x programme_time_ratio[programme]), rounded to "
    "whole days (at least 1): a Weibull AFT with level and track recovers log programme_time_ratio; "
    "course completions are drawn before the first attempt (compressed when longer), so they never "
    "move T; engineers who leave before T, and T after the end of the data, are censored",
    "first_attempt": "logit P(first attempt passes) = logit(exam_pass_base) + exam_pass_level_slope*(level at "
    "entry - 2) + log(programme_pass_odds_ratio[programme]); a failed first attempt is sat at "
    "T x Uniform(0.45, 0.8) (whole days) and the second attempt passes at T; renewal exams (the only "
    "other attempts) always pass",
    "programme_retention": "from the first month that starts after an episode's first day, the monthly voluntary "
    "exit probability is x programme_exit_hazard_ratio[programme of the engineer's latest episode], on "
    "top of attrition_hazard_ratio while certified (a direct effect: part of a programme's total "
    "effect on exits also runs through certifying faster); all 1.0 by default (no retention "
    "difference between programmes), because multipliers below 1 fall mostly on certified time "
    "and would leave attrition_hazard_ratio no longer the whole certified contrast; a world that "
    "plants them (the validity harness's programmes worlds) must read that ratio as the effect at "
    "equal programme",
    "promotions": "monthly promotion probability promotion_hazard[level] for every employee (no minimum time "
    "in level), x promotion_certified_hazard_ratio for infrastructure employees certified at the start "
    "of the month; a promotion goes up two levels with promotion_skip_probability (at most to 5); "
    "demotion_hazard per month one level down (levels 2-5, change_reason 'demotion'); pay on promotion "
    "x1.08 clamped into the new band, on demotion clamped into the lower band",
    "pay_below_band": "below_band_share of the infrastructure division's hires (incl. the people present at "
    "the start) are paid the band's low end x (1 - Uniform(0.03, 0.15)); merit raises (30 % of "
    "employees each April, x Uniform(1.02, 1.06), never above the band's top) follow the usual rules",
}

PROGRAMME_TRUTH = (
    "programme_probabilities",
    "programme_level_selection",
    "vendor_discount_low",
    "vendor_discount_high",
    "certify_time_shape",
    "certify_time_scale_months",
    "certify_time_scale_default",
    "certify_time_level_slope",
    "programme_time_ratio",
    "exam_pass_base",
    "exam_pass_level_slope",
    "programme_pass_odds_ratio",
    "programme_exit_hazard_ratio",
)
CAREER_TRUTH = (
    "promotion_hazard",
    "promotion_certified_hazard_ratio",
    "promotion_skip_probability",
    "demotion_hazard",
    "below_band_share",
)


def _prepare_out(out: Path, overwrite: bool) -> None:
    """Refuse to mix two companies in one folder: stale files would make the set incoherent."""
    folders = sorted({e.folder for e in EXPORTS.values()})
    existing = [f for f in folders if (out / f).is_dir() and any((out / f).glob("*.csv"))]
    if existing and not overwrite:
        raise ValueError(
            f"{out} already holds exports ({', '.join(existing)}); pick an empty folder or pass "
            "--overwrite to replace them"
        )
    for f in existing:
        shutil.rmtree(out / f)
    (out / "ground_truth.json").unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def default_dirt_plan(months: list[date], garbage_rows: bool = False) -> DirtPlan:
    """Realistic defects at fixed relative positions in the window (see sources/SAMPLE.md)."""
    n = len(months)

    def per(k: float) -> str:
        return months[min(n - 1, max(1, int(n * k)))].strftime("%Y-%m")

    plan = DirtPlan(
        duplicates={
            ("enrolments", per(1 / 3)): 2,
            ("responders", per(2 / 3)): 2,
            ("job_history", per(1 / 4)): 1,
        },
        corrected={("job_history", per(1 / 2))},
        crlf={("employees", per(1 / 6))},
        bom={("courses", months[0].strftime("%Y-%m"))}
        | {("certifications", m.strftime("%Y-%m")) for m in months[::6]},
        whitespace_rate=0.003,
        email_case_rate=0.05,
    )
    if garbage_rows:
        plan.garbage = {("incidents", per(3 / 4))}
    return plan


def programme_truth(model: PlantedModel) -> dict:
    """The planted programme effects as ground_truth.json records them (online the reference)."""
    return {
        **{k: getattr(model, k) for k in PROGRAMME_TRUTH},
        "reference_programme": "online",
        "programme_courses": {
            f"{code}/{kind}": course for (code, kind), course in ref.PROGRAMME_COURSE.items()
        },
    }


def _summary(writer: ExportWriter, sim: Simulation, ops: dict, start: date, end: date) -> dict:
    """What was written and who is in it (ground_truth.json's `counts`, and `files`)."""
    p = sim.p
    n = p.n
    infra = np.flatnonzero((p.division[:n] == INFRA) & (p.etype[:n] == 0))
    ever_certified = sum(1 for i in infra if sim.awards.get(int(i)))
    # the operations and recruiting exports are written as their tools write them, not through
    # the contract writer: their files count here, their rows in ground_truth's operations.counts
    # and recruiting.requisitions
    vendor_written = set(ops["files"]) | set(ops.get("recruiting_files", ()))
    return {
        "files_written": len(writer.files) + len(vendor_written),
        "files": sorted(writer.files) + sorted(vendor_written),
        "rows": {
            k: v
            for k, v in sorted(writer.rows.items())
            if k not in (*OPERATIONS_EXPORTS, "requisitions")
        },
        "people": int(n),
        "infra_engineers": int(infra.size),
        "infra_engineers_ever_certified": int(ever_certified),
        "clusters": len(sim.clusters),
        "start": start.isoformat(),
        "end": end.isoformat(),
        **sim.stats,
    }


def _dirt_plan(months, dirt: bool, garbage_rows: bool) -> DirtPlan:
    """The planted defects: every harmless one with ``dirt``, the unreadable lines with
    ``garbage_rows`` (also without the rest)."""
    plan = default_dirt_plan(months, garbage_rows) if dirt else DirtPlan()
    if garbage_rows and not dirt:
        plan = replace(plan, garbage=default_dirt_plan(months, True).garbage)
    return plan


def _check_size(employees: int, years: int) -> None:
    if employees < 50:
        raise ValueError(
            f"employees={employees}: use at least 50 so that the company has an infrastructure team"
        )
    if years < 1:
        raise ValueError(f"years={years}: simulate at least one year")


def generate_company(
    out: Path,
    employees: int,
    years: int,
    end_date: date,
    seed: int,
    daily_from: date | None = None,
    progress: bool = True,
    *,
    dirt: bool = True,
    garbage_rows: bool = False,
    model: PlantedModel | None = None,
    overwrite: bool = False,
    engineer_month_log: list | None = None,
    operations: OperationsModel | None = None,
    recruiting: RecruitingModel | None = None,
) -> dict:
    """Write DIR/{hris,lms,incidents,fleet,changes,recruiting}/ and DIR/ground_truth.json; return
    a summary.

    ``dirt`` plants the harmless defects every real delivery has (duplicates, a corrected
    re-delivery, blanks, mixed-case e-mails, CRLF, BOMs); ``garbage_rows`` adds two unreadable
    lines to one incidents file for the quarantine to catch. ``engineer_month_log``, when a
    list, receives one tuple per infrastructure engineer and month (see
    ``Simulation.engineer_month_log``): the planted expected incident counts, for tests.
    ``operations`` plants the GPU usage, capacity and change effects (see
    ``tools.generate.operations``), written after the simulation from a stream of their own;
    ``recruiting`` the requisitions' hiring costs (``tools.generate.recruiting``), likewise.
    """
    _check_size(employees, years)
    model = model or PlantedModel()
    out = Path(out)
    months = month_starts(end_date, years)
    if daily_from is not None and not (months[0] <= daily_from <= end_date):
        raise ValueError(
            f"--daily-from {daily_from} lies outside the simulated window {months[0]}..{end_date}; "
            "pick a day inside it (for example the last day, to add one more day of exports)"
        )
    _prepare_out(out, overwrite)
    plan = _dirt_plan(months, dirt, garbage_rows)
    # separate streams: dirt never shifts the simulation's random numbers
    seeds = np.random.SeedSequence(seed).spawn(2)
    writer = ExportWriter(
        out, months[0], end_date, daily_from, plan, np.random.default_rng(seeds[1])
    )
    sim = Simulation(
        writer, employees, years, end_date, int(seeds[0].generate_state(1)[0]), model, progress
    )
    sim.engineer_month_log = engineer_month_log
    extra = sim.run()
    ops = write_operations(out, sim, seed, operations or OperationsModel())
    hiring = write_recruiting(out, sim, seed, recruiting or RecruitingModel())

    summary = _summary(
        writer, sim, {**ops, "recruiting_files": hiring["files"]}, months[0], end_date
    )
    parameters = {
        "employees": employees,
        "years": years,
        "end_date": end_date.isoformat(),
        "daily_from": daily_from.isoformat() if daily_from else None,
        "dirt": dirt,
        "garbage_rows": garbage_rows,
    }
    truth = _truth(model, seed, parameters, extra, ops, hiring, summary, writer.dirt)
    (out / "ground_truth.json").write_text(
        json.dumps(truth, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return summary


def _truth(model, seed, parameters, extra, ops, hiring, summary, dirt) -> dict:
    """ground_truth.json: what the generator planted and what it wrote."""
    return {
        **{
            k: getattr(model, k)
            for k in ("incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio")
        },
        "certified_definition": CERTIFIED_DEFINITION,
        "seed": seed,
        "parameters": parameters,
        "programmes": programme_truth(model),
        "careers": {k: getattr(model, k) for k in CAREER_TRUTH},
        "model": model.as_dict(),
        "model_notes": MODEL_NOTES,
        "fleet_index_by_month": extra["fleet_index_by_month"],
        "operations": ops,
        "recruiting": hiring,
        "counts": {k: v for k, v in summary.items() if k != "files"},
        "dirt": dirt,
    }
