"""Drawing fidelity results: results.json (schema.py, results.py), per-sample details made while
judging (details.py), and the self-contained report.html (html.py, charts.py, assets.py).

Imports only ``pipeline.core``; it draws verdicts, never decides them.
"""
