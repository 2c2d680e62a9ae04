"""Shared by the report tests: a golden folder holding the shipped datasets and a planted-failure
dataset, and a real ``pytest --tokfidelity-report`` run over it (a subprocess, as a user runs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from _support.pytest_runs import SHIPPED, run_pytest  # noqa: F401 - shared with bench/bench_report.py; re-exported here
from pipeline.core.golden import write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
PLANTED = "P9_planted"
CHAS = 163533  # the ordinary token a wrong profile used for <|im_end|>


def planted_samples() -> list[dict]:
    """Exact samples, two harmless re-splits (accepted by the manifest's policy), and planted
    failures with no reviewed snapshot: whitespace added by the API, the wrong stop id, a lone
    partial UTF-8 byte inside the text, marker text in the reply, and a line that is not valid."""
    kimi = load_tokenizer("kimi-k2.5")
    profile = bind_profile("kimi-k2.5", kimi)
    enc, think_end, stop = kimi.encode_ordinary, profile.ids["think_end"], profile.stop_id

    def ids(reasoning: str, content: str, end: int | None = stop) -> list[int]:
        return enc(reasoning) + [think_end] + enc(content) + ([end] if end is not None else [])

    exact = [{"id": f"ok{i}", "output_ids": ids(f"Add {i} and {i + 1}.", f"{i} + {i + 1} = {2 * i + 1}."),
              "finish_reason": "stop"} for i in range(6)]
    split = enc("Think.") + [think_end] + enc(" initial") + enc("izer") + [stop]
    resplits = [{"id": f"resplit{i}", "output_ids": split, "finish_reason": "stop"} for i in range(2)]
    euro = "\u20ac".encode()  # 3 bytes; the first alone is invalid UTF-8
    lone = next(t for t in range(kimi.n_vocab) if kimi.token_bytes(t) == euro[:1])
    planted = [
        {"id": "ws-added", "output_ids": ids("Sum it.", "2 + 2 = 4."), "finish_reason": "stop",
         "response": {"reasoning": "Sum it.", "content": "2 + 2 = 4.\n", "finish_reason": "stop"}},
        {"id": "wrong-stop", "output_ids": ids("Stop here.", "Done.", CHAS), "finish_reason": "stop",
         "response": {"reasoning": "Stop here.", "content": "Done.", "finish_reason": "stop"}},
        {"id": "lone-byte", "output_ids": enc("Price.") + [think_end] + enc("costs ") + [lone] + enc(" 5 https://example.com/x") + [stop],
         "finish_reason": "stop"},
        {"id": "marker-in-text", "output_ids": ids("Quote it.", "the tag <|im_end|> ends a turn"), "finish_reason": "stop",
         "response": {"reasoning": "Quote it.", "content": "the tag <|im_end|> ends a turn", "finish_reason": "stop"}},
    ]
    # marker-in-text is exact (content is encoded as ordinary text); kept as a control
    return exact + resplits + planted


def make_golden(root: Path) -> Path:
    """root/golden with copies of the shipped datasets and the planted one (with a bad line)."""
    golden = root / "golden"
    for name in SHIPPED:
        shutil.copytree(ROOT / "golden" / name, golden / name)
    path = write_dataset(golden / PLANTED, {
        "name": PLANTED, "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "planted failures (tests/report_support.py)",
        "accept": {"non-canonical-split": 0.5},
    }, planted_samples())
    with open(path / "samples.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "bad-line", "output_ids": "not ids", "finish_reason": "stop"}) + "\n")
    return golden


def run_report_command(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "report", *args], env=env, capture_output=True, text=True, timeout=300)


def small_document(kimi, profile, name: str = PLANTED) -> dict:
    """A results document made in-process (no pytest run) with every kind of field filled: a dataset
    with a failed check and ``ran``, and the planted samples' real diagnoses (token windows, a
    special id, raw bytes, a whitespace change), plus a policy re-split and a bad-input record."""
    from pipeline.core.diagnose import diagnose
    from pipeline.core.golden import GoldenSample
    from pipeline.reporting.details import SampleDetails
    from pipeline.reporting.results import dataset_entry, results_document

    explain = SampleDetails(kimi, profile)
    by_id = {s["id"]: s for s in planted_samples()}
    records = []
    for line, (sid, verdict) in enumerate((("resplit0", "policy"), ("ws-added", "new"), ("wrong-stop", "new"),
                                           ("lone-byte", "new")), 1):
        golden = by_id[sid]["output_ids"]
        response = by_id[sid].get("response")
        if sid == "resplit0":
            rebuilt = kimi.encode_ordinary("Think.") + [profile.ids["think_end"]] + kimi.encode_ordinary(" initializer") + [profile.stop_id]
        elif sid == "lone-byte":
            rebuilt = kimi.encode_ordinary(kimi.decode(golden[:-1]).replace("\ufffd", "")) + [profile.stop_id]
        else:
            rebuilt = kimi.encode_ordinary(response["reasoning"]) + [profile.ids["think_end"]] + \
                kimi.encode_ordinary(response["content"]) + [profile.stop_id]
        d = diagnose(golden, rebuilt, kimi, profile=profile, finish_reason="stop")
        sample = GoldenSample(id=sid, output_ids=golden, finish_reason="stop", line=line)
        rec = {**explain(sample, d, "policy" if verdict == "policy" else "divergent", force=True), "dataset": name,
               "verdict": verdict}
        if verdict != "policy":
            rec["report"] = d.render()
        records.append(rec)
    records.append({"id": "bad-line", "line": 9, "dataset": name, "verdict": "bad-input",
                    "report": "samples.jsonl:9: field 'output_ids': expected a list of token ids, got str"})
    counts = {"samples": 9, "exact": 4, "policy": 1, "known": 0, "new": 3, "bad_input": 1, "tokens": 120, "hunks": 5,
              "policy_hunks_by_class": {"non-canonical-split": 1}, "known_by_class": {}, "new_by_class": {"whitespace": 1},
              "stale_snapshots": 0}
    entry = dataset_entry(
        name=name, counts=counts, samples_total=9, profile="kimi-k2.5", tokenizer="kimi-k2.5", tokenizer_fingerprint="f" * 64,
        view="sglang", golden_files={"samples.jsonl": "0" * 64}, accept={"non-canonical-split": 0.5},
        max_known_divergence_rate=0.0, gate_note="closed (record written: 4 test(s) failed)", problems=["4 test(s) failed"],
        partial_reasons=[], wall_s=1.5, golden_dir="golden", path="golden/" + name,
        failed_checks=[{"check": "test_stop_tokens", "message": "163533 'chas' is not a stop id"}], ran=[[0, 9]],
    )
    return results_document([entry], records, command=["--tokfidelity-dataset=P9"], partial_reasons=[],
                            code={"fingerprint": "c" * 64, "libraries": {"tokenizers": "0.0"}})
