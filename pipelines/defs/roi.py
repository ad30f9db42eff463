"""ROI assets: price training investment and its returns from the marts (group `roi`).

Thin wiring around `pipelines.lib.roi`: read the input marts from the build file through Arrow
into Polars, compute the three tables, write them back to schema `marts`, close the file.
"""

from pathlib import Path

import dagster as dg

from pipelines.defs.resources import TalentResource
from pipelines.lib import db, fingerprint
from pipelines.lib.roi import (
    INPUT_MARTS,
    INPUT_SCHEMAS,
    OUTPUT_TABLES,
    RoiInputError,
    build_roi_tables,
    load_assumptions,
    read_marts,
    write_tables,
)

STEP = "roi_tables"
ROI_KEYS = {name: dg.AssetKey(["marts", name]) for name in OUTPUT_TABLES}

DESCRIPTIONS = {
    "roi_by_period": "Investment, returns and ROI per quarter and calendar year "
    "(grain: period_type, period_start).",
    "roi_summary": "One row per investment or return line item over the data window, with its "
    "formula and inputs (grain: category, item).",
    "roi_sensitivity": "Tornado table: net ROI with each assumption at low and at high "
    "(grain: assumption); includes the certification-effect CI.",
}


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            key,
            group_name="roi",
            description=DESCRIPTIONS[name],
            deps=[dg.AssetKey([INPUT_SCHEMAS[m], m]) for m in INPUT_MARTS],
            kinds={"polars", "duckdb"},
        )
        for name, key in ROI_KEYS.items()
    ],
)
def roi_tables(context: dg.AssetExecutionContext, talent: TalentResource):
    """Assumptions come from the settings' assumptions file; the certification effect and
    its CI replace the incident-rate and MTTR ratios. Inputs unchanged since the tables in the
    file were computed (marts, assumptions, code): the tables are kept."""
    s = talent.settings
    if not s.build_db.exists():
        raise dg.Failure(f"{s.build_db} does not exist: run the warehouse (dbt) assets first.")
    try:
        with db.connect(s.build_db) as con:
            fp = _fingerprint(con, s.assumptions_file)
            # write_tables writes each table twice: in full (restricted) and as published
            outputs = [f"{schema}.{n}" for n in OUTPUT_TABLES for schema in ("restricted", "marts")]
            kept = fp is not None and fingerprint.is_current(con, STEP, fp, outputs)
            if kept:
                context.log.info("inputs unchanged since the last run: the ROI tables are kept")
                tables = {n: _read(con, n) for n in OUTPUT_TABLES}
            else:
                assumptions = load_assumptions(s.assumptions_file)
                marts = read_marts(con, db_label=str(s.build_db))
                tables = build_roi_tables(marts, assumptions)
                write_tables(con, tables)
                if fp is not None:
                    fingerprint.remember(con, STEP, fp)
    except RoiInputError as exc:
        raise dg.Failure(str(exc)) from exc
    for name, key in ROI_KEYS.items():
        df = tables[name]
        meta: dict[str, dg.MetadataValue] = {"dagster/row_count": dg.MetadataValue.int(df.height)}
        meta["inputs_unchanged"] = dg.MetadataValue.bool(kept)
        if name == "roi_by_period":
            years = df.filter(df["period_type"] == "year")
            last = years.row(-1, named=True) if years.height else {}
            if last.get("net_roi") is not None:
                meta["last_year_net_roi"] = dg.MetadataValue.float(float(last["net_roi"]))
        yield dg.MaterializeResult(asset_key=key, metadata=meta)


def _read(con, name: str):
    import polars as pl

    return pl.from_arrow(con.sql(f"select * from restricted.{name}").to_arrow_table())


def _fingerprint(con, assumptions_file) -> str | None:
    """The input marts, the assumptions file and the ROI code; None when an input is missing
    (the computation then says which)."""
    import duckdb

    path = Path(assumptions_file)
    assumptions = path.read_text(encoding="utf-8") if path.exists() else "(missing)"
    try:
        return fingerprint.inputs_fingerprint(
            con,
            [f"{INPUT_SCHEMAS[m]}.{m}" for m in INPUT_MARTS],
            fingerprint.package_source("pipelines.lib.roi"),
            assumptions,
        )
    except duckdb.Error:
        return None
