"""vitbench reference side: deterministic synthetic data, PyTorch reference modules,
the fixture exporter and the PyTorch timing harness.

See reference/README.md and fixtures/FORMAT.md.
"""
