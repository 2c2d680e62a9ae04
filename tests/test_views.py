"""API views of golden ids: each view's rules, checked on real Kimi and Qwen3 tokenizers."""

from __future__ import annotations

import pytest

from pipeline.core.profiles import bind_profile
from pipeline.core.responses import parse_response
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import VIEWS, ViewError, api_view
from pipeline.cases.kimi_outputs import kimi_ids


def test_view_names():
    assert VIEWS == ("sglang", "sglang-legacy", "vllm", "vllm-0.32")  # every view some family declares, none kept by hand
    assert "vllm-spaces" not in VIEWS


def test_unknown_view_names_the_known_ones(kimi, profile):
    tokenizer = kimi
    with pytest.raises(ViewError, match="unknown api view 'openai'.*sglang, sglang-legacy, vllm, vllm-0.32"):
        api_view([profile.stop_id], "stop", profile, tokenizer, "openai")


def test_sglang_keeps_whitespace_and_trims_stop(kimi, profile):
    tokenizer = kimi
    ids = kimi_ids(tokenizer, profile, " Think.\n\n", "\n\nAnswer <|im_end|> ")
    assert ids[-1] == profile.stop_id
    assert api_view(ids, "stop", profile, tokenizer) == {
        "reasoning": " Think.\n\n",
        "content": "\n\nAnswer <|im_end|> ",  # literal marker text in content is just text
        "tool_calls": None,
        "finish_reason": "stop",
    }


def test_sglang_legacy_strips_reasoning_and_content(kimi, profile):
    tokenizer = kimi
    ids = kimi_ids(tokenizer, profile, " Think.\n\n", "\n\nAnswer  ")
    view = api_view(ids, "stop", profile, tokenizer, "sglang-legacy")
    assert (view["reasoning"], view["content"]) == ("Think.", "Answer")


def test_vllm_puts_no_spaces_around_kimi_markers_and_strips_reasoning_end(kimi, profile):
    """vLLM 0.32.0 decodes Kimi through its tokenizer class, whose special tokens do not include </think>
    or the tool markers: no spaces are added; its kimi_k2 parser right-strips the reasoning only."""
    tokenizer = kimi
    ids = kimi_ids(tokenizer, profile, " ok\n", "\n1 ", [("functions.get:3", ' {"a": 1}\n')])
    assert api_view(ids, "stop", profile, tokenizer, "vllm") == {
        "reasoning": " ok",
        "content": "\n1 ",
        "tool_calls": [{"id": "functions.get:3", "type": "function", "function": {"name": "get", "arguments": '{"a": 1}'}}],
        "finish_reason": "tool_calls",
    }


def test_tool_calls_ids_rebuilt_and_finish_reasons(kimi, profile):
    tokenizer = kimi
    ids = kimi_ids(tokenizer, profile, "r", "c", [("functions.get:7", '{"a": 1}'), ("functions.put:8", "{}")])
    view = api_view(ids, "stop", profile, tokenizer)
    assert view["tool_calls"] == [
        {"id": "functions.get:0", "type": "function", "function": {"name": "get", "arguments": '{"a": 1}'}},
        {"id": "functions.put:1", "type": "function", "function": {"name": "put", "arguments": "{}"}},
    ]
    assert view["finish_reason"] == "tool_calls"
    # Cut after the first call: the open second call is dropped, finish stays "length".
    cut = ids[: ids.index(profile.ids["tool_call_end"]) + 3]
    view = api_view(cut, {"type": "length", "length": len(cut)}, profile, tokenizer)
    assert [c["id"] for c in view["tool_calls"]] == ["functions.get:0"] and view["finish_reason"] == "length"


def test_reasoning_cut_before_think_end_is_all_reasoning(kimi, profile):
    tokenizer = kimi
    ids = kimi_ids(tokenizer, profile, "still thinking", close_think=False, stop=False)
    assert api_view(ids, "length", profile, tokenizer) == {
        "reasoning": "still thinking",
        "content": "",
        "tool_calls": None,
        "finish_reason": "length",
    }


def test_empty_reasoning_is_none_and_empty_content_is_empty_string(kimi, profile):
    tokenizer = kimi
    view = api_view(kimi_ids(tokenizer, profile, "", ""), "stop", profile, tokenizer)
    assert view["reasoning"] is None and view["content"] == ""


@pytest.mark.parametrize("view_name", VIEWS)
def test_views_are_readable_responses(kimi, profile, view_name):
    tokenizer = kimi
    ids = kimi_ids(tokenizer, profile, "r", "c", [("functions.get:0", '{"a": 1}')])
    turn = parse_response(api_view(ids, "stop", profile, tokenizer, view_name))
    assert turn.finish_reason == "tool_calls"
    assert [(c.name, c.id) for c in turn.tool_calls] == [("get", "functions.get:0")]


def test_chatml_is_content_only():
    tokenizer = load_tokenizer("qwen3")
    profile = bind_profile("chatml", tokenizer)
    text = "<|im_start|>not a marker here<|im_end|> answer"  # (Qwen3's non-special <think> is matched even so)
    ids = tokenizer.encode_ordinary(text) + [profile.stop_id]
    assert profile.stop_id not in ids[:-1]
    for name in VIEWS:
        assert api_view(ids, "stop", profile, tokenizer, name) == {
            "reasoning": None,
            "content": text,
            "tool_calls": None,
            "finish_reason": "stop",
        }


def test_per_profile_parser_is_built_once(kimi, profile):
    """A view's parsers are built once per bound profile, not per sample."""
    from pipeline.core.views import _bound

    bound = _bound(profile, "sglang", kimi)
    assert _bound(profile, "sglang", kimi) is bound and bound.reasoning is not None and bound.tools is not None
    api_view(kimi_ids(kimi, profile, "r", "c"), "stop", profile, kimi)
    assert profile.bound_views["sglang"] is bound


def test_every_declared_view_names_registered_parsers():
    """Each family's views name their parsers as the servers do, and the modules the family names register
    code for each name."""
    from pipeline.core.engines import registry
    from pipeline.core.families import families

    for family in families():
        family.load_parsers()
        for spec in family.specs:
            assert "sglang" in spec.views and "vllm" in spec.views, spec.name
            for name, view in spec.views.items():
                for kind, parser in (("reasoning", view.reasoning_parser), ("tool", view.tool_parser)):
                    if parser is not None:
                        assert registry.registered(view.engine, kind, parser), (spec.name, name, kind, parser)
                        whole = kind == "reasoning" and registry.is_whole(view.engine, parser)
                        assert registry.parser_class(view.engine, "whole" if whole else kind, parser), (spec.name, name)
    assert not registry.registered("vllm", "tool", "qwen25") and not registry.registered("sglang", "tool", "hermes")
    with pytest.raises(LookupError, match="no vllm tool parser 'qwen25' is registered .registered: .*hermes"):
        registry.parser_class("vllm", "tool", "qwen25")


def test_a_views_parsers_are_imported_with_its_family_only():
    """Binding a Qwen3 view imports Qwen3's parser modules and no other family's; importing registers them."""
    import subprocess
    import sys

    code = ("import sys\nfrom pipeline.core.tokenizer import load_tokenizer\nfrom pipeline.core.profiles import bind_profile\n"
            "from pipeline.core.views import api_view\nfrom pipeline.core.engines import registry\n"
            "t = load_tokenizer('qwen3'); p = bind_profile('qwen3', t)\n"
            "assert not registry.registered('sglang', 'tool', 'qwen25')\n"
            "api_view([9707, 151645], 'stop', p, t, 'sglang')\n"
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('pipeline.core.engines.') and "
            "m.rsplit('.', 1)[1].startswith(('sglang_', 'vllm_'))), registry.names('sglang', 'tool'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['sglang_qwen',", "'vllm_decode',", "'vllm_engine',", "'vllm_qwen']", "['qwen25']"]


def test_a_parser_name_is_registered_once():
    from pipeline.core.engines import registry

    registry.register("sglang", "tool", "test-only")(type("One", (), {}))
    try:
        with pytest.raises(ValueError, match="sglang tool parser 'test-only' is registered twice"):
            registry.register("sglang", "tool", "test-only")(type("Other", (), {}))
    finally:
        registry._PARSERS.pop(("sglang", "tool", "test-only"))
