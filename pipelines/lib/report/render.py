"""Assemble the quarterly talent report: figures → Jinja2 template → HTML, PDF and appendix files.

One HTML file, self-contained (inline CSS and SVG, system fonts, no network), and a PDF printed
from the same HTML by WeasyPrint with the quarter and "page N of M" on every page. Page 1 is the
executive summary; the sections follow with at most ten teams per table and chart in print; the
full per-team tables are collapsed in the HTML and written as CSV files beside it.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import jinja2

from pipelines.lib.project_files import DBT_PROJECT_DIR, STATIC_DIR, TEMPLATES_DIR
from pipelines.lib.report.data import Marts, data_months, load_marts
from pipelines.lib.report.quarters import Quarter, latest_complete_quarter_for
from pipelines.lib.report.sections.attrition import attrition_section
from pipelines.lib.report.sections.base import Section
from pipelines.lib.report.sections.composition import CostBasis, composition_section
from pipelines.lib.report.sections.coverage import coverage_section
from pipelines.lib.report.sections.deliveries import data_gaps
from pipelines.lib.report.sections.expiring import expiring_section
from pipelines.lib.report.sections.facts import Facts
from pipelines.lib.report.sections.gaps import gaps_section
from pipelines.lib.report.sections.incidents import incidents_section, split_charts
from pipelines.lib.report.sections.method import glossary, method_section
from pipelines.lib.report.sections.roi import WorkedExample, roi_section
from pipelines.lib.report.sections.summary import Targets, actions, findings, tiles

DEFAULT_COVERAGE_TARGET = 0.80


@dataclass(frozen=True)
class Inputs:
    """What the report needs besides the marts: targets and the seed's reference figures."""

    targets: Targets = Targets()
    cost_basis: CostBasis | None = None
    worked_example: WorkedExample | None = None


def latest_complete_quarter(published_db: Path) -> str:
    """The last quarter whose final month the published warehouse covers, e.g. `2026-Q3`."""
    months = data_months(load_marts(Path(published_db)))
    if months is None:
        raise ValueError(
            f"The published warehouse {published_db} holds no monthly coverage or attrition "
            "rows, so no quarter can be reported. Run the pipeline first."
        )
    return latest_complete_quarter_for(months[1]).label


def check_quarter(q: Quarter, months: tuple[date, date] | None, source: Path) -> None:
    """Refuse a quarter the data do not cover in full, naming the range that exists."""
    if months is None:
        raise ValueError(
            f"Quarter {q.label} cannot be reported from {source}: it holds no monthly rows. "
            "Run the pipeline first."
        )
    first, last = months
    first_q = Quarter.containing(first)
    first_q = first_q if first == first_q.start else first_q.next()
    last_q = latest_complete_quarter_for(last)
    if q < first_q or q > last_q:
        raise ValueError(
            f"Quarter {q.label} cannot be reported from {source}: the data cover "
            f"{first:%Y-%m} to {last:%Y-%m}, so the complete quarters are {first_q.label} to "
            f"{last_q.label}. Latest complete quarter: {last_q.label}. Choose one of these "
            "with --quarter."
        )


def build_context(
    marts: Marts,
    q: Quarter,
    min_group_size: int,
    coverage_target: float,
    inputs: Inputs | None = None,
) -> dict[str, Any]:
    thr, inputs = min_group_size, inputs or Inputs()
    targets = Targets(**{**inputs.targets.__dict__, "compliance": coverage_target})
    coverage, cov_f = coverage_section(marts, q, thr, coverage_target)
    gaps, gap_f = gaps_section(marts, q, thr)
    expiring, exp_f = expiring_section(marts, q, thr)
    attrition, att_f = attrition_section(marts, q, thr)
    incidents, inc_f = incidents_section(marts, q, thr)
    roi, roi_f = roi_section(marts, q, thr, inc_f.effects, inputs.worked_example)
    method_charts = split_charts(incidents, "event-study-") + split_charts(roi, "roi-tornado")
    composition, comp_f = composition_section(marts, q, thr, inputs.cost_basis)
    facts = Facts(cov_f, gap_f, exp_f, att_f, inc_f, roi_f, comp_f)
    sections = [coverage, gaps, expiring, composition, attrition, incidents, roi]
    return {
        "quarter": q.label,
        "period": f"{q.start:%d %B %Y} – {q.end:%d %B %Y}",
        "generated": datetime.now(UTC).strftime("%d %B %Y, %H:%M UTC"),
        "tiles": tiles(facts, targets),
        "previous": q.previous().label,
        "year_ago": q.trailing(5)[0].label,
        "headlines": findings(facts, q),
        "actions": actions(facts, q),
        "data_gaps": data_gaps(marts),
        "sections": sections,
        "appendix": [method_section(inc_f.effects, method_charts, thr)],
        "glossary": glossary(thr),
        "min_group_size": thr,
        "css": (STATIC_DIR / "report.css").read_text(encoding="utf-8"),
        **_script(),
    }


def _script() -> dict[str, str]:
    """The inline sorting script and its CSP hash: the page runs that script and no other."""
    script = (STATIC_DIR / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return {"script": script, "script_hash": f"sha256-{digest}"}


def render_html(context: dict[str, Any]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("talent_report.html.j2").render(**context)


def load_inputs(
    assumptions_path: Path | None = None,
    worked_example_path: Path | None = None,
    skill_levels_path: Path | None = None,
) -> Inputs:
    """The seed's salary bands, training fees and worked example; each is optional, and a
    missing file leaves its figures out (the section says so) rather than failing the report."""
    from pipelines.lib.roi.assumptions import DEFAULT_ASSUMPTIONS_PATH, load_assumptions
    from pipelines.lib.roi.scenario import load_scenario, run_scenario

    assumptions_path = Path(assumptions_path or DEFAULT_ASSUMPTIONS_PATH)
    worked = Path(worked_example_path or assumptions_path.parent / "worked-example.yaml")
    levels = Path(skill_levels_path or DBT_PROJECT_DIR / "seeds" / "skill_levels.csv")
    basis, example = None, None
    if levels.is_file() and assumptions_path.is_file():
        a = load_assumptions(assumptions_path)
        with levels.open(encoding="utf-8") as fh:
            salary = {
                int(r["skill_level"]): (float(r["salary_min_usd"]), float(r["salary_max_usd"]))
                for r in csv.DictReader(fh)
            }
        fee = a["course_fee_usd_per_participant"].base + a["exam_fee_usd"].base
        basis = CostBasis(salary, fee)
    if worked.is_file() and assumptions_path.is_file():
        result = run_scenario(load_scenario(worked, assumptions_path))
        example = WorkedExample(
            float(result["investment_usd"]),
            {
                i["item"]: float(i["amount_usd"])
                for i in result["items"]
                if i["category"] == "return"
            },
        )
    return Inputs(cost_basis=basis, worked_example=example)


def render_report(
    published_db: Path,
    quarter: str,
    out_dir: Path,
    min_group_size: int = 5,
    *,
    coverage_target: float = DEFAULT_COVERAGE_TARGET,
    targets: Targets | None = None,
    assumptions_path: Path | None = None,
    worked_example_path: Path | None = None,
    skill_levels_path: Path | None = None,
    restricted_db: Path | None = None,
) -> dict[str, Any]:
    """Render `<out_dir>/<quarter>/talent-report.html` and `.pdf` from the published marts, and
    the full per-team tables as CSV files in `<out_dir>/<quarter>/appendix/`.

    `restricted_db` (the pipeline's build file): its unsuppressed aggregates replace the
    published marts of the same name, so totals are whole; the report suppresses what it prints.

    Refuses (ValueError) a quarter the data do not cover in full, naming the range that exists.
    Returns the paths, the quarter, the section ids with their availability, the number of
    charts, the findings and the appendix files.
    """
    q = Quarter.parse(quarter)
    marts = load_marts(Path(published_db), restricted_db)  # closed again before rendering
    check_quarter(q, data_months(marts), Path(published_db))
    inputs = load_inputs(assumptions_path, worked_example_path, skill_levels_path)
    if targets is not None:
        inputs = Inputs(targets, inputs.cost_basis, inputs.worked_example)
    context = build_context(marts, q, min_group_size, coverage_target, inputs)
    html = render_html(context)
    target = Path(out_dir) / q.label
    target.mkdir(parents=True, exist_ok=True)
    html_path, pdf_path = target / "talent-report.html", target / "talent-report.pdf"
    html_path.write_text(html, encoding="utf-8")
    appendix = write_appendix(context["sections"], target / "appendix")
    pages = _write_pdf(html, pdf_path)
    return {
        "quarter": q.label,
        "html": html_path,
        "pdf": pdf_path,
        "pages": pages,
        "appendix": appendix,
        "sections": {s.id: s.available for s in context["sections"]},
        "charts": sum(len(s.charts) for s in context["sections"] + context["appendix"]),
        "headlines": [_plain(h) for h in context["headlines"]],
    }


def _plain(text: object) -> str:
    return re.sub(r"<[^>]+>", "", str(text)).replace("&lt;", "<").replace("&amp;", "&")


def write_appendix(sections: list[Section], folder: Path) -> list[Path]:
    """Every table of every team as CSV (already suppressed: the same cells as the HTML)."""
    written = []
    for s in sections:
        for t in s.tables:
            if t.scope != "full":
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{t.key.removesuffix('-all')}.csv"
            with path.open("w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(t.columns)
                w.writerows([[_plain(c) for c in row] for row in t.rows])
                if t.total:
                    w.writerow([_plain(c) for c in t.total])
            written.append(path)
    return written


def _write_pdf(html: str, pdf_path: Path) -> int:
    """WeasyPrint prints the same HTML; a fetcher that refuses everything keeps it offline."""
    import weasyprint  # imported late: it loads Pango

    def no_fetch(url: str, *args, **kwargs):
        raise ValueError(f"The report must be self-contained; refused to fetch {url}")

    tmp = pdf_path.with_suffix(".pdf.tmp")
    document = weasyprint.HTML(string=html, url_fetcher=no_fetch).render()
    document.write_pdf(str(tmp))
    tmp.replace(pdf_path)
    return len(document.pages)
