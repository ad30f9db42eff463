"""The one rule for what a run rebuilds (`pipelines/defs/versions.py`), decided before the run,
on a small graph and on the project's own definitions: one input changed at a time."""

# No `from __future__ import annotations`: Dagster inspects the type of `context`.
import json
from dataclasses import replace

import dagster as dg
import pytest

from pipelines.defs import versions
from pipelines.lib.settings import Settings

UP = dg.AssetKey("upstream")
DOWN = dg.AssetKey("downstream")


def upstream_asset(state: dict):
    """`upstream`, reporting the data version in `state`."""

    @dg.asset(key=UP, code_version="u1")
    def upstream() -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion(state["data"]))

    return upstream


@pytest.fixture
def instance():
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture
def state():
    return {"data": "a", "exists": True, "check_ok": True, "computed": 0, "reasons": ""}


def test_a_check_is_evaluated_only_when_its_data_or_rules_changed(instance, state):
    calls = []

    @dg.asset_check(asset=UP, blocking=True)
    def up_ok(context: dg.AssetCheckExecutionContext):
        key = dg.AssetCheckKey(UP, "up_ok")
        found = versions.check_is_current(context.instance, key, state.get("rules", "r1"))
        if not found.evaluate:
            return
        calls.append(found.data_version)
        yield dg.AssetCheckResult(
            passed=state["check_ok"],
            metadata={
                versions.CHECKED_DATA_VERSION: found.data_version,
                "rules_version": state.get("rules", "r1"),
            },
        )

    def go():
        return dg.materialize(
            [upstream_asset(state), up_ok], instance=instance, raise_on_error=False
        )

    go()
    go()
    assert len(calls) == 1  # same data version: the first evaluation stands
    state["data"] = "b"
    go()
    assert len(calls) == 2
    state["rules"] = "r2"
    go()
    assert len(calls) == 3
    state["check_ok"] = False
    state["data"] = "c"
    go()
    go()
    assert len(calls) == 5  # a failed blocking check is evaluated every time


def test_content_versions_follow_the_content_not_the_row_order():
    import duckdb

    with duckdb.connect() as con:
        con.execute("create table t as select * from (values (1, 'a'), (2, 'b')) v(i, s)")
        first = versions.content_version(con, "select * from t")
        con.execute(
            "create or replace table t as select * from (values (2, 'b'), (1, 'a')) v(i, s)"
        )
        assert versions.content_version(con, "select * from t") == first
        con.execute("insert into t values (3, 'c')")
        assert versions.content_version(con, "select * from t") != first


def code_versions(settings: Settings) -> dict[str, str]:
    """The code version of every asset a run computes (not the raw tables dbt reads that no
    asset of the graph writes: the load manifest, the retained names)."""
    from pipelines.defs import build_definitions

    graph = build_definitions(settings).resolve_asset_graph()
    return {
        k.to_user_string(): graph.get(k).code_version
        for k in graph.get_all_asset_keys()
        if graph.get(k).is_executable
    }


def test_each_setting_changes_the_code_version_of_what_reads_it(tmp_path):
    assumptions = tmp_path / "assumptions.yaml"
    from pipelines.lib.project_files import default_assumptions_file

    assumptions.write_text(default_assumptions_file().read_text())
    base = Settings(
        sources_dir=tmp_path, warehouse_dir=tmp_path / "wh", assumptions_file=assumptions
    )
    before = code_versions(base)
    assert before and all(before.values())
    changed = {
        "key": code_versions(replace(base, pseudonym_key="another key")),
        "group size": code_versions(replace(base, min_group_size=7)),
    }
    # the folders are not an input: a warehouse at another path is built the same way
    assert code_versions(replace(base, warehouse_dir=tmp_path / "elsewhere")) == before
    assumptions.write_text(assumptions.read_text() + "\n# an edited assumption file\n")
    changed["assumptions"] = code_versions(base)
    moved = {name: {k for k in before if after[k] != before[k]} for name, after in changed.items()}
    # the key changes every dbt model, nothing that only reads the marts
    assert "staging/stg_hris__employees" in moved["key"]
    assert "marts/certification_effect" not in moved["key"]
    assert "marts/roi_summary" not in moved["key"]
    # the assumptions change the ROI tables and nothing of dbt or the statistics
    assert "marts/roi_summary" in moved["assumptions"]
    assert not any(k.startswith(("staging/", "marts/certification")) for k in moved["assumptions"])
    # the minimum group size reaches dbt, the statistics and publishing
    assert {"marts/attrition", "marts/certification_effect", "warehouse/published"} <= moved[
        "group size"
    ]
    # the programme costs price with the assumptions, the programme statistics do not read
    # them; both suppress with the group size
    programme_marts = {"marts/programme_costs", "marts/time_to_certify", "marts/promotion_effect"}
    assert programme_marts & moved["assumptions"] == {"marts/programme_costs"}
    assert programme_marts <= moved["group size"]
    assert not programme_marts & moved["key"]


def test_a_check_no_run_has_evaluated_is_not_said_to_stand_from_a_run():
    """A first run whose step failed plans checks that never ran: the summary names them as
    never evaluated, not as kept from a run 'none'."""
    from pipelines.execution import NOT_EVALUATED, RunOutcome

    outcome = RunOutcome(
        success=False,
        checks_passed=3,
        checks_kept={
            "marts/attrition:unique_key": NOT_EVALUATED,
            "raw/employees:quality_suite": "abcdef1234567890",
        },
    )
    text = outcome.describe()
    assert "1 not evaluated again, their data unchanged: the evaluation of run abcdef12 stands" in (
        text
    )
    assert "1 never evaluated (their step failed or did not run)" in text
    assert "run none" not in text and "run never" not in text


def test_a_step_that_computes_says_why_each_change_with_its_first_assets():
    """`reasons()` (the log line; `because()`, the outputs' metadata) groups the changes: each
    with the first two assets it concerns and how many more, at most three changes; a step
    whose assets were all never computed says just that."""
    from pipelines.execution import RunOutcome

    def step(changes: dict[str, tuple[str, ...]]) -> versions.StepVerdict:
        return versions.StepVerdict(
            {dg.AssetKey(k): versions.Verdict(dg.AssetKey(k), c) for k, c in changes.items()}
        )

    code = "code or settings changed"
    assert step({"m/a": (code,), "m/b": (code,), "m/c": (code,)}).because() == {
        versions.COMPUTED_BECAUSE: f"{code}: m/a, m/b (and 1 more)"
    }
    assert step(
        {"m/a": ("new data in raw/x",), "m/b": (), "m/c": (code, "its table is missing")}
    ).because() == {
        versions.COMPUTED_BECAUSE: f"new data in raw/x: m/a; {code}: m/c; its table is missing: m/c"
    }
    many = step({f"m/{i}": (f"new data in raw/{i}",) for i in range(5)}).because()
    assert many[versions.COMPUTED_BECAUSE].endswith("new data in raw/2: m/2 (and 2 more reasons)")
    four = step({f"m/{i}": (f"new data in raw/{i}",) for i in range(4)}).reasons()
    assert four.endswith("new data in raw/2: m/2 (and 1 more reasons)")
    assert step({"m/a": ("never computed",), "m/b": ("never computed",)}).because() == {
        versions.COMPUTED_BECAUSE: "never computed"
    }
    # the summary: one line per step, or one line when nothing was computed before
    text = RunOutcome(success=True, because={"warehouse_dbt": f"{code}: m/a"}).describe()
    assert f"Computed because:\n  warehouse_dbt: {code}: m/a" in text
    fresh = RunOutcome(success=True, because=dict.fromkeys(("a", "b"), "never computed"))
    assert "Computed because: never computed before (a new warehouse)" in fresh.describe()


# --- the decision before the run (`versions.decide`), one input changed at a time ------------

MID = dg.AssetKey("middle")


def planned_graph(state: dict, code_version: str = "1", content: bool = False) -> dg.Definitions:
    """`upstream` -> `middle` -> `downstream`; `middle` reports its content as its data version
    when `content` (its next version is then known only once it ran)."""

    @dg.asset(key=UP, code_version="u1")
    def upstream() -> dg.MaterializeResult:
        return dg.MaterializeResult(data_version=dg.DataVersion(state["data"]))

    @dg.asset(
        key=MID,
        deps=[UP],
        code_version=code_version,
        metadata={versions.DATA_VERSION_OF: "content"} if content else None,
    )
    def middle() -> dg.MaterializeResult:
        state["ran"].append("middle")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(state["middle"]) if content else None
        )

    @dg.asset(key=DOWN, deps=[MID], code_version="d1")
    def downstream() -> None:
        state["ran"].append("downstream")

    return dg.Definitions(assets=[upstream, middle, downstream])


def decided(defs: dg.Definitions, instance, exists=lambda key: True) -> versions.Plan:
    return versions.decide(defs, instance, [MID, DOWN], exists)


def run_waves(defs: dg.Definitions, instance) -> list[set[str]]:
    """Upstream always, then each decided selection until nothing is left to decide (what
    `talent run` does): the assets each run computed."""
    job = defs.resolve_implicit_global_asset_job_def()
    job.execute_in_process(instance=instance, asset_selection=[UP])
    ran = []
    for _ in range(4):
        plan = decided(defs, instance)
        if not plan.selection:
            break
        job.execute_in_process(instance=instance, asset_selection=sorted(plan.selection, key=str))
        ran.append({k.to_user_string() for k in plan.selection})
    return ran


@pytest.mark.parametrize("content", [False, True], ids=["default version", "content version"])
def test_the_decision_runs_only_what_one_changed_input_reaches(instance, content):
    state = {"data": "a", "middle": "m1", "ran": []}
    # never computed: both in one run (Dagster runs `middle` first)
    assert run_waves(planned_graph(state, content=content), instance) == [{"middle", "downstream"}]
    # nothing changed: nothing runs, and each asset names the run that computed it
    plan = decided(planned_graph(state, content=content), instance)
    assert not plan.selection and set(plan.kept) == {MID, DOWN} and all(plan.kept.values())
    # new upstream data: `middle` runs; `downstream` runs with it unless `middle`'s content
    # came out the same
    state["data"], state["ran"] = "b", []
    waves = run_waves(planned_graph(state, content=content), instance)
    assert waves == ([{"middle", "downstream"}] if not content else [{"middle"}])
    # a code version changed: that asset and (default version) what it feeds
    state["ran"] = []
    plan = decided(planned_graph(state, code_version="2", content=content), instance)
    assert plan.because == (
        {
            "middle": "code or settings changed: middle",
            "downstream": "new data in middle: downstream",
        }
        if not content
        else {"middle": "code or settings changed: middle"}
    )
    assert (DOWN in plan.waiting) is content
    # content that does change reaches downstream in the next run
    state["middle"] = "m2"
    waves = run_waves(planned_graph(state, code_version="2", content=content), instance)
    assert waves == ([{"middle", "downstream"}] if not content else [{"middle"}, {"downstream"}])


def test_a_missing_table_reruns_its_asset_alone(instance):
    state = {"data": "a", "middle": "m1", "ran": []}
    run_waves(planned_graph(state), instance)
    plan = decided(planned_graph(state), instance, exists=lambda key: key != MID)
    # rebuilt with the same code and inputs, its data version stays: downstream is kept
    assert plan.selection == {MID} and plan.because == {"middle": "its table is missing: middle"}


def test_only_new_upstream_data_lets_dbt_build_incrementally(instance):
    """The dbt step builds its incremental models from all rows (--full-refresh) unless the
    decision found new upstream data its only reason (`Plan.new_data_only`, a run tag)."""
    state = {"data": "a", "middle": "m1", "ran": []}
    run_waves(planned_graph(state), instance)
    state["data"] = "b"
    defs = planned_graph(state)
    defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[UP]
    )
    instance_plan = decided(defs, instance)
    assert instance_plan.new_data_only == {"middle", "downstream"}
    assert json.loads(instance_plan.tags()[versions.NEW_DATA_ONLY_TAG]) == ["downstream", "middle"]
    code = decided(planned_graph(state, code_version="2"), instance)
    assert code.new_data_only == {"downstream"}  # middle: its code changed
    missing = decided(planned_graph(state), instance, exists=lambda key: key != UP)
    assert missing.because["middle"].startswith("new data in upstream")
    assert "downstream" in missing.new_data_only


def test_a_failed_blocking_check_holds_back_what_is_downstream_and_runs_its_asset_again(instance):
    state = {"data": "a", "middle": "m1", "ran": [], "check_ok": False}

    @dg.asset_check(asset=MID, blocking=True)
    def middle_ok():
        return dg.AssetCheckResult(passed=state["check_ok"])

    def graph() -> dg.Definitions:
        base = planned_graph(state)
        return dg.Definitions(assets=base.assets, asset_checks=[middle_ok])

    defs = graph()
    job = defs.resolve_implicit_global_asset_job_def()
    job.execute_in_process(instance=instance, raise_on_error=False)
    plan = decided(defs, instance)
    # the check did not pass: `middle` is computed (and checked) again, with `downstream`
    # after it in the same run, where Dagster holds it back while the check fails
    assert plan.because["middle"] == "its check middle_ok did not pass when last evaluated: middle"
    assert MID in plan.selection
    # were `middle` itself not to run (here: not part of the decision), `downstream` waits
    held = versions.decide(defs, instance, [DOWN], lambda key: True)
    assert held.blocked == {DOWN: "held back: middle's check middle_ok did not pass"}
    state["check_ok"] = True
    job.execute_in_process(instance=instance, asset_selection=[MID])
    assert not versions.decide(defs, instance, [DOWN], lambda key: True).blocked
