"""Dagster definitions for ingestion (not built yet)."""

import dagster as dg

defs = dg.Definitions()
