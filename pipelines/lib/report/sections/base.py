"""Typed building blocks every section returns: tables, sections, and the team selection that
keeps per-team figures to a bounded number of rows in print at any company size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TypeVar

from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.suppression import mask_label

Text = str | Markup
T = TypeVar("T")

# Teams shown in print per table and chart: the five furthest from and the five closest to
# their target or template. Every team is in the HTML (collapsed) and in the appendix files.
EXTREMES = 5


@dataclass(frozen=True)
class Table:
    caption: str
    columns: list[str]
    rows: list[list[Text]]
    total: list[Text] | None = None
    key: str = ""
    # "full": every row, shown collapsed on screen, left out of print, written to the appendix
    scope: str = "all"
    note: str = ""


@dataclass
class Section:
    id: str
    title: str
    available: bool = True
    lead: Text = ""
    charts: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[Text] = field(default_factory=list)


def table(
    caption: str,
    columns: Sequence[str],
    rows: list[list[Text]],
    *,
    total: list[Text] | None = None,
    key: str = "",
    scope: str = "all",
    note: str = "",
) -> Table:
    return Table(caption, list(columns), rows, total, key, scope, note)


def unavailable(sid: str, title: str, why: str) -> Section:
    return Section(id=sid, title=title, available=False, lead=why)


def months_up_to(q: Quarter, quarters: int = 8) -> list[date]:
    return [m for qq in q.trailing(quarters) for m in qq.months]


def extremes(items: Sequence[T], distance: Callable[[T], float | None]) -> tuple[list[T], list[T]]:
    """The EXTREMES items furthest from their reference (largest distance) and the EXTREMES
    closest (smallest), without overlap; items without a distance (hidden) are left out."""
    known = [it for it in items if distance(it) is not None]
    ranked = sorted(known, key=lambda it: -float(distance(it)))  # type: ignore[arg-type]
    far = ranked[:EXTREMES]
    near = [it for it in ranked[::-1] if it not in far][:EXTREMES]
    return far, near


def bounded_rows(
    rows: list[list[Text]], names: Sequence[str], far: Sequence[str], near: Sequence[str]
) -> list[list[Text]]:
    """The printed rows: all when there are few, else the far ones then the near ones."""
    if len(rows) <= 2 * EXTREMES:
        return rows
    by_name = dict(zip(names, rows, strict=True))
    return [by_name[n] for n in far] + [by_name[n] for n in near]


def team_tables(
    caption: str,
    columns: Sequence[str],
    rows: list[list[Text]],
    names: Sequence[str],
    far: Sequence[str],
    near: Sequence[str],
    *,
    total: list[Text] | None,
    key: str,
    far_words: str,
) -> list[Table]:
    """A printed table of the extremes and, when teams were left out, the full table."""
    if len(rows) <= 2 * EXTREMES:
        return [table(caption, columns, rows, total=total, key=key)]
    shown_rows = bounded_rows(rows, names, far, near)
    closest = f" and the {len(near)} closest" if near else ""
    note = (
        f"{len(rows)} teams: the {len(far)} {far_words}{closest} are shown; every team is in "
        "the full table (HTML) and in the appendix file."
    )
    return [
        table(caption, columns, shown_rows, total=total, key=key, note=note),
        table(f"{caption}: all teams", columns, rows, total=total, key=f"{key}-all", scope="full"),
    ]


def printed(names: list[str], far: list[str], near: list[str]) -> list[str]:
    """The teams a chart draws: all of a few, else the far ones then the near ones."""
    return names if len(names) <= 2 * EXTREMES else far + near


def team_bar_chart(
    name: str,
    picked: list[str],
    value: dict[str, float | None],
    show: Callable[[float], str],
    thr: int,
    **kwargs,
) -> str:
    """Bars for the picked teams, each labelled with its figure or as hidden."""
    return charts.bar_chart(
        name,
        picked,
        [value[n] for n in picked],
        labels=[
            show(value[n]) if value[n] is not None else f"{mask_label(thr)} (hidden)"  # type: ignore[arg-type]
            for n in picked
        ],
        **kwargs,
    )
