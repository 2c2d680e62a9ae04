"""Profiles are data; their ids come from the tokenizer and are cross-checked."""

import pytest

from pipeline.core.profiles import PROFILES, ProfileError, ProfileSpec, bind_profile
from pipeline.core.tokenizer import load_tokenizer


def test_kimi_k25_ids_come_from_the_tokenizer():
    p = bind_profile("kimi-k2.5", load_tokenizer("kimi-k2.5"))
    assert p.stop_id == 163586
    assert p.ids["think_end"] == 163607
    assert p.ids["tool_calls_begin"] == 163595
    assert p.ids["tool_call_argument_begin"] == 163598
    assert p.ids["prompt.middle"] == 163601


def test_chatml_on_qwen3():
    p = bind_profile("chatml", load_tokenizer("qwen3"))
    assert p.stop_id == 151645


def test_thinking_profile_on_a_tokenizer_without_think_tokens_fails_clearly():
    with pytest.raises(ProfileError, match=r"'<think>' encodes to 3 ids .* not one special id"):
        bind_profile("kimi-k2.5", load_tokenizer("kimi-k2"))


def test_unknown_profile_lists_known_ones():
    with pytest.raises(ProfileError, match="known profiles: chatml, deepseek-v3, gpt-oss, kimi-k2, kimi-k2.5, llama3, qwen3, qwen3-coder"):
        bind_profile("kimi-k3", load_tokenizer("kimi-k2.5"))


def test_no_literal_ids_in_profile_data():
    for spec in PROFILES.values():
        for text in list(spec.markers.values()) + list(spec.prompt_markers.values()):
            assert isinstance(text, str) and not text.isdigit()


def test_adding_a_model_is_one_spec():
    spec = ProfileSpec(name="qwen3-chatml", default_tokenizer="Qwen/Qwen3-8B", markers={"stop": "<|im_end|>"})
    assert bind_profile(spec, load_tokenizer("qwen3")).stop_id == 151645


def test_tool_call_ids():
    p = bind_profile("kimi-k2.5", load_tokenizer("kimi-k2.5"))
    assert p.tool_call_id("functions.get_weather:3", "get_weather", 0) == "functions.get_weather:3"
    assert p.tool_call_id("call_8f2a", "get_weather", 1) == "functions.get_weather:1"
    assert p.tool_call_id(None, "f", 0) == "functions.f:0"


def test_misconfigured_copy_keeps_texts():
    p = bind_profile("kimi-k2.5", load_tokenizer("kimi-k2.5")).with_ids(stop=163533)
    assert p.stop_id == 163533 and p.texts["stop"] == "<|im_end|>"


def test_qwen3_ids_and_stop_tokens_come_from_the_tokenizer():
    p = bind_profile("qwen3", load_tokenizer("qwen3"))
    assert (p.ids["think_begin"], p.ids["think_end"], p.ids["tool_call_begin"], p.ids["tool_call_end"]) == (151667, 151668, 151657, 151658)
    assert p.stop_id == 151645 and p.stop_ids == (151645, 151643)


def test_deepseek_v3_ids_come_from_the_tokenizer():
    p = bind_profile("deepseek-v3", load_tokenizer("deepseek-v3"))
    assert p.stop_ids == (1,)
    assert [p.ids[r] for r in ("tool_calls_begin", "tool_call_begin", "tool_sep", "tool_call_end", "tool_calls_end")] == [
        128806, 128808, 128814, 128809, 128807]


def test_family_profiles_refuse_the_wrong_tokenizer():
    with pytest.raises(ProfileError, match=r"encodes to \d+ ids .* not one special id"):
        bind_profile("qwen3", load_tokenizer("deepseek-v3"))
    with pytest.raises(ProfileError, match="not one special id"):
        bind_profile("deepseek-v3", load_tokenizer("qwen3"))
