"""The parts of erasure, retention and encryption at rest on small inputs: a file rewritten
without a person's records, the keyed hashes that recognise them, the archive cipher and its
errors, the retention policy's settings. The whole path on the sample: tests/test_privacy.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipelines.lib.ingest.reader import read_table
from pipelines.lib.privacy.crypto import (
    MAGIC,
    ArchiveCipher,
    ArchiveKeyError,
    archive_problem,
    new_key,
    rotate,
)
from pipelines.lib.privacy.retention import policy_of, pseudonym_edits
from pipelines.lib.privacy.rewrite import blank_mentions, rewrite_records
from pipelines.lib.privacy.subjects import (
    ErasedHashes,
    Subject,
    keyed_hash,
    name_key,
    retained_value,
)
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.pseudonym import pseudonym
from pipelines.lib.settings import Settings, SettingsError

FILE = (
    b"employee_id,first_name,last_name,manager_id,note\n"
    b"E1,Ann,Lee,,plain\n"
    b'E2,Bob,Ray,E1,"quoted, with a comma"\n'
    b'E1,Ann,Lee,,"two\nlines"\n'
    b"E17,Cy,Zed,E2,mentions E1 in text\n"
    b"E1,broken\n"
)


def _records(data: bytes) -> list[list[str]]:
    return read_table(data, "x.csv").records


def test_the_persons_records_go_and_a_reference_to_them_is_blanked():
    person = Subject(ids={"E1"})
    # lines 2 and 4 are E1's records (as the raw rows' _line say); line 6 is rejected
    new, dropped = rewrite_records(FILE, "x.csv", {2, 4}, blank_mentions(person), person)
    assert dropped == 3  # two records and the rejected line naming them
    assert _records(new) == [
        ["E2", "Bob", "Ray", "", "quoted, with a comma"],
        ["E17", "Cy", "Zed", "E2", "mentions E1 in text"],
    ]
    # records that do not change keep their bytes and their line numbers
    assert new.split(b"\n")[5] == b"E17,Cy,Zed,E2,mentions E1 in text"
    assert read_table(new, "x.csv").lines == [3, 6]


def test_ids_are_compared_whole():
    person = Subject(ids={"E1"})
    assert person.mentioned_in("E1;x") and not person.mentioned_in("E17,Cy")
    assert not Subject(ids={"17"}).mentioned_in("2017-01-01,E170")


def test_keyed_hashes_recognise_a_value_only_under_their_key():
    erased = ErasedHashes("k1", {("email", keyed_hash("email", " Ann.Lee@X.example ", "k1"))})
    assert erased.matches("email", "ann.lee@x.example")
    assert not ErasedHashes("k2", erased.hashes).matches("email", "ann.lee@x.example")
    new, _ = rewrite_records(
        b"learner_email,course\nann.lee@x.example,A\nbo@x.example,B\n",
        "e.csv",
        {2},
        blank_mentions(erased),
        erased,
    )
    assert new == b"learner_email,course\n\nbo@x.example,B\n"


def test_pseudonyms_are_the_same_wherever_the_id_stands():
    person = Subject(ids={"E1"}, first_last={("Ann", "Lee")}, names={"ann lee"})
    edits = pseudonym_edits(person, "key")
    new, dropped = rewrite_records(FILE, "x.csv", set(), edits.other, person, {2: edits.own})
    records = _records(new)
    token = "R-" + keyed_hash("id", "E1", "key")[:16]
    assert dropped == 1  # the rejected line naming them; no record goes
    assert records[0][:3] == [
        token,
        "retained-" + keyed_hash("name", "ann", "key")[:12],
        "retained-" + keyed_hash("name", "lee", "key")[:12],
    ]
    assert records[1][3] == token  # the manager reference, same pseudonym
    assert records[2][:3] == [token, "Ann", "Lee"]  # not named as theirs: names stay
    assert b"E1," not in new


def test_a_list_of_people_loses_the_person_and_keeps_the_others():
    """A capacity project's leads (a Jira epic's "Led by", a list of ids or e-mails): the
    erased person's entries go, the project's row and the other leads stay; a field that is
    their full name (the epic's assignee) is blanked."""
    person = Subject(ids={"E1"}, emails={"a@x.io"}, names={"ann lee"})
    data = (
        b"Summary,Assignee,Custom field (Led by)\n"
        b'fra-1 expansion,Ann  Lee,"Bob Ray, Ann Lee"\n'
        b'ams-2 expansion,Bob Ray,"E1; b@x.io"\n'
        b'par-3 expansion,Bob Ray,"Bob Ray, Cy Zed"\n'
    )
    new, dropped = rewrite_records(
        data, "Jira Capacity_2026-01.csv", set(), blank_mentions(person), person
    )
    assert dropped == 0
    assert _records(new) == [
        ["fra-1 expansion", "", "Bob Ray"],
        ["ams-2 expansion", "Bob Ray", "b@x.io"],
        ["par-3 expansion", "Bob Ray", "Bob Ray, Cy Zed"],
    ]
    assert new.split(b"\n")[3] == b'par-3 expansion,Bob Ray,"Bob Ray, Cy Zed"'  # untouched


def test_a_retained_name_still_makes_the_same_full_name_wherever_it_stands():
    """The HRIS's first and last name (the person's own row) and their full name in a change
    they implemented or a project's leads give the same pseudonymous full name, so the name
    links the change and the project to them as before; another lead is left as it was."""
    person = Subject(ids={"E1"}, first_last={("Ann", "Lee")}, names={"ann lee"})
    edits = pseudonym_edits(person, "key")
    full = edits.other("Ann Lee")
    assert full == f"{edits.own('Ann')} {edits.own('Lee')}" and "ann" not in full.lower()
    assert edits.other("Bob Ray, Ann Lee") == f"Bob Ray, {full}"
    assert edits.other("Bob Ray, Cy Zed") is None
    assert pseudonym_edits(person, "other key").other("Ann Lee") != full


def test_the_cipher_round_trips_and_names_the_variable_when_it_cannot(tmp_path: Path):
    key = new_key()
    path = tmp_path / "archive" / "employees" / "f.csv"
    ArchiveCipher(key).write(path, b"employee_id\nE1\n")
    assert path.read_bytes().startswith(MAGIC) and b"E1" not in path.read_bytes()
    assert ArchiveCipher(key).read(path) == b"employee_id\nE1\n"
    with pytest.raises(ArchiveKeyError, match="TALENT_ARCHIVE_KEY is not set"):
        ArchiveCipher().read(path)
    with pytest.raises(ArchiveKeyError, match="TALENT_ARCHIVE_KEY does not open"):
        ArchiveCipher(new_key()).read(path)
    assert "TALENT_ARCHIVE_KEY is not set" in archive_problem(tmp_path / "archive", ArchiveCipher())
    assert archive_problem(tmp_path / "archive", ArchiveCipher(key)) is None
    with pytest.raises(SettingsError, match="TALENT_ARCHIVE_KEY is not a Fernet key"):
        Settings.from_env({"TALENT_ARCHIVE_KEY": "short"})


def test_rotation_encrypts_plain_files_and_finishes_an_interrupted_run(tmp_path: Path):
    old, fresh = new_key(), new_key()
    archive = tmp_path / "archive"
    ArchiveCipher(old).write(archive / "a" / "1.csv", b"one")
    (archive / "a" / "2.csv").write_bytes(b"two")  # archived before there was a key
    ArchiveCipher(fresh).write(archive / "a" / "3.csv", b"three")  # rotated before a kill
    done = rotate(archive, ArchiveCipher(fresh, old))
    assert (done.rewritten, done.already) == (2, 1)
    for name, text in (("1", b"one"), ("2", b"two"), ("3", b"three")):
        assert ArchiveCipher(fresh).read(archive / "a" / f"{name}.csv") == text


def test_retention_periods_come_from_the_variables_over_the_file(tmp_path: Path):
    policy_file = tmp_path / "retention.yaml"
    policy_file.write_text("personal_years: 3\nsalary_years: 1.5\n")
    base = {"TALENT_RETENTION_FILE": str(policy_file)}
    assert policy_of(Settings.from_env(base)).salary_years == 1.5
    both = Settings.from_env({**base, "TALENT_RETENTION_YEARS": "2"})
    assert (policy_of(both).personal_years, policy_of(both).salary_years) == (2.0, 1.5)
    assert policy_of(Settings.from_env({})).describe() is None
    with pytest.raises(SettingsError, match="TALENT_RETENTION_YEARS"):
        Settings.from_env({"TALENT_RETENTION_YEARS": "0"})


def test_a_person_is_found_by_any_of_their_e_mails_with_every_id_and_name():
    import duckdb

    from pipelines.lib.privacy.subjects import identify

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE employees AS SELECT * FROM (VALUES "
        "('E1', 'Ann', 'Lee', 'ann.lee@x.example'), ('E1', 'Ann', 'Lee-Ray', 'Ann.Ray@X.example'), "
        "('E2', 'Bob', 'Ray', 'bob@x.example')) AS t(employee_id, first_name, last_name, work_email)"
    )
    person = identify(con, [], [" ANN.RAY@x.example"])
    assert person.ids == {"E1"}
    assert person.emails == {"ann.lee@x.example", "ann.ray@x.example"}
    assert person.names == {"ann lee", "ann lee-ray"}


def test_the_ids_file_takes_one_id_a_line_and_comments(tmp_path: Path):
    from pipelines.commands.erase import _ids_from

    listed = tmp_path / "ids.txt"
    listed.write_text("# requests of March\nE1\n\nE2  # by e-mail\n")
    assert _ids_from(listed) == ["E1", "E2"]


def test_a_salary_past_its_period_goes_from_the_persons_rows_only():
    from pipelines.lib.privacy.retention import salary_edits

    person = Subject(ids={"E1"})
    edits = salary_edits(person, {95000.0})
    data = (
        b"employee_id;fte;annual_salary_usd;skill_level\n"
        b"E1;1,00;95.000,00;2\n"  # German locale: the same salary
        b"E2;1,00;95000.00;2\n"  # someone else earning the same: theirs stays
    )
    new, dropped = rewrite_records(data, "j.csv", set(), lambda v: None, person, {2: edits.own})
    assert dropped == 0
    assert new.split(b"\n")[1:3] == [b"E1;1,00;;2", b"E2;1,00;95000.00;2"]


def test_a_retained_leaver_arriving_again_gets_the_same_pseudonyms():
    from pipelines.lib.ingest.reader import split_export_bytes
    from pipelines.lib.privacy.screen import screen_arrival
    from pipelines.lib.privacy.subjects import retained_value

    key = "key"
    erased = ErasedHashes(
        key,
        retained={
            ("id", keyed_hash("id", "E1", key)),
            ("email", keyed_hash("email", "a@x.io", key)),
        },
    )
    data = (
        b"employee_id,first_name,last_name,work_email,hire_date\n"
        b"E1,Ann,Lee,a@x.io,2020-01-01\n"
        b"E2,Bob,Ray,b@x.io,2020-01-01\n"
    )
    split = lambda export: split_export_bytes(data, export, "employees_2020-01.csv")  # noqa: E731
    screened = screen_arrival(erased, data, ("employees",), "employees_2020-01.csv", split)
    first = _records(screened.data)[0]
    assert first[:4] == [
        retained_value("id", "E1", key),
        retained_value("name", "Ann", key),
        retained_value("name", "Lee", key),
        retained_value("email", "a@x.io", key),
    ]
    assert _records(screened.data)[1] == ["E2", "Bob", "Ray", "b@x.io", "2020-01-01"]
    assert screened.pseudonymised == 1 and screened.dropped == 0


def _macros(name: str):
    """A dbt macro file's macros, rendered by plain Jinja (the DuckDB ones take no dbt global)."""
    import jinja2

    source = (DBT_PROJECT_DIR / "macros" / name).read_text()
    return jinja2.Environment().from_string(source).module


def _linking_connection(key: str):
    import duckdb

    from pipelines.lib.duckdb_plugin import register

    con = duckdb.connect()
    register(con, key)  # pseudonym() as dbt-duckdb defines it
    return con


def test_the_retained_names_key_is_the_name_links_own():
    """`raw.retained_names.name_key` is computed in Python; the name link computes `name_key`
    in DuckDB with the macro `normalised_name` and the plugin's `pseudonym()`: the same value
    for names with accents, capitals and stray blanks."""
    normalise = _macros("normalised_name.sql").default__normalised_name
    con = _linking_connection("a key")
    names = [
        "Ann Lee",
        "  José   MÜLLER ",
        "Zoë\tO'Brien\n",
        "Ñuño  Peña-Łukasz",
        "İlkay Çelik",
        "Dvořák Antonín",
        "Ann\u00a0Lee",
    ]
    for name in names:
        (expected,) = con.execute(f"SELECT pseudonym({normalise('?')})", [name]).fetchone()
        assert name_key(name, "a key") == expected, name
    assert name_key("Ann Lee", "a key") == name_key(" ann  LEE", "a key")
    assert name_key("Ann Lee", "a key") != name_key("Ann Lee", "another key")


def _person_names(con, key: str) -> dict[str, tuple[str | None, bool]]:
    """The dbt model stg_hris__person_names run on the connection's tables: name_key ->
    (person_key, is_ambiguous)."""
    import jinja2

    normalise = _macros("normalised_name.sql").default__normalised_name
    sql = (DBT_PROJECT_DIR / "models" / "staging" / "stg_hris__person_names.sql").read_text()
    rendered = (
        jinja2.Environment()
        .from_string(sql)
        .render(
            ref=lambda model: model,
            source=lambda schema, table: f"{schema}_{table}",
            normalised_name=normalise,
        )
    )
    return {k: (p, a) for k, p, a in con.execute(rendered).fetchall()}


def test_a_shared_name_stays_ambiguous_after_one_of_its_holders_is_retained():
    """Ann Lee (E1, a leaver) and ANN  LEE (E2, employed) share a name: it links no one. Once
    the policy pseudonymises E1 (their HRIS row and `raw.retained_names`, as
    `pseudonym_edits` gives them), neither Ann Lee nor E1's retained name links anyone, while
    the unique names (Bob Ray, retained too, and Cy Zed) link their people: what a recount of
    the names as they were before the policy gives."""
    key = "a key"
    con = _linking_connection(key)
    people = [
        ("E1", "Ann", "Lee"),
        ("E2", "ANN ", " lee"),
        ("E3", "Bob", "Ray"),
        ("E4", "Cy", "Zed"),
    ]
    con.execute(
        "CREATE TABLE stg_hris__employees (person_key VARCHAR, _file_id VARCHAR, _line INT)"
    )
    con.execute(
        "CREATE TABLE raw_employees (employee_id VARCHAR, first_name VARCHAR, last_name VARCHAR, "
        "_file_id VARCHAR, _line INT)"
    )
    con.execute("CREATE TABLE raw_retained_names (retained_name VARCHAR, name_key VARCHAR)")
    for line, (emp, first, last) in enumerate(people, start=2):
        con.execute("INSERT INTO stg_hris__employees VALUES (?, 'f', ?)", [f"p-{emp}", line])
        con.execute("INSERT INTO raw_employees VALUES (?, ?, ?, 'f', ?)", [emp, first, last, line])
    before = _person_names(con, key)
    # the independent recount: people per name before the policy ran
    holders = Counter(" ".join(f"{first} {last}".lower().split()) for _, first, last in people)
    expected = {
        name_key(f"{first} {last}", key): (
            (None, True)
            if holders[" ".join(f"{first} {last}".lower().split())] > 1
            else (f"p-{emp}", False)
        )
        for emp, first, last in people
    }
    assert before == expected
    assert before[name_key("Ann Lee", key)] == (None, True)

    leavers = Subject(
        ids={"E1", "E3"}, first_last={("Ann", "Lee"), ("Bob", "Ray")}, names={"bob ray"}
    )
    edits = pseudonym_edits(leavers, key)
    for emp, first, last in people[::2]:
        con.execute(
            "UPDATE raw_employees SET first_name = ?, last_name = ? WHERE employee_id = ?",
            [edits.own(first), edits.own(last), emp],
        )
    con.executemany(
        "INSERT INTO raw_retained_names VALUES (?, ?)", sorted(edits.retained_names.items())
    )
    retained_ann = retained_value("name", "Ann Lee", key)
    retained_bob = retained_value("name", "Bob Ray", key)
    assert edits.retained_names == {
        retained_ann: name_key("Ann Lee", key),
        retained_bob: name_key("Bob Ray", key),
    }
    after = _person_names(con, key)
    # a change naming Ann Lee, or E1 by their retained name, links no one, as before
    assert after[name_key("Ann Lee", key)] == (None, True)
    assert after[pseudonym(retained_ann, key)] == (None, True)
    # the unique names link as before, Bob Ray by his retained name only
    assert after[pseudonym(retained_bob, key)] == expected[name_key("Bob Ray", key)]
    assert after[name_key("Cy Zed", key)] == expected[name_key("Cy Zed", key)]
    assert name_key("Bob Ray", key) not in after and len(after) == 4
    # without the retained names, E2 would take Ann Lee's changes: what the table prevents
    con.execute("DELETE FROM raw_retained_names")
    assert _person_names(con, key)[name_key("Ann Lee", key)] == ("p-E2", False)
