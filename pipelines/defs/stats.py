"""Dagster definitions for stats (not built yet)."""

import dagster as dg

defs = dg.Definitions()
