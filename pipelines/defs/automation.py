"""Dagster definitions for automation (not built yet)."""

import dagster as dg

defs = dg.Definitions()
