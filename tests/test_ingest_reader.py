"""Reading one export file: encodings, delimiters, locales, line numbers, reasons.

Expected values are read by eye from the hand-made files in tests/fixtures/ingest/.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import pytest

from pipelines.lib.ingest import FileError, parse_export_bytes, read_export_file

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def rows_by_line(parsed):
    return {r["_line"]: r for r in parsed.rows.to_pylist()}


def test_bom_crlf_reordered_aliased_columns_with_extra_and_quoted_newline():
    parsed = read_export_file(FIXTURES / "employees_bom_crlf.csv", "employees")
    assert (parsed.encoding, parsed.delimiter, parsed.locale) == ("utf-8-sig", ",", "en")
    rows = rows_by_line(parsed)
    # the record of E002 spans lines 3-4, so E003 sits on physical line 5
    assert sorted(rows) == [2, 3, 5]
    assert parsed.rows_total == 3 and parsed.rejected == []
    ada, bob, cy = rows[2], rows[3], rows[5]
    assert ada["employee_id"] == "E001"
    assert ada["work_email"] == "ada@example.com"  # "  ada@example.com " trimmed
    assert ada["last_name"] == "Lovelace" and ada["first_name"] == "Ada"  # LASTNAME, firstName
    assert ada["hire_date"] == date(2020, 1, 15)
    assert ada["termination_date"] is None and ada["regrettable"] is None  # empty -> NULL
    assert json.loads(ada["_extra"]) == {"cost_centre": "CC-1"}
    assert bob["termination_reason"] == "resignation:\nmoved abroad"
    assert bob["termination_type"] == "voluntary"  # "Voluntary" matched case-insensitively
    assert bob["regrettable"] is True and cy["regrettable"] is False  # Yes / no
    assert bob["_extra"] is None  # its cost_centre is empty
    assert cy["termination_date"] == date(2022, 12, 31)
    assert parsed.ignored_columns == ("cost_centre",)


def test_german_hris_file_in_windows_1252_with_decimal_comma():
    parsed = read_export_file(FIXTURES / "job_history_de.csv", "job_history")
    assert (parsed.encoding, parsed.delimiter, parsed.locale) == ("cp1252", ";", "de")
    rows = rows_by_line(parsed)
    assert sorted(rows) == [2, 3, 4] and parsed.rejected == []
    assert rows[2]["effective_date"] == date(2020, 1, 15)  # header "Gültig ab"
    assert rows[2]["site"] == "München"  # header "Standort", value decoded from cp1252
    assert rows[2]["annual_salary_usd"] == 98500.5  # "98.500,50"
    assert rows[2]["job_title"] == "Betriebsingenieurin"
    assert rows[3]["fte"] == 0.8 and rows[3]["annual_salary_usd"] == 130000.0
    assert rows[4]["effective_date"] == date(2021, 7, 1)  # "1.7.2021"
    assert rows[4]["employment_type"] == "employee"  # "Employee"
    assert rows[4]["annual_salary_usd"] is None
    assert rows[2]["skill_level"] == 2 and rows[2]["manager_id"] == "E009"


def test_german_month_columns():
    parsed = read_export_file(FIXTURES / "contractor_hours_de.csv", "contractor_hours")
    rows = rows_by_line(parsed)
    assert parsed.locale == "de"
    assert rows[2]["month"] == date(2024, 3, 1) and rows[2]["hours"] == 1234.5
    assert rows[3]["month"] == date(2024, 4, 1) and rows[3]["hourly_rate_usd"] == 295.5


def test_garbage_rows_are_rejected_with_physical_line_numbers_and_reasons():
    parsed = read_export_file(FIXTURES / "incidents_garbage.csv", "incidents")
    assert sorted(rows_by_line(parsed)) == [2, 3, 10]
    rejected = {r.line_number: r for r in parsed.rejected}
    assert sorted(rejected) == [5, 6, 8, 9]  # line 7 is blank, lines 3-4 are one record
    assert parsed.rows_total == 7
    assert 'opened_at: "2024-13-45 10:00" is not a valid timestamp' in rejected[5].reason
    assert 'severity: "critical" is not one of sev1, sev2, sev3, sev4' in rejected[6].reason
    assert "wrong column count: expected 10 fields" in rejected[8].reason
    assert "found 11" in rejected[8].reason
    assert "service: missing required value" in rejected[9].reason
    assert 'gpus_affected: "two" is not a valid integer' in rejected[9].reason
    assert (
        rejected[6].raw_line
        == "INC-4,Bad severity,compute,dgx-muc-1,critical,2024-03-04 10:00,,,1,5"
    )
    good = rows_by_line(parsed)
    assert good[3]["title"] == "Switch down\nsecond line of title"
    assert good[3]["severity"] == "sev1"  # "SEV1"
    assert good[3]["opened_at"] == datetime(2024, 3, 2, 8, 0)  # "...T08:00:00Z"
    assert good[10]["gpus_affected"] == 0 and good[10]["downtime_minutes"] == 11.0


def test_truncated_last_row_is_quarantined_and_the_rest_loads():
    parsed = read_export_file(FIXTURES / "incidents_truncated.csv", "incidents")
    assert [r["incident_number"] for r in parsed.rows.to_pylist()] == ["INC-10"]
    (bad,) = parsed.rejected
    assert bad.line_number == 3 and "truncated" in bad.reason
    assert bad.raw_line == "INC-11,Power,facility,dgx-ber-2,sev1,2024-04-02 09:"


def test_unterminated_quote_does_not_swallow_rows_silently():
    parsed = read_export_file(FIXTURES / "certifications_unterminated_quote.csv", "certifications")
    assert [r["attempt_id"] for r in parsed.rows.to_pylist()] == ["A-1"]
    (bad,) = parsed.rejected
    assert bad.line_number == 3
    assert "quote opened on line 3 is never closed" in bad.reason
    assert "lines 3-4" in bad.reason


@pytest.mark.parametrize(
    ("fixture", "export", "phrases"),
    [
        (
            "employees_missing_column.csv",
            "employees",
            ["employees_missing_column.csv", "hire_date", "lacks required column", "nothing"],
        ),
        (
            "employees_truncated_header.csv",
            "employees",
            [
                "employees_truncated_header.csv",
                "cut off after 'work_em'",
                "truncated",
                "re-delivery",
            ],
        ),
        (
            "certifications_cp1252.csv",
            "certifications",
            ["certifications_cp1252.csv", "UTF-8", "line 2", "0xfc"],
        ),
        ("responders_empty.csv", "responders", ["responders_empty.csv", "empty", "header line"]),
    ],
)
def test_unreadable_files_raise_an_error_naming_file_problem_and_fix(fixture, export, phrases):
    with pytest.raises(FileError) as err:
        read_export_file(FIXTURES / fixture, export)
    for phrase in phrases:
        assert phrase in str(err.value)


def test_windows_1252_is_accepted_only_where_the_contract_allows_it():
    body = "engagement_id;vendor;month;team;hours;hourly_rate_usd\nG-1;Müller AG;03.2024;t;1;2\n"
    parsed = parse_export_bytes(body.encode("cp1252"), "contractor_hours", "c.csv")
    assert parsed.encoding == "cp1252" and parsed.rows.to_pylist()[0]["vendor"] == "Müller AG"


def test_duplicate_header_column_is_a_file_error():
    body = b"cluster,as_of_date,site,gpu_count,GPU_COUNT\nc,2024-01-31,s,1,2\n"
    with pytest.raises(FileError, match="column 'gpu_count' twice"):
        parse_export_bytes(body, "gpu_fleet", "gpu_fleet_2024-01.csv")


def test_missing_optional_column_is_null_and_blank_lines_keep_line_numbers():
    header = (
        b"employee_id;effective_date;division;team;role_family;skill_level;site;employment_type;fte"
    )
    body = (
        header + b"\r\n\r\nE1;31.01.2024;AI;t;ops;2;Munich;employee;1\r\n;;;;;;;;\r\n"
        b"E2;2024-01-31;AI;t;ops;3;Berlin;employee;0,5\r\n"
    )
    parsed = parse_export_bytes(body, "job_history", "job_history_2024-01.csv")
    rows = rows_by_line(parsed)
    assert sorted(rows) == [3, 5] and parsed.rows_total == 2 and parsed.rejected == []
    assert rows[3]["annual_salary_usd"] is None and rows[3]["effective_date"] == date(2024, 1, 31)
    assert rows[5]["effective_date"] == date(2024, 1, 31)  # ISO accepted in a German file
    assert rows[5]["fte"] == 0.5


def test_english_only_export_rejects_german_formats_instead_of_guessing():
    body = b"cluster;as_of_date;site;gpu_count\nc1;31.01.2024;Munich;1.024\n"
    parsed = parse_export_bytes(body, "gpu_fleet", "gpu_fleet_2024-01.csv")
    assert (parsed.delimiter, parsed.locale, parsed.rows.num_rows) == (";", "en", 0)
    reason = parsed.rejected[0].reason
    assert 'as_of_date: "31.01.2024" is not a valid date (expected YYYY-MM-DD)' in reason
    assert 'gpu_count: "1.024" is not a valid integer' in reason


def test_german_dates_in_an_english_only_export_are_rejected():
    body = b"attempt_id,learner_email,certification_code,exam_date,result\nA-1,a@x,CKA,03.02.2024,pass\n"
    parsed = parse_export_bytes(body, "certifications", "certifications_2024-02.csv")
    assert parsed.locale == "en" and parsed.rows.num_rows == 0
    assert (
        'exam_date: "03.02.2024" is not a valid date (expected YYYY-MM-DD)'
        in parsed.rejected[0].reason
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("YES", True),
        ("Ja", True),
        ("1", True),
        ("false", False),
        ("no", False),
        ("NEIN", False),
        ("0", False),
        ("", None),
    ],
)
def test_boolean_words(value, expected):
    body = (
        "employee_id,first_name,last_name,work_email,hire_date,regrettable\n"
        f"E1,A,B,a@x,2020-01-01,{value}\n"
    ).encode()
    parsed = parse_export_bytes(body, "employees", "employees_2020-01.csv")
    assert parsed.rows.to_pylist()[0]["regrettable"] is expected


def test_unknown_boolean_word_names_the_accepted_words():
    body = b"employee_id,first_name,last_name,work_email,hire_date,regrettable\nE1,A,B,a@x,2020-01-01,maybe\n"
    (bad,) = parse_export_bytes(body, "employees", "employees_2020-01.csv").rejected
    assert 'regrettable: "maybe" is not a yes/no value' in bad.reason and "nein" in bad.reason


@pytest.mark.parametrize(
    ("delimiter", "value", "expected"),
    [
        (",", "12.5", 12.5),
        (",", '"1,234.5"', 1234.5),
        (",", "+3", 3.0),
        (";", "12,5", 12.5),
        (";", "1.234,5", 1234.5),
        (";", "1.234", 1234.0),
    ],
)
def test_decimal_numbers_per_locale(delimiter, value, expected):
    header = delimiter.join(
        ["engagement_id", "vendor", "month", "team", "hours", "hourly_rate_usd"]
    )
    month = "03.2024" if delimiter == ";" else "2024-03"
    body = f"{header}\n" + delimiter.join(["G", "V", month, "t", value, "1"]) + "\n"
    parsed = parse_export_bytes(body.encode(), "contractor_hours", "c.csv")
    assert parsed.rows.to_pylist()[0]["hours"] == expected


@pytest.mark.parametrize(
    ("delimiter", "month", "value"), [(",", "2024-03", "-3"), (";", "03.2024", "-1.234,5")]
)
def test_a_negative_number_is_read_and_then_judged_by_its_row_rule(delimiter, month, value):
    # read as a number (not "not a valid decimal"), then quarantined by hours_in_range
    header = delimiter.join(
        ["engagement_id", "vendor", "month", "team", "hours", "hourly_rate_usd"]
    )
    body = f"{header}\n" + delimiter.join(["G", "V", month, "t", value, "1"]) + "\n"
    parsed = parse_export_bytes(body.encode(), "contractor_hours", "c.csv")
    assert parsed.rows.num_rows == 0
    (rejected,) = parsed.rejected
    assert rejected.line_number == 2
    assert rejected.reason.startswith(f'hours_in_range: hours "{value}" must be at least 0')


@pytest.mark.parametrize("value", ["12.5", "1e3", "ten"])
def test_integer_columns_reject_non_whole_numbers(value):
    body = f"cluster,as_of_date,site,gpu_count\nc,2024-01-31,s,{value}\n".encode()
    parsed = parse_export_bytes(body, "gpu_fleet", "gpu_fleet_2024-01.csv")
    assert parsed.rows.num_rows == 0
    assert f'gpu_count: "{value}" is not a valid integer' in parsed.rejected[0].reason


def test_timestamps_with_offset_are_converted_to_utc():
    body = (
        b"incident_number,responder_email,role,assigned_at\n"
        b"I-1,a@x,primary,2024-03-02T08:00:00+02:00\nI-2,b@x,primary,2024-03-02 08:00\n"
    )
    rows = parse_export_bytes(body, "responders", "responders_2024-03.csv").rows.to_pylist()
    assert rows[0]["assigned_at"] == datetime(2024, 3, 2, 6, 0)
    assert rows[1]["assigned_at"] == datetime(2024, 3, 2, 8, 0)


def test_files_without_quotes_take_a_fast_path_with_the_same_results():
    """A quote anywhere switches to the csv module; both paths must agree row for row."""
    body = (
        "cluster,as_of_date,site,gpu_model,gpu_count\n"
        "c1,2024-01-31,Munich,H100,8\n"
        "\n"
        " , , , , \n"
        "c2,2024-01-31,Berlin,H100\n"
        "c3,2024-01-31,Paris,{model},x\n"
        "c4,2024-01-31,Rome,H200,16,extra"
    )
    plain = parse_export_bytes(body.format(model="A100").encode(), "gpu_fleet", "f.csv")
    quoted = parse_export_bytes(body.format(model='"A100"').encode(), "gpu_fleet", "f.csv")
    assert plain.rows.to_pylist() == quoted.rows.to_pylist()
    assert [r["_line"] for r in plain.rows.to_pylist()] == [2]
    assert [(r.line_number, r.reason) for r in plain.rejected] == [
        (r.line_number, r.reason) for r in quoted.rejected
    ]
    assert [r.line_number for r in plain.rejected] == [5, 6, 7]
    assert plain.rows_total == quoted.rows_total == 4
    assert "truncated" in plain.rejected[-1].reason  # the last line has no line break


FLEET_HEADER = "cluster,as_of_date,site,gpu_model,gpu_count,cost_centre\n"


PLAIN_CASES = [
    ("plain, an extra column", FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,CC-1\n", True),
    ("no final line break", FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,", True),
    ("UTF-8 BOM", "\ufeff" + FLEET_HEADER + "c1,2024-01-31,München,H100,8,\n", True),
    (
        "values the typing rejects, blanks around values",
        FLEET_HEADER + "c1,2024-01-31,\u00a0Munich ,H100,x,\nc2,31.01.2024,Rome,H200,16,\n",
        True,
    ),
    (
        "German locale",
        "cluster;as_of_date;site;gpu_model;gpu_count\nc1;31.01.2024;Köln;H100;8\n",
        True,
    ),
    (
        "a blank line",
        FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,\n\nc2,2024-01-31,Rome,H200,16,\n",
        False,
    ),
    ("bare delimiters", FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,\n , ,\u00a0, , ,\n", False),
    ("two line breaks at the end", FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,\n\n", None),
    ("a line of another width", FLEET_HEADER + "c1,2024-01-31,Munich,H100\n", False),
    ("a quote", FLEET_HEADER + 'c1,2024-01-31,"Munich",H100,8,\n', False),
    ("CRLF", FLEET_HEADER.replace("\n", "\r\n") + "c1,2024-01-31,Munich,H100,8,\r\n", True),
    (
        "lone CR, a value the typing rejects",
        FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,\rc2,2024-01-31,Rome,H200,x,\r\n",
        True,
    ),
    (
        "a blank CRLF line",
        FLEET_HEADER + "c1,2024-01-31,Munich,H100,8,\r\n\r\nc2,x,y,z,1,\n",
        False,
    ),
    ("header only", FLEET_HEADER, False),
]


@pytest.mark.parametrize(("name", "data", "arrow"), PLAIN_CASES, ids=[c[0] for c in PLAIN_CASES])
def test_arrow_cut_of_plain_files_agrees_with_the_general_path(monkeypatch, name, data, arrow):
    """Plain UTF-8 files are cut by Arrow's CSV reader; anything else falls back, and both
    give the same rows, line numbers, rejects (with their raw lines) and file facts."""
    from pipelines.lib.ingest import reader

    raw = data.encode("utf-8")
    taken = reader._split_plain_arrow(raw, reader.EXPORTS["gpu_fleet"], "f.csv") is not None
    if arrow is not None:
        assert taken is arrow, name
    fast = parse_export_bytes(raw, "gpu_fleet", "f.csv")
    monkeypatch.setattr(reader, "_split_plain_arrow", lambda *args: None)
    general = parse_export_bytes(raw, "gpu_fleet", "f.csv")
    assert fast.rows.to_pylist() == general.rows.to_pylist(), name
    assert fast.rejected == general.rejected, name
    facts = ("encoding", "delimiter", "locale", "rows_total", "ignored_columns")
    assert [getattr(fast, f) for f in facts] == [getattr(general, f) for f in facts], name


def test_arrow_cut_reads_windows_1252_files_through_the_general_path():
    from pipelines.lib.ingest import reader

    raw = "employee_id;first_name;last_name;work_email;hire_date\nE1;Jürgen;Groß;j@x;01.02.2020\n"
    data = raw.encode("cp1252")
    assert reader._split_plain_arrow(data, reader.EXPORTS["employees"], "e.csv") is None
    parsed = parse_export_bytes(data, "employees", "e.csv")
    assert parsed.encoding == "cp1252" and parsed.rows.to_pylist()[0]["last_name"] == "Groß"


def test_typed_rows_come_back_by_file_and_line_whatever_order_duckdb_gives():
    import pyarrow as pa

    from pipelines.lib.ingest import reader

    table = pa.table({"_file": [0, 1, 0, 1, 0], "_line": [3, 2, 2, 2, 5], "v": list("abcde")})
    ordered = reader._in_file_order(table)
    assert ordered["v"].to_pylist() == ["c", "a", "e", "b", "d"]  # (1, 2) keeps b before d
    assert reader._in_file_order(ordered) is ordered  # already in order: left as it is
