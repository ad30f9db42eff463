"""A step keeps its outputs only while its inputs, code and settings are those it computed from."""

from __future__ import annotations

import duckdb

from pipelines.lib import fingerprint

STEP, OUTPUTS = "step", ["marts.result"]


def _db(tmp_path, values: list[int]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(tmp_path / "build.duckdb"))
    con.execute("create schema if not exists intermediate")
    con.execute("create schema if not exists marts")
    con.execute("create or replace table intermediate.inputs (v integer, label varchar)")
    con.executemany("insert into intermediate.inputs values (?, ?)", [[v, f"n{v}"] for v in values])
    return con


def _fp(con, *extra: str) -> str:
    return fingerprint.inputs_fingerprint(con, ["intermediate.inputs"], *extra)


def test_outputs_are_current_only_for_the_same_inputs(tmp_path):
    con = _db(tmp_path, [1, 2, 3])
    fp = _fp(con, "setting=5")
    assert not fingerprint.is_current(con, STEP, fp, OUTPUTS)  # nothing remembered yet
    con.execute("create table marts.result as select 1 as x")
    fingerprint.remember(con, STEP, fp)
    assert fingerprint.is_current(con, STEP, fp, OUTPUTS)
    # the same rows in another order: the same inputs
    con.execute(
        "create or replace table intermediate.inputs as select * from intermediate.inputs order by v desc"
    )
    assert fingerprint.is_current(con, STEP, _fp(con, "setting=5"), OUTPUTS)
    # another setting, or one value changed, or a row repeated: not current
    assert not fingerprint.is_current(con, STEP, _fp(con, "setting=6"), OUTPUTS)
    con.execute("update intermediate.inputs set label = 'changed' where v = 2")
    assert not fingerprint.is_current(con, STEP, _fp(con, "setting=5"), OUTPUTS)
    con.execute("update intermediate.inputs set label = 'n2' where v = 2")
    con.execute("insert into intermediate.inputs values (3, 'n3')")
    assert not fingerprint.is_current(con, STEP, _fp(con, "setting=5"), OUTPUTS)


def test_a_missing_output_is_never_current(tmp_path):
    con = _db(tmp_path, [1])
    fp = _fp(con)
    fingerprint.remember(con, STEP, fp)
    assert not fingerprint.is_current(con, STEP, fp, OUTPUTS)


def test_package_source_changes_with_the_code(tmp_path, monkeypatch):
    pkg = tmp_path / "fp_probe_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = fingerprint.package_source("fp_probe_pkg")
    assert fingerprint.package_source("fp_probe_pkg") == before
    (pkg / "model.py").write_text("Y = 2\n")
    assert fingerprint.package_source("fp_probe_pkg") != before
