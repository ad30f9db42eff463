"""ROI assets: price training investment and its returns from the marts (group `roi`).

Thin wiring around `pipelines.lib.roi`: read the input marts from the build file through Arrow
into Polars, compute the three tables, write them back to schema `marts`, close the file. The
tables are kept while the input marts, the assumptions file and the code are those they were
computed from (`pipelines/defs/versions.py`).
"""

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.resources import TalentResource
from pipelines.lib import db
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

CODE_VERSION = versions.source_version("pipelines.lib.roi")
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
            code_version=CODE_VERSION,
        )
        for name, key in ROI_KEYS.items()
    ],
)
def roi_tables(context: dg.AssetExecutionContext, talent: TalentResource):
    """Assumptions come from the settings' assumptions file; the certification effects and
    their CIs replace the incident-rate, MTTR and attrition ratios, and the operations effects
    (when estimable) price efficiency and faster deployment."""
    s = talent.settings
    if not s.build_db.exists():
        raise dg.Failure(f"{s.build_db} does not exist: run the warehouse (dbt) assets first.")
    because = versions.because_of(context)
    context.log.info(f"computing the ROI tables: {because[versions.COMPUTED_BECAUSE]}")
    try:
        with db.connect(s.build_db) as con:
            assumptions = load_assumptions(s.assumptions_file)
            marts = read_marts(con, db_label=str(s.build_db))
            tables = build_roi_tables(marts, assumptions, s.min_group_size)
            # write_tables writes each table twice: in full (restricted) and as published
            write_tables(con, tables)
    except RoiInputError as exc:
        raise dg.Failure(str(exc)) from exc
    for name, key in ROI_KEYS.items():
        df = tables[name]
        meta: dict[str, dg.MetadataValue] = {"dagster/row_count": dg.MetadataValue.int(df.height)}
        if name == "roi_by_period":
            years = df.filter(df["period_type"] == "year")
            last = years.row(-1, named=True) if years.height else {}
            if last.get("net_roi") is not None:
                meta["last_year_net_roi"] = dg.MetadataValue.float(float(last["net_roi"]))
        yield dg.MaterializeResult(asset_key=key, metadata={**meta, **because})
