"""The llama3 and qwen3-coder families' own layouts and tokenizer: what their differential tests and golden
sets rely on, checked directly.

* qwen3-coder's tokenizer folder holds only its template and config: the vocabulary is Qwen3's, lent by the
  folder beside it (same ids, the fast encoder), while the template and name stay its own.
* llama3: a builtin-tool call returned as content (tag dropped, or kept as text by SGLang without tools) is
  rebuilt with ``<|python_tag|>`` and ``<|eom_id|>``; a bare JSON call is split as a call, not content.
* qwen3-coder: arguments written as the template writes values (strings as they are, objects as JSON,
  others as Jinja's ``string``), content followed by the template's blank line.
"""

from __future__ import annotations

import pytest

from pipeline.core.layout import CONTENT, TOOL_ARGUMENTS
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.tokenizer.fast_bpe import ENCODER_NAME


@pytest.fixture(scope="module")
def llama():
    tokenizer = load_tokenizer("llama-3.1")
    return tokenizer, bind_profile("llama3", tokenizer)


@pytest.fixture(scope="module")
def coder():
    tokenizer = load_tokenizer("qwen3-coder")
    return tokenizer, bind_profile("qwen3-coder", tokenizer)


def test_qwen3_coder_tokenizer_is_qwen3s_vocabulary_with_its_own_template(coder):
    from pipeline.core.render import chat_template

    tokenizer, _ = coder
    qwen3 = load_tokenizer("qwen3")
    assert tokenizer.name == "qwen3-coder" and tokenizer.source.endswith("qwen3-coder")
    assert tokenizer.special_tokens == qwen3.special_tokens
    text = "def f(x):\n    return {'a': 1}  # 中文 👍 <tool_call>"
    assert tokenizer.encode_ordinary(text) == qwen3.encode_ordinary(text) and tokenizer.encode(text) == qwen3.encode(text)
    assert tokenizer.encoder == ENCODER_NAME  # Qwen3's fast encoder, proven for its tokenizer.json
    assert chat_template(tokenizer)[1].endswith("qwen3-coder/chat_template.jinja")
    assert tokenizer.fingerprint != qwen3.fingerprint  # its own config is pinned too


def test_llama3_tokenizer_keeps_the_tokenizers_encoder_and_says_why(llama):
    tokenizer, _ = llama
    assert tokenizer.encoder != ENCODER_NAME and "merge" in tokenizer.encoder_note


def test_llama3_builtin_calls_are_rebuilt_with_their_markers(llama):
    tokenizer, profile = llama
    m = profile.ids
    golden = [m["tool_call_begin"], *tokenizer.encode_ordinary('brave_search.call(query="x")'), m["stop.2"]]
    for content in ('brave_search.call(query="x")', '<|python_tag|>brave_search.call(query="x")'):
        turn = {"content": content, "tool_calls": None, "finish_reason": "stop"}
        assert reconstruct_output_ids(turn, profile, tokenizer) == golden
    plain = {"content": 'print("x")', "tool_calls": None, "finish_reason": "stop"}
    assert reconstruct_output_ids(plain, profile, tokenizer)[-1] == m["stop"]


def test_llama3_split_finds_bare_and_tagged_calls(llama):
    tokenizer, profile = llama
    m = profile.ids
    bare = tokenizer.encode_ordinary('{"name": "get", "parameters": {"q": 1}}') + [m["stop"]]
    layout = profile.spec.own_layout.split(bare, profile)
    assert len(layout.content) == 0 and layout.region_at(0) == TOOL_ARGUMENTS and layout.tool_calls[0].complete
    tagged = tokenizer.encode_ordinary("Sure.") + [m["tool_call_begin"]] + tokenizer.encode_ordinary('{"name": "get"')
    layout = profile.spec.own_layout.split(tagged, profile)
    assert layout.region_at(0) == CONTENT and layout.region_at(len(tagged) - 1) == TOOL_ARGUMENTS
    assert not layout.tool_calls[0].complete and layout.stop_index is None
    answer = tokenizer.encode_ordinary("Hello {there}") + [m["stop"]]
    assert profile.spec.own_layout.split(answer, profile).region_at(0) == CONTENT


def test_qwen3_coder_writes_values_as_its_template(coder):
    from pipeline.core.families.qwen3_coder_layout import call_text, value_text

    assert [value_text(v) for v in ("x", 5, 5.0, True, None, {"a": [1, "é"]})] == ["x", "5", "5.0", "True", "None", '{"a": [1, "é"]}']
    assert call_text("get", '{"q": "a\\nb", "n": 2}') == "\n<function=get>\n<parameter=q>\na\nb\n</parameter>\n<parameter=n>\n2\n</parameter>\n</function>\n"
    tokenizer, profile = coder
    m = profile.ids
    turn = {"content": "Let me check.", "tool_calls": [{"function": {"name": "get", "arguments": '{"q": 1}'}}], "finish_reason": "tool_calls"}
    ids = reconstruct_output_ids(turn, profile, tokenizer)
    assert ids == tokenizer.encode_ordinary("Let me check.\n\n") + [m["tool_call_begin"]] + \
        tokenizer.encode_ordinary(call_text("get", '{"q": 1}')) + [m["tool_call_end"], m["stop"]]
