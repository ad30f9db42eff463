"""Dagster definitions for publish (not built yet)."""

import dagster as dg

defs = dg.Definitions()
