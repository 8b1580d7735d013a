"""Benchmarks: ``python -m bench.<name> [--quick] [--json]``."""
