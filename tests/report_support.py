"""Shared by the report tests: a golden folder holding the shipped datasets and a planted-failure
dataset, and a real ``pytest --tokfidelity-report`` run over it (a subprocess, as a user runs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline.core.golden import write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = tuple(sorted(p.parent.name for p in (ROOT / "golden").glob("*/manifest.json")))  # every shipped dataset
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


def run_pytest(root: Path, out: Path, *args: str, datasets: str = "all") -> subprocess.CompletedProcess:
    """``pytest --tokfidelity-dataset=... --tokfidelity-report=out`` in root, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", f"--tokfidelity-dataset={datasets}",
           f"--tokfidelity-golden-dir={root / 'golden'}", f"--tokfidelity-state-dir={root / 'state'}",
           f"--tokfidelity-report={out}", *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)


def run_report_command(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "report", *args], env=env, capture_output=True, text=True, timeout=300)
