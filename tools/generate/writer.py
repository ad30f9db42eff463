"""Streams export rows to contract files, one file per export and period, with planted dirt.

Rows arrive as dicts of Python values in simulation order; the writer decides the period from
the record's date (month, or day on/after ``daily_from``), keeps only the periods not yet
written in memory, and writes each period once when the simulation has passed it. Within one
file a later row with the same natural key replaces the earlier one, because a record that is
created and changed in the same period is delivered once, in its latest state.

The dirt is what real exports look like (duplicates, a corrected re-delivery, stray blanks,
mixed-case e-mails, a CRLF file, byte-order marks, optionally a couple of garbage lines). Every
piece is recorded in ``self.dirt`` so tests and ``ground_truth.json`` know exactly where it is.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import numpy as np

from pipelines.lib.contracts import EXPORTS, file_name

GERMAN_EXPORTS = frozenset({"contractor_hours"})
EMAIL_CASE_FOLDERS = frozenset({"lms", "incidents"})


@dataclass
class DirtPlan:
    """Which (export, period) files get which defect; periods are monthly ``YYYY-MM``."""

    duplicates: dict[tuple[str, str], int] = field(default_factory=dict)
    corrected: set[tuple[str, str]] = field(default_factory=set)
    crlf: set[tuple[str, str]] = field(default_factory=set)
    bom: set[tuple[str, str]] = field(default_factory=set)
    garbage: set[tuple[str, str]] = field(default_factory=set)
    whitespace_rate: float = 0.0
    email_case_rate: float = 0.0


def month_period(d: date) -> str:
    return f"{d.year:04d}-{d.month:02d}"


def _fmt(value: object, ctype: str, german: bool) -> str:
    """Render one value the way the export's locale writes it (empty for None)."""
    if value is None:
        return ""
    if ctype == "decimal":
        text = f"{float(value):.2f}"
        return text.replace(".", ",") if german else text
    if ctype == "integer":
        return str(int(value))
    if ctype == "boolean":
        return "true" if value else "false"
    if ctype == "date":
        assert isinstance(value, date)
        return value.strftime("%d.%m.%Y") if german else value.isoformat()
    if ctype == "month":
        assert isinstance(value, date)
        return value.strftime("%m.%Y") if german else value.strftime("%Y-%m")
    if ctype == "timestamp":
        assert isinstance(value, datetime)
        return (
            value.strftime("%d.%m.%Y %H:%M:%S")
            if german
            else value.isoformat(sep=" ", timespec="seconds")
        )
    return str(value)


def _email_variant(email: str, pick: int) -> str:
    """Case variants that a tool really produces; staging normalises with lower(trim())."""
    local, _, domain = email.partition("@")
    if pick == 0:
        return ".".join(p[:1].upper() + p[1:] for p in local.split(".")) + "@" + domain
    if pick == 1:
        return email.upper()
    return local.capitalize() + "@" + domain.upper()


class ExportWriter:
    def __init__(
        self,
        out: Path,
        start: date,
        end: date,
        daily_from: date | None,
        plan: DirtPlan,
        rng: np.random.Generator,
    ) -> None:
        self.out = out
        self.start = start
        self.end = end
        self.daily_from = daily_from
        self.plan = plan
        self.rng = rng
        self.first_period = month_period(start)
        # period -> export -> key -> row
        self._buffer: dict[str, dict[str, dict[tuple, dict]]] = {}
        self._written: set[str] = set()
        self.files: list[str] = []
        self.rows: dict[str, int] = {name: 0 for name in EXPORTS}
        self.dirt: list[dict] = []
        for export in EXPORTS.values():
            (out / export.folder).mkdir(parents=True, exist_ok=True)

    # --- collecting -----------------------------------------------------------------------
    def period_of(self, d: date) -> str:
        if d < self.start:
            return self.first_period  # records effective before the window: initial load
        if self.daily_from is not None and d >= self.daily_from:
            return d.isoformat()
        return month_period(d)

    def emit(self, export: str, d: date, row: dict) -> None:
        """Queue one record dated ``d``; dropped when it lies after the end of the data."""
        if d > self.end:
            return
        period = self.period_of(d)
        if period in self._written:
            raise RuntimeError(f"{export} row dated {d} arrived after period {period} was written")
        key = tuple(row.get(k) for k in EXPORTS[export].key)  # optional key columns may be absent
        self._buffer.setdefault(period, {}).setdefault(export, {})[key] = row

    # --- writing --------------------------------------------------------------------------
    def flush_through(self, d: date) -> None:
        """Write every period that ends on or before ``d`` (month periods end at month end)."""
        ready = [p for p in self._buffer if self._period_end(p) <= d]
        for period in sorted(ready):
            for export in sorted(self._buffer[period]):
                self._write(export, period, list(self._buffer[period][export].values()))
            del self._buffer[period]
            self._written.add(period)

    def close(self) -> None:
        for period in sorted(self._buffer):
            for export in sorted(self._buffer[period]):
                self._write(export, period, list(self._buffer[period][export].values()))
            self._written.add(period)
        self._buffer.clear()

    @staticmethod
    def _period_end(period: str) -> date:
        if len(period) == 10:
            return date.fromisoformat(period)
        y, m = int(period[:4]), int(period[5:7])
        nxt = date(y + (m == 12), m % 12 + 1, 1)
        return date.fromordinal(nxt.toordinal() - 1)

    def _render(self, export: str, rows: list[dict]) -> list[list[str]]:
        spec = EXPORTS[export]
        german = export in GERMAN_EXPORTS
        plan = self.plan
        out = []
        email_cols = [c.name for c in spec.columns if c.name.endswith("email")]
        pad_cols = [
            c.name
            for c in spec.columns
            if c.type == "string" and not c.personal and c.values is None and c.name not in spec.key
        ]
        for row in rows:
            cells = {c.name: _fmt(row.get(c.name), c.type, german) for c in spec.columns}
            if spec.folder in EMAIL_CASE_FOLDERS and plan.email_case_rate:
                for col in email_cols:
                    if cells[col] and self.rng.random() < plan.email_case_rate:
                        cells[col] = _email_variant(cells[col], int(self.rng.integers(3)))
            if pad_cols and plan.whitespace_rate and self.rng.random() < plan.whitespace_rate:
                col = pad_cols[int(self.rng.integers(len(pad_cols)))]
                if cells[col]:
                    cells[col] = " " + cells[col] + "  "
            out.append([cells[c] for c in spec.column_names])
        return out

    def _write_file(
        self,
        export: str,
        period: str,
        version: int,
        lines: list[list[str]],
        *,
        crlf: bool = False,
        bom: bool = False,
        extra_raw: list[str] = (),
    ) -> str:
        spec = EXPORTS[export]
        buf = io.StringIO()
        delimiter = ";" if export in GERMAN_EXPORTS else ","
        w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n")
        w.writerow(spec.column_names)
        w.writerows(lines)
        text = buf.getvalue() + "".join(line + ("\r\n" if crlf else "\n") for line in extra_raw)
        name = file_name(export, period, version)
        path = self.out / spec.folder / name
        with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as fh:
            fh.write(text)
        self.files.append(f"{spec.folder}/{name}")
        return name

    def _write(self, export: str, period: str, rows: list[dict]) -> None:
        if not rows:
            return
        spec = EXPORTS[export]
        lines = self._render(export, rows)
        self.rows[export] += len(lines)
        key = (export, period)
        plan = self.plan
        crlf = key in plan.crlf
        bom = export in GERMAN_EXPORTS or key in plan.bom
        if key in plan.corrected and len(lines) >= 4:
            # v1 lacks the last record and carries a wrong value; v2 is the fix.
            broken = [list(x) for x in lines[:-1]]
            col = (
                spec.column_names.index("skill_level")
                if "skill_level" in spec.column_names
                else None
            )
            if col is not None:
                broken[0][col] = str(
                    min(5, int(broken[0][col]) + 1) if broken[0][col] != "5" else 4
                )
            name1 = self._write_file(export, period, 1, broken, crlf=crlf, bom=bom)
            name2 = self._write_file(export, period, 2, lines, crlf=crlf, bom=bom)
            self.dirt.append(
                {
                    "kind": "corrected_redelivery",
                    "export": export,
                    "superseded": name1,
                    "file": name2,
                    "fix": "adds the missing last row; corrects skill_level of line 2",
                }
            )
            return
        extra: list[str] = []
        if key in plan.duplicates and len(lines) >= 3:
            n = plan.duplicates[key]
            picks = sorted(int(i) for i in self.rng.choice(len(lines), size=n, replace=False))
            lines = lines + [list(lines[i]) for i in picks]
            self.dirt.append(
                {
                    "kind": "exact_duplicates",
                    "export": export,
                    "file": file_name(export, period),
                    "rows": n,
                }
            )
        if key in plan.garbage:
            width = len(spec.column_names)
            bad = ["INC-BROKEN-1", "", "compute", "fra-1", "sev9", "not a timestamp"] + [""] * (
                width - 6
            )
            extra = [",".join(bad[:width]), "INC-BROKEN-2,truncated line"]
            self.dirt.append(
                {
                    "kind": "garbage_rows",
                    "export": export,
                    "file": file_name(export, period),
                    "lines": [len(lines) + 2, len(lines) + 3],
                    "problems": [
                        "severity 'sev9' and opened_at 'not a timestamp'",
                        "too few columns",
                    ],
                }
            )
        name = self._write_file(export, period, 1, lines, crlf=crlf, bom=bom, extra_raw=extra)
        if crlf:
            self.dirt.append({"kind": "crlf_line_endings", "export": export, "file": name})
        if bom and export not in GERMAN_EXPORTS:
            self.dirt.append({"kind": "byte_order_mark", "export": export, "file": name})
