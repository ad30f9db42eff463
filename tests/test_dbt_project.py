"""Fast checks of the dbt project and its Dagster wiring (no warehouse build)."""

from __future__ import annotations

import json
import os
import re
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


@pytest.mark.parametrize(
    "key",
    [
        "k",
        "Jefe",
        "x" * 64,
        "a key longer than SHA-256's block of 64 bytes, hashed first " * 2,
        "schlüssel mit 'quote'",
    ],
)
def test_duckdb_function_matches_python_and_keeps_null(key):
    values = ["E1", "", "élodie.müller@example.com", "日本", "what do ya want for nothing?"]
    with duckdb.connect() as con:
        register(con, key)
        got = [con.execute("select pseudonym(?)", [v]).fetchone()[0] for v in values]
        assert con.execute("select pseudonym(null)").fetchone() == (None,)
    assert got == [pseudonym(v, key) for v in values]


def test_the_dbt_plugin_defines_the_function_on_every_cursor(monkeypatch):
    """The profile names the variable that holds the key; the plugin reads the key there."""
    from pipelines.lib.duckdb_plugin import Plugin

    monkeypatch.setenv("A_KEY_VARIABLE", "k")
    plugin = Plugin("pseudonyms", {"pseudonym_key_env": "A_KEY_VARIABLE"})
    with duckdb.connect() as con:
        plugin.configure_connection(con)
        cursor = plugin.configure_cursor(con.cursor())
        assert cursor.execute("select pseudonym('E1')").fetchone() == (pseudonym("E1", "k"),)
    monkeypatch.delenv("A_KEY_VARIABLE")
    with pytest.raises(ValueError, match="no key in A_KEY_VARIABLE"):
        Plugin("pseudonyms", {"pseudonym_key_env": "A_KEY_VARIABLE"})
    with pytest.raises(ValueError, match="the profile names none"):
        Plugin("pseudonyms", {})


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
NAME_LINKS = {
    "stg_hris__person_names.sql",
    "stg_incidents__responders.sql",
    "stg_changes__changes.sql",
    "stg_changes__capacity_leads.sql",
}
# name columns of the tools that list people by name; e-mail (or id) columns linked by value
NAME_COLUMNS = ("first_name", "last_name", "responder_name", "implementer_name", "led_by_name")
# the one model that reads pay from raw, in schema restricted, and keeps only aggregates
PAY_READERS = {"restricted_salary_bands.sql"}


def test_staging_sql_never_selects_names_or_salaries():
    personal = {c.name for e in EXPORTS.values() for c in e.columns if c.personal}
    for sql in (DBT_PROJECT_DIR / "models").rglob("*.sql"):
        text = sql.read_text()
        allowed = {"work_email", "learner_email", "responder_email", "implementer_email"}
        allowed |= {"led_by"}
        if sql.name in NAME_LINKS:
            allowed |= set(NAME_COLUMNS)
        if sql.name in PAY_READERS:
            assert sql.parent.name == "restricted", f"{sql.name} reads pay outside restricted"
            allowed |= {"annual_salary_usd"}
        for column in personal - allowed:
            assert column not in text, f"{sql.name} mentions {column}"


def test_names_are_only_read_inside_a_pseudonym():
    """The name link tables read a name only to normalise it, and a normalised name leaves its
    model only as pseudonym(...): inline, or as the column `name_normalised` (person_names
    counts the people of each name before it pseudonymises the far fewer names), which the
    model's final select reads only inside a pseudonym."""
    for name in NAME_LINKS:
        text = (DBT_PROJECT_DIR / "models" / "staging" / name).read_text()
        for column in NAME_COLUMNS:
            for line in text.splitlines():
                line = line.strip()
                if line == f"{{{{ unnest_list(split_list('{column}')) }}}} as lead_name":
                    # a list of names is split into items, each then read only as a pseudonym
                    assert "pseudonym({{ normalised_name('lead_name') }})" in text, name
                    continue
                if column in line and not line.startswith(("--", "where", "{{ current_rows(")):
                    assert "pseudonym({{ normalised_name(" in line or (
                        line.startswith("{{ normalised_name(")
                        and line.endswith(" as name_normalised")
                    ), f"{name}: {line}"
        if "name_normalised" in text:
            assert text.rstrip().endswith("select * from final"), name
            final = text[text.index("final as (") :].replace("pseudonym(name_normalised)", "")
            assert "name_normalised" not in final, f"{name}: the final select reads a name"


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
    args = build_args(s, full_refresh=False)
    assert args[:2] == ["build", "--vars"]
    # no sources.yml: no precedence between tools, the latest delivery wins
    assert json.loads(args[2]) == {
        "min_group_size": 7,
        "scope_division": "Team 'Ops'",
        "source_precedence": {},
    }
    # unit tests check the SQL, not the data: the test suite runs them, the nightly does not
    assert args[3:] == ["--exclude-resource-type", "unit_test"]
    # unless told otherwise, the incremental staging models are built from all rows
    assert build_args(s) == [*args, "--full-refresh"]
    # the company names its system of record: the order reaches dbt as a var
    (tmp_path / "sources.yml").write_text("system_of_record:\n  hris: Workday\n")
    hris = {"tools": ["workday"], "rule": "system of record"}
    assert json.loads(build_args(s)[2])["source_precedence"] == {
        "employees": hris,
        "job_history": hris,
        "contractor_hours": hris,
    }


def test_a_model_s_code_version_follows_its_sql_its_yml_and_the_project(tmp_path, monkeypatch):
    from pipelines.defs import dbt as dbt_defs

    yml = tmp_path / "models" / "marts" / "a.yml"
    yml.parent.mkdir(parents=True)
    yml.write_text("version: 2\n")
    props = {"patch_path": "talent_metrics://models/marts/a.yml"}
    first = dbt_defs.node_code_version(props, "sha-of-the-sql", tmp_path)
    assert dbt_defs.node_code_version(props, "sha-of-the-sql", tmp_path) == first
    assert dbt_defs.node_code_version(props, "sha-of-other-sql", tmp_path) != first
    yml.write_text("version: 2\n# a new test\n")
    assert dbt_defs.node_code_version(props, "sha-of-the-sql", tmp_path) != first
    changed = dbt_defs.node_code_version(props, "sha-of-the-sql", tmp_path)
    monkeypatch.setattr(dbt_defs, "project_version", lambda: "another dbt or macro")
    assert dbt_defs.node_code_version(props, "sha-of-the-sql", tmp_path) != changed


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
    # every model and seed is versioned, and the statistics' panels are versioned by content
    assert all(spec.code_version for spec in specs.values())
    from pipelines.defs.dbt import content_versioned

    manifest = json.loads(Path(dbt_manifest).read_text())
    assert set(content_versioned(manifest)) == {
        dg.AssetKey(["intermediate", "int_engineer_months_complete"]),
        dg.AssetKey(["intermediate", "int_incident_responses_complete"]),
        dg.AssetKey(["intermediate", "int_programme_episodes_complete"]),
    }


def test_only_content_versioned_results_and_what_depends_on_them_wait_for_dbt_to_finish():
    """The build's results are recorded while dbt runs, except those of a model whose data
    version is its content (read from the file after dbt has let it go), of the models built on
    it (a multi-asset reports an asset after its upstream assets) and of their checks."""
    from pipelines.defs.dbt import holds, waits_for_build

    a, b, c, d = (dg.AssetKey(["intermediate", n]) for n in "abcd")

    @dg.multi_asset(
        specs=[
            dg.AssetSpec(a),
            dg.AssetSpec(b, deps=[a]),
            dg.AssetSpec(c, deps=[b]),
            dg.AssetSpec(d, deps=[a]),
        ],
        check_specs=[dg.AssetCheckSpec("rows", asset=b), dg.AssetCheckSpec("rows", asset=d)],
    )
    def build():
        yield from ()

    waiting = waits_for_build(build, {b: "intermediate.b"})
    assert waiting == {b, c}
    out = {key: build.get_output_name_for_asset_key(key) for key in (a, b, c, d)}
    assert [holds(dg.Output(None, output_name=out[k]), waiting, build) for k in (a, b, c, d)] == [
        False,
        True,
        True,
        False,
    ]
    assert holds(dg.AssetCheckResult(asset_key=b, check_name="rows", passed=True), waiting, build)
    assert not holds(
        dg.AssetCheckResult(asset_key=d, check_name="rows", passed=True), waiting, build
    )
    assert waits_for_build(build, {}) == set()


def test_every_fresh_warehouse_starts_from_the_project_s_one_parse(tmp_path):
    """The CLI parses a stale checkout with the run's settings before the definitions load, and
    each warehouse's target folder starts from that parse (`seed_parse`): the pipeline's
    profile (paths relative to the warehouse, the key's variable named, not the key) renders
    the same for every warehouse and key, so dbt reuses the parse instead of parsing the whole
    project again. dbt itself decides: the same
    parse with the warehouse's absolute paths is refused."""
    import shutil
    import subprocess

    from dagster_dbt import DbtProject

    from pipelines.defs.dbt_cli import (
        DBT_EXECUTABLE,
        PARSE_FILE,
        ensure_manifest,
        seed_parse,
        vars_args,
    )

    copy = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=shutil.ignore_patterns("target", "logs"))
    project = DbtProject(project_dir=copy, profiles_dir=copy)
    settings = Settings(sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "wh")
    assert ensure_manifest(settings, project).exists()
    assert (copy / "target" / PARSE_FILE).exists()

    def parse(settings: Settings, env: dict[str, str]) -> str:
        """What a warehouse's first dbt command does: dbt with the build's profile and vars,
        in that warehouse's target folder."""
        settings.warehouse_dir.mkdir(parents=True, exist_ok=True)
        target = settings.warehouse_dir / "build" / "dbt-target"
        assert seed_parse(target, project)
        assert not seed_parse(target, project)  # a folder keeps its own parse
        return subprocess.run(
            [DBT_EXECUTABLE, "parse", *vars_args(settings), "--project-dir", str(copy)]
            + ["--profiles-dir", str(copy), "--target-path", str(target)],
            env={**os.environ, **env},
            cwd=copy,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    for name, key in (("another", settings.pseudonym_key), ("a third", "another key")):
        other = settings.replace(warehouse_dir=tmp_path / name, pseudonym_key=key)
        out = parse(other, other.dbt_env(in_warehouse=True))
        assert "Unable to do partial parsing" not in out, out
    absolute = settings.replace(warehouse_dir=tmp_path / "absolute")
    out = parse(absolute, absolute.dbt_env())
    assert "Unable to do partial parsing because profile has changed" in out, out


def test_the_docs_site_is_rendered_in_process_from_the_project_s_parse(tmp_path, monkeypatch):
    """`generate_docs` runs dbt through `dbtRunner` in the run's process: the site is written,
    dbt reuses the project's parse (it would rewrite the parse file had it parsed again), and
    the environment dbt's profile read is given back as it was."""
    import subprocess

    from pipelines.defs.dbt import DOCS_FILES, dbt_project, generate_docs, target_dir
    from pipelines.defs.dbt_cli import PARSE_FILE

    started: list[str] = []
    popen = subprocess.Popen

    def recorded(args, *rest, **kwargs):
        started.append(str(args))
        return popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recorded)
    settings = Settings(sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "wh")
    before = dict(os.environ)
    written = generate_docs(settings)
    assert [p.name for p in written] == list(DOCS_FILES)
    page = (settings.docs_dir / "index.html").read_text()
    assert "stg_hris__employees" in page and len(page) > 1_000_000  # the manifest, inlined
    project_parse = Path(dbt_project.project_dir) / "target" / PARSE_FILE
    assert (target_dir(settings) / PARSE_FILE).read_bytes() == project_parse.read_bytes()
    assert dict(os.environ) == before
    # no dbt process (dbt itself asks `uname -p` for its run's metadata)
    assert not [c for c in started if "dbt" in c], started


def test_a_docs_failure_says_what_dbt_said_and_leaves_the_environment(tmp_path, monkeypatch):
    from pipelines.defs.dbt import generate_docs

    settings = Settings(sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "wh")
    full = settings.dbt_env(in_warehouse=True)
    monkeypatch.delenv("TALENT_BUILD_DB", raising=False)
    monkeypatch.setattr(
        Settings,
        "dbt_env",
        lambda self, in_warehouse=False: {k: v for k, v in full.items() if k != "TALENT_BUILD_DB"},
    )
    before = dict(os.environ)
    with pytest.raises(dg.Failure, match="TALENT_BUILD_DB") as failed:
        generate_docs(settings)
    assert "the warehouse itself is unaffected" in failed.value.description
    assert dict(os.environ) == before


def test_talent_dbt_answers_version_as_dbt_does_and_runs_dbt_otherwise():
    """dagster-dbt asks its executable `--version` to tell dbt-core from Fusion; `talent-dbt`
    answers from the package metadata (no dbt start-up) with the version plain dbt prints."""
    import re
    import subprocess

    from pipelines.defs.dbt_cli import DBT_EXECUTABLE

    assert Path(DBT_EXECUTABLE).name == "talent-dbt"
    plain = Path(DBT_EXECUTABLE).with_name("dbt")

    def found(cmd: list[str]) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return re.search(r"(\d+\.\d+\.\d+)", out).group(1)  # dagster-dbt's own pattern

    assert found([DBT_EXECUTABLE, "--version"]) == found([str(plain), "--version"])
    ran = subprocess.run([DBT_EXECUTABLE, "list", "--help"], capture_output=True, text=True)
    assert ran.returncode == 0 and "--resource-type" in ran.stdout


def test_talent_dbt_names_a_workdir_it_cannot_start_in(tmp_path):
    """The pipeline's profile paths are relative to TALENT_DBT_WORKDIR; a folder that is not
    there stops talent-dbt before dbt starts, with advice that names the variable."""
    import subprocess

    from pipelines.defs.dbt_cli import DBT_EXECUTABLE

    missing = tmp_path / "no such warehouse"
    env = {**os.environ, "TALENT_DBT_WORKDIR": str(missing)}
    ran = subprocess.run([DBT_EXECUTABLE, "parse"], env=env, capture_output=True, text=True)
    assert ran.returncode != 0
    assert f"TALENT_DBT_WORKDIR={missing}" in ran.stderr and "warehouse folder" in ran.stderr


def _suppression_macro(target_type: str = "duckdb", spark_rounds: int = 8):
    import types

    import jinja2

    def refuse(message):
        raise AssertionError(message)

    def var(name, default=None):
        return {"min_group_size": 5, "suppression_rounds_spark": spark_rounds}[name]

    source = (DBT_PROJECT_DIR / "macros" / "suppression.sql").read_text()
    return (
        jinja2.Environment()
        .from_string(
            source,
            globals={
                "var": var,
                "target": types.SimpleNamespace(type=target_type),
                "exceptions": types.SimpleNamespace(raise_compiler_error=refuse),
            },
        )
        .module
    )


def _suppressed_by_hand(rows, lines, k=5):
    """suppress_small_groups' rule written out row by row: hidden when 1..k-1 people or
    unknown; then, round after round until a round hides nothing, over every line in turn: a
    line with exactly one hidden row hides its smallest shown non-empty row (ties by the order
    of the key columns), or, when it has none, every row of the line; all lines of a pass are
    judged on the rows hidden before it. The reason: the first that hid it. Returns the hidden
    flags, the reasons and how many rounds hid something."""
    size = [r["n"] or 0 for r in rows]
    hidden = [r["n"] is None or 1 <= r["n"] <= k - 1 for r in rows]
    reason = [f"fewer than {k} people" if h else None for h in hidden]
    rounds = 0
    while True:
        before = list(hidden)
        for line in lines:
            members = {}
            for i, r in enumerate(rows):
                members.setdefault(tuple(r[c] for c in line), []).append(i)
            picked = []
            for ids in members.values():
                if sum(hidden[i] for i in ids) != 1:
                    continue
                shown = [i for i in ids if not hidden[i] and size[i] > 0]
                if shown:
                    best = min(shown, key=lambda i: (size[i], rows[i]["a"], rows[i]["b"]))
                    picked.append(
                        (
                            best,
                            "complementary: the line ({}) would give a hidden row "
                            "back by subtraction",
                        )
                    )
                else:
                    picked += [
                        (i, "the line ({}) could not be protected: hidden whole")
                        for i in ids
                        if not hidden[i]
                    ]
            for i, why in picked:
                hidden[i] = True
                reason[i] = why.format(", ".join(line))
        if hidden == before:
            return hidden, reason, rounds
        rounds += 1


def _cells(rng):
    return [
        {"a": a, "b": b, "n": rng.choice([None, 0, 2, 3, 5, 6, 7, 8, 9, 10, 12, 20, 30])}
        for a in range(rng.randint(2, 6))
        for b in range(rng.randint(2, 6))
        if rng.random() < 0.95
    ]


def test_small_group_suppression_follows_its_rule_row_by_row_to_a_fixed_point():
    """The SQL of `suppress_small_groups` (a recursive CTE, one round a step, the reasons
    written at the end) against the rule written out in Python, on random two-way tables with
    empty and unknown cells and many ties; the tables include some that need three rounds or
    more and lines that can only be hidden whole. The Spark form (rounds written out) gives the
    same result on every table that needs no more rounds than it writes out."""
    import random

    kwargs = dict(size="n", measures=["n", "m"], lines=["a", "b"], order_by="a, b", keep=["a", "b"])
    recursive = _suppression_macro().suppress_small_groups("cells", **kwargs)
    written_out = _suppression_macro("spark", 4).suppress_small_groups("cells", **kwargs)
    assert "recursive" in recursive and "recursive" not in written_out
    rng = random.Random(7)
    con = duckdb.connect()
    complements = deep = whole = 0
    for _ in range(120):
        rows = _cells(rng)
        if not rows:
            continue
        con.execute("create or replace table cells (a integer, b integer, n integer, m double)")
        con.executemany(
            "insert into cells values (?, ?, ?, ?)",
            [(r["a"], r["b"], r["n"], None if r["n"] is None else r["n"] / 2) for r in rows],
        )
        hidden, reason, rounds = _suppressed_by_hand(rows, [["a"], ["b"]])
        expected = {
            (r["a"], r["b"]): (
                None if h else r["n"],
                None if h or r["n"] is None else r["n"] / 2,
                h,
                why,
            )
            for r, h, why in zip(rows, hidden, reason, strict=True)
        }
        for sql in [recursive] + ([written_out] if rounds <= 4 else []):
            got = {
                (a, b): tuple(rest)
                for a, b, *rest in con.execute(
                    f"select a, b, n, m, suppressed, suppression_reason from ({sql})"
                ).fetchall()
            }
            assert got == expected, (rows, rounds)
        complements += sum(w is not None and w.startswith("complementary") for w in reason)
        whole += sum(w is not None and w.endswith("hidden whole") for w in reason)
        deep += rounds >= 3
    # the tables exercise every part of the rule, not only the primary
    assert complements > 100 and whole > 5 and deep > 3, (complements, whole, deep)


def test_dbt_s_cursors_run_with_the_profile_s_duckdb_settings(tmp_path):
    """The profile gives DuckDB its settings when dbt-duckdb opens the build file
    (`config_options`), not as SET statements on each node's cursor: a query dbt runs sees
    them, and they are not DuckDB's defaults (which a lost setting would fall back to)."""
    import subprocess

    from pipelines.defs.dbt_cli import DBT_EXECUTABLE, seed_parse, vars_args

    profile = yaml.safe_load((DBT_PROJECT_DIR / "profiles.yml").read_text())
    options = profile["talent_metrics"]["outputs"]["dev"]["config_options"]
    names = sorted(options)

    def shown(con) -> dict[str, str]:
        values = con.execute(
            f"select {', '.join(f'current_setting({n!r})::varchar' for n in names)}"
        ).fetchone()
        return dict(zip(names, values, strict=True))

    with duckdb.connect(config={k: str(v) for k, v in options.items()}) as con:
        expected = shown(con)
    with duckdb.connect() as con:
        defaults = shown(con)
    assert {n for n in names if expected[n] != defaults[n]} >= {
        "memory_limit",
        "preserve_insertion_order",
    }

    settings = Settings(sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "wh")
    settings.build_db.parent.mkdir(parents=True)
    duckdb.connect(str(settings.raw_db)).close()  # the profile attaches it read-only
    target = settings.build_db.parent / "dbt-target"
    seed_parse(target)
    query = "select " + ", ".join(f"current_setting('{n}')::varchar as {n}" for n in names)
    ran = subprocess.run(
        [DBT_EXECUTABLE, "show", "--inline", query, "--output", "json", "--log-format", "text"]
        + [*vars_args(settings), "--target-path", str(target)]
        + ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)],
        env={**os.environ, **settings.dbt_env(in_warehouse=True)},
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    rows = json.loads(ran.stdout[ran.stdout.index("{") :])["show"]
    assert {n: str(v) for n, v in rows[0].items()} == expected


def test_the_definitions_read_a_prepared_manifest_and_only_dagster_dev_prepares_it(
    tmp_path, monkeypatch
):
    """Loading the definitions never parses the dbt project (`make setup` and `talent run`
    prepare it): a missing or outdated manifest is an error that says how to prepare it;
    under `dagster dev` (Dagster's DAGSTER_IS_DEV_CLI) it is prepared, as project_dbt does."""
    import os
    import shutil

    from dagster_dbt import DbtProject

    from pipelines.defs.dbt_cli import ManifestNotPrepared, prepared_manifest

    copy = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=shutil.ignore_patterns("target", "logs"))
    project = DbtProject(project_dir=copy, profiles_dir=copy)
    monkeypatch.delenv("DAGSTER_IS_DEV_CLI", raising=False)
    with pytest.raises(ManifestNotPrepared, match="make setup"):
        prepared_manifest(project)
    assert not (copy / "target" / "manifest.json").exists()
    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")
    manifest = prepared_manifest(project)
    assert manifest == copy / "target" / "manifest.json" and manifest.exists()
    monkeypatch.delenv("DAGSTER_IS_DEV_CLI")
    assert prepared_manifest(project) == manifest  # prepared: read as it is
    model = next((copy / "models" / "marts").glob("*.sql"))
    os.utime(model, (manifest.stat().st_mtime + 10,) * 2)  # a model edited since
    with pytest.raises(ManifestNotPrepared, match="older than the dbt project"):
        prepared_manifest(project)
