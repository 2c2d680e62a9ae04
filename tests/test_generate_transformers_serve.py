"""tokfidelity generate against the real `transformers serve` with SmolLM2 on the CPU (slow)."""

from __future__ import annotations

import json

import pytest

from pipeline.cli import main
from pipeline.core.golden import write_dataset
from servers.gates import open_gate
from servers.transformers_serve import SMOLLM2, smollm2_hf_dir, start_serve

PROMPTS = ["Say hi in three words.", "What is the capital of France?", "Count from 1 to 5.", "Name two colours."]


@pytest.mark.slow
def test_generate_against_transformers_serve(tmp_path, capsys):
    model_dir = smollm2_hf_dir()
    golden = tmp_path / "golden"
    write_dataset(golden / "S2_smollm2", {"name": "S2_smollm2", "profile": "chatml", "tokenizer": SMOLLM2, "source": "test"},
                  [{"id": "g", "output_ids": [2], "finish_reason": "stop"}])
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": t}]}) + "\n"
                               for i, t in enumerate(PROMPTS)))
    out = tmp_path / "out"
    proc, url = start_serve(model_dir, tmp_path / "serve.log")
    try:
        open_gate(golden / "S2_smollm2", tmp_path / "state")
        code = main(["generate", "--dataset", "S2", "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"),
                     "--prompts", str(prompts), "--out", str(out), "--base-url", url + "/v1", "--model", str(model_dir),
                     "--max-tokens", "24", "--concurrency", "2", "--no-progress", "--timeout", "120"])
    finally:
        proc.terminate()
        proc.wait(10)
    err = capsys.readouterr().err
    records = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == ["p0", "p1", "p2", "p3"], err
    assert code in (0, 1), err
    for r in records:
        assert r["check"] in ("ok", "usage_mismatch"), r.get("check_detail")
        assert r["finish_reason"] in ("stop", "length")
        completion = r["usage"]["completion_tokens"]
        if r["check"] == "ok":
            assert len(r["output_ids"]) == completion
            if r["finish_reason"] == "stop":
                assert r["output_ids"][-1] == 2  # <|im_end|>, counted by the server too
        else:  # a non-canonical split by the model: flagged, never passed as ok
            assert len(r["output_ids"]) != completion
    assert sum(r["check"] == "ok" for r in records) >= 2, [r.get("check_detail") for r in records]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["completion_tokens"] == sum(r["usage"]["completion_tokens"] for r in records)
    # the prompt side: the real server counted the prompt it rendered with SmolLM2's own chat template;
    # build renders the same conversations and must agree on every record it uses
    main(["build", "--in", str(out), "--out", str(tmp_path / "train"), "--no-progress"])
    meta = json.loads((tmp_path / "train" / "export.json").read_text())
    assert meta["prompt_checks"] == {"ok": sum(r["check"] == "ok" for r in records), "prompt_mismatch": 0, "unknown": 0}, capsys.readouterr().err
