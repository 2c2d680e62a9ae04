"""pipeline.api, the documented library surface (docs/your-code.md), used as a project uses it: this
file imports nothing of tokfidelity but that one module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import api

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


@pytest.fixture(scope="module")
def kimi():
    return api.load("kimi-k2.5", "moonshotai/Kimi-K2.5")


@pytest.fixture(scope="module")
def qwen():
    return api.load("qwen3", "qwen3")


def lines(dataset: str, n: int) -> list[dict]:
    """The first ``n`` samples that record no provider response (their server's view is the dataset's)."""
    with open(GOLDEN / dataset / "samples.jsonl", encoding="utf-8") as f:
        return [s for s in map(json.loads, f) if "response" not in s][:n]


def test_reconstruct_and_render_give_the_engine_ids(kimi):
    for sample in lines("B1_glaive", 4):
        response = api.server_response(sample["output_ids"], "stop", kimi)
        assert set(response) >= {"reasoning", "reasoning_content", "content", "tool_calls", "finish_reason"}
        assert api.reconstruct(response, kimi) == sample["output_ids"]
        prompt = api.render_prompt_ids(sample["messages"], sample.get("tools"), sample.get("chat_template_kwargs"), kimi)
        assert prompt == sample["prompt_ids"]


def test_judge_sample_judges_tokfidelity_or_a_given_function(kimi):
    sample = lines("B1_glaive", 1)[0]
    verdict = api.judge_sample(sample, kimi)
    assert verdict.kind == api.EXACT and verdict.prompt == "exact"

    def wrong_stop(response, tokenizer):
        return api.reconstruct(response, kimi)[:-1] + [163533]

    verdict = api.judge_sample(sample, kimi, reconstruct=wrong_stop)
    assert verdict.kind == api.DIVERGENT and verdict.classes == ("special-token-id",)
    assert "163586 '<|im_end|>'" in verdict.report and "163533 'chas'" in verdict.report

    def no_generation_prompt(messages, tools, kwargs, tokenizer):
        return api.render_prompt_ids(messages, tools, kwargs, kimi)[:-1]

    verdict = api.judge_sample(sample, kimi, render=no_generation_prompt)
    assert verdict.kind == api.DIVERGENT and verdict.prompt and verdict.prompt != "exact"


def test_a_function_gets_the_facade(kimi):
    seen = []

    def mine(response, tokenizer):
        seen.append(tokenizer)
        return tokenizer.encode(response["reasoning_content"]) + [tokenizer.convert_tokens_to_ids("</think>")]

    api.judge_sample(lines("B1_glaive", 1)[0], kimi, reconstruct=mine)
    assert isinstance(seen[0], api.TokenizerFacade) and seen[0].convert_ids_to_tokens(163586) == "<|im_end|>"


def test_diagnose_names_the_class(qwen):
    sample = lines("Q1_glaive", 1)[0]
    golden = sample["output_ids"]
    assert api.diagnose(golden, golden[:-1], qwen, "stop").classes == ["stop-token"]
    assert api.diagnose(golden, golden, qwen).classes == []


def test_bad_input_is_a_verdict_naming_the_field(kimi):
    sample = {"id": "x", "output_ids": [1, 2], "finish_reason": "stop", "response": {"finish_reason": "stop"}}
    verdict = api.judge_sample(sample, kimi)
    assert verdict.kind == api.BAD_INPUT and "response.content" in verdict.report
    with pytest.raises(api.TokfidelityError):
        api.judge_sample({"id": "x", "finish_reason": "stop"}, kimi)


def _prompted(dataset: str) -> list[dict]:
    with open(GOLDEN / dataset / "samples.jsonl", encoding="utf-8") as f:
        return [s for s in map(json.loads, f) if s.get("prompt_ids") and s.get("messages")]


def test_render_prompt_ids_uses_the_familys_renderer_deepseek_v32():
    """DeepSeek-V3.2 has no chat template: its prompts come from its encoder, through the same call."""
    bound = api.load("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.1")
    samples = _prompted("D32_glaive")
    assert len(samples) >= 20
    for s in samples:
        assert api.render_prompt_ids(s["messages"], s.get("tools"), s.get("chat_template_kwargs"), bound) == s["prompt_ids"], s["id"]


def test_load_dataset_renders_with_the_template_its_manifest_names():
    """DeepSeek-V3.1's tokenizer folder has no template of its own: the manifest names the file (and pins it)."""
    bound = api.load_dataset(str(GOLDEN / "D31_glaive"))
    samples = _prompted("D31_glaive")
    assert len(samples) >= 20
    for s in samples:
        assert api.render_prompt_ids(s["messages"], s.get("tools"), s.get("chat_template_kwargs"), bound) == s["prompt_ids"], s["id"]
