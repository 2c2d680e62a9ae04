"""examples/seed_pipeline: the case that started the project, as a project of its own.

Its pipeline hard-codes <|im_end|> as 163533 (``chas``). Its conftest hooks that pipeline's
reconstruction into the suite, so ``pytest --tokfidelity-dataset=B1`` there fails every sample with a
diagnosis naming 163533 'chas' and 163586 '<|im_end|>'; with the constant fixed it is green and the
gate opens for that reconstruction (and only for it). Run as a user runs it: a pytest process in the
example's folder (judging processes forked from it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "seed_pipeline"
HOOK = "conftest.py::pytest_tokfidelity_reconstruct"


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, *args], cwd=folder, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture
def example(tmp_path) -> Path:
    folder = tmp_path / "seed_pipeline"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".tokfidelity"))
    return folder


def test_the_seed_pipeline_fails_every_sample_then_passes_once_fixed(example):
    samples = len((example / "golden" / "B1" / "samples.jsonl").read_text().splitlines())
    assert samples >= 10

    wrong = _run(example, "-m", "pytest", "--tokfidelity-dataset=B1")
    assert wrong.returncode == 1, wrong.stdout[-3000:] + wrong.stderr[-3000:]
    out = wrong.stdout
    assert out.count(f"(judged: reconstruction {HOOK}): special-token-id") == samples
    assert f"B1: {samples} samples: 0 exact, {samples} new divergences (special-token-id {samples})" in out
    hunk = "[163586 '<|im_end|>'] -> reconstructed["
    assert out.count(hunk) == samples and out.count("[163533 'chas']") == samples
    record = json.loads((example / ".tokfidelity" / "gates" / "B1.json").read_text())
    assert record["status"] == "closed"

    source = example / "seed_pipeline.py"
    text = source.read_text()
    assert "IM_END_TOKEN_ID = 163533" in text
    source.write_text(text.replace("IM_END_TOKEN_ID = 163533", "IM_END_TOKEN_ID = 163586"))
    right = _run(example, "-m", "pytest", "--tokfidelity-dataset=B1")
    assert right.returncode == 0, right.stdout[-3000:]
    assert f"B1: {samples} samples: {samples} exact" in right.stdout and "gate: open" in right.stdout
    record = json.loads((example / ".tokfidelity" / "gates" / "B1.json").read_text())
    assert record["status"] == "open" and record["reconstructor"] == HOOK
    assert {Path(p).name for p in record["own_files"]} == {"conftest.py", "seed_pipeline.py"}

    gate = [sys.executable, "-m", "pipeline.cli", "gate", "check", "--dataset", "B1"]
    opened = _run(example, *gate[1:], "--reconstruct", HOOK)
    assert opened.returncode == 0, opened.stderr
    refused = _run(example, *gate[1:])  # tokfidelity's own reconstruction, as its gated stages build
    assert refused.returncode == 1 and f"opened for the reconstructor {HOOK!r}, not 'tokfidelity'" in refused.stderr
