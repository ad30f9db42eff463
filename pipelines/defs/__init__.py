"""Dagster wiring, one module per part of the graph; each exposes `defs`.

Reusable logic lives in `pipelines.lib` free of Dagster; these modules only wire it.
"""
