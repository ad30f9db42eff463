"""Fast checks of the dbt project and its Dagster wiring (no warehouse build)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.duckdb_plugin import register
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.pseudonym import pseudonym
from pipelines.lib.settings import Settings


def test_pseudonym_is_the_truncated_rfc4231_hmac():
    # RFC 4231 test case 2: HMAC-SHA256("Jefe", "what do ya want for nothing?")
    expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert pseudonym("what do ya want for nothing?", "Jefe") == "p_" + expected[:16]


def test_pseudonym_passes_null_and_refuses_an_empty_key():
    assert pseudonym(None, "k") is None
    with pytest.raises(ValueError, match="TALENT_PSEUDONYM_KEY"):
        pseudonym("E1", "")


def test_duckdb_function_matches_python_and_keeps_null():
    with duckdb.connect() as con:
        register(con, "k")
        got = con.execute("select pseudonym('E1'), pseudonym(null)").fetchone()
    assert got == (pseudonym("E1", "k"), None)


def test_different_keys_give_different_pseudonyms():
    assert pseudonym("E1", "key-a") != pseudonym("E1", "key-b")


def test_sources_declare_every_export_and_contract_column():
    doc = yaml.safe_load((DBT_PROJECT_DIR / "models" / "staging" / "_sources.yml").read_text())
    tables = {t["name"]: t for t in doc["sources"][0]["tables"]}
    assert {"manifest", "quarantine"} <= set(tables)
    for name, export in EXPORTS.items():
        assert name in tables, f"sources.yml lacks raw.{name}"
        cols = [c["name"] for c in tables[name]["columns"]]
        assert set(export.column_names) <= set(cols), name
        assert export.description in tables[name]["description"]


def test_sources_yml_is_generated_from_the_contracts():
    from tools import dbt_sources

    assert dbt_sources.main(["--check"]) == 0, "run `.venv/bin/python -m tools.dbt_sources`"


# link tables that read a personal column only to pseudonymise it (checked below)
NAME_LINKS = {"stg_hris__person_names.sql", "stg_incidents__responders.sql"}


def test_staging_sql_never_selects_names_or_salaries():
    personal = {c.name for e in EXPORTS.values() for c in e.columns if c.personal}
    for sql in (DBT_PROJECT_DIR / "models").rglob("*.sql"):
        text = sql.read_text()
        allowed = {"work_email", "learner_email", "responder_email"}
        if sql.name in NAME_LINKS:
            allowed |= {"first_name", "last_name", "responder_name"}
        for column in personal - allowed:
            assert column not in text, f"{sql.name} mentions {column}"


def test_names_are_only_read_inside_a_pseudonym():
    """The name link tables use names only as the argument of pseudonym(normalised_name(...))."""
    for name in NAME_LINKS:
        text = (DBT_PROJECT_DIR / "models" / "staging" / name).read_text()
        for column in ("first_name", "last_name", "responder_name"):
            for line in text.splitlines():
                if column in line and not line.strip().startswith(
                    ("--", "where", "{{ current_rows(")
                ):
                    assert "pseudonym({{ normalised_name(" in line, f"{name}: {line.strip()}"


def _exact_macros():
    import jinja2

    source = (DBT_PROJECT_DIR / "macros" / "exact_sum.sql").read_text()
    # double_type() is DuckDB's `double` here (macros/portable.sql dispatches it per target)
    return (
        jinja2.Environment().from_string(source, globals={"double_type": lambda: "double"}).module
    )


def test_exact_sum_does_not_depend_on_the_order_of_the_rows():
    """A plain sum of doubles depends on the order it adds them in (DuckDB's threads finish in
    any order); exact_sum and exact_avg give the same bits for every order."""
    macros = _exact_macros()
    values = [1e16, 1.0, -1e16, 1.0, 0.1, 0.2]
    orders = [values, values[::-1], sorted(values), [1.0, 1.0, 1e16, -1e16, 0.2, 0.1]]
    plain, exact, mean = set(), set(), set()
    con = duckdb.connect()
    con.execute("set threads = 1")  # a single thread adds in table order
    for order in orders:
        con.execute(
            "create or replace table t as select * from unnest($1::double[]) as u(x)", [order]
        )
        plain.add(con.execute("select sum(x) from t").fetchone()[0])
        exact.add(con.execute(f"select {macros.exact_sum('x')} from t").fetchone()[0])
        mean.add(con.execute(f"select {macros.exact_avg('x')} from t").fetchone()[0])
    assert len(plain) > 1  # the problem is real for these values
    assert exact == {2.3}  # the exact total, 1e16 - 1e16 + 1 + 1 + 0.1 + 0.2, as the nearest double
    assert mean == {2.3 / 6}
    empty = con.execute(f"select {macros.exact_avg('x')} from t where false").fetchone()[0]
    assert empty is None


AGGREGATE = re.compile(r"\b(sum|avg)\((?P<arg>[^()]*)\)(?P<after>[^,\n]*)")
# integer counts: their sums are exact whatever the order
INTEGER_SUMS = {"exam_passes", "exam_attempts", "days"}


def test_mart_models_sum_doubles_with_exact_sum():
    """Every grouped sum or mean in the models is exact_sum/exact_avg, a sum of integer counts,
    or a window (computed in the window's order): two builds of the same rows publish the
    same bits (tests/test_incremental.py compares them exactly)."""
    for sql in (DBT_PROJECT_DIR / "models").rglob("*.sql"):
        for line in sql.read_text().splitlines():
            for m in AGGREGATE.finditer(line):
                if line.lstrip().startswith("--"):
                    continue
                after = m["after"]
                ok = (
                    after.startswith("::bigint")
                    or " over " in f" {after}"
                    or (m["arg"].strip() in INTEGER_SUMS)
                )
                assert ok, f"{sql.name}: {line.strip()} (use exact_sum for doubles)"


def test_every_mart_has_a_yml_with_grain_and_documented_columns():
    marts = DBT_PROJECT_DIR / "models" / "marts"
    for sql in marts.glob("*.sql"):
        yml = sql.with_suffix(".yml")
        assert yml.exists(), f"{sql.name} has no {yml.name}"
        model = yaml.safe_load(yml.read_text())["models"][0]
        assert model["name"] == sql.stem
        assert "grain" in model["description"].lower(), (
            f"{yml.name}: description must state the grain"
        )
        assert all(c.get("description") for c in model["columns"])


def test_build_args_pass_privacy_vars_as_json(tmp_path):
    from pipelines.defs.dbt import build_args

    s = Settings(
        sources_dir=tmp_path,
        warehouse_dir=tmp_path,
        min_group_size=7,
        scope_division="Team 'Ops'",
    )
    args = build_args(s)
    assert args[:2] == ["build", "--vars"]
    assert json.loads(args[2]) == {"min_group_size": 7, "scope_division": "Team 'Ops'"}


@pytest.mark.parametrize(
    ("props", "key"),
    [
        (
            {"resource_type": "source", "name": "employees", "unique_id": "source.x.raw.employees"},
            ["raw", "employees"],
        ),
        (
            {"resource_type": "model", "name": "attrition", "schema": "marts", "unique_id": "m"},
            ["marts", "attrition"],
        ),
        (
            {
                "resource_type": "seed",
                "name": "skill_levels",
                "schema": "staging",
                "unique_id": "s",
            },
            ["staging", "skill_levels"],
        ),
    ],
)
def test_asset_keys_follow_layers(props, key):
    from pipelines.defs.dbt import asset_key_for

    assert asset_key_for(props) == dg.AssetKey(key)


def test_a_model_outside_the_layers_is_refused_with_advice():
    from pipelines.defs.dbt import asset_key_for

    with pytest.raises(ValueError, match="models/"):
        asset_key_for({"resource_type": "model", "name": "x", "schema": "main", "unique_id": "m.x"})


def test_manifest_staleness(tmp_path):
    from pipelines.defs.dbt import manifest_is_stale

    (tmp_path / "models").mkdir()
    model = tmp_path / "models" / "a.sql"
    model.write_text("select 1")
    manifest = tmp_path / "target" / "manifest.json"
    assert manifest_is_stale(tmp_path, manifest)
    manifest.parent.mkdir()
    manifest.write_text("{}")
    os.utime(model, (manifest.stat().st_mtime - 10,) * 2)
    assert not manifest_is_stale(tmp_path, manifest)
    os.utime(model, (manifest.stat().st_mtime + 10,) * 2)
    assert manifest_is_stale(tmp_path, manifest)


def test_docs_fingerprint_changes_with_the_project_and_vars_only(tmp_path):
    from pipelines.defs.dbt import DOCS_FILES, DOCS_FINGERPRINT, docs_are_current, docs_fingerprint

    (tmp_path / "models").mkdir()
    model = tmp_path / "models" / "a.sql"
    model.write_text("select 1")
    (tmp_path / "models" / "notes.txt").write_text("not part of the project")
    args = ["build", "--vars", '{"min_group_size": 5}']
    first = docs_fingerprint(tmp_path, args)
    assert docs_fingerprint(tmp_path, list(args)) == first
    (tmp_path / "models" / "notes.txt").write_text("edited")
    assert docs_fingerprint(tmp_path, args) == first
    assert docs_fingerprint(tmp_path, ["build", "--vars", '{"min_group_size": 7}']) != first
    model.write_text("select 2")
    second = docs_fingerprint(tmp_path, args)
    assert second != first

    docs = tmp_path / "docs"
    assert not docs_are_current(docs, second)
    docs.mkdir()
    for name in DOCS_FILES:
        (docs / name).write_text("{}")
    assert not docs_are_current(docs, second)  # no stamp: built by an older version
    (docs / DOCS_FINGERPRINT).write_text(second + "\n")
    assert docs_are_current(docs, second)
    assert not docs_are_current(docs, first)
    (docs / "catalog.json").unlink()
    assert not docs_are_current(docs, second)


def test_the_warehouse_is_kept_only_while_everything_dbt_reads_is_unchanged(tmp_path, dbt_manifest):
    """A whole build is skipped only when the raw tables, the project and vars (its
    fingerprint), the pseudonym key are those of the last whole build, and the build file still
    holds every table the project builds; the fingerprint is dropped before a build starts."""
    from pipelines.defs.dbt import (
        build_is_current,
        built_tables,
        forget_build,
        remember_build,
        warehouse_dbt,
        warehouse_inputs_fingerprint,
    )

    s = Settings(
        sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "wh", pseudonym_key="key-one"
    )
    s.ensure_dirs()
    assert warehouse_inputs_fingerprint(s, "project") is None  # nothing loaded yet
    with duckdb.connect(str(s.raw_db)) as con:
        con.execute("create table employees (employee_id varchar, team varchar)")
        con.execute("insert into employees values ('E1', 'platform'), ('E2', 'storage')")
        con.execute("create table manifest (file_id varchar, status varchar)")
        con.execute("insert into manifest values ('f1', 'active')")
    first = warehouse_inputs_fingerprint(s, "project")
    assert warehouse_inputs_fingerprint(s, "project") == first
    assert warehouse_inputs_fingerprint(s, "project, other vars") != first
    assert warehouse_inputs_fingerprint(replace(s, pseudonym_key="key-two"), "project") != first
    with duckdb.connect(str(s.raw_db)) as con:
        con.execute("update manifest set status = 'superseded'")
    assert warehouse_inputs_fingerprint(s, "project") != first
    with duckdb.connect(str(s.raw_db)) as con:
        con.execute("update manifest set status = 'active'")
        con.execute("update employees set team = 'network' where employee_id = 'E2'")
    changed = warehouse_inputs_fingerprint(s, "project")
    assert changed != first

    tables = built_tables(warehouse_dbt.keys)
    assert not build_is_current(s, changed, tables)  # no build file
    assert "marts.certification_coverage" in tables and "staging.skill_levels" in tables
    with duckdb.connect(str(s.build_db)) as con:
        for table in tables:
            con.execute(f"create schema if not exists {table.split('.')[0]}")
            con.execute(f"create table {table} (x int)")
    assert not build_is_current(s, changed, tables)  # never built with a fingerprint
    remember_build(s, changed)
    assert build_is_current(s, changed, tables)
    assert not build_is_current(s, first, tables)
    with duckdb.connect(str(s.build_db)) as con:
        con.execute("drop table marts.certification_coverage")
    assert not build_is_current(s, changed, tables)  # a table is missing
    with duckdb.connect(str(s.build_db)) as con:
        con.execute("create table marts.certification_coverage (x int)")
    assert build_is_current(s, changed, tables)
    forget_build(s)
    assert not build_is_current(s, changed, tables)


def test_definitions_expose_warehouse_assets_checks_and_raw_deps(dbt_manifest):
    from pipelines.defs.dbt import DBT_EXECUTABLE, dbt_resource, warehouse_dbt

    # dbt by its path in this environment: a bare PATH (cron, systemd) has no `dbt` on it
    assert Path(dbt_resource().dbt_executable) == Path(DBT_EXECUTABLE)
    assert Path(DBT_EXECUTABLE).is_file()
    specs = {s.key.to_user_string(): s for s in warehouse_dbt.specs}
    for mart in (
        "attrition",
        "certification_coverage",
        "incident_rates",
        "dim_employee",
        "dim_certification",
        "dim_team",
        "dim_date",
        "identity_match",
        "training_spend",
        "contractor_costs",
        "fleet_size",
        "incident_downtime",
        "team_composition",
        "level_mix",
    ):
        assert f"marts/{mart}" in specs
    assert "intermediate/int_engineer_months" in specs
    assert "intermediate/int_incident_responses" in specs
    assert {s.group_name for s in specs.values()} == {"warehouse"}
    raw_deps = {
        d.asset_key.path[1] for s in specs.values() for d in s.deps if d.asset_key.path[0] == "raw"
    }
    assert set(EXPORTS) <= raw_deps
    assert "grain" in specs["marts/attrition"].description.lower()
    checks = {c.name for c in warehouse_dbt.check_specs}
    assert any(name.startswith("expression_is_true_attrition") for name in checks)


def test_a_build_leaves_its_parse_for_the_next_build(tmp_path):
    from pipelines.defs.dbt import keep_partial_parse

    build, project = tmp_path / "warehouse_dbt-1", tmp_path / "target"
    build.mkdir()
    assert not keep_partial_parse(build, project)  # a failed parse leaves nothing to keep
    (build / "partial_parse.msgpack").write_bytes(b"parsed with this warehouse's profile")
    assert keep_partial_parse(build, project)
    assert (
        project / "partial_parse.msgpack"
    ).read_bytes() == b"parsed with this warehouse's profile"
    assert [p.name for p in project.iterdir()] == ["partial_parse.msgpack"]


def test_docs_site_is_cached_for_the_next_fresh_warehouse(tmp_path, monkeypatch):
    from pipelines.defs import dbt as dbt_defs

    monkeypatch.setattr(dbt_defs, "docs_cache_dir", lambda fp: tmp_path / "cache" / fp[:16])
    site = tmp_path / "warehouse" / "docs"
    site.mkdir(parents=True)
    for name in dbt_defs.DOCS_FILES:
        (site / name).write_text(name)
    first, second = "a" * 64, "b" * 64
    dbt_defs._cache_docs(site, dbt_defs.docs_cache_dir(first), first)
    assert dbt_defs.docs_are_current(dbt_defs.docs_cache_dir(first), first)
    assert not dbt_defs.docs_are_current(dbt_defs.docs_cache_dir(first), second)
    # a new project replaces the cached site: one site only
    dbt_defs._cache_docs(site, dbt_defs.docs_cache_dir(second), second)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [second[:16]]


def test_a_stale_project_is_parsed_once_and_a_warehouse_at_a_new_path_reuses_the_parse(tmp_path):
    """The CLI parses a fresh checkout with the run's settings before the definitions load, so
    the build reuses that parse instead of parsing the whole project a second time; and a
    warehouse at another path, with another pseudonym key, reuses it too (`talent-dbt`)."""
    import shutil
    import subprocess

    from dagster_dbt import DbtProject

    from pipelines.defs.dbt_cli import DBT_EXECUTABLE, build_args, ensure_manifest
    from pipelines.lib.project_files import DBT_PROJECT_DIR

    assert Path(DBT_EXECUTABLE).name == "talent-dbt"
    copy = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=shutil.ignore_patterns("target", "logs"))
    project = DbtProject(project_dir=copy, profiles_dir=copy)
    settings = Settings(sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "wh")
    assert ensure_manifest(settings, project).exists()
    assert (copy / "target" / "partial_parse.msgpack").exists()

    def parse(settings: Settings, **env: str) -> str:
        """What a build does next: dbt with the build's profile and vars, in that target."""
        return subprocess.run(
            [DBT_EXECUTABLE, "parse", *build_args(settings)[1:], "--project-dir", str(copy)]
            + ["--profiles-dir", str(copy), "--target-path", str(copy / "target")],
            env={**os.environ, **settings.dbt_env(), **env},
            cwd=copy,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    out = parse(settings)
    assert "Unable to do partial parsing" not in out, out
    elsewhere = Settings(
        sources_dir=tmp_path / "other" / "sources",
        warehouse_dir=tmp_path / "other" / "warehouse",
        pseudonym_key="another customer's key",
    )
    assert elsewhere.build_db.parent != settings.build_db.parent
    out = parse(elsewhere)
    assert "Unable to do partial parsing" not in out, out
    # the build file's name is the models' catalog: a new name is a new parse
    renamed = str(elsewhere.build_db.with_name("renamed.duckdb"))
    out = parse(elsewhere, TALENT_BUILD_DB=renamed)
    assert "Unable to do partial parsing because profile has changed" in out, out


def test_the_parse_check_ignores_only_the_folders_and_the_key():
    from dbt.adapters.duckdb.credentials import DuckDBCredentials

    from pipelines.lib.dbt_main import placeless

    def info(build: str, raw: str, key: str, threads: int = 2) -> list:
        profile = {
            "path": build,
            "schema": "main",
            "attach": [{"path": raw, "alias": "raw", "read_only": True}],
            "settings": {"threads": threads},
            "plugins": [
                {"module": "pipelines.lib.duckdb_plugin", "config": {"pseudonym_key": key}}
            ],
        }
        return placeless(DuckDBCredentials.from_dict(profile).connection_info())

    here = info("/a/build/talent.duckdb", "/a/raw.duckdb", "k1")
    assert here == info("/b/c/build/talent.duckdb", "/b/c/raw.duckdb", "k2")
    assert ("database", "talent") in here
    assert here != info("/a/build/other.duckdb", "/a/raw.duckdb", "k1")
    assert here != info("/a/build/talent.duckdb", "/a/raw2.duckdb", "k1")
    assert here != info("/a/build/talent.duckdb", "/a/raw.duckdb", "k1", threads=4)
