"""Dagster definitions for report (not built yet)."""

import dagster as dg

defs = dg.Definitions()
