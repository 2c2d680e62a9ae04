"""The plugin run as a user runs it: ``pytest --tokfidelity-dataset=... --tokfidelity-report=...`` in a folder of
its own (the report tests and ``bench/bench_report.py`` both run it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = tuple(sorted(p.parent.name for p in (ROOT / "golden").glob("*/manifest.json")))  # every shipped dataset


def run_pytest(root: Path, out: Path, *args: str, datasets: str = "all") -> subprocess.CompletedProcess:
    """``pytest --tokfidelity-dataset=... --tokfidelity-report=out`` in root, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", f"--tokfidelity-dataset={datasets}",
           f"--tokfidelity-golden-dir={root / 'golden'}", f"--tokfidelity-state-dir={root / 'state'}",
           f"--tokfidelity-report={out}", *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
