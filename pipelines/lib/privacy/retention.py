"""Retention: how long after an employee leaves their personal fields are kept (GDPR article
5(1)(e)), applied at every run.

Two periods, each counted from the person's last termination date to today:

- `TALENT_RETENTION_YEARS` (`personal_years`): then their employee id, e-mails and names are
  replaced, in the archive and the raw layer, by pseudonyms derived with the pseudonym key
  (`R-<hash>` for an id, `r-<hash>@retained.invalid` for an e-mail, `retained-<hash>` for each
  word of a name). Every export and every reference (a manager id) gets the same pseudonym, so
  their history still counts in every mart: the analyses keep working on pseudonymised history.
  `raw.retained_names` keeps, for each retained full name, the keyed pseudonym of the name it
  replaced (never the name): a name the leaver shared with someone links no one before the
  policy ran, and `stg_hris__person_names` counts both people after it, so it still links no one.
- `TALENT_SALARY_RETENTION_YEARS` (`salary_years`): then their salaries are removed.

A file (`TALENT_RETENTION_FILE`, YAML: `personal_years: 3`, `salary_years: 3`) may hold both;
a variable wins over the file. Unset, nothing expires (the documented default, README
"Privacy": the employer sets its deletion periods with its works council and data-protection
officer; the product does not guess them). Each change goes through the erasure machinery
(`erase.erase`): archive copies rewritten, the raw file written anew, the build rebuilt, and a
row in `raw.erasures` (reason `retention` or `salary retention`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

import duckdb
import yaml

from pipelines.lib import db
from pipelines.lib.privacy.erase import Edits, erase, recover
from pipelines.lib.privacy.subjects import (
    RETAINED_ID,
    Subject,
    identify,
    name_key,
    normalised,
    retained_value,
)
from pipelines.lib.settings import Settings, SettingsError


@dataclass(frozen=True)
class Policy:
    personal_years: float | None = None
    salary_years: float | None = None

    def cutoff(self, years: float | None, today: date) -> date | None:
        return None if years is None else today - timedelta(days=round(365.25 * years))

    def describe(self) -> str | None:
        """The periods in words, or None when none is set."""
        parts = [
            f"{what} {years:g} years after leaving"
            for what, years in (
                ("names, e-mails and ids", self.personal_years),
                ("salaries", self.salary_years),
            )
            if years is not None
        ]
        return "; ".join(parts) or None


@dataclass
class RetentionResult:
    pseudonymised: int = 0  # people whose ids, e-mails and names were replaced in this run
    salaries_removed: int = 0  # people whose salaries were removed in this run


def policy_of(settings: Settings) -> Policy:
    """The periods: the variables, else the file, else none."""
    values: dict[str, float | None] = {}
    if settings.retention_file is not None:
        try:
            loaded = yaml.safe_load(settings.retention_file.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise SettingsError(
                f"TALENT_RETENTION_FILE {settings.retention_file} cannot be read ({e}); it holds "
                "`personal_years: 3` and `salary_years: 3` (YAML)."
            ) from None
        for name in ("personal_years", "salary_years"):
            if loaded.get(name) is not None:
                values[name] = float(loaded[name])
    if settings.retention_years is not None:
        values["personal_years"] = float(settings.retention_years)
    if settings.salary_retention_years is not None:
        values["salary_years"] = float(settings.salary_retention_years)
    return Policy(values.get("personal_years"), values.get("salary_years"))


def expired(con: duckdb.DuckDBPyConnection, cutoff: date, with_salary: bool) -> list[str]:
    """Employee ids (not pseudonymised yet) whose latest spell ended before `cutoff`;
    `with_salary`: only those with a salary still in the raw layer."""
    salary = (
        "AND employee_id IN (SELECT trim(employee_id) FROM job_history "
        "WHERE annual_salary_usd IS NOT NULL)"
        if with_salary
        else ""
    )
    rows = con.execute(
        f"""
        WITH latest AS (
            SELECT trim(employee_id) AS employee_id,
                   arg_max(termination_date, (hire_date, _period, _version, _line)) AS left_on
            FROM employees
            WHERE _file_id IN (SELECT file_id FROM manifest WHERE status = 'active')
            GROUP BY 1
        )
        SELECT employee_id FROM latest
        WHERE left_on IS NOT NULL AND left_on < ? AND NOT starts_with(employee_id, ?) {salary}
        ORDER BY 1
        """,
        [cutoff, RETAINED_ID],
    ).fetchall()
    return [r[0] for r in rows]


def unshared_names(con: duckdb.DuckDBPyConnection, subject: Subject) -> Subject:
    """The subject without the full names someone else also has: a row that names a person only
    by a shared name (a change's implementer) is linked to no one (`stg_hris__person_names`), so
    it is not theirs to pseudonymise, and replacing it would link it where it was not."""
    shared = {
        name
        for (name,) in con.execute(
            "SELECT DISTINCT lower(regexp_replace(trim(first_name) || ' ' || trim(last_name), "
            "'\\s+', ' ', 'g')) FROM employees WHERE NOT list_contains(?, trim(employee_id))",
            [sorted(subject.ids)],
        ).fetchall()
    }
    subject.names -= shared
    return subject


def pseudonym_edits(subject: Subject, key: str) -> Edits:
    """Ids, e-mails and full names replaced wherever they stand (also within a list of people);
    first and last names within the person's own rows (a change they implemented is theirs)."""
    parts = {normalised("name", p) for pair in subject.first_last for p in pair}

    def one(value: str) -> str | None:
        for kind in ("id", "email", "name"):
            if subject.matches(kind, value):
                return retained_value(kind, value, key)
        return None

    def other(value: str) -> str | None:
        """A field naming them whole, or entries of a list of people (a project's leads)."""
        replaced = one(value)
        members = re.split(r"[,;]", value)
        if replaced is not None or len(members) < 2:
            return replaced
        new = [one(m.strip()) for m in members]
        if all(n is None for n in new):
            return None
        return ", ".join(m.strip() if n is None else n for m, n in zip(members, new, strict=True))

    def own(value: str) -> str | None:
        replaced = other(value)
        name = normalised("name", value)
        if replaced is None and (name in parts or name in subject.names):
            return retained_value("name", value, key)
        return replaced

    return Edits(
        subject, drop_own=False, own=own, other=other, retained_names=retained_names(subject, key)
    )


def retained_names(subject: Subject, key: str) -> dict[str, str]:
    """The full name each leaver will bear (their first and last name pseudonymised word by
    word) -> the name_key of the name they bore (`raw.retained_names`): the name link counts
    them with everyone who still bears it, so a name they shared stays ambiguous."""
    return {
        retained_value("name", f"{first} {last}", key): name_key(f"{first} {last}", key)
        for first, last in subject.first_last
    }


def salary_edits(subject: Subject, salaries: set[float]) -> Edits:
    """The person's salaries removed from their own rows."""

    def own(value: str) -> str | None:
        hit = any(abs(n - s) < 0.005 for n in _numbers(value) for s in salaries)
        return "" if hit else None

    return Edits(subject, drop_own=False, own=own, verify=False)


def _numbers(text: str) -> set[float]:
    """What a number's text can mean: with a decimal point or a decimal comma (95000.00,
    95.000,00, 95,000.00); a field of the person's own rows that matches their salary goes."""
    t = text.strip().replace(" ", "").replace("\u00a0", "")
    found = set()
    for candidate in (t.replace(",", ""), t.replace(".", "").replace(",", ".")):
        try:
            found.add(float(candidate))
        except ValueError:
            continue
    return found


def apply_retention(settings: Settings, today: date | None = None) -> RetentionResult:
    """Pseudonymise the leavers past the period, remove salaries past theirs (the caller holds
    the warehouse lock)."""
    policy, today = policy_of(settings), today or date.today()
    done = RetentionResult()
    if not settings.raw_db.exists() or (policy.personal_years, policy.salary_years) == (None,) * 2:
        return done
    recover(settings, lambda text: None)
    personal = policy.cutoff(policy.personal_years, today)
    if personal is not None:
        with db.connect(settings.raw_db, read_only=True) as con:
            ids = expired(con, personal, with_salary=False)
            subject = unshared_names(con, identify(con, ids)) if ids else None
        if subject:
            edits = pseudonym_edits(subject, settings.pseudonym_key)
            erase(settings, subject, None, "retention", edits, "retention policy")
            done.pseudonymised = len(ids)
    salary = policy.cutoff(policy.salary_years, today)
    if salary is not None:
        with db.connect(settings.raw_db, read_only=True) as con:
            ids = expired(con, salary, with_salary=True)
            subject = identify(con, ids) if ids else None
            pay = (
                {
                    s
                    for (s,) in con.execute(
                        "SELECT DISTINCT annual_salary_usd FROM job_history WHERE "
                        "list_contains(?, trim(employee_id)) AND annual_salary_usd IS NOT NULL",
                        [ids],
                    ).fetchall()
                }
                if ids
                else set()
            )
        if subject:
            edits = salary_edits(subject, pay)
            erase(settings, subject, None, "salary retention", edits, "retention policy")
            done.salaries_removed = len(ids)
    return done
