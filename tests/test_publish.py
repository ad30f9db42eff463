"""Publishing is atomic, keeps readers on their snapshot, and refuses personal data."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.publish import PublishError, clean_stale_temporaries, publish


def _build(path: Path, rows: int, extra_sql: str = "") -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("create schema if not exists marts")
        con.execute("create schema if not exists staging")
        con.execute("create schema if not exists restricted")
        con.execute("create or replace table restricted.coverage as select 2 as headcount")
        con.execute(
            f"create or replace table marts.coverage as select range as month, range * 5 as headcount from range({rows})"
        )
        con.execute("comment on table marts.coverage is 'grain: month'")
        con.execute("create or replace table staging.people as select 'a@b.example' as work_email")
        if extra_sql:
            con.execute(extra_sql)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_publish_copies_only_marts_with_comments(tmp_path):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    _build(build, 10)
    result = publish(build, published, run_id="r1")
    assert result.tables == {"marts.coverage": 10}
    with duckdb.connect(str(published), read_only=True) as con:
        schemas = {r[0] for r in con.execute("select schema_name from duckdb_tables()").fetchall()}
        assert schemas == {"marts", "main"}  # main holds publish_info only
        assert (
            con.execute(
                "select comment from duckdb_tables() where table_name='coverage'"
            ).fetchone()[0]
            == "grain: month"
        )
        assert con.execute("select run_id from publish_info").fetchone()[0] == "r1"
    assert not list(tmp_path.glob(".publishing-*"))


def test_reader_keeps_old_snapshot_while_new_file_is_published(tmp_path):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    _build(build, 3)
    publish(build, published)
    reader = duckdb.connect(str(published), read_only=True)
    try:
        _build(build, 7)
        publish(build, published)  # must not fail although a reader holds the file
        assert reader.execute("select count(*) from marts.coverage").fetchone()[0] == 3
    finally:
        reader.close()
    with duckdb.connect(str(published), read_only=True) as con:
        assert con.execute("select count(*) from marts.coverage").fetchone()[0] == 7


@pytest.mark.parametrize(
    "bad_sql",
    [
        "create table marts.leak as select 'x' as person_key, 75000 as annual_salary_usd",
        "create table marts.leak2 as select 'jane.doe@corp.example' as contact",
        "create table marts.leak3 as select 'Jane' as first_name",
    ],
)
def test_personal_data_is_refused_and_published_file_unchanged(tmp_path, bad_sql):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    _build(build, 3)
    publish(build, published)
    before = _digest(published)
    _build(build, 5, extra_sql=bad_sql)
    with pytest.raises(PublishError, match="personal data"):
        publish(build, published)
    assert _digest(published) == before
    assert not list(tmp_path.glob(".publishing-*"))


def test_missing_build_or_empty_marts_is_a_clear_error(tmp_path):
    with pytest.raises(PublishError, match="does not exist"):
        publish(tmp_path / "nope.duckdb", tmp_path / "talent.duckdb")
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    with pytest.raises(PublishError, match="has no tables"):
        publish(empty, tmp_path / "talent.duckdb")
    assert not (tmp_path / "talent.duckdb").exists()


def test_stale_temporary_from_a_killed_publish_is_removed(tmp_path):
    published = tmp_path / "talent.duckdb"
    stale = tmp_path / ".publishing-999-talent.duckdb"
    stale.write_bytes(b"half written")
    assert clean_stale_temporaries(published) == [stale]
    assert not stale.exists()


def test_published_file_opens_in_the_duckdb_cli(tmp_path):
    import shutil
    import subprocess

    cli = shutil.which("duckdb")
    if cli is None:
        pytest.skip("duckdb CLI not on PATH (it comes with `uv sync`)")
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    _build(build, 4)
    publish(build, published)
    out = subprocess.run(
        [
            cli,
            "-readonly",
            "-csv",
            str(published),
            "-c",
            "select sum(headcount) from marts.coverage",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().splitlines()[-1] == str(sum(5 * i for i in range(4)))  # as _build writes


@pytest.mark.parametrize(
    "column", ["headcount", "engineers", "n_engineers", "participants", "headcount_end"]
)
def test_publish_refuses_a_group_smaller_than_the_minimum(tmp_path, column):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    _build(build, 3, f"create table marts.teams as select 'a' as team, 4 as {column}")
    with pytest.raises(PublishError, match=rf"marts\.teams\.{column}: 1 row\(s\) count 1 to 4"):
        publish(build, published, min_group_size=5)
    assert not published.exists()
    # the same row, suppressed (NULL), or a group of the minimum size, is published
    for value in ("null", "5"):
        _build(
            build,
            3,
            f"create or replace table marts.teams as select 'a' as team, {value} as {column}",
        )
        publish(build, published, min_group_size=5)
    # the threshold is the setting's: 4 people pass a minimum of 4
    _build(build, 3, f"create or replace table marts.teams as select 'a' as team, 4 as {column}")
    publish(build, published, min_group_size=4)


def test_restricted_detail_is_never_published(tmp_path):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    _build(build, 3)  # restricted.coverage holds a group of 2
    publish(build, published, min_group_size=5)
    with duckdb.connect(str(published), read_only=True) as con:
        schemas = {r[0] for r in con.execute("select schema_name from duckdb_tables()").fetchall()}
    assert "restricted" not in schemas


def test_publish_refuses_text_that_quotes_a_group_smaller_than_the_minimum(tmp_path):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    planted = (
        "create or replace table marts.reasons as select * from (values "
        "('incident_rate_ratio', 'too little data: 12 engineers certified while observed'), "
        "('mttr_ratio', 'too little data: fewer than 5 engineers certified while observed'), "
        "('bootcamp', 'too little data: 3 engineers certified, with 2 incidents before'), "
        "('internal', 'too little data: 3 engineers certified, with 2 incidents before'), "
        "('attrition', null)) as t(metric, reason)"
    )
    _build(build, 3, planted)
    with pytest.raises(PublishError) as refused:
        publish(build, published, min_group_size=5)
    message = str(refused.value)
    assert "marts.reasons.reason: 2 row(s) quote a group of 1 to 4 people" in message
    assert '"3 engineers" in "too little data: 3 engineers certified' in message
    assert "fewer than 5" in message and "marts.reasons.metric" not in message
    assert not published.exists()
    # without the two planted rows, "12 engineers" and "fewer than 5 engineers" are published
    _build(build, 3, planted.replace("3 engineers", "fewer than 5 engineers"))
    publish(build, published, min_group_size=5)
    with duckdb.connect(str(published), read_only=True) as con:
        assert con.execute("select count(*) from marts.reasons").fetchone()[0] == 5
    # a number word is a number, and the minimum is the setting's
    _build(build, 3, "create or replace table marts.notes as select 'two leavers' as note")
    with pytest.raises(PublishError, match=r'marts\.notes\.note: 1 row\(s\).*"two leavers"'):
        publish(build, published, min_group_size=5)
    publish(build, published, min_group_size=2)
