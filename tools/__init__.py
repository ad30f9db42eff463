"""Development tools, kept out of the runtime package `pipelines`.

- `tools.generate`: a synthetic company's exports with planted, known effects (`python -m tools
  generate`), for the sample, the tests and the benchmark;
- `tools.bench`: the benchmark (`make bench`);
- `tools.contract_docs`, `tools.quality_docs`: regenerate the parts of `sources/README.md` and
  `docs/data-quality.md` that are rendered from the code.

They import `pipelines` (the product); the product never imports them.
"""
