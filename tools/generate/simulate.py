"""Month-by-month simulation of one company: people, fleet, learning, incidents.

The state of everyone who ever worked here lives in numpy arrays (vectorised draws for the
whole company each month); only the infrastructure engineers, a tenth of the headcount, get a
per-person loop for certifications and incidents. Rows go to the `ExportWriter` as they happen,
and each month is written to disk when it is over, so memory stays flat however long the run.

The planted effects (see `model.PlantedModel` and docs/architecture.md "Synthetic company"):
incidents Poisson with a certified rate ratio, resolve times log-normal with a certified ratio,
voluntary exits with a certified hazard ratio; confounded by level, tenure and fleet growth.
"""

from __future__ import annotations

import calendar
import math
import sys
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import numpy as np

from tools.generate import reference as ref
from tools.generate.model import PlantedModel
from tools.generate.writer import ExportWriter

INFRA = 0
EMPLOYEE, CONTRACTOR, INTERN = 0, 1, 2
ETYPE_NAMES = ("employee", "contractor", "intern")
NEVER = 10**7  # ordinal far in the future: "does not expire"
RENEWAL = 0  # attempt number of a renewal exam (first attempts are 1)
AVERAGE_MONTH_DAYS = 30.4375


def add_months(d: date, n: int) -> date:
    y, m = divmod(d.month - 1 + n, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def month_starts(end: date, years: int) -> list[date]:
    last = date(end.year, end.month, 1)
    return [add_months(last, -i) for i in range(12 * years - 1, -1, -1)]


def _d(o: int) -> date:
    return date.fromordinal(int(o))


class People:
    """Growable columnar store of every person; index = position, id = E + 6 digits."""

    FIELDS = {
        "active": bool,
        "division": np.int16,
        "team": np.int32,
        "role": np.int16,
        "level": np.int8,
        "site": np.int16,
        "etype": np.int8,
        "hire": np.int64,
        "orig_hire": np.int64,
        "fixed_end": np.int64,
        "salary": np.float64,
        "frailty": np.float64,
        "level_since": np.int64,
        "fte": np.float64,
        "term": np.int64,
    }

    def __init__(self) -> None:
        self.n = 0
        self.cap = 1024
        for name, dt in self.FIELDS.items():
            setattr(self, name, np.zeros(self.cap, dtype=dt))
        self.first: list[str] = []
        self.last: list[str] = []
        self.email: list[str] = []
        self.manager: list[str] = []
        self._emails: dict[str, int] = {}

    def add(self, first: str, last: str, **values) -> int:
        if self.n == self.cap:
            self.cap *= 2
            for name in self.FIELDS:
                arr = getattr(self, name)
                new = np.zeros(self.cap, dtype=arr.dtype)
                new[: self.n] = arr[: self.n]
                setattr(self, name, new)
        i = self.n
        self.n += 1
        for name, v in values.items():
            getattr(self, name)[i] = v
        base = f"{first}.{last}".lower()
        k = self._emails.get(base, 0)
        self._emails[base] = k + 1
        self.first.append(first)
        self.last.append(last)
        self.email.append(f"{base}{k + 1 if k else ''}@{ref.COMPANY_DOMAIN}")
        self.manager.append("")
        return i

    @staticmethod
    def eid(i: int) -> str:
        return f"E{i + 1:06d}"


@dataclass
class Cluster:
    name: str
    site: int
    gpu_model: str
    gpus: float
    growth: float
    start_month: int  # index of the first month it exists


class Simulation:
    def __init__(
        self,
        writer: ExportWriter,
        employees: int,
        years: int,
        end: date,
        seed: int,
        model: PlantedModel,
        progress: bool,
    ) -> None:
        self.w = writer
        self.m = model
        self.rng = np.random.default_rng(seed)
        # everything the programme and career model added draws from its own stream, so the
        # draws of the rest (incidents, exits, hires...) keep their order where they can
        self.prng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        self.months = month_starts(end, years)
        self.start = self.months[0]
        self.end = end
        self.n_target = employees
        self.progress = progress
        self.p = People()
        # team names: infra clusters first (team index == cluster index), then other teams
        self.clusters: list[Cluster] = []
        self.other_teams: list[tuple[int, str]] = []  # (division, team name)
        self.divisions = [ref.INFRA_DIVISION] + [d[0] for d in ref.OTHER_DIVISIONS]
        self.roles = list(ref.ROLE_FAMILIES) + [d[3] for d in ref.OTHER_DIVISIONS]
        # certification state of infra people
        self.awards: dict[int, list[tuple[str, int, int]]] = {}
        # infrastructure team -> everyone ever placed in it (hire, rehire, transfer); who is
        # there now is read from the arrays, so the lists never need pruning
        self.roster: dict[int, list[int]] = {}
        self.pending_exam: dict[int, tuple[str, int, int]] = {}  # renewal exams
        # the preparation episode each engineer is in (see _prepare) and the programme of each
        # engineer's latest episode with its start day (for the exit multiplier)
        self.open_episode: dict[int, dict] = {}
        self.latest_programme: dict[int, tuple[int, str]] = {}
        self.renewal_decided: set[tuple[int, str, int]] = set()
        self.rehires: dict[int, list[int]] = {}
        self.counters = {"attempt": 0, "enrolment": 0, "incident": 0}
        self.engagement_rates: dict[str, float] = {}
        self.fleet0 = 1.0
        self._open_logs()
        self.t = 0
        self._end_of_data = datetime.combine(end, datetime.max.time())
        cumulative = np.cumsum(list(model.severity_probabilities.values())).tolist()
        self._sev_cdf = list(zip(model.severity_probabilities, cumulative, strict=True))
        self.stats = {
            "incidents_engineer": 0,
            "incidents_vendor": 0,
            "incidents_open_at_end": 0,
            "exam_attempts": 0,
            "awards": 0,
            "enrolments": 0,
            "hires": 0,
            "separations": 0,
            "rehires": 0,
        }
        self.vendor_staff = [
            f"{f}.{ln}".lower() + "@" + ref.VENDOR_DOMAINS[i % 2]
            for i, (f, ln) in enumerate(
                zip(ref.FIRST_NAMES[::3], ref.LAST_NAMES[::2], strict=False)
            )
        ]

    def _open_logs(self) -> None:
        """The lists and maps tests, the validity harness and the operations pass read the
        planted world from (None: not recorded); none of them draws random numbers."""
        # tests may set a list here to receive, per engineer and month, (index, month index,
        # level, first day, last day employed, expected incidents without frailty, incidents)
        self.engineer_month_log: list[tuple] | None = None
        # the validity harness sets these lists to read the planted world without the exports:
        # panel_log (index, month index, level, first day, last day employed, days in month,
        # incidents, planted incident rate ratio of the certified days), incident_log (index, day, certified, severity, minutes), exit_log
        # (index, day, separation type)
        self.panel_log: list[tuple] | None = None
        self.incident_log: list[tuple] | None = None
        self.exit_log: list[tuple] | None = None
        # a list here receives one dict per preparation episode (see _prepare): the planted
        # programme, track, start day, level, tenure and role at entry, the planned first-attempt
        # outcome and certification day, the planted exit multiplier, the enrolments and the
        # exam attempts as they are sat
        self.episode_log: list[dict] | None = None
        self.shock_until: dict[int, int] = {}
        # read by the operations pass after the run (tools/generate/operations.py), recorded
        # without drawing random numbers: (month index, cluster index) -> GPUs at month end, and
        # -> (certified share of the team at month end, the team's engineers then)
        self.fleet_log: dict[tuple[int, int], int] = {}
        self.team_log: dict[tuple[int, int], tuple[float, tuple[int, ...]]] = {}
        # read by the recruiting pass (tools/generate/recruiting.py): the infrastructure
        # employees' exits ("exit", day, index, team, role, level, separation type) and the hires
        # into their teams' vacancies ("hire", first day, index, team, role, level, salary), in
        # the order they happen
        self.staffing_log: list[tuple] = []

    # ------------------------------------------------------------------ set-up
    def _new_name(self) -> tuple[str, str]:
        return (
            ref.FIRST_NAMES[int(self.rng.integers(len(ref.FIRST_NAMES)))],
            ref.LAST_NAMES[int(self.rng.integers(len(ref.LAST_NAMES)))],
        )

    def _salary(self, level: int, infra: bool) -> float:
        lo, hi = ref.SALARY_BANDS[level]
        s = lo + (hi - lo) * self.rng.beta(2, 3)
        if infra and self.prng.random() < self.m.below_band_share:
            s = lo * (1 - self.prng.uniform(0.03, 0.15))  # paid below the band
        return round((s if infra else s * 0.92) / 100) * 100

    def _frailty(self) -> float:
        v = self.m.frailty_variance
        return float(self.rng.gamma(1 / v, v))

    def build_clusters(self) -> None:
        """Enough clusters that the infra org ends near 10-12 % of the company."""
        target = 0.11 * self.n_target
        per_site: dict[int, int] = {}
        total_end = 0.0
        n_months = len(self.months)
        while total_end < target:
            site = int(self.rng.integers(len(ref.SITES)))
            per_site[site] = per_site.get(site, 0) + 1
            name = f"{ref.SITES[site][0]}-{per_site[site]}"
            late = self.rng.random() < 0.3 and self.clusters
            start_month = int(self.rng.integers(1, max(2, n_months - 6))) if late else 0
            gpus = float(np.exp(self.rng.uniform(np.log(16), np.log(1600))))
            growth = float(self.rng.uniform(self.m.fleet_growth_low, self.m.fleet_growth_high))
            model = ref.GPU_MODELS[
                min(3, int(self.rng.integers(2)) + (start_month * 4) // (n_months + 1))
            ]
            self.clusters.append(Cluster(name, site, model, gpus, growth, start_month))
            end_gpus = gpus * (1 + growth) ** (n_months - start_month)
            total_end += sum(x[1] for x in ref.TEAM_TEMPLATES[ref.fleet_size_class(int(end_gpus))])
        for d, (_, _, teams, _) in enumerate(ref.OTHER_DIVISIONS, start=1):
            for t in teams:
                self.other_teams.append((d, t))
        self.fleet0 = sum(c.gpus for c in self.clusters if c.start_month == 0)

    def team_name(self, team: int, division: int) -> str:
        if division == INFRA:
            return self.clusters[team].name
        return self.other_teams[team][1]

    # ------------------------------------------------------------------ emitting
    def emit_spell(
        self,
        i: int,
        term: int | None = None,
        ttype: str | None = None,
        reason: str | None = None,
        regrettable: bool | None = None,
    ) -> None:
        p = self.p
        hire = _d(p.hire[i])
        row = {
            "employee_id": p.eid(i),
            "first_name": p.first[i],
            "last_name": p.last[i],
            "work_email": p.email[i],
            "hire_date": hire,
            "original_hire_date": _d(p.orig_hire[i]),
            "termination_date": _d(term) if term else None,
            "termination_type": ttype,
            "termination_reason": reason,
            "regrettable": regrettable,
        }
        self.w.emit("employees", _d(term) if term else hire, row)

    def emit_job(self, i: int, eff: int, reason: str) -> None:
        p = self.p
        div = int(p.division[i])
        role = self.roles[int(p.role[i])]
        level = int(p.level[i])
        title = role.replace("_", " ").title() + f" {ref.LEVEL_NAMES[level]}"
        if p.etype[i] == INTERN:
            title = role.replace("_", " ").title() + " Intern"
        row = {
            "employee_id": p.eid(i),
            "effective_date": _d(eff),
            "division": self.divisions[div],
            "team": self.team_name(int(p.team[i]), div),
            "role_family": role,
            "job_title": title,
            "skill_level": level,
            "site": ref.SITES[int(p.site[i])][1],
            "manager_id": p.manager[i] or None,
            "employment_type": ETYPE_NAMES[int(p.etype[i])],
            "fte": float(p.fte[i]),
            "annual_salary_usd": float(p.salary[i]),
            "change_reason": reason,
        }
        self.w.emit("job_history", _d(eff), row)

    # ------------------------------------------------------------------ hiring
    def hire(
        self,
        division: int,
        team: int,
        role: int,
        level: int,
        day: int,
        *,
        etype: int = EMPLOYEE,
        tenure_days: int = 0,
        reason: str = "hire",
    ) -> int:
        first, last = self._new_name()
        infra = division == INFRA
        site = self.clusters[team].site if infra else int(self.rng.integers(len(ref.SITES)))
        hire_day = day - tenure_days
        fte = (
            1.0
            if etype == EMPLOYEE and (infra or self.rng.random() > 0.08)
            else (0.5 if etype == INTERN else 0.8)
        )
        fixed_end = 0
        if etype == CONTRACTOR:
            fixed_end = hire_day + 365
        elif etype == INTERN:
            fixed_end = hire_day + 182
        i = self.p.add(
            first,
            last,
            active=True,
            division=division,
            team=team,
            role=role,
            level=level,
            site=site,
            etype=etype,
            hire=hire_day,
            orig_hire=hire_day,
            fixed_end=fixed_end,
            salary=self._salary(level, infra),
            frailty=self._frailty(),
            fte=fte,
            term=0,
            level_since=hire_day + int(self.rng.integers(0, max(1, tenure_days // 2 + 1))),
        )
        if infra:
            self.roster.setdefault(team, []).append(i)
            self.p.manager[i] = self._team_manager(team, exclude=i)
            self.awards[i] = []
        self.emit_spell(i)
        self.emit_job(i, hire_day, reason)
        if tenure_days == 0:
            self.stats["hires"] += 1
            if infra and etype == EMPLOYEE:
                self._onboarding_courses(i, hire_day)
        return i

    def _team_manager(self, team: int, exclude: int) -> str:
        """The most senior active member (level 4+) of an infrastructure team, the first by
        number among equals. Read from the team's roster, not by scanning everyone: a scan per
        hire made the generator grow with the square of the company (20 of its minutes at
        1,000,000 employees went to scans like this one)."""
        p = self.p
        cand = np.unique(np.asarray(self.roster.get(team, ()), dtype=np.int64))
        idx = cand[
            p.active[cand]
            & (p.division[cand] == INFRA)
            & (p.team[cand] == team)
            & (p.level[cand] >= 4)
        ]
        idx = idx[idx != exclude]
        return p.eid(int(idx[np.argmax(p.level[idx])])) if idx.size else ""

    def initial_population(self) -> None:
        start = self.start.toordinal()
        n_infra = 0
        for ci, c in enumerate(self.clusters):
            if c.start_month:
                continue
            for role, count, lo, hi in ref.TEAM_TEMPLATES[ref.fleet_size_class(int(c.gpus))]:
                for _ in range(count):
                    if self.rng.random() > 0.9:
                        continue
                    level = int(self.rng.integers(lo, hi + 1))
                    tenure = int(30 * (1 + self.rng.exponential(20 + 6 * (level - 2))))
                    i = self.hire(
                        INFRA, ci, self.roles.index(role), level, start, tenure_days=tenure
                    )
                    self._initial_awards(i, tenure)
                    n_infra += 1
        self._fill_other(self.n_target - n_infra, start, initial=True)

    def _initial_awards(self, i: int, tenure_days: int) -> None:
        """Engineers present at the start may already hold a certification (awarded before)."""
        level = int(self.p.level[i])
        years = tenure_days / 365.25
        prob = min(0.85, 0.12 * years * np.exp(0.3 * (level - 2)))
        if self.rng.random() >= prob:
            return
        start = self.start.toordinal()
        back = int(self.rng.integers(15, max(16, min(700, tenure_days))))
        code = self._target_cert(i, first=True)
        self._exam(i, code, start - back, attempt=1, passed=True, rng=self.rng)

    def _fill_other(self, count: int, day: int, initial: bool = False) -> None:
        shares = np.array([d[1] for d in ref.OTHER_DIVISIONS])
        divisions = self.rng.choice(len(shares), size=max(0, count), p=shares / shares.sum()) + 1
        level_p = [0.15, 0.3, 0.3, 0.18, 0.07] if initial else [0.25, 0.35, 0.25, 0.12, 0.03]
        for d in divisions:
            teams = [k for k, (dd, _) in enumerate(self.other_teams) if dd == d]
            team = teams[int(self.rng.integers(len(teams)))]
            level = int(self.rng.choice(5, p=level_p)) + 1
            role = self.roles.index(ref.OTHER_DIVISIONS[d - 1][3])
            if initial:
                tenure = int(min(20 * 365, self.rng.exponential(4 * 365))) + 1
                self.hire(int(d), team, role, level, day, tenure_days=tenure)
            else:
                self.hire(int(d), team, role, level, day + int(self.rng.integers(0, 28)))

    # ------------------------------------------------------------------ learning
    def certified_on(self, i: int, day: int) -> bool:
        return any(iss <= day <= exp for _, iss, exp in self.awards.get(i, ()))

    def _active_codes(self, i: int, day: int) -> set[str]:
        return {c for c, iss, exp in self.awards.get(i, ()) if iss <= day <= exp}

    def _target_cert(self, i: int, first: bool = False) -> str | None:
        p = self.p
        role = self.roles[int(p.role[i])]
        cluster = self.clusters[int(p.team[i])]
        required = ref.REQUIRED_CERTS[ref.fleet_size_class(int(cluster.gpus))][role]
        held = self._active_codes(i, self.today)
        ever = {c for c, _, _ in self.awards.get(i, ())}
        for code in required:
            if code not in held:
                if code.startswith("NCP-AII") and "NCA-AIIO" not in ever and p.level[i] <= 3:
                    return "NCA-AIIO"
                return code
        if first:
            return required[0]
        extra = [c for c in ("CKA", "RHCE", "LINUX-PLUS") if c not in held]
        return extra[0] if extra and self.rng.random() < 0.5 else None

    def _enrol(
        self,
        i: int,
        course_id: str,
        day: int,
        *,
        charged: float | None = None,
        withdraw_p: float = 0.07,
        rng: np.random.Generator | None = None,
        finish_by: int | None = None,
    ) -> dict:
        """Enrol ``i`` in a course on ``day``; the enrolment is completed (or withdrawn from)
        after a duration drawn from its hours, compressed to end before ``finish_by`` when it
        would not. Returns what the episode records need."""
        rng = rng or self.rng
        course = ref.COURSE_BY_ID[course_id]
        self.counters["enrolment"] += 1
        self.stats["enrolments"] += 1
        eid = f"ENR-{self.counters['enrolment']:07d}"
        email = self.p.email[i]
        base = {
            "enrolment_id": eid,
            "learner_email": email,
            "course_id": course_id,
            "enrolled_on": _d(day),
            "cost_usd": charged,
        }
        self.w.emit(
            "enrolments",
            _d(day),
            {
                **base,
                "status": "enrolled",
                "completed_on": None,
                "hours_spent": None,
                "score": None,
            },
        )
        duration = int(max(3, course.hours / 4 * rng.uniform(0.8, 2.5)))
        if finish_by is not None and day + duration >= finish_by:
            duration = max(1, int((finish_by - day) * rng.uniform(0.6, 0.95)))
        done = day + duration
        withdrawn = rng.random() < withdraw_p
        hours = round(
            course.hours * (rng.uniform(0.1, 0.5) if withdrawn else rng.uniform(0.8, 1.4)), 1
        )
        if withdrawn:
            self.w.emit(
                "enrolments",
                _d(done),
                {
                    **base,
                    "status": "withdrawn",
                    "completed_on": None,
                    "hours_spent": hours,
                    "score": None,
                },
            )
        else:
            self.w.emit(
                "enrolments",
                _d(done),
                {
                    **base,
                    "status": "completed",
                    "completed_on": _d(done),
                    "hours_spent": hours,
                    "score": round(float(rng.uniform(62, 100)), 1),
                },
            )
        return {
            "course_id": course_id,
            "programme_type": course.programme_type,
            "enrolled_on": day,
            "list_price_usd": float(course.cost_usd),
            "charged_usd": charged,
            "done_on": done,
            "completed": not withdrawn,
            "hours_spent": hours,
        }

    def _onboarding_courses(self, i: int, hire_day: int) -> None:
        self._enrol(i, "INT-RUNBOOK", hire_day + int(self.rng.integers(1, 20)), withdraw_p=0.02)
        if self.p.level[i] <= 2 and self.rng.random() < 0.25:
            self._enrol(i, "AP-ONBOARD", hire_day + int(self.rng.integers(5, 30)), withdraw_p=0.05)

    def _choose_programme(self, code: str, level: int) -> str:
        """The programme of an episode: programme_probabilities over the types the catalogue
        offers for the track, tilted by level with programme_level_selection."""
        m = self.m
        tilt = m.programme_level_selection * (level - 3)
        factor = {"bootcamp": -tilt, "apprenticeship": -tilt, "vendor_partnership": tilt}
        types = [
            t
            for t in ref.PROGRAMME_TYPES
            if m.programme_probabilities.get(t, 0.0) > 0
            and (ref.PROGRAMME_COURSE.get((code, t)) or t == "online")
        ]
        if not types:
            return "online"
        w = np.array([m.programme_probabilities[t] * math.exp(factor.get(t, 0.0)) for t in types])
        return types[int(self.prng.choice(len(types), p=w / w.sum()))]

    def _prepare(self, i: int, code: str, day: int) -> None:
        """A preparation episode: the programme, its courses and some online ones (all enrolled
        on ``day``), the planned time to the passing exam T (Weibull AFT) and the first attempt
        (passes with the planted odds, else fails at T x Uniform(0.45, 0.8) and the second
        attempt passes at T). The courses end before the first attempt. Every draw comes from
        the programme stream."""
        m, g, p = self.m, self.prng, self.p
        level = int(p.level[i])
        programme = self._choose_programme(code, level)
        scale = (
            m.certify_time_scale_months.get(code, m.certify_time_scale_default)
            * math.exp(m.certify_time_level_slope * (level - 2))
            * m.programme_time_ratio[programme]
        )
        t_days = max(1, round(scale * AVERAGE_MONTH_DAYS * g.weibull(m.certify_time_shape)))
        base = m.exam_pass_base
        logit = (
            math.log(base / (1 - base))
            + m.exam_pass_level_slope * (level - 2)
            + math.log(m.programme_pass_odds_ratio[programme])
        )
        first_passes = bool(g.random() < 1 / (1 + math.exp(-logit)))
        if first_passes:
            exams = [(day + t_days, True)]
        else:
            fail = day + min(t_days - 1, round(t_days * g.uniform(0.45, 0.8)))
            exams = [(fail, False), (day + t_days, True)]
        courses = []
        if programme != "online":
            courses.append(ref.PROGRAMME_COURSE[(code, programme)])
        online = ref.COURSES_BY_CERT.get(code, ())
        if online:
            k = int(g.integers(1, len(online) + 1))
            courses += [str(c) for c in g.choice(online, size=k, replace=False)]
        enrolments = []
        for cid in courses:
            charged = None
            if (
                programme == "vendor_partnership"
                and ref.COURSE_BY_ID[cid].programme_type == programme
            ):
                list_price = ref.COURSE_BY_ID[cid].cost_usd
                discount = g.uniform(m.vendor_discount_low, m.vendor_discount_high)
                charged = round(list_price * (1 - discount), 2)
            enrolments.append(
                self._enrol(i, cid, day, charged=charged, rng=g, finish_by=exams[0][0])
            )
        exit_multiplier = m.programme_exit_hazard_ratio[programme]
        episode = {
            "i": i,
            "certification_code": code,
            "programme_type": programme,
            "start": day,
            "skill_level": level,
            "role_family": self.roles[int(p.role[i])],
            "hire": int(p.hire[i]),
            "tenure_months": (day - int(p.hire[i])) / AVERAGE_MONTH_DAYS,
            "first_attempt_passes": first_passes,
            "certify_day": day + t_days,
            "certify_months": t_days / AVERAGE_MONTH_DAYS,
            "exit_multiplier": exit_multiplier,
            "enrolments": enrolments,
            "attempts": [],
            "queue": exams,
        }
        self.open_episode[i] = episode
        self.latest_programme[i] = (day, programme)
        if self.episode_log is not None:
            self.episode_log.append(episode)

    def _exit_multiplier(self, i: int, ms: int) -> float:
        """The planted voluntary-exit multiplier of the programme of ``i``'s latest episode,
        from the first month that starts after the episode's start."""
        latest = self.latest_programme.get(i)
        if latest is None or latest[0] >= ms:
            return 1.0
        return self.m.programme_exit_hazard_ratio[latest[1]]

    def _episode_exams(self, i: int, me: int, term: int) -> None:
        """Sit the open episode's exams due by ``me`` (not after a leaving day ``term``); the
        episode ends with the pass, or unfinished when the engineer leaves first."""
        episode = self.open_episode.get(i)
        if episode is None:
            return
        queue = episode["queue"]
        while queue and queue[0][0] <= me and not (term and queue[0][0] > term):
            day, passes = queue.pop(0)
            attempt = len(episode["attempts"]) + 1
            code = episode["certification_code"]
            self._exam(i, code, day, attempt, passed=passes, rng=self.prng)
            episode["attempts"].append((day, passes, ref.CERTIFICATIONS[code].exam_fee_usd))
        if not queue or term:
            del self.open_episode[i]

    def _exam(
        self, i: int, code: str, day: int, attempt: int, *, passed: bool, rng: np.random.Generator
    ) -> bool:
        p = self.p
        self.counters["attempt"] += 1
        self.stats["exam_attempts"] += 1
        score = float(rng.uniform(70, 98) if passed else rng.uniform(35, 69))
        cert = ref.CERTIFICATIONS[code]
        issued = expires = None
        if passed:
            issued = _d(day)
            expires = add_months(issued, cert.validity_months) if cert.validity_months else None
            self.awards[i].append((code, day, expires.toordinal() if expires else NEVER))
            self.stats["awards"] += 1
        self.w.emit(
            "certifications",
            _d(day),
            {
                "attempt_id": f"ATT-{self.counters['attempt']:07d}",
                "learner_email": p.email[i],
                "certification_code": code,
                "exam_date": _d(day),
                "result": "pass" if passed else "fail",
                "score": round(score, 1),
                "issued_on": issued,
                "expires_on": expires,
                "exam_fee_usd": cert.exam_fee_usd,
            },
        )
        return passed

    def planted_irr(self, i: int, day: int) -> float:
        """The incident rate ratio of engineer ``i`` while certified: the planted ratio, or with
        heterogeneous effects one that changes with level and grows over the first
        incident_effect_ramp_months after the first certification."""
        m = self.m
        log_irr = math.log(m.incident_rate_ratio)
        if m.incident_effect_ramp_months:
            first = min(iss for _, iss, _ in self.awards[i])
            months = max(day - first, 0) / 30.4375 + 1
            log_irr *= min(1.0, months / m.incident_effect_ramp_months)
        log_irr += m.incident_effect_level_slope * (int(self.p.level[i]) - 2)
        return math.exp(log_irr)

    def _selection(self, i: int) -> float:
        """Multiplier of the start hazard from what the HR data does not record: incident-
        proneness (frailty) and a current bad spell; 1 in the default world."""
        m = self.m
        factor = (
            float(self.p.frailty[i]) ** -m.proneness_selection if m.proneness_selection else 1.0
        )
        if m.shock_probability and self.in_shock(i):
            factor *= m.shock_certify_multiplier
        return factor

    def in_shock(self, i: int) -> bool:
        return self.shock_until.get(i, -1) >= self.t

    def draw_shocks(self, engineers: np.ndarray, ms: int) -> None:
        """Bad spells start for uncertified engineers (only when the model plants them, so the
        default world draws no extra random numbers)."""
        if not self.m.shock_probability:
            return
        for i in engineers:
            i = int(i)
            if self.in_shock(i) or self.certified_on(i, ms):
                continue
            if self.rng.random() < self.m.shock_probability:
                self.shock_until[i] = self.t + self.m.shock_months - 1

    def learning_month(self, idx: np.ndarray, ms: int, me: int) -> None:
        p, m = self.p, self.m
        self.today = ms
        for i in idx:
            i = int(i)
            term = int(p.term[i]) or NEVER
            preparing = i in self.open_episode  # no new start in a month of preparing
            if preparing:
                self._episode_exams(i, me, int(p.term[i]))
            pending = self.pending_exam.get(i)
            if pending:
                code, day, attempt = pending
                if day <= me:
                    del self.pending_exam[i]
                    if ms <= day <= term and day >= p.hire[i]:
                        # renewal_probability is the share renewed: a renewal exam passes
                        self._exam(i, code, day, attempt, passed=True, rng=self.rng)
                continue
            if p.hire[i] >= ms or p.term[i]:
                continue
            # renewals: decided in the month before the one in which the award expires, and the
            # exam is sat after this month (a pending exam is only looked at from next month on)
            renewing = False
            for code, iss, exp in self.awards[i]:
                if me < exp <= me + 62 and (i, code, iss) not in self.renewal_decided:
                    self.renewal_decided.add((i, code, iss))
                    newer = any(c == code and s > iss for c, s, _ in self.awards[i])
                    # an award expiring on the first of the month leaves no day to sit the
                    # renewal exam before it expires (nor a range to draw one from): it lapses
                    if not newer and exp > me + 1 and self.rng.random() < m.renewal_probability:
                        day = int(self.rng.integers(max(me + 1, exp - 45), exp))
                        self.pending_exam[i] = (code, day, RENEWAL)
                        renewing = True
                        break
            if renewing or preparing:
                continue
            level = int(p.level[i])
            if self.certified_on(i, ms):
                hazard = 0.012
            else:
                tenure_years = (ms - p.orig_hire[i]) / 365.25
                hazard = (
                    m.cert_start_base
                    * np.exp(m.cert_start_level_slope * (level - 2))
                    * min(1 + m.cert_start_tenure_slope * tenure_years, m.cert_start_tenure_cap)
                    * self._selection(i)
                )
            if self.rng.random() < hazard:
                code = self._target_cert(i)
                if code:
                    self._prepare(i, code, ms + int(self.rng.integers(0, 28)))
                    self._episode_exams(i, me, 0)

    # ------------------------------------------------------------------ incidents
    def _certified_days(self, i: int, a: int, b: int) -> list[tuple[int, int]]:
        ivs = sorted(
            (max(a, iss), min(b, exp))
            for _, iss, exp in self.awards.get(i, ())
            if iss <= b and exp >= a
        )
        merged: list[tuple[int, int]] = []
        for s, e in ivs:
            if merged and s <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        return merged

    def incidents_month(
        self,
        t: int,
        ms: int,
        me: int,
        engineers: np.ndarray,
        fleet_index: float,
        teams: dict[int, list[int]],
    ) -> None:
        p, m = self.p, self.m
        dim = calendar.monthrange(_d(ms).year, _d(ms).month)[1]
        for i in engineers:
            i = int(i)
            a = max(ms, int(p.hire[i]))
            b = min(me, int(p.term[i]) or me)
            if b < a:
                continue
            cert = self._certified_days(i, a, b)
            c_days = sum(e - s + 1 for s, e in cert)
            u_days = (b - a + 1) - c_days
            rate = (
                m.incident_base_rate
                * fleet_index
                * np.exp(m.incident_level_slope * (int(p.level[i]) - 2))
                * p.frailty[i]
                / dim
            )
            if self.m.shock_probability and self.in_shock(i):
                rate *= self.m.shock_incident_multiplier
            irr = self.planted_irr(i, ms) if c_days else m.incident_rate_ratio
            n_c = int(self.rng.poisson(rate * irr * c_days)) if c_days else 0
            n_u = int(self.rng.poisson(rate * u_days)) if u_days else 0
            if self.panel_log is not None:
                self.panel_log.append((i, t, int(p.level[i]), a, b, dim, n_c + n_u, irr))
            if self.engineer_month_log is not None:
                expected = rate / p.frailty[i] * (irr * c_days + u_days)
                self.engineer_month_log.append(
                    (i, t, int(p.level[i]), a, b, float(expected), n_c + n_u)
                )
            if not n_c + n_u:
                continue
            days: list[int] = []
            if n_c:
                cert_set = [d for s, e in cert for d in range(s, e + 1)]
                days += [cert_set[int(k)] for k in self.rng.integers(0, len(cert_set), size=n_c)]
            if n_u:
                uncert = [d for d in range(a, b + 1) if not any(s <= d <= e for s, e in cert)]
                days += [uncert[int(k)] for k in self.rng.integers(0, len(uncert), size=n_u)]
            for day in sorted(days):
                self._incident(i, int(p.team[i]), day, self.certified_on(i, day), teams)
        # vendor-led incidents: outside the engineer model, they show up as "unmatched"
        for ci, c in enumerate(self.clusters):
            if c.start_month > t:
                continue
            for _ in range(int(self.rng.poisson(m.vendor_primary_rate * fleet_index))):
                self._incident(None, ci, int(self.rng.integers(ms, me + 1)), False, teams)

    def _incident(
        self, i: int | None, team: int, day: int, certified: bool, teams: dict[int, list[int]]
    ) -> None:
        """One incident and its responders; one batch of uniforms keeps this cheap at scale."""
        p, m = self.p, self.m
        u = self.rng.random(16).tolist()
        z = float(self.rng.standard_normal())
        self.counters["incident"] += 1
        number = f"INC-{self.counters['incident']:07d}"
        sev = next((s for s, c in self._sev_cdf if u[0] < c), "sev4")
        level = int(p.level[i]) if i is not None else 3
        years = (day - self.start.toordinal()) / 365.25
        mu = (
            math.log(m.mttr_base_minutes)
            + m.mttr_severity_effect[sev]
            + m.mttr_level_slope * level
            + m.mttr_year_slope * years
            + math.log(m.mttr_ratio) * certified
        )
        minutes = math.exp(mu + m.mttr_sigma * z)
        if i is not None and self.incident_log is not None:
            self.incident_log.append((i, day, certified, sev, minutes))
        if i is None:
            # vendor-led work is hardware replacement (RMA): days, not minutes; outside the
            # engineer model, and the reason some incidents are still open at the end
            minutes = (2 + 19 * u[1]) * 1440
        opened = datetime.combine(_d(day), datetime.min.time()) + timedelta(
            seconds=int(u[2] * 86400)
        )
        ack = opened + timedelta(seconds=int(min(minutes * 30, -360 * math.log(1 - u[3]))) + 30)
        resolved = opened + timedelta(seconds=round(minutes * 60))
        cluster = self.clusters[team]
        service = ref.SERVICES[int(u[4] * len(ref.SERVICES))]
        node = f"{cluster.name}-n{1 + int(u[5] * max(1, int(cluster.gpus) // 8)):03d}"
        titles = ref.INCIDENT_TITLES[service]
        title = titles[int(u[6] * len(titles))].format(node=node, cluster=cluster.name)
        lo, hi = {"sev1": (32, 512), "sev2": (8, 64), "sev3": (1, 8), "sev4": (0, 2)}[sev]
        gpus = min(int(cluster.gpus), lo + int(u[7] * (hi - lo + 1)))
        a, b = {"sev1": (0.6, 1.0), "sev2": (0.5, 1.0), "sev3": (0.0, 0.3), "sev4": (0.0, 0.0)}[sev]
        downtime = round(minutes * (a + (b - a) * u[8]), 1)
        end_of_data = self._end_of_data
        row = {
            "incident_number": number,
            "title": title,
            "service": service,
            "cluster": cluster.name,
            "severity": sev,
            "opened_at": opened,
            "acknowledged_at": ack if ack <= end_of_data else None,
            "resolved_at": resolved,
            "gpus_affected": gpus,
            "downtime_minutes": downtime,
        }
        if resolved > end_of_data or resolved.month != opened.month or resolved.year != opened.year:
            # delivered open in the month it opened, again (changed record) once resolved
            so_far = (
                min(
                    end_of_data,
                    datetime.combine(
                        add_months(date(opened.year, opened.month, 1), 1), datetime.min.time()
                    ),
                )
                - opened
            )
            open_row = {
                **row,
                "resolved_at": None,
                "downtime_minutes": round(min(downtime, so_far.total_seconds() / 60), 1),
            }
            self.w.emit("incidents", opened.date(), open_row)
            if resolved > end_of_data:
                self.stats["incidents_open_at_end"] += 1
        self.w.emit("incidents", resolved.date(), row)
        self.stats["incidents_engineer" if i is not None else "incidents_vendor"] += 1
        self._responders(i, team, number, sev, opened, u, teams)

    def _responders(
        self,
        i: int | None,
        team: int,
        number: str,
        sev: str,
        opened: datetime,
        u: list[float],
        teams: dict[int, list[int]],
    ) -> None:
        """Who responded: the engineer of the model is always the primary."""
        p = self.p
        seen: set[str] = set()

        def respond(email: str, role: str, delay_min: float) -> None:
            if email in seen:
                return
            seen.add(email)
            self.w.emit(
                "responders",
                opened.date(),
                {
                    "incident_number": number,
                    "responder_email": email,
                    "role": role,
                    "assigned_at": opened + timedelta(seconds=int(delay_min * 60)),
                },
            )

        vendor = self.vendor_staff[int(u[9] * len(self.vendor_staff))]
        respond(p.email[i] if i is not None else vendor, "primary", 0)
        mates = [j for j in teams.get(team, ()) if j != i]
        if mates and u[10] < 0.4:
            respond(p.email[mates[int(u[11] * len(mates))]], "secondary", -15 * math.log(1 - u[12]))
        if sev in ("sev1", "sev2") and u[13] < 0.8:
            seniors = [j for j in mates if p.level[j] >= 4]
            if seniors:
                respond(p.email[seniors[int(u[14] * len(seniors))]], "commander", 1 + 10 * u[15])
        if i is not None and u[10] > 0.92:
            respond(vendor, "secondary", 30 + 60 * u[12])
        if mates and u[13] > 0.97:
            respond(p.email[mates[int(u[14] * len(mates))]], "observer", 5 + 30 * u[15])

    # ------------------------------------------------------------------ the month loop
    def run(self) -> dict:
        self.build_clusters()
        self.today = self.start.toordinal()
        self.initial_population()
        for c in ref.COURSES:
            self.w.emit(
                "courses",
                self.start,
                {
                    "course_id": c.course_id,
                    "title": c.title,
                    "provider": c.provider,
                    "programme_type": c.programme_type,
                    "hours": c.hours,
                    "cost_usd": c.cost_usd,
                    "certification_code": c.certification_code,
                },
            )
        fleet_index_by_month = {}
        for t, first in enumerate(self.months):
            ms = first.toordinal()
            me = min(add_months(first, 1).toordinal() - 1, self.end.toordinal())
            fleet_index = self.fleet_month(t, first, me)
            fleet_index_by_month[first.strftime("%Y-%m")] = round(fleet_index, 4)
            self.month(t, ms, me, fleet_index)
            self.w.flush_through(_d(me))
            if self.progress and (first.month == 12 or t == len(self.months) - 1):
                active = int(self.p.active[: self.p.n].sum())
                print(
                    f"generate: simulated through {first:%Y-%m}: {active} active people, "
                    f"{self.stats['incidents_engineer'] + self.stats['incidents_vendor']} incidents",
                    file=sys.stderr,
                    flush=True,
                )
        self.w.close()
        return {"fleet_index_by_month": fleet_index_by_month}

    def fleet_month(self, t: int, first: date, me: int) -> float:
        total = 0.0
        for ci, c in enumerate(self.clusters):
            if c.start_month > t:
                continue
            if c.start_month < t:
                c.gpus *= 1 + c.growth
            total += c.gpus
            self.fleet_log[(t, ci)] = int(c.gpus)
            self.w.emit(
                "gpu_fleet",
                _d(me),
                {
                    "cluster": c.name,
                    "as_of_date": _d(me),
                    "site": ref.SITES[c.site][1],
                    "gpu_model": c.gpu_model,
                    "gpu_count": int(c.gpus),
                },
            )
        return total / self.fleet0

    def month(self, t: int, ms: int, me: int, fleet_index: float) -> None:
        """One simulated month: exits, moves, hires, then learning, incidents and contractors."""
        active, kind = self._exits(t, ms, me)
        self._moves(t, ms, active, kind)
        self._hires(t, ms, me, active, kind)
        self._activity(t, ms, me, fleet_index)

    def _exits(self, t: int, ms: int, me: int) -> tuple[np.ndarray, np.ndarray]:
        """Voluntary, involuntary, other and end-of-contract exits; returns (active, kind)."""
        p, m, rng = self.p, self.m, self.rng
        n = p.n
        p.term[:n] = 0
        active = np.flatnonzero(p.active[:n])
        infra_emp = active[(p.division[active] == INFRA) & (p.etype[active] == EMPLOYEE)]
        certified = np.array([self.certified_on(int(i), ms) for i in infra_emp], dtype=bool)
        vol = np.full(active.size, 0.010)
        inv = np.full(active.size, m.involuntary_hazard)
        oth = np.full(active.size, m.other_hazard)
        pos = np.searchsorted(active, infra_emp)
        programme = np.array([self._exit_multiplier(int(i), ms) for i in infra_emp])
        vol[pos] = (
            m.voluntary_hazard * np.where(certified, m.attrition_hazard_ratio, 1.0) * programme
        )
        u = rng.random(active.size)
        kind = np.where(u < vol, 1, np.where(u < vol + inv, 2, np.where(u < vol + inv + oth, 3, 0)))
        kind[p.hire[active] >= ms] = 0
        fixed = (p.fixed_end[active] > 0) & (p.fixed_end[active] <= me)
        kind[fixed] = 4
        days = rng.integers(ms, me + 1, size=active.size)
        days = np.where(fixed, np.maximum(p.fixed_end[active], ms), days)
        for j in np.flatnonzero(kind):
            i = int(active[j])
            day = int(max(days[j], p.hire[i]))
            k = int(kind[j])
            if k == 1:
                reason = "retirement" if p.level[i] >= 4 and rng.random() < 0.1 else "resignation"
                ttype, regrettable = "voluntary", bool(rng.random() < 0.35 + 0.1 * p.level[i])
            elif k == 2:
                reason, ttype, regrettable = (
                    str(rng.choice(["dismissal", "layoff", "performance"])),
                    "involuntary",
                    False,
                )
            elif k == 3:
                reason, ttype, regrettable = "death", "other", False
            else:
                reason, ttype, regrettable = "end_of_contract", "other", False
            p.active[i] = False
            p.term[i] = day
            if self.exit_log is not None:
                self.exit_log.append((i, day, ttype))
            if p.division[i] == INFRA and p.etype[i] == EMPLOYEE:
                self.staffing_log.append(
                    ("exit", day, i, int(p.team[i]), int(p.role[i]), int(p.level[i]), ttype)
                )
            if i in self.pending_exam and self.pending_exam[i][1] > day:
                del self.pending_exam[i]
            self.stats["separations"] += 1
            self.emit_spell(i, day, ttype, reason, regrettable)
            if k == 1 and rng.random() < 0.08:
                self.rehires.setdefault(t + int(rng.integers(6, 25)), []).append(i)
        return active, kind

    def _moves(self, t: int, ms: int, active: np.ndarray, kind: np.ndarray) -> None:
        """Promotions, transfers, pay changes (effective on the first of the month)."""
        p, m, rng, prng = self.p, self.m, self.rng, self.prng
        stay = active[(kind == 0) & (p.hire[active] < ms) & (p.etype[active] == EMPLOYEE)]
        levels = p.level[stay].astype(int)
        hazard = np.array([m.promotion_hazard.get(lv, 0.0) for lv in range(7)])[levels]
        # infrastructure employees certified at the start of the month are promoted faster
        infra = np.flatnonzero(p.division[stay] == INFRA)
        certified = np.array([self.certified_on(int(i), ms) for i in stay[infra]], dtype=bool)
        hazard[infra[certified]] *= m.promotion_certified_hazard_ratio
        promo = (rng.random(stay.size) < hazard) & (levels < 5)
        demote = (prng.random(stay.size) < m.demotion_hazard) & (levels > 1) & ~promo
        transfer = rng.random(stay.size) < np.where(p.division[stay] == INFRA, 0.002, 0.003)
        merit = (rng.random(stay.size) < 0.3) if _d(ms).month == 4 else np.zeros(stay.size, bool)
        for j in np.flatnonzero(promo | demote | transfer | merit):
            i = int(stay[j])
            if promo[j]:
                skip = prng.random() < m.promotion_skip_probability
                p.level[i] = min(5, int(p.level[i]) + (2 if skip else 1))
                p.level_since[i] = ms
                lo, hi = ref.SALARY_BANDS[int(p.level[i])]
                p.salary[i] = float(min(hi, max(lo, round(p.salary[i] * 1.08 / 100) * 100)))
                reason = "promotion"
            elif demote[j]:
                p.level[i] -= 1
                p.level_since[i] = ms
                lo, hi = ref.SALARY_BANDS[int(p.level[i])]
                p.salary[i] = float(min(hi, max(lo, p.salary[i])))
                reason = "demotion"
            elif transfer[j]:
                if p.division[i] == INFRA:
                    live = [
                        c
                        for c, cl in enumerate(self.clusters)
                        if cl.start_month <= t and c != p.team[i]
                    ]
                    if not live:
                        continue
                    p.team[i] = live[int(rng.integers(len(live)))]
                    p.site[i] = self.clusters[int(p.team[i])].site
                    self.roster.setdefault(int(p.team[i]), []).append(i)
                    p.manager[i] = self._team_manager(int(p.team[i]), exclude=i)
                else:
                    d = int(p.division[i])
                    teams = [
                        k
                        for k, (dd, _) in enumerate(self.other_teams)
                        if dd == d and k != p.team[i]
                    ]
                    p.team[i] = teams[int(rng.integers(len(teams)))]
                reason = "transfer"
            else:
                top = ref.SALARY_BANDS[int(p.level[i])][1]  # merit raises stop at the band's top
                p.salary[i] = min(top, round(p.salary[i] * rng.uniform(1.02, 1.06) / 100) * 100)
                reason = "pay_change"
            self.emit_job(i, ms, reason)

    def _hires(self, t: int, ms: int, me: int, active: np.ndarray, kind: np.ndarray) -> None:
        """Other divisions replace leavers and grow ~3 %/yr; rehires; infra vacancies."""
        p, rng = self.p, self.rng
        leavers_other = int(((kind > 0) & (p.division[active] != INFRA)).sum())
        growth = rng.poisson(self.n_target * 0.9 * 0.03 / 12)
        self._fill_other(leavers_other + int(growth), ms)
        # rehires
        for i in self.rehires.pop(t, []):
            if p.active[i]:
                continue
            day = ms + int(rng.integers(0, 28))
            if day > me:
                continue
            p.active[i] = True
            p.hire[i] = day
            p.level_since[i] = day
            p.fixed_end[i] = 0
            if p.division[i] == INFRA:
                live = [c for c, cl in enumerate(self.clusters) if cl.start_month <= t]
                p.team[i] = live[int(rng.integers(len(live)))]
                p.site[i] = self.clusters[int(p.team[i])].site
                self.roster.setdefault(int(p.team[i]), []).append(int(i))
            self.stats["rehires"] += 1
            self.emit_spell(i)
            self.emit_job(i, day, "rehire")
        # infra vacancies against the template of each cluster's size class
        # the employees of every cluster, found in one pass (the hires below get numbers from
        # p.n up, so they never change who was there)
        n = p.n
        staff = np.flatnonzero(p.active[:n] & (p.division[:n] == INFRA) & (p.etype[:n] == EMPLOYEE))
        staff = staff[np.argsort(p.team[staff], kind="stable")]
        ends = np.searchsorted(p.team[staff], np.arange(len(self.clusters) + 1))
        for ci, c in enumerate(self.clusters):
            if c.start_month > t:
                continue
            roles = p.role[staff[ends[ci] : ends[ci + 1]]]
            fill_p = 0.9 if c.start_month == t else 0.35
            for role, count, lo, hi in ref.TEAM_TEMPLATES[ref.fleet_size_class(int(c.gpus))]:
                r = self.roles.index(role)
                gap = count - int((roles == r).sum())
                for _ in range(max(0, gap)):
                    if rng.random() < fill_p:
                        i = self.hire(
                            INFRA,
                            ci,
                            r,
                            int(rng.integers(lo, hi + 1)),
                            ms + int(rng.integers(0, 28)),
                        )
                        self.staffing_log.append(
                            ("hire", int(p.hire[i]), i, ci, r, int(p.level[i]), float(p.salary[i]))
                        )
            if rng.random() < 0.02:
                etype = CONTRACTOR if rng.random() < 0.5 else INTERN
                self.hire(
                    INFRA,
                    ci,
                    self.roles.index("operations_engineer"),
                    1,
                    ms + int(rng.integers(0, 28)),
                    etype=etype,
                )

    def _activity(self, t: int, ms: int, me: int, fleet_index: float) -> None:
        """Learning and incidents for engineers employed at any time this month."""
        p = self.p
        n = p.n
        ever = np.flatnonzero((p.active[:n] | (p.term[:n] > 0)) & (p.division[:n] == INFRA))
        engineers = ever[p.etype[ever] == EMPLOYEE]
        self.t = t
        self.draw_shocks(engineers, ms)
        self.learning_month(engineers, ms, me)
        teams: dict[int, list[int]] = {}
        for i in ever:
            teams.setdefault(int(p.team[i]), []).append(int(i))
        self.incidents_month(t, ms, me, engineers, fleet_index, teams)
        self.contractor_month(t, ms, me, engineers)

    def contractor_month(self, t: int, ms: int, me: int, engineers: np.ndarray) -> None:
        p, m, rng = self.p, self.m, self.rng
        by_team: dict[int, list[int]] = {}
        for i in engineers:
            if p.active[i]:
                by_team.setdefault(int(p.team[i]), []).append(int(i))
        for ci, c in enumerate(self.clusters):
            if c.start_month > t:
                continue
            members = by_team.get(ci, [])
            share = (
                (sum(self.certified_on(i, me) for i in members) / len(members)) if members else 0.0
            )
            self.team_log[(t, ci)] = (share, tuple(members))
            template = sum(x[1] for x in ref.TEAM_TEMPLATES[ref.fleet_size_class(int(c.gpus))])
            hours = (
                m.contractor_hours_per_template_head
                * template
                * (1 - share) ** m.contractor_share_exponent
                * float(rng.lognormal(0, 0.15))
            )
            hours = round(hours * 4) / 4
            if hours < 8:
                continue
            vendor = ci % len(ref.VENDORS)
            eng = f"CE-{c.name}-{vendor + 1}"
            if eng not in self.engagement_rates:
                self.engagement_rates[eng] = (
                    round(float(rng.normal(m.contractor_rate_mean_usd, 25)) * 2) / 2
                )
            self.w.emit(
                "contractor_hours",
                _d(me),
                {
                    "engagement_id": eng,
                    "vendor": ref.VENDORS[vendor],
                    "month": _d(ms),
                    "team": c.name,
                    "hours": hours,
                    "hourly_rate_usd": self.engagement_rates[eng],
                },
            )
