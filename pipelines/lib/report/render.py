"""Assemble the quarterly talent report: figures → Jinja2 template → HTML and PDF.

One HTML file, self-contained (inline CSS and SVG, system fonts, no script, no network), and a
PDF printed from the same HTML by WeasyPrint with the quarter and "page N of M" on every page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from pipelines.lib.project_files import STATIC_DIR, TEMPLATES_DIR
from pipelines.lib.report import sections as S
from pipelines.lib.report.charts import _money as money
from pipelines.lib.report.data import Marts, last_data_month, load_marts
from pipelines.lib.report.quarters import Quarter, latest_complete_quarter_for

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
    (
        "Holds ≥1 active certification",
        "Engineers holding at least one active certification ÷ engineers, at month end.",
    ),
    (
        "Coverage of required certifications (meets role requirements)",
        "Engineers holding every certification the team template requires for their role at "
        "their cluster's current fleet size (small 10–100 GPUs, medium 100–1,000, large "
        "1,000+) ÷ engineers, at month end. The headline coverage figure.",
    ),
    (
        "Gap",
        "An engineer missing at least one certification their role requires.",
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
        "Certified / not certified: status at the start of each quarter. Intervals: Wilson "
        "score, 95 %.",
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
        "Certification status (incidents)",
        "Per engineer-month: certified (holds an active certification), not yet certified "
        "(certifies later in the data), never certified, lapsed (held one that has expired).",
    ),
    (
        "95 % CI",
        "Confidence interval: the range of values compatible with the data at the 95 % level; "
        "an interval for a ratio that includes 1 means no difference cannot be ruled out.",
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
    (
        "Pre-trend test",
        "Joint Wald test that the event-study ratios for months −12 to −2 all equal 1. A "
        "p-value below 0.05 means incident rates already differed before certification, so "
        "the adjusted estimate may partly reflect who certifies.",
    ),
    ("Training spend", "Amounts charged for courses and exams after discounts, by quarter."),
    (
        "Net ROI",
        "(Return − investment) ÷ investment over the data window, from the ROI model "
        "(marts.roi_summary), rounded down to the whole percent; the gross return multiple is "
        "return ÷ investment. The tornado shows the net ROI with each assumption at its low "
        "and high value (marts.roi_sensitivity).",
    ),
    (
        "Stated values",
        "Returns priced from the assumptions file rather than measured: efficiency "
        "improvements (share of fleet cost) and faster deployment (value per GPU-year), both "
        "per GPU-year of the certified share of the fleet. Measured returns: less downtime "
        "(from incident downtime and the adjusted effects) and contractor cost avoided.",
    ),
    (
        "In template band",
        "Engineers whose skill level lies in the level band the template sets for their role "
        "÷ engineers.",
    ),
    (
        "Template",
        "Reference team composition for a fleet size (seed data): headcount and level "
        "band per role.",
    ),
    (
        "<5 (hidden)",
        "The figures of a group (team, role, level, programme or status) of fewer than 5 "
        "engineers, or of a second group hidden so that the first cannot be recovered from the "
        "totals.",
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
        short = (c["target"] - c["compliance"]) * 100
        gap = (
            f"{short:.1f} points below the {S.pct(c['target'])} target"
            if short > 0
            else f"at or above the {S.pct(c['target'])} target"
        )
        if c.get("compliance_prev") is not None:
            verb = (
                "rose"
                if c["compliance"] > c["compliance_prev"]
                else ("fell" if c["compliance"] < c["compliance_prev"] else "held")
            )
            first = (
                f"Coverage of required certifications {verb} from "
                f"{S.pct(c['compliance_prev'], 1)} to {S.pct(c['compliance'], 1)} this quarter"
            )
        else:
            first = f"Coverage of required certifications is {S.pct(c['compliance'], 1)}"
        out.append(
            f"{first}, {gap} ({S.num(c['compliant_headcount'])} of {S.num(c['headcount'])} "
            "engineers hold every certification their role requires)."
        )
        if c.get("coverage") is not None:
            txt = f"{S.pct(c['coverage'], 1)} hold at least one active certification"
            if c.get("coverage_prev") is not None:
                txt += f" ({S.pct(c['coverage_prev'], 1)} in {q.previous().label})"
            out.append(txt + ".")
    g = secs["gaps"]["facts"]
    if g.get("gap_people") is not None:
        txt = (
            f"{S.num(g['gap_people'])} engineers lack at least one certification their role "
            "requires"
        )
        if g.get("largest_gaps"):
            txt += "; the largest gaps: " + ", ".join(
                f"{role} ({S.num(n)} of {S.num(h)})" for role, n, h in g["largest_gaps"]
            )
        out.append(txt + ".")
    e = secs["expiring"]["facts"]
    if e.get("expiring") is not None:
        out.append(
            f"{S.num(e['expiring'])} active certifications expire in {q.next().label} unless "
            "renewed."
        )
    a = secs["attrition"]["facts"]
    if a.get("all"):
        t = a["all"]["t12m"]
        txt = f"Twelve-month attrition {S.pct(t[0], 1)} (95 % CI {t[1] * 100:.1f}–{t[2] * 100:.1f})"
        others = next((v for k, v in a.items() if k not in ("all", "certified")), None)
        if a.get("certified") and others:
            ct, ot = a["certified"]["t12m"], others["t12m"]
            txt += (
                f": certified {S.pct(ct[0], 1)} ({ct[1] * 100:.1f}–{ct[2] * 100:.1f}) vs not "
                f"certified {S.pct(ot[0], 1)} ({ot[1] * 100:.1f}–{ot[2] * 100:.1f})"
            )
            if ct[1] <= ot[2] and ot[1] <= ct[2]:
                txt += "; the intervals overlap, so the raw gap alone is not conclusive"
        out.append(txt + ".")
    effects = secs["incidents"]["facts"].get("effects", {})
    for metric in S.ordered_effects(effects):
        out.append(S.effect_sentence(metric, *effects[metric]))
    r = secs["roi"]["facts"]
    if r.get("spend") is not None:
        txt = f"Training and exam spend was {S.usd(r['spend'])} in {q.label}"
        if r.get("spend_prev"):
            d = (r["spend"] - r["spend_prev"]) / r["spend_prev"] * 100
            txt += f" ({d:+.0f} % on {q.previous().label})".replace("-", "−", 1)
        out.append(txt + f", {S.usd(r['spend_12m'])} over the last 12 months.")
    if r.get("roi_investment"):
        window = f" over {r['roi_window']}" if r.get("roi_window") else ""
        txt = (
            f"Net ROI {S.floor_percent(r.get('roi_net_ratio'))}{window} "
            f"({money(r['roi_net'])} net on {money(r['roi_investment'])} invested)"
        )
        if r.get("roi_stated"):
            measured = r.get("roi_net_ratio_measured")
            txt += (
                f", but {money(r['roi_stated'])} of the return is "
                f"{' and '.join(r.get('roi_stated_labels') or ['stated values'])} priced per "
                "GPU from stated assumptions, not measured. On measured returns alone "
                f"({money(r['roi_measured'])}) the net ROI is {S.floor_percent(measured)}"
            )
            if measured is not None and measured < 0:
                txt += ": they do not yet cover the investment"
        out.append(txt + ".")
    return out


def changes_section(q: Quarter, marts: Marts, secs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    c, r = secs["coverage"]["facts"], secs["roi"]["facts"]
    rows = [
        _change("Engineers (month end)", c.get("headcount"), c.get("headcount_prev"), "num"),
        _change("Hold ≥1 active certification", c.get("coverage"), c.get("coverage_prev"), "pct"),
        _change("Meet all role requirements", c.get("compliance"), c.get("compliance_prev"), "pct"),
        _change("Training and exam spend", r.get("spend"), r.get("spend_prev"), "usd"),
    ]
    cov = marts.get("certification_coverage")
    if cov is not None:
        allc = cov[cov["segment_type"] == "all"].set_index("month")
        if q.last_month in allc.index and q.previous().last_month in allc.index:
            rows.append(
                _change(
                    "Certifications expiring in the next 90 days",
                    float(allc.loc[q.last_month, "expiring_next_90d"]),
                    float(allc.loc[q.previous().last_month, "expiring_next_90d"]),
                    "num",
                )
            )
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
        "glossary": [
            (term.replace("<5", f"<{thr}"), text.replace("5 engineers", f"{thr} engineers"))
            if term.startswith("<5")
            else (term, text)
            for term, text in GLOSSARY
        ],
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
