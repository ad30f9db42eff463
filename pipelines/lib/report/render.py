"""Assemble the quarterly talent report: figures → Jinja2 template → HTML and PDF.

One HTML file, self-contained (inline CSS and SVG, system fonts, no script, no network), and a
PDF printed from the same HTML by WeasyPrint with the quarter and "page N of M" on every page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from pipelines.config import DASHBOARDS_DIR
from pipelines.lib.report import sections as S
from pipelines.lib.report.data import Marts, last_data_month, load_marts
from pipelines.lib.report.quarters import Quarter, latest_complete_quarter_for

TEMPLATES_DIR = DASHBOARDS_DIR / "templates"
STATIC_DIR = DASHBOARDS_DIR / "static"
DEFAULT_COVERAGE_TARGET = 0.80

GLOSSARY = [
    (
        "Engineer",
        "A person employed in the analysed division on the date (employees only; "
        "contractors and interns excluded), counted once in their primary position.",
    ),
    (
        "Certified",
        "Holds at least one certification that is active on the date: issued on or "
        "before it and not yet expired (or with no expiry).",
    ),
    ("Coverage", "Certified engineers ÷ engineers, measured at month end."),
    (
        "Meets role requirements (compliance)",
        "Holds every certification the team template "
        "requires for the person's role at the cluster's current fleet size (small 10–100 GPUs, "
        "medium 100–1,000, large 1,000+) ÷ engineers.",
    ),
    (
        "Target",
        "The share of engineers meeting their role requirements that leadership aims "
        "for; a report setting (default 80 %).",
    ),
    ("Expiring", "Active certifications whose expiry falls in the 90 days after the quarter ends."),
    (
        "Turnover rate",
        "Separations ÷ average headcount of the period (SHRM). The 12-month rate "
        "uses the separations of the last four quarters over their mean average headcount. "
        "Intervals: Wilson score, 95 %.",
    ),
    (
        "Incident rate",
        "Incidents where the engineer was primary responder ÷ engineer-months "
        "employed × 100. Intervals: exact Poisson (Garwood), 95 %.",
    ),
    (
        "MTTR",
        "Minutes from opening to resolution; median (Four Keys) and mean (PagerDuty). "
        "Unresolved incidents are excluded.",
    ),
    (
        "Rate ratio / hazard ratio",
        "Outcome of certified engineers ÷ that of comparable engineers "
        "not yet certified; 1 = no difference, 0.70 = 30 % lower.",
    ),
    (
        "Naive figure",
        "The same ratio from a plain comparison without adjustment (before vs "
        "after, or ever vs never certified); biased, shown for contrast.",
    ),
    (
        "Event study",
        "Rate ratio in each month relative to certification, against month −1, with "
        "its 95 % interval band; flat months before certification support the comparison.",
    ),
    ("Training spend", "Amounts charged for courses and exams after discounts, by quarter."),
    (
        "ROI",
        "(Annual return − investment) ÷ investment (net), as computed by the ROI model "
        "from stated assumptions; the tornado shows how it moves when each assumption moves.",
    ),
    (
        "Template",
        "Reference team composition for a fleet size (seed data): headcount and level "
        "band per role.",
    ),
    (
        "<N (hidden)",
        "A figure about fewer than N people, or a second figure hidden so the first "
        "cannot be recovered from the totals.",
    ),
]


def latest_complete_quarter(published_db: Path) -> str:
    """The last quarter whose final month the published warehouse covers, e.g. `2026-Q3`."""
    last = last_data_month(load_marts(Path(published_db)))
    if last is None:
        raise ValueError(
            f"The published warehouse {published_db} holds no monthly coverage or attrition "
            "rows, so no quarter can be reported. Run the pipeline first."
        )
    return latest_complete_quarter_for(last).label


def _change(label: str, cur: float | None, prev: float | None, kind: str) -> list[str] | None:
    if cur is None or prev is None:
        return None
    if kind == "pct":
        d = (cur - prev) * 100
        return [label, S.pct(prev, 1), S.pct(cur, 1), f"{d:+.1f} pts"]
    if kind == "usd":
        return [
            label,
            S.usd(prev),
            S.usd(cur),
            f"{'+' if cur >= prev else '−'}{S.usd(abs(cur - prev))}",
        ]
    if kind == "num1":
        return [label, S.num(prev, 1), S.num(cur, 1), f"{cur - prev:+,.1f}"]
    return [label, S.num(prev), S.num(cur), f"{cur - prev:+,.0f}"]


def headlines(q: Quarter, secs: dict[str, dict[str, Any]]) -> list[str]:
    """Plain-language findings, each generated from a figure in the report."""
    out: list[str] = []
    c = secs["coverage"]["facts"]
    if c.get("compliance") is not None:
        if c.get("compliance_prev") is not None:
            verb = (
                "rose"
                if c["compliance"] > c["compliance_prev"]
                else ("fell" if c["compliance"] < c["compliance_prev"] else "held")
            )
            out.append(
                f"Coverage of required certifications {verb} from {S.pct(c['compliance_prev'])} "
                f"to {S.pct(c['compliance'])} this quarter (target {S.pct(c['target'])})."
            )
        else:
            out.append(
                f"{S.pct(c['compliance'])} of engineers hold every certification their role "
                f"requires (target {S.pct(c['target'])})."
            )
        if c.get("coverage") is not None:
            out.append(
                f"{S.pct(c['coverage'])} of {S.num(c['headcount'])} engineers hold at least "
                "one active certification."
            )
    g = secs["gaps"]["facts"]
    if g.get("gap_people") is not None:
        out.append(
            f"{S.num(g['gap_people'])} engineers still lack a certification their role requires."
        )
    e = secs["expiring"]["facts"]
    if e.get("expiring") is not None:
        out.append(
            f"{S.num(e['expiring'])} certifications expire in {q.next().label} unless renewed."
        )
    a = secs["attrition"]["facts"]
    if a.get("all"):
        txt = f"Twelve-month attrition is {S.pct(a['all']['t12m'][0], 1)}"
        if a.get("certified"):
            others = next((v for k, v in a.items() if k not in ("all", "certified")), None)
            if others:
                txt += (
                    f": {S.pct(a['certified']['t12m'][0], 1)} for certified engineers vs "
                    f"{S.pct(others['t12m'][0], 1)} for the others"
                )
        out.append(txt + ".")
    effects = secs["incidents"]["facts"].get("effects", {})
    for metric in sorted(
        effects,
        key=lambda m: (
            m not in S.EFFECT_WORDS,
            list(S.EFFECT_WORDS).index(m) if m in S.EFFECT_WORDS else 0,
            m,
        ),
    ):
        est, lo, hi, _naive = effects[metric]
        unsure = (
            ""
            if (hi < 1 or lo > 1)
            else "; the interval includes no change, so this is not yet conclusive"
        )
        out.append(
            f"{S.EFFECT_WORDS.get(metric, (S.nice(metric),))[0]}: certification is associated "
            f"with {S.effect_phrase(metric, est)} after adjustment (95 % CI {lo:.2f}–{hi:.2f}{unsure})."
        )
    r = secs["roi"]["facts"]
    if r.get("spend") is not None:
        out.append(
            f"Training and exam spend was {S.usd(r['spend'])} this quarter, "
            f"{S.usd(r['spend_12m'])} over 12 months."
        )
    if r.get("roi_investment"):
        out.append(
            f"Over the data window the ROI model puts the net return at {S.usd(r['roi_net'])} "
            f"on {S.usd(r['roi_investment'])} invested (net ROI "
            f"{S.floor_percent(r.get('roi_net_ratio'))}, from stated assumptions)."
        )
    return out


def changes_section(q: Quarter, marts: Marts, secs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    c, r = secs["coverage"]["facts"], secs["roi"]["facts"]
    rows = [
        _change("Engineers (month end)", c.get("headcount"), c.get("headcount_prev"), "num"),
        _change("Hold ≥1 active certification", c.get("coverage"), c.get("coverage_prev"), "pct"),
        _change("Meet all role requirements", c.get("compliance"), c.get("compliance_prev"), "pct"),
        _change("Training and exam spend", r.get("spend"), r.get("spend_prev"), "usd"),
    ]
    att = marts.get("attrition")
    if att is not None:
        a = att[(att["period_type"] == "quarter") & (att["segment_type"] == "all")].set_index(
            "period_start"
        )
        if q.start in a.index and q.previous().start in a.index:

            def rate(s):
                return float(a.loc[s, "separations"]) / float(a.loc[s, "average_headcount"])

            rows.append(
                _change("Quarterly turnover", rate(q.start), rate(q.previous().start), "pct")
            )
            rows.append(
                _change(
                    "Leavers",
                    float(a.loc[q.start, "separations"]),
                    float(a.loc[q.previous().start, "separations"]),
                    "num",
                )
            )
    ir = marts.get("incident_rates")
    if ir is not None:
        x = ir[
            (ir["breakdown"] == "quarter_by_status") & (ir["certification_status"] == "all")
        ].set_index("quarter")
        if q.start in x.index and q.previous().start in x.index:
            rows.append(
                _change(
                    "Incidents per 100 engineer-months",
                    float(x.loc[q.start, "incidents_per_100_engineer_months"]),
                    float(x.loc[q.previous().start, "incidents_per_100_engineer_months"]),
                    "num1",
                )
            )
    rows = [row for row in rows if row]
    if not rows:
        return S.unavailable(
            "changes",
            "Quarter-over-quarter changes",
            f"Not available: no figures for {q.previous().label} to compare with.",
        )
    return {
        "id": "changes",
        "title": f"Changes since {q.previous().label}",
        "available": True,
        "lead": "",
        "charts": [],
        "notes": [],
        "facts": {},
        "tables": [
            S.table(
                f"{q.previous().label} → {q.label}",
                ["Figure", q.previous().label, q.label, "Change"],
                rows,
                key="changes",
            )
        ],
    }


def build_context(
    marts: Marts, q: Quarter, min_group_size: int, coverage_target: float
) -> dict[str, Any]:
    thr = min_group_size
    secs = {
        "coverage": S.coverage_section(marts, q, thr, coverage_target),
        "gaps": S.gaps_section(marts, q, thr),
        "expiring": S.expiring_section(marts, q, thr),
        "attrition": S.attrition_section(marts, q, thr),
        "incidents": S.incidents_section(marts, q, thr),
        "roi": S.roi_section(marts, q, thr),
        "composition": S.composition_section(marts, q, thr),
    }
    ordered = list(secs.values()) + [changes_section(q, marts, secs)]
    return {
        "quarter": q.label,
        "period": f"{q.start:%d %B %Y} – {q.end:%d %B %Y}",
        "generated": datetime.now(UTC).strftime("%d %B %Y, %H:%M UTC"),
        "headlines": headlines(q, secs),
        "sections": ordered,
        "glossary": GLOSSARY,
        "min_group_size": thr,
        "css": (STATIC_DIR / "report.css").read_text(encoding="utf-8"),
    }


def render_html(context: dict[str, Any]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("talent_report.html.j2").render(**context)


def render_report(
    published_db: Path,
    quarter: str,
    out_dir: Path,
    min_group_size: int = 5,
    *,
    coverage_target: float = DEFAULT_COVERAGE_TARGET,
) -> dict[str, Any]:
    """Render `<out_dir>/<quarter>/talent-report.html` and `.pdf` from the published marts.

    Returns the two paths, the quarter, the section ids with their availability, the number of
    charts and the headline sentences. `out_dir` is the reports folder (e.g. `dashboards/reports`).
    """
    q = Quarter.parse(quarter)
    marts = load_marts(Path(published_db))  # closed again before rendering
    last = last_data_month(marts)
    if last is None or last < q.last_month:
        latest = latest_complete_quarter_for(last).label if last else "none"
        raise ValueError(
            f"Quarter {q.label} cannot be reported from {published_db}: the data "
            + (f"ends in {last:%Y-%m}" if last else "holds no monthly rows")
            + f". Latest complete quarter: {latest}. Choose that one with --quarter."
        )
    context = build_context(marts, q, min_group_size, coverage_target)
    html = render_html(context)
    target = Path(out_dir) / q.label
    target.mkdir(parents=True, exist_ok=True)
    html_path, pdf_path = target / "talent-report.html", target / "talent-report.pdf"
    html_path.write_text(html, encoding="utf-8")
    _write_pdf(html, pdf_path)
    return {
        "quarter": q.label,
        "html": html_path,
        "pdf": pdf_path,
        "sections": {s["id"]: s["available"] for s in context["sections"]},
        "charts": sum(len(s["charts"]) for s in context["sections"]),
        "headlines": context["headlines"],
    }


def _write_pdf(html: str, pdf_path: Path) -> None:
    """WeasyPrint prints the same HTML; a fetcher that refuses everything keeps it offline."""
    import weasyprint  # imported late: it loads Pango

    def no_fetch(url: str, *args, **kwargs):
        raise ValueError(f"The report must be self-contained; refused to fetch {url}")

    tmp = pdf_path.with_suffix(".pdf.tmp")
    weasyprint.HTML(string=html, url_fetcher=no_fetch).write_pdf(str(tmp))
    tmp.replace(pdf_path)
