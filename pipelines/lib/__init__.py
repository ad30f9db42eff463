"""Building blocks free of Dagster wiring: contracts, ingestion, generator, statistics, ROI,
quality suites, publishing, report rendering. Each is testable on its own."""
