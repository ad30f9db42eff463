"""`talent roi --scenario FILE [--json]`: the ROI model from a scenario file alone.

For planning a team before any data exists. The same line items as the warehouse ROI assets
(`pipelines.lib.roi.model`) price the scenario's quantities; the output labels each figure the
way the source document does and says how its percentages are rounded.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer


def _usd(x: float) -> str:
    return f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:,.1f} %"


def render(result: dict) -> str:
    """Human-readable report of a `run_scenario` result."""
    lines = [result["scenario"], "=" * len(result["scenario"])]
    if result["source"]:
        lines.append(f"Source: {result['source']}")
    if result["description"]:
        lines.append(result["description"])
    width = max(len(i["label"]) for i in result["items"]) + 2
    for category, title, total_label, total in (
        ("investment", "Investment", "Total investment", result["investment_usd"]),
        ("return", "Returns (per year)", "Total annual return", result["annual_return_usd"]),
    ):
        lines += ["", f"{title:<{width}}{'USD':>12}   how"]
        for i in result["items"]:
            if i["category"] == category and i["amount_usd"] != 0:
                lines.append(
                    f"  {i['label']:<{width - 2}}{_usd(i['amount_usd']):>12}   {i['formula']}"
                )
                lines.append(f"  {'':<{width - 2}}{'':>12}     {i['inputs']}")
        lines.append(f"{total_label:<{width}}{_usd(total):>12}")
    lines.append("")
    for key in ("first_year_roi", "ongoing_roi"):
        r = result[key]
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.4f}"
        pct = "n/a" if r["percent_rounded_down"] is None else f"{r['percent_rounded_down']} %"
        lines.append(f"{r['label']:<40}{pct:>8}   = {r['definition']} = {ratio}")
    lines += ["", f"Rounding: {result['rounding']}"]
    assumed = [q for q in result["quantities"] if q["basis"] == "assumed"]
    if assumed:
        lines += ["", "Quantities ASSUMED (the source does not give them):"]
        lines += [f"  * {q['name']} = {q['value']:,.6g}  {q['note']}" for q in assumed]
    overridden = [a for a in result["assumptions"] if a["basis"] != "assumptions file"]
    if overridden:
        lines += ["", "Assumptions this scenario sets:"]
        lines += [
            f"  * {a['name']} = {a['base']:,.6g} {a['unit']}  ({a['basis'].split(': ', 1)[-1]})"
            for a in overridden
        ]
    for note in result["notes"]:
        lines.append(f"Note: {note}")
    lines += [
        "",
        "Sensitivity of the first-year net ROI (one assumption at a time, others at base):",
        f"  {'assumption':<46}{'low':>10}{'high':>10}{'ROI at low':>12}{'ROI at high':>12}",
    ]
    for s in result["sensitivity"][:10]:
        low = "" if s["low_value"] is None else f"{s['low_value']:,.6g}"
        high = "" if s["high_value"] is None else f"{s['high_value']:,.6g}"
        lines.append(
            f"  {s['assumption']:<46}{low:>10}{high:>10}"
            f"{_pct(s['roi_at_low']):>12}{_pct(s['roi_at_high']):>12}"
        )
    return "\n".join(lines)


def command(
    scenario: Path = typer.Option(
        ..., "--scenario", "-s", help="Scenario YAML file (see sources/scenarios/)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    assumptions: Path | None = typer.Option(
        None,
        "--assumptions",
        help="Assumptions YAML (default: sources/scenarios/assumptions.yaml).",
    ),
) -> None:
    """Price a training plan: investment, annual return, ROI first year and ongoing."""
    from pipelines.lib.roi import RoiInputError, load_scenario, run_scenario

    try:
        result = run_scenario(load_scenario(scenario, assumptions))
    except RoiInputError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from exc
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        typer.echo(render(result))
