"""End to end with the real model: capture SmolLM2 output ids, verify them with the plugin,
record the reviewed divergences, and see the gate open (and close again when the data changes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.gate import check_gate
from pipeline.core.golden import load_manifest, read_samples

ROOT = Path(__file__).resolve().parent.parent
DATASET = "E2E_smollm2"


def _run(args, env, timeout=600):
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_capture_verify_and_open_the_gate(tmp_path):
    golden, state = tmp_path / "golden", tmp_path / "state"
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        json.dumps({"id": "code", "messages": [{"role": "user", "content": "Write a Python hello world."}]}) + "\n"
        + json.dumps({"id": "emoji", "messages": [{"role": "user", "content": "Describe Paris with 2 emoji 🗼"}]}) + "\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    env.update(TOKFIDELITY_STATE_DIR=str(state), HF_HUB_OFFLINE="1")
    tokfidelity = [sys.executable, "-m", "pipeline.cli"]

    cap = _run(tokfidelity + ["capture", "--engine", "transformers", "--dataset", DATASET, "--prompts", str(prompts),
                              "--out", str(golden), "--max-new-tokens", "16", "--seed", "3", "--threads", "1"], env)
    assert cap.returncode == 0, cap.stderr[-3000:]
    assert "2 samples (2 captured now" in cap.stdout
    dataset = golden / DATASET
    samples = list(read_samples(dataset))
    assert [s.id for s in samples] == ["code", "emoji"]
    assert all(len(s.output_ids) <= 16 and s.prompt_ids for s in samples)
    assert load_manifest(dataset).raw["engine"]["model_sha256"]

    assert not check_gate(DATASET, golden_dir=golden, state_dir=state).open  # nothing verified yet

    # Review: whatever these two real samples hold is accepted as known (a reviewer's decision)
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest["max_known_divergence_rate"] = 1.0
    (dataset / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")

    plugin = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--tokfidelity-dataset={DATASET}",
              f"--tokfidelity-golden-dir={golden}"]
    update = _run(plugin + ["--snapshot-update"], env)
    assert update.returncode == 0, update.stdout[-3000:] + update.stderr[-2000:]
    assert f"{DATASET}: 2 samples" in update.stdout
    assert not check_gate(DATASET, golden_dir=golden, state_dir=state).open  # an update run opens nothing

    verify = _run(plugin, env)
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-2000:]
    assert "gate: open" in verify.stdout
    status = check_gate(DATASET, golden_dir=golden, state_dir=state)
    assert status.open, status.message
    assert status.dataset == DATASET

    # the golden data changes: the gate closes and says how to open it again
    with open(dataset / "samples.jsonl", "a") as f:
        f.write("\n")
    status = check_gate(DATASET, golden_dir=golden, state_dir=state)
    assert not status.open and "samples.jsonl" in status.message and DATASET in status.open_command
