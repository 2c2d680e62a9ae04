"""tokfidelity's pytest plugin: per-sample fidelity suites over golden datasets."""
