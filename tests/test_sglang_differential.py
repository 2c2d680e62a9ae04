"""The ``sglang`` API view agrees with sglang 0.5.23's own Kimi parsers, run here on the same ids.

sglang functions called (nothing of them is stubbed; see tests/sglang_support):
- ``sglang.srt.parser.reasoning_parser.ReasoningParser("kimi_k2", stream_reasoning=False,
  force_reasoning=True).parse_non_stream(text)`` (its ``KimiK2Detector.detect_and_parse``);
- ``sglang.srt.function_call.kimik2_detector.KimiK2Detector().has_tool_call(text)`` and
  ``.detect_and_parse(text, tools=[])``.
Around them, the few lines of ``serving_chat.py`` (v1 chat completions, non-streaming) that build
the response are restated in ``sglang_response``: the detokenized text without the matched stop
token, ``reasoning_content`` None when empty, ``content`` "" when empty, tool-call ids
``functions.{name}:{history_count + tool_index}`` (history 0), finish "stop" -> "tool_calls" when
calls were parsed, and content before the tool-call section even when no call parsed.
"""

from __future__ import annotations

import random

import pytest

from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from sglang_support import import_sglang_parsers
from pipeline.cases.kimi_outputs import ARGUMENTS, CJK, CODE, EMOJI, kimi_ids, random_output

reasoning_parser, kimik2_detector = import_sglang_parsers()


def sglang_response(ids, finish_reason, profile, tokenizer, *, thinking=True) -> dict:
    """What SGLang 0.5.23 returns for these output ids, computed by its own parsers."""
    if ids and ids[-1] == profile.ids["stop"]:  # the detokenizer trims the matched stop token
        ids = ids[:-1]
    text = tokenizer.decode(ids)  # skip_special_tokens is False whenever a tool/reasoning parser runs
    reasoning = None
    if thinking:
        parser = reasoning_parser.ReasoningParser(model_type="kimi_k2", stream_reasoning=False, force_reasoning=True)
        reasoning, text = parser.parse_non_stream(text)
    tool_calls = None
    finish = finish_reason
    detector = kimik2_detector.KimiK2Detector()
    if detector.has_tool_call(text):
        result = detector.detect_and_parse(text, [])
        text = result.normal_text
        if result.calls:
            tool_calls = [
                {
                    "id": f"functions.{call.name}:{0 + call.tool_index}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.parameters},
                }
                for call in result.calls
            ]
            if finish == "stop":
                finish = "tool_calls"
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def _named_cases(tokenizer, profile):
    k = lambda *a, **kw: kimi_ids(tokenizer, profile, *a, **kw)  # noqa: E731
    call = lambda name, args, i=0: (f"functions.{name}:{i}", args)  # noqa: E731
    return {
        "plain": (k("Think.", "Answer."), "stop"),
        "whitespace-around-think-end": (k("  Think.\n\n", "\n\nAnswer.  "), "stop"),
        "empty-reasoning": (k("", "Answer."), "stop"),
        "empty-content-with-call": (k("Need a tool.", "", [call("get", '{"q": 1}')]), "stop"),
        "content-and-calls": (k(CODE, CJK, [call("get", ARGUMENTS[1], 3), call("search.web", ARGUMENTS[2], 4)]), "stop"),
        "whitespace-between-calls": (k("r", "c ", [call("a", "{}"), call("b", ARGUMENTS[5])], between="\n"), "stop"),
        "args-padded-with-spaces": (k("r", "", [call("get", '  {"q": 1}\n ')]), "stop"),
        "args-not-an-object": (k("r", "c", [call("get", "[1, 2]"), call("get", '{"ok": 1}', 1)]), "stop"),
        "args-cut-json": (k("r", "c", [call("get", '{"cut": '), call("put", '{"ok": 1}', 1)]), "stop"),
        "bare-counter-id": (k("r", "c", [("7", '{"q": 1}')]), "stop"),
        "id-without-functions-prefix": (k("r", "c", [("get:2", '{"q": 1}')]), "stop"),
        "id-with-space": (k("r", "c", [(" functions.get:0\n", '{"q": 1}')]), "stop"),
        "tools-without-think-end": (k("Reasoning then straight to tools ", "", [call("get", '{"q": 1}')], close_think=False), "stop"),
        "cut-in-reasoning": (k("A long thought " * 5, "never", close_think=False, stop=False), "length"),
        "cut-in-content": (k("r", EMOJI, stop=False)[:-3], "length"),
        "cut-in-tool-call": (k("r", "c", [call("get", '{"q": 1}'), call("put", '{"long": 2}', 1)])[:-6], "length"),
        "cut-inside-emoji": (k("r", "👩\u200d👩\u200d👧", stop=False)[:-1], "length"),
        "literal-think-end-in-reasoning": (k("I will write </think> literally, then stop.", "Answer."), "stop"),
        "literal-think-end-in-content": (k("r", "Use </think> to close."), "stop"),
        "literal-section-in-content": (k("r", "Write <|tool_calls_section_begin|> first."), "stop"),
        "literal-tool-end-in-args": (k("r", "", [call("get", '{"s": "<|tool_call_end|>"}')]), "stop"),
        "no-stop-token-on-stop": (k("r", "c", stop=False), "stop"),
    }


@pytest.fixture(scope="module")
def named_cases(kimi, profile):
    return _named_cases(kimi, profile)


def test_named_cases_agree_with_sglang(kimi, profile, named_cases):
    tokenizer = kimi
    disagree = {}
    for name, (ids, finish) in named_cases.items():
        expected = sglang_response(ids, finish, profile, tokenizer)
        got = api_view(ids, finish, profile, tokenizer, "sglang")
        if got != expected:
            disagree[name] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())


def test_named_cases_are_not_trivial(kimi, profile, named_cases):
    """The cases reach the branches they are named for (so agreement means something)."""
    tokenizer = kimi
    r = {name: sglang_response(ids, finish, profile, tokenizer) for name, (ids, finish) in named_cases.items()}
    assert r["whitespace-around-think-end"]["reasoning"] == "  Think.\n\n"
    assert r["whitespace-around-think-end"]["content"] == "\n\nAnswer.  "
    assert r["content-and-calls"]["tool_calls"][1]["id"] == "functions.search.web:1"
    assert r["args-padded-with-spaces"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1}'
    assert [c["function"]["name"] for c in r["args-not-an-object"]["tool_calls"]] == ["get"]
    assert r["bare-counter-id"]["tool_calls"] is None and r["bare-counter-id"]["finish_reason"] == "stop"
    assert r["tools-without-think-end"]["reasoning"] == "Reasoning then straight to tools "
    assert r["cut-in-reasoning"]["content"] == "" and r["cut-in-reasoning"]["finish_reason"] == "length"
    assert r["cut-in-tool-call"]["tool_calls"] is not None and r["cut-in-tool-call"]["finish_reason"] == "length"
    assert r["cut-inside-emoji"]["content"].endswith("\ufffd")
    assert r["literal-think-end-in-reasoning"]["reasoning"] == "I will write "
    assert r["literal-section-in-content"]["content"] == "Write "
    assert r["no-stop-token-on-stop"]["content"] == "c"


def test_random_outputs_agree_with_sglang(kimi, profile):
    tokenizer = kimi
    rng = random.Random(20261129)
    disagree = []
    kinds = set()
    for n in range(400):
        ids, finish = random_output(tokenizer, profile, rng)
        expected = sglang_response(ids, finish, profile, tokenizer)
        got = api_view(ids, finish, profile, tokenizer, "sglang")
        kinds.add((expected["reasoning"] is None, bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if got != expected:
            disagree.append(f"#{n} ({finish}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/400 disagree:\n" + "\n".join(disagree[:5])
    assert len(kinds) >= 10, f"random outputs too uniform: {sorted(kinds)}"


def test_kimi_k2_without_thinking_agrees_with_sglang():
    tokenizer = load_tokenizer("kimi-k2")
    profile = bind_profile("kimi-k2", tokenizer)
    rng = random.Random(7)
    for _ in range(100):
        ids, finish = random_output(tokenizer, profile, rng)
        expected = sglang_response(ids, finish, profile, tokenizer, thinking=False)
        assert api_view(ids, finish, profile, tokenizer, "sglang") == expected, tokenizer.decode(ids)
