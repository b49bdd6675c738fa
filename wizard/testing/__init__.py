"""Support for tests, examples and benchmarks (nothing the CLI imports)."""
