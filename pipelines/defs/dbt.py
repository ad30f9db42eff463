"""Dagster definitions for dbt (not built yet)."""

import dagster as dg

defs = dg.Definitions()
