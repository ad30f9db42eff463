"""The synthetic company: contract-conformant files, deterministic, with the planted effects.

The planted-structure tests re-derive the effects from the delivered CSV files alone, with
plain Python (csv module, day-by-day exposure, Mantel-Haenszel rate ratios, least squares),
never from the generator's internal state, so they check what the pipeline will really see.
"""

from __future__ import annotations

import calendar
import csv
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipelines.lib.contracts import EXPORTS, parse_file_name
from tools.generate import generate_company
from tools.generate.operations import OPERATIONS_EXPORTS as VENDOR_WRITTEN

END = date(2026, 9, 30)
# written as Slurm, Grafana, ServiceNow, Jira and Greenhouse write them
# (tools/generate/operations.py, tools/generate/recruiting.py)
OPERATIONS_EXPORTS = set(VENDOR_WRITTEN) | {"requisitions"}


def vendor_files(truth: dict) -> set[str]:
    """The files the generator wrote as the tools write them, not in the contract's names."""
    return set(truth["operations"]["files"]) | set(truth["recruiting"]["files"])


# ----------------------------------------------------------------------------- reading the exports
def read_export(out: Path, export: str) -> list[dict]:
    """Current rows of one export: exact duplicates dropped, latest (period, version, line) per key.

    Lines listed as planted garbage in ground_truth.json are skipped; any other unreadable line
    fails the test with its file and line.
    """
    spec = EXPORTS[export]
    truth = json.loads((out / "ground_truth.json").read_text())
    garbage = {
        (d["file"], ln) for d in truth["dirt"] if d["kind"] == "garbage_rows" for ln in d["lines"]
    }
    latest: dict[tuple, tuple] = {}
    for path in sorted((out / spec.folder).glob(f"{export}_*.csv")):
        parsed = parse_file_name(path.name)
        assert parsed and parsed[0] == export, f"{path.name}: not a contract file name"
        _, period, version = parsed
        german = export == "contractor_hours"
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=";" if german else ",")
            header = next(reader)
            assert tuple(header) == spec.column_names, f"{path.name}: header {header}"
            seen_in_file: dict[tuple, list[str]] = {}
            for line_no, cells in enumerate(reader, start=2):
                if (path.name, line_no) in garbage:
                    continue
                assert len(cells) == len(header), f"{path.name} line {line_no}: {len(cells)} cells"
                row = {k: (v.strip() or None) for k, v in zip(header, cells, strict=True)}
                key = tuple(row[k] for k in spec.key)
                required = [row[k] for k in spec.key if spec.column(k).required]
                one_of = [row[k] for k in spec.require_one_of] or [True]
                assert all(required) and any(one_of), f"{path.name} line {line_no}: empty key {key}"
                if key in seen_in_file:
                    assert seen_in_file[key] == cells, (
                        f"{path.name} line {line_no}: key {key} twice, different rows"
                    )
                    continue
                seen_in_file[key] = cells
                rank = (period, version, line_no)
                if key not in latest or latest[key][0] < rank:
                    latest[key] = (rank, row)
    return [r for _, r in latest.values()]


def d(s: str | None) -> date | None:
    return date.fromisoformat(s) if s else None


def ts(s: str | None) -> datetime | None:
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S") if s else None


class Company:
    """The infrastructure org re-derived from the exports, day by day."""

    def __init__(self, out: Path) -> None:
        self.truth = json.loads((out / "ground_truth.json").read_text())
        self.start = date.fromisoformat(self.truth["counts"]["start"])
        self.end = date.fromisoformat(self.truth["counts"]["end"])
        spells = defaultdict(list)
        self.email_to_id = {}
        for r in read_export(out, "employees"):
            spells[r["employee_id"]].append(
                (d(r["hire_date"]), d(r["termination_date"]), r["termination_type"])
            )
            self.email_to_id[r["work_email"].lower()] = r["employee_id"]
        self.spells = dict(spells)
        jobs = defaultdict(list)
        for r in read_export(out, "job_history"):
            jobs[r["employee_id"]].append(
                (
                    d(r["effective_date"]),
                    r["division"],
                    int(r["skill_level"]),
                    r["employment_type"],
                    r["team"],
                )
            )
        self.jobs = {k: sorted(v) for k, v in jobs.items()}
        awards = defaultdict(list)
        for r in read_export(out, "certifications"):
            if r["result"] == "pass":
                pid = self.email_to_id.get(r["learner_email"].lower())
                awards[pid].append((d(r["issued_on"]), d(r["expires_on"]) or date.max))
        self.awards = dict(awards)
        primary = {}
        for r in read_export(out, "responders"):
            if r["role"] == "primary":
                primary[r["incident_number"]] = self.email_to_id.get(r["responder_email"].lower())
        self.incidents = []
        for r in read_export(out, "incidents"):
            pid = primary.get(r["incident_number"])
            if pid is not None:
                self.incidents.append(
                    (pid, ts(r["opened_at"]), ts(r["resolved_at"]), r["severity"])
                )

    def certified(self, pid: str, day: date) -> bool:
        return any(a <= day <= b for a, b in self.awards.get(pid, ()))

    def job_on(self, pid: str, day: date):
        current = None
        for job in self.jobs.get(pid, ()):
            if job[0] > day:
                break
            current = job
        return current

    def engineer_days(self):
        """Yield (pid, day, level, team) for every day an infra employee was employed."""
        for pid, spells in self.spells.items():
            jobs = self.jobs.get(pid, ())
            if not any(j[1] == "AI Infrastructure" for j in jobs):
                continue
            for hire, term, _ in spells:
                day = max(hire, self.start)
                last = min(term or self.end, self.end)
                while day <= last:
                    job = self.job_on(pid, day)
                    if job and job[1] == "AI Infrastructure" and job[3] == "employee":
                        yield pid, day, job[2], job[4]
                    day += timedelta(days=1)


def mantel_haenszel_rate_ratio(strata: dict) -> float:
    """Sum(a*T0/T) / Sum(b*T1/T) over strata of (a events, T1 exposure; b events, T0 exposure)."""
    num = den = 0.0
    for a, t1, b, t0 in strata.values():
        total = t1 + t0
        if t1 and t0:
            num += a * t0 / total
            den += b * t1 / total
    return num / den


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, list[tuple]]:
    out = tmp_path_factory.mktemp("company")
    log: list[tuple] = []
    generate_company(
        out,
        employees=1500,
        years=3,
        end_date=END,
        seed=7,
        progress=False,
        garbage_rows=True,
        engineer_month_log=log,
    )
    return out, log


@pytest.fixture(scope="module")
def company_dir(generated) -> Path:
    return generated[0]


@pytest.fixture(scope="module")
def company(company_dir) -> Company:
    return Company(company_dir)


@pytest.fixture(scope="module")
def engineer_days(company) -> list[tuple]:
    return list(company.engineer_days())


# ----------------------------------------------------------------------------- contracts
def test_every_file_is_a_contract_file_with_the_contract_header(company_dir):
    vendor = vendor_files(json.loads((company_dir / "ground_truth.json").read_text()))
    names = [p for p in company_dir.rglob("*.csv") if str(p.relative_to(company_dir)) not in vendor]
    assert names, "no files written"
    for path in names:
        parsed = parse_file_name(path.name)
        assert parsed, f"{path.name}: not <export>_<period>[_vN].csv"
        assert path.parent.name == EXPORTS[parsed[0]].folder, f"{path} in the wrong folder"
    for export in set(EXPORTS) - OPERATIONS_EXPORTS:
        rows = read_export(company_dir, export)  # asserts header and key uniqueness per file
        assert rows, f"{export}: no rows"
    # the summary counts every file written, the tools' own files too; rows only of the exports
    # the contract writer wrote (the operations rows: ground_truth's operations.counts)
    counts = json.loads((company_dir / "ground_truth.json").read_text())["counts"]
    assert counts["files_written"] == len(list(company_dir.rglob("*.csv")))
    assert set(counts["rows"]) == set(EXPORTS) - OPERATIONS_EXPORTS


def test_values_follow_the_contract_types_and_enumerations(company_dir):
    for export, spec in EXPORTS.items():
        if export == "contractor_hours" or export in OPERATIONS_EXPORTS:
            continue
        for row in read_export(company_dir, export):
            for col in spec.columns:
                v = row[col.name]
                if v is None:
                    assert not col.required, f"{export}.{col.name} empty in {row}"
                    continue
                if col.values:
                    assert v.lower() in col.values, f"{export}.{col.name}={v!r}"
                if col.type == "date":
                    date.fromisoformat(v)
                elif col.type == "timestamp":
                    ts(v)
                elif col.type in ("decimal", "integer"):
                    float(v)
                elif col.type == "boolean":
                    assert v in ("true", "false")


def test_contractor_hours_arrive_in_german_locale_with_bom(company_dir):
    files = sorted((company_dir / "hris").glob("contractor_hours_*.csv"))
    assert files
    for path in files:
        raw = path.read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf"), f"{path.name}: no BOM"
    rows = read_export(company_dir, "contractor_hours")
    assert all(re.fullmatch(r"\d{2}\.\d{4}", r["month"]) for r in rows)
    assert all(re.fullmatch(r"\d+,\d{2}", r["hours"]) for r in rows)
    rates = [float(r["hourly_rate_usd"].replace(",", ".")) for r in rows]
    assert 250 < np.mean(rates) < 350


def test_planted_dirt_is_where_ground_truth_says(company_dir):
    dirt = json.loads((company_dir / "ground_truth.json").read_text())["dirt"]
    kinds = {x["kind"] for x in dirt}
    assert {
        "exact_duplicates",
        "corrected_redelivery",
        "crlf_line_endings",
        "byte_order_mark",
        "garbage_rows",
    } <= kinds
    for x in dirt:
        folder = EXPORTS[x["export"]].folder
        raw = (company_dir / folder / x["file"]).read_bytes()
        if x["kind"] == "crlf_line_endings":
            assert raw.count(b"\r\n") == raw.count(b"\n")
        elif x["kind"] == "exact_duplicates":
            lines = raw.decode("utf-8-sig").splitlines()
            assert len(lines) - len(set(lines)) == x["rows"]
        elif x["kind"] == "corrected_redelivery":
            v1 = (company_dir / folder / x["superseded"]).read_text().splitlines()
            v2 = raw.decode().splitlines()
            assert len(v2) == len(v1) + 1 and v1[1] != v2[1] and v1[2:] == v2[2:-1]
        elif x["kind"] == "garbage_rows":
            lines = raw.decode().splitlines()
            assert "sev9" in lines[x["lines"][0] - 1] and len(lines) == x["lines"][1]
    emails = [r["learner_email"] for r in read_export(company_dir, "certifications")]
    assert any(e != e.lower() for e in emails), "no mixed-case e-mails in the LMS"


def test_hris_holds_rehires_promotions_exits_and_non_employees(company_dir, company):
    rehired = [pid for pid, spells in company.spells.items() if len(spells) > 1]
    assert rehired
    rows = read_export(company_dir, "employees")
    for r in rows:
        if r["employee_id"] in rehired and r["hire_date"] != r["original_hire_date"]:
            assert r["original_hire_date"] < r["hire_date"]
    types = {r["termination_type"] for r in rows if r["termination_date"]}
    assert types == {"voluntary", "involuntary", "other"}
    jobs = read_export(company_dir, "job_history")
    by_person = defaultdict(list)
    for r in jobs:
        by_person[r["employee_id"]].append(r)
    promotions, steps = 0, defaultdict(int)
    for history in by_person.values():
        history.sort(key=lambda r: r["effective_date"])
        for before, after in zip(history, history[1:], strict=False):
            step = int(after["skill_level"]) - int(before["skill_level"])
            if after["change_reason"] == "promotion":
                promotions += 1
                steps[step] += 1
                # up one level, or two (promotion_skip_probability), never above 5
                assert step in (1, 2) and int(after["skill_level"]) <= 5, (before, after)
            elif after["change_reason"] == "demotion":
                assert step == -1, (before, after)
            else:
                assert step == 0, (before, after)
    assert promotions > 20 and steps[1] > steps[2]
    infra = [r for r in jobs if r["division"] == "AI Infrastructure"]
    assert {r["employment_type"] for r in infra} == {"employee", "contractor", "intern"}
    assert {r["role_family"] for r in infra} == {
        "infrastructure_lead",
        "infrastructure_architect",
        "senior_engineer",
        "operations_engineer",
        "network_specialist",
        "storage_specialist",
        "performance_engineer",
        "security_specialist",
    }
    clusters = {r["cluster"] for r in read_export(company_dir, "gpu_fleet")}
    assert {r["team"] for r in infra} <= clusters
    share = len({r["employee_id"] for r in infra}) / len(by_person)
    assert 0.07 < share < 0.2
    bands = {
        1: (75_000, 95_000),
        2: (95_000, 125_000),
        3: (125_000, 175_000),
        4: (175_000, 250_000),
        5: (250_000, 400_000),
    }
    below = 0
    for r in infra:
        lo, hi = bands[int(r["skill_level"])]
        pay = float(r["annual_salary_usd"])
        # inside the band, or one of the hires paid 3-15 % below its low end (below_band_share;
        # merit raises may lift them, never above the band's top)
        assert lo * 0.85 - 50 <= pay <= hi, r
        below += pay < lo
    assert below, "no salary below the band: below_band_share is planted"


def test_incidents_have_vendor_responders_and_some_stay_open(company_dir):
    responders = read_export(company_dir, "responders")
    domains = {r["responder_email"].lower().split("@")[1] for r in responders}
    assert len(domains) >= 2
    assert {r["role"] for r in responders} >= {"primary", "secondary", "commander"}
    incidents = read_export(company_dir, "incidents")
    assert any(r["resolved_at"] is None for r in incidents)
    numbers = {r["incident_number"] for r in incidents}
    primaries = [r["incident_number"] for r in responders if r["role"] == "primary"]
    assert len(primaries) == len(set(primaries)) == len(numbers)


# ----------------------------------------------------------------------------- planted effects
def _incident_strata(company, engineer_days):
    """Per (level, month): certified incidents, certified exposure, uncertified ones."""
    per_day = defaultdict(int)
    for pid, opened, _, _ in company.incidents:
        per_day[(pid, opened.date())] += 1
    strata = defaultdict(lambda: [0, 0.0, 0, 0.0])
    first = {pid: min(a for a, _ in aw) for pid, aw in company.awards.items() if pid}
    naive = {True: [0, 0.0], False: [0, 0.0]}
    for pid, day, level, _ in engineer_days:
        exposure = (
            1 / ((day.replace(day=28) + timedelta(days=4)).replace(day=1) - day.replace(day=1)).days
        )
        k = per_day.get((pid, day), 0)
        s = strata[(level, day.year, day.month)]
        if company.certified(pid, day):
            s[0] += k
            s[1] += exposure
        else:
            s[2] += k
            s[3] += exposure
        if pid in first and first[pid] > company.start:
            cell = naive[day >= first[pid]]
            cell[0] += k
            cell[1] += exposure
    before_after = (naive[True][0] / naive[True][1]) / (naive[False][0] / naive[False][1])
    return strata, before_after


def test_incident_rate_ratio_within_level_and_month_matches_the_planted_ratio(
    company, engineer_days
):
    strata, naive_before_after = _incident_strata(company, engineer_days)
    irr = mantel_haenszel_rate_ratio(strata)
    planted = company.truth["incident_rate_ratio"]
    assert planted == 0.7
    # ~3 standard errors at this size (Poisson counts plus Gamma frailty between engineers)
    assert abs(math.log(irr) - math.log(planted)) < 0.2, irr
    # the naive before/after comparison is biased upward by fleet growth, as intended
    # (measured at this size and seed: 0.85 against 0.75)
    assert naive_before_after > 0.8, naive_before_after
    assert naive_before_after > 1.1 * irr, (naive_before_after, irr)


def test_mttr_ratio_from_a_log_linear_fit_matches_the_planted_ratio(company):
    rows, y = [], []
    for pid, opened, resolved, sev in company.incidents:
        if resolved is None:
            continue
        level = company.job_on(pid, opened.date())[2]
        years = (opened.date() - company.start).days / 365.25
        rows.append(
            [
                1.0,
                company.certified(pid, opened.date()),
                level,
                years,
                sev == "sev1",
                sev == "sev2",
                sev == "sev3",
            ]
        )
        y.append(math.log((resolved - opened).total_seconds() / 60))
    beta = np.linalg.lstsq(np.array(rows, float), np.array(y), rcond=None)[0]
    assert abs(beta[1] - math.log(0.8)) < 0.08, math.exp(beta[1])
    assert abs(beta[3] - (-0.15)) < 0.08  # tooling trend per year


def test_attrition_hazard_ratio_and_the_immortal_time_bias(company, engineer_days):
    voluntary = {
        (pid, term)
        for pid, spells in company.spells.items()
        for _, term, kind in spells
        if term and kind == "voluntary"
    }
    by_status = {True: [0, 0.0], False: [0, 0.0]}
    ever_never = {True: [0, 0.0], False: [0, 0.0]}
    for pid, day, _, _ in engineer_days:
        exposure = 1 / 30.44
        event = (pid, day) in voluntary
        cell = by_status[company.certified(pid, day.replace(day=1))]
        cell[0] += event
        cell[1] += exposure
        cell = ever_never[pid in company.awards]
        cell[0] += event
        cell[1] += exposure

    def ratio(cells):
        (a, t1), (b, t0) = cells[True], cells[False]
        rr = (a / t1) / (b / t0)
        half = 1.96 * math.sqrt(1 / a + 1 / b)
        return rr, rr * math.exp(-half), rr * math.exp(half)

    hr, lo, hi = ratio(by_status)
    assert lo < company.truth["attrition_hazard_ratio"] < hi, (hr, lo, hi)
    naive, _, naive_hi = ratio(ever_never)
    assert naive_hi < 0.6, naive  # ever/never credits the pre-certification time to the certified


def test_planted_incident_rates_do_not_move_before_a_first_certification(company, generated):
    """No anticipation in the planted model: the expected incident count of each engineer-month
    (the planted rate without frailty and Poisson noise, as the generator logs it), analysed
    with the pipeline's own event study (first certification and status from the LMS file), is
    flat in the twelve months before the first certification and at the planted ratio after.
    A preparation-month effect, a status dated before the award, or an award counted from the
    exam month's first day would all bend the months before or at the first certification."""
    from pipelines.lib import effects as stats

    start = company.start
    first = {pid: min(a for a, _ in awards) for pid, awards in company.awards.items() if pid}
    rows = []
    for i, t, level, a, b, expected, _ in generated[1]:
        pid = f"E{i + 1:06d}"
        month = date(start.year + (start.month - 1 + t) // 12, (start.month - 1 + t) % 12 + 1, 1)
        last = date.fromordinal(b)
        hire = max(h for h, _, _ in company.spells[pid] if h <= last)
        rows.append(
            {
                "person_key": pid,
                "month": month,
                "skill_level": level,
                "tenure_months": (last - hire).days // 30,
                "is_certified": company.certified(pid, last),
                "first_certified_month": first[pid].replace(day=1) if pid in first else None,
                "incidents": expected,
                "exposure_months": (b - a + 1) / calendar.monthrange(month.year, month.month)[1],
                "separated": False,
                "separation_type": None,
            }
        )
    study = stats.event_study(pd.DataFrame(rows)).set_index("relative_month")["estimate"]
    irr = company.truth["incident_rate_ratio"]
    before, after = study.loc[-12:-2], study.loc[1:11]
    assert before.between(0.98, 1.02).all(), before.round(3).to_dict()
    assert after.between(irr - 0.03, irr + 0.05).all(), after.round(3).to_dict()
    # certified for part of the month of the first award only (from the exam day on)
    assert irr + 0.05 < study.loc[0] < 0.95, study.loc[0]


def test_contractor_hours_fall_as_the_team_certified_share_rises(
    company_dir, company, engineer_days
):
    template = {"small": 4, "medium": 10, "large": 22}
    gpus = {
        (r["cluster"], r["as_of_date"][:7]): int(r["gpu_count"])
        for r in read_export(company_dir, "gpu_fleet")
    }
    month_end = defaultdict(lambda: [0, 0])
    for pid, day, _, team in engineer_days:
        if (day + timedelta(days=1)).day == 1:
            cell = month_end[(team, day.strftime("%Y-%m"))]
            cell[0] += company.certified(pid, day)
            cell[1] += 1
    xs, ys = [], []
    for r in read_export(company_dir, "contractor_hours"):
        mm, yyyy = r["month"].split(".")
        key = (r["team"], f"{yyyy}-{mm}")
        certified, headcount = month_end.get(key, (0, 0))
        if not headcount or certified == headcount:
            continue
        g = gpus[key]
        size = "small" if g < 100 else "medium" if g < 1000 else "large"
        xs.append(math.log(1 - certified / headcount))
        ys.append(math.log(float(r["hours"].replace(",", ".")) / template[size]))
    slope = np.polyfit(xs, ys, 1)[0]
    assert 1.1 < slope < 1.9, slope  # planted exponent 1.5


# ----------------------------------------------------------------------------- behaviour
def _all_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_an_award_expiring_on_the_first_of_a_month_lapses_instead_of_stopping_the_generator(
    tmp_path,
):
    # at this size and seed an award expires on the first day of the month in which its renewal
    # is decided; the renewal day used to be drawn from an empty range (ValueError: low >= high)
    summary = generate_company(
        tmp_path, employees=1000, years=4, end_date=END, seed=12, progress=False, dirt=False
    )
    assert summary["exam_attempts"] > 100 and summary["awards"] > 0


def test_same_seed_gives_byte_identical_output(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((a, 3), (b, 3), (c, 4)):
        generate_company(
            out, employees=300, years=1, end_date=END, seed=seed, progress=False, garbage_rows=True
        )
    assert _all_bytes(a) == _all_bytes(b)
    assert _all_bytes(a) != _all_bytes(c)
    # another process with another string-hash seed: nothing may depend on set or hash order
    other = tmp_path / "other"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tools",
            "generate",
            "--out",
            str(other),
            "--employees",
            "300",
            "--years",
            "1",
            "--end-date",
            END.isoformat(),
            "--seed",
            "3",
            "--garbage-rows",
            "--quiet",
        ],
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert _all_bytes(a) == _all_bytes(other)


def test_daily_from_moves_late_records_into_daily_files(tmp_path):
    monthly, daily = tmp_path / "monthly", tmp_path / "daily"
    cut = date(2026, 9, 25)
    generate_company(
        monthly, employees=400, years=1, end_date=END, seed=5, progress=False, dirt=False
    )
    generate_company(
        daily,
        employees=400,
        years=1,
        end_date=END,
        seed=5,
        progress=False,
        dirt=False,
        daily_from=cut,
    )
    # the operations and recruiting files are vendor exports whatever --daily-from says
    vendor = vendor_files(json.loads((daily / "ground_truth.json").read_text()))
    periods = {
        parse_file_name(p.name)[1]
        for p in daily.rglob("*.csv")
        if str(p.relative_to(daily)) not in vendor
    }
    # a day gets a file when something happened on it (the cut day itself may be quiet)
    days = {p for p in periods if len(p) == 10}
    assert "2026-09-30" in days and len(days) >= 3 and min(days) >= cut.isoformat(), days
    assert not any(len(p) == 10 and p < cut.isoformat() for p in periods)
    for path in daily.glob("incidents/incidents_2026-09.csv"):
        for row in csv.DictReader(path.open(encoding="utf-8-sig")):
            assert row["opened_at"][:10] < cut.isoformat()
    for export in (
        "incidents",
        "responders",
        "employees",
        "job_history",
        "certifications",
        "gpu_fleet",
    ):
        key = EXPORTS[export].key
        as_monthly = {tuple(r[k] for k in key): r for r in read_export(monthly, export)}
        as_daily = {tuple(r[k] for k in key): r for r in read_export(daily, export)}
        assert as_monthly == as_daily, export


def test_command_line_writes_a_company_and_explains_bad_dates(tmp_path):
    from typer.testing import CliRunner

    from tools.cli import app

    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(
        app,
        [
            "generate",
            "--out",
            str(out),
            "--employees",
            "200",
            "--years",
            "1",
            "--end-date",
            "2026-09-30",
            "--seed",
            "1",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "ground_truth.json").read_text())["incident_rate_ratio"] == 0.7
    bad = runner.invoke(app, ["generate", "--out", str(out), "--end-date", "30.09.2026", "--quiet"])
    assert bad.exit_code != 0
    assert "YYYY-MM-DD" in bad.output
    outside = runner.invoke(
        app,
        [
            "generate",
            "--out",
            str(out),
            "--employees",
            "200",
            "--years",
            "1",
            "--end-date",
            "2026-09-30",
            "--daily-from",
            "2020-01-01",
            "--quiet",
        ],
    )
    assert outside.exit_code == 2
    assert "outside the simulated window" in outside.output
    again = runner.invoke(
        app,
        [
            "generate",
            "--out",
            str(out),
            "--employees",
            "200",
            "--years",
            "1",
            "--end-date",
            "2026-09-30",
            "--seed",
            "2",
            "--quiet",
        ],
    )
    assert again.exit_code == 2 and "--overwrite" in again.output
    replaced = runner.invoke(
        app,
        [
            "generate",
            "--out",
            str(out),
            "--employees",
            "200",
            "--years",
            "1",
            "--end-date",
            "2026-09-30",
            "--seed",
            "2",
            "--quiet",
            "--overwrite",
        ],
    )
    assert replaced.exit_code == 0, replaced.output
    assert json.loads((out / "ground_truth.json").read_text())["seed"] == 2


# ------------------------------------------------------------- reference data from the seeds
def test_reference_tables_are_the_dbt_seeds():
    """Team templates, required certifications, salary bands and certification validity come
    from dbt_project/seeds (read here independently with pandas)."""
    import pandas as pd

    from tools.generate import reference as ref

    seeds = Path(__file__).resolve().parent.parent / "dbt_project" / "seeds"
    templates = pd.read_csv(seeds / "team_template_requirements.csv")
    assert tuple(templates["role_family"].drop_duplicates()) == ref.ROLE_FAMILIES
    for cls, rows in templates.groupby("fleet_size_class"):
        assert sum(t[1] for t in ref.TEAM_TEMPLATES[cls]) == rows["headcount"].sum()
        for row in rows.itertuples():
            assert ref.REQUIRED_CERTS[cls][row.role_family] == tuple(
                row.required_certification_codes.split(";")
            )
    levels = pd.read_csv(seeds / "skill_levels.csv")
    assert {
        r.skill_level: (r.salary_min_usd, r.salary_max_usd) for r in levels.itertuples()
    } == ref.SALARY_BANDS
    catalogue = pd.read_csv(seeds / "certification_catalogue.csv")
    for r in catalogue.itertuples():
        expected = None if pd.isna(r.validity_months) else int(r.validity_months)
        assert ref.CERTIFICATIONS[r.code].validity_months == expected


def test_an_overridden_seed_reaches_the_generator(tmp_path):
    import shutil

    from tools.generate import reference as ref

    seeds = Path(__file__).resolve().parent.parent / "dbt_project" / "seeds"
    for f in seeds.glob("*.csv"):
        shutil.copy(f, tmp_path / f.name)
    text = (tmp_path / "skill_levels.csv").read_text(encoding="utf-8")
    (tmp_path / "skill_levels.csv").write_text(
        text.replace(",75000,95000,", ",60000,70000,"), encoding="utf-8"
    )
    try:
        ref.use_seeds(tmp_path)
        assert ref.SALARY_BANDS[1] == (60000, 70000)
    finally:
        ref.use_seeds()
    assert ref.SALARY_BANDS[1] == (75000, 95000)
    (tmp_path / "fleet_size_classes.csv").unlink()
    with pytest.raises(FileNotFoundError, match="fleet_size_classes.csv.*--seeds-dir"):
        ref.load_seeds(tmp_path)
