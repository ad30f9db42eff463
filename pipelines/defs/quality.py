"""Dagster definitions for quality (not built yet)."""

import dagster as dg

defs = dg.Definitions()
