# talent-metrics: every target bootstraps its own environment (uv from PyPI if missing, then
# `uv sync --frozen` against the committed uv.lock).

SHELL := /bin/bash
PYTHON ?= python3
# uv is used from PATH when present; otherwise it is installed from PyPI into .tools/.
UV := $(shell command -v uv 2>/dev/null || echo $(CURDIR)/.tools/bin/uv)
# Run history, schedules and sensor state of the Dagster instance live here (see README).
export DAGSTER_HOME ?= $(CURDIR)/.dagster
SOURCES ?= sources/sample
WAREHOUSE ?= warehouse

.PHONY: help setup run test dev lint format bench bench-scale clean postgres postgres-stop test-targets test-spark test-companies test-privacy

help:
	@echo "make run    - set up and run the whole pipeline on $(SOURCES) into $(WAREHOUSE)/"
	@echo "make test   - set up and run the test suite"
	@echo "make dev    - Dagster UI (and daemon: schedules, sensors) on http://127.0.0.1:3000"
	@echo "make lint   - ruff and sqlfluff"
	@echo "make bench  - benchmark at 50,000 employees (writes bench/results.json)"
	@echo "make bench-scale - the scale run: 50,000, 200,000 and 1,000,000 employees (about 40 minutes)"
	@echo "make postgres      - start a local PostgreSQL on 127.0.0.1:$(POSTGRES_PORT) (data in .postgres/)"
	@echo "make postgres-stop - stop it"
	@echo "make test-targets  - the pipeline on PostgreSQL and dbt on Spark, compared with DuckDB"
	@echo "make test-spark    - only the Spark half of test-targets"
	@echo "make test-companies - 22 generated companies run as the nightly and scanned for small groups, and further companies of the end-to-end tests"
	@echo "make test-privacy  - erasure and retention proven on whole runs of the sample"

$(UV):
	@echo "uv not found: installing it from PyPI into .tools/"
	$(PYTHON) -m venv $(CURDIR)/.tools
	$(CURDIR)/.tools/bin/pip install --quiet uv

# --compile-bytecode: every pipeline run and test worker imports Dagster, dbt and Great
# Expectations afresh; compiling once here saves that on every start (even where the
# environment sets PYTHONDONTWRITEBYTECODE).
.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --compile-bytecode
	@touch $@

# The dbt manifest the definitions read is prepared here (parsed when missing or older than a
# file of the dbt project; pipelines/defs/dbt_cli.py), never as a side effect of loading them.
setup: .venv/.synced
	@mkdir -p $(DAGSTER_HOME)
	@cp -n dagster.yaml $(DAGSTER_HOME)/dagster.yaml 2>/dev/null || true
	@$(UV) run python -c "from pipelines.defs.dbt_cli import ensure_manifest; ensure_manifest()"

# The bundled sample's report goes to dashboards/reports/ (another company's goes under its own
# warehouse folder: <warehouse-dir>/reports/).
REPORTS ?= dashboards/reports
run: setup
	$(UV) run talent run --sources $(SOURCES) --warehouse-dir $(WAREHOUSE) --reports-dir $(REPORTS)

# Two workers (the machine has two cores); each test module stays on one worker so its
# shared pipeline runs happen once. The dbt manifest is prepared once (setup), before the workers start.
PYTEST_ARGS ?= -n 2 --dist loadfile
test: setup
	$(UV) run pytest $(PYTEST_ARGS)

dev: setup
	$(UV) run dagster dev -w workspace.yaml --host 127.0.0.1 --port 3000

lint: setup
	$(UV) run ruff check pipelines tests tools
	$(UV) run ruff format --check pipelines tests tools
	$(UV) run sqlfluff lint dbt_project/models

format: setup
	$(UV) run ruff format pipelines tests tools
	$(UV) run ruff check --fix pipelines tests tools

bench: setup
	$(UV) run python -m tools.bench

# 50,000, 200,000 and 1,000,000 employees over 5 years, each generated and run end to end with
# the plain script beside it; writes `scale_run` into bench/results.json (about 40 minutes)
bench-scale: setup
	$(UV) run python -m tools.bench --scale
# A local PostgreSQL server (Debian's package) for development and the tests that need one: run
# as the unprivileged `postgres` user, data, socket and log in .postgres/, 127.0.0.1 only, on a
# port of its own so that another checkout's server does not collide. `source .postgres/env`
# afterwards puts its port, passwords and DSNs into the shell (tools/postgres_server.py).
POSTGRES_PORT ?= 55432
postgres: setup
	$(UV) run python -m tools.postgres_server start --port $(POSTGRES_PORT)

postgres-stop: setup
	$(UV) run python -m tools.postgres_server stop

# The whole pipeline with dbt on PostgreSQL, and the dbt project on Spark (a local session, Java
# 17), each compared with DuckDB row for row: minutes of pipeline, of dbt-postgres and of Spark's
# per-statement overhead, so not part of `make test`; .ci/run runs it after (with `make postgres`).
# Spark comes with the `spark` extra (pyproject.toml), installed here only.
# The PostgreSQL half runs without the extra: with pyspark installed, Great Expectations imports
# it, and its dependency check ends a Dagster run worker (SystemExit 0) in the daemon test.
test-targets: setup
	$(UV) run pytest -m targets --ignore=tests/test_spark_targets.py
	$(UV) sync --frozen --compile-bytecode --extra spark
	@rm -f .venv/.synced  # the next `make setup` syncs the environment back without the extra
	$(UV) run --frozen --extra spark pytest -m targets tests/test_spark_targets.py

test-spark: setup
	$(UV) sync --frozen --compile-bytecode --extra spark
	@rm -f .venv/.synced
	$(UV) run --frozen --extra spark pytest -m spark

# Twenty-two generated companies (300 to 20,000 employees, 2-4 years, seeds of their own),
# each generated and run as the nightly in a temporary folder of its own, two at a time: each
# must publish, and its published file must show no group of 1-4 people in a number or a text
# (tests/test_companies.py). 35-60 s of CPU a company, about 16 CPU minutes in all, so not
# part of `make test`, which scans the shared test company and a small young one; .ci/run runs
# it after. It also runs the end-to-end tests on the companies that repeat, on another shape,
# what `make test` shows on one: the report's consistency checks of the company where
# certification changes nothing and of a larger, older one (tests/test_report_consistency.py),
# and the planted effects of a second 3,000-employee company (tests/test_effects_e2e.py).
# -rA prints every company's line (seed, size, published, what it shows), passed or not.
test-companies: setup
	$(UV) run pytest -m companies -n 2 --dist load -rA

# Erasure and retention proven on whole runs of the sample: every byte searched after an
# erasure, marts compared with a warehouse built without the person (tests/test_privacy.py)
test-privacy: setup
	$(UV) run pytest -m privacy -n 2 --dist loadfile

clean:
	rm -rf $(WAREHOUSE) dashboards/reports bench/scratch .pytest_cache dbt_project/target dbt_project/logs
