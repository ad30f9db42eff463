"""Assemble the quarterly talent report: figures → Jinja2 template → HTML, PDF and appendix files.

One HTML file, self-contained (inline CSS and SVG, system fonts, no network), and a PDF printed
from the same HTML by WeasyPrint (less the full tables, which print hides: `print_version`) with
the quarter and "page N of M" on every page. Page 1 is the
decision page; the sections follow (`sections/registry.py` lists them) with at most ten teams per
chart in print; the full per-team tables are collapsed in the HTML and written as CSV files,
numbers as numbers, beside it.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import jinja2

from pipelines.lib.project_files import DBT_PROJECT_DIR, STATIC_DIR, TEMPLATES_DIR
from pipelines.lib.report.benchmarks import load_benchmarks
from pipelines.lib.report.data import Marts, data_months, load_marts
from pipelines.lib.report.glossary import (
    ACRONYMS,
    TOKEN,
    certification_acronyms,
    glossary_acronyms,
    spell_out_first,
)
from pipelines.lib.report.quarters import Quarter, latest_complete_quarter_for
from pipelines.lib.report.sections.actions import actions_table
from pipelines.lib.report.sections.base import Section
from pipelines.lib.report.sections.composition import CostBasis
from pipelines.lib.report.sections.deliveries import data_gaps
from pipelines.lib.report.sections.facts import Facts
from pipelines.lib.report.sections.incidents import split_charts
from pipelines.lib.report.sections.method import glossary, method_section
from pipelines.lib.report.sections.registry import BUILDERS, PRINTED, Build, Inputs
from pipelines.lib.report.sections.summary import (
    effect_rows,
    return_chart,
    tiles,
    verdict,
)


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
    marts: Marts, q: Quarter, min_group_size: int, inputs: Inputs | None = None
) -> dict[str, Any]:
    b = Build(marts, q, min_group_size, inputs or Inputs())
    built: dict[str, Section] = {}
    for sid, builder in BUILDERS.items():
        built[sid], b.facts[sid] = builder(b)
    f = b.facts
    facts = Facts(
        f.get("coverage"),
        f.get("gaps"),
        f.get("expiring"),
        f.get("attrition"),
        f.get("incidents"),
        f.get("roi"),
        f.get("composition"),
    )
    effects = f["incidents"].effects if f.get("incidents") else {}
    method_charts = split_charts(built["incidents"], "event-study-")
    sections = [built[sid] for sid in PRINTED]
    acronyms = {**ACRONYMS, **b.inputs.acronyms}
    chart = return_chart(f["roi"]) if f.get("roi") else None
    return {
        "quarter": q.label,
        "period": f"{q.start:%d %B %Y} – {q.end:%d %B %Y}",
        "generated": datetime.now(UTC).strftime("%d %B %Y, %H:%M UTC"),
        "verdict": verdict(f["roi"]),
        "return_chart": chart,
        "effects": effect_rows(effects, f["roi"]),
        "tiles": tiles(facts, b.inputs.targets),
        "previous": q.previous().label,
        "year_ago": q.trailing(5)[0].label,
        "actions": actions_table(f["actions"], q),
        "data_gaps": data_gaps(marts),
        "sections": sections,
        "appendix": [method_section(effects, method_charts, min_group_size)],
        "glossary": glossary(min_group_size),
        "acronyms": glossary_acronyms(acronyms),
        "acronym_map": acronyms,
        "min_group_size": min_group_size,
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
    template = env.get_template("talent_report.html.j2")
    html = template.render(**context)
    # the glossary lists the abbreviations the report uses, no others
    body = html.split('<section id="glossary"')[0]
    body = re.sub(r"<(style|script|svg)\b.*?</\1>", "", body, flags=re.S)
    used = set(TOKEN.findall(re.sub(r"<[^>]+>", " ", body)))
    listed = [(k, v) for k, v in context["acronyms"] if k in used or f"{k}s" in used]
    if listed != list(context["acronyms"]):
        html = template.render(**{**context, "acronyms": listed})
    return spell_out_first(html, dict(context["acronym_map"]))


def load_inputs(
    assumptions_path: Path | None = None,
    skill_levels_path: Path | None = None,
    benchmarks_path: Path | None = None,
) -> Inputs:
    """The targets (with their owners) and the assumptions file, the seed's salary bands and
    fees, the external benchmarks and the certification names. A missing seed or benchmark
    file leaves its figures out (the section says so) rather than failing the report; a target
    without an owner fails it with the file and line."""
    from pipelines.lib.roi.assumptions import (
        DEFAULT_ASSUMPTIONS_PATH,
        load_assumptions,
        load_targets,
    )

    assumptions_path = Path(assumptions_path or DEFAULT_ASSUMPTIONS_PATH)
    levels = Path(skill_levels_path or DBT_PROJECT_DIR / "seeds" / "skill_levels.csv")
    catalogue = DBT_PROJECT_DIR / "seeds" / "certification_catalogue.csv"
    basis, targets = None, {}
    if assumptions_path.is_file():
        targets = load_targets(assumptions_path)
    if levels.is_file() and assumptions_path.is_file():
        a = load_assumptions(assumptions_path)
        with levels.open(encoding="utf-8") as fh:
            salary = {
                int(r["skill_level"]): (float(r["salary_min_usd"]), float(r["salary_max_usd"]))
                for r in csv.DictReader(fh)
            }
        fee = a["course_fee_usd_per_participant"].base + a["exam_fee_usd"].base
        basis = CostBasis(salary, fee, "the seed's course and exam fees (no exams passed in the "
                          "last 12 months to price it from the data)")  # fmt: skip
    validity = 24.0
    if catalogue.is_file():
        with catalogue.open(encoding="utf-8") as fh:
            months = sorted(float(r["validity_months"]) for r in csv.DictReader(fh)
                            if r.get("validity_months"))  # fmt: skip
        validity = months[len(months) // 2] if months else validity
    return Inputs(
        targets=targets,
        cost_basis=basis,
        assumptions_path=assumptions_path,
        benchmarks=load_benchmarks(benchmarks_path),
        acronyms=certification_acronyms(catalogue),
        validity_months=validity,
    )


def render_report(
    published_db: Path,
    quarter: str,
    out_dir: Path,
    min_group_size: int = 5,
    *,
    assumptions_path: Path | None = None,
    skill_levels_path: Path | None = None,
    benchmarks_path: Path | None = None,
    restricted_db: Path | None = None,
) -> dict[str, Any]:
    """Render `<out_dir>/<quarter>/talent-report.html` and `.pdf` from the published marts, and
    the full per-team tables and the ROI inputs as CSV files in `<out_dir>/<quarter>/appendix/`.

    `restricted_db` (the pipeline's build file): its unsuppressed aggregates replace the
    published marts of the same name, so totals are whole; the report suppresses what it prints.

    Refuses (ValueError) a quarter the data do not cover in full, naming the range that exists.
    Returns the paths, the quarter, the section ids with their availability, the number of
    charts, the verdict and the appendix files.
    """
    q = Quarter.parse(quarter)
    marts = load_marts(Path(published_db), restricted_db)  # closed again before rendering
    check_quarter(q, data_months(marts), Path(published_db))
    inputs = load_inputs(assumptions_path, skill_levels_path, benchmarks_path)
    context = build_context(marts, q, min_group_size, inputs)
    html = render_html(context)
    target = Path(out_dir) / q.label
    target.mkdir(parents=True, exist_ok=True)
    html_path, pdf_path = target / "talent-report.html", target / "talent-report.pdf"
    html_path.write_text(html, encoding="utf-8")
    appendix = write_appendix(context["sections"], target / "appendix")
    pages = _write_pdf(print_version(html), pdf_path)
    return {
        "quarter": q.label,
        "html": html_path,
        "pdf": pdf_path,
        "pages": pages,
        "appendix": appendix,
        "sections": {s.id: s.available for s in context["sections"]},
        "charts": sum(len(s.charts) for s in context["sections"] + context["appendix"])
        + (1 if context["return_chart"] else 0),
        "headlines": [_plain(context["verdict"])],
    }


def _plain(text: object) -> str:
    return re.sub(r"<[^>]+>", "", str(text)).replace("&lt;", "<").replace("&amp;", "&")


def write_appendix(sections: list[Section], folder: Path) -> list[Path]:
    """Every table that carries its data as numbers (the full per-team tables, the ROI inputs)
    as a CSV file a spreadsheet opens as figures: plain numbers with a dot for decimals, shares
    in percent, units in the headers, an empty cell where the report prints `<5`."""
    written = []
    for s in sections:
        for t in s.tables:
            if t.data is None:
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{t.key.removesuffix('-all')}.csv"
            with path.open("w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(t.data.columns)
                w.writerows([[_cell(c) for c in row] for row in t.data.rows])
            written.append(path)
    return written


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return int(v) if v.is_integer() else round(v, 4)
    return _plain(v) if not isinstance(v, int) else v


# the full per-team tables: the HTML's sortable copies of the appendix CSVs, which print hides
FULL_TABLES = re.compile(r'<details class="full-table">.*?</details>', re.S)


def print_version(html: str) -> str:
    """The HTML the PDF is printed from: the page without the full tables, which the print
    style hides (`details.full-table { display: none }`). WeasyPrint parses and styles hidden
    elements all the same: at 1,000,000 employees the three tables of 7,284 teams were 760,000
    of them and most of the report's time."""
    return FULL_TABLES.sub("", html)


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
