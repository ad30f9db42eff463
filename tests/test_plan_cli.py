"""`talent plan` on a generated company's warehouse: plans it cannot meet are refused (exit 1)
with what is missing, a quarter too soon and a budget too small alike."""

from typer.testing import CliRunner

from pipelines.cli import app


def plan(shared_company, tmp_path, rows: list[str], *extra: str):
    path = tmp_path / "fleet_plan.csv"
    path.write_text("cluster,quarter,planned_gpus\n" + "\n".join(rows) + "\n")
    return CliRunner().invoke(
        app,
        [
            "plan",
            "--fleet-plan",
            str(path),
            "--warehouse-dir",
            str(shared_company.warehouse),
            "--sources",
            str(shared_company.sources),
            "--quarters",
            "8",
            *extra,
        ],
    )


def test_a_large_cluster_next_quarter_is_refused_naming_the_roles_short(shared_company, tmp_path):
    # the data end in 2026-Q3: a 5,000-GPU cluster staffed from 2026-Q4 needs a large team's
    # templates at once, and hires take a quarter to fill
    got = plan(shared_company, tmp_path, ["new-1,2026-Q4,5000"])
    assert got.exit_code == 1, got.output
    assert "no plan meets the team templates" in got.output
    assert "2026-Q4: " in got.output and "needs" in got.output and "missing" in got.output
    assert "Plan the growth later, or start earlier" in got.output


def test_a_budget_too_small_is_refused_with_what_it_buys(shared_company, tmp_path):
    # a medium cluster two years out: time enough to hire and certify, but not for 1,000 USD
    got = plan(shared_company, tmp_path, ["new-1,2028-Q3,500"], "--budget", "1000")
    assert got.exit_code == 1, got.output
    assert "the budget of 1,000 USD is" in got.output and "USD short" in got.output
    assert "Within the budget the templates lack" in got.output
