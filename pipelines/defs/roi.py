"""Dagster definitions for roi (not built yet)."""

import dagster as dg

defs = dg.Definitions()
