"""The ``sglang`` views of qwen3 and deepseek-v3 agree with sglang 0.5.23's own parsers, run here on
the same ids (its package __init__ bypassed, nothing stubbed: see tests/sglang_support).

sglang functions called (``FunctionCallParser`` itself needs xgrammar, so its few lines around the
detector are restated in ``sglang_response``, as are serving_chat's):
- qwen3: ``ReasoningParser("qwen3", stream_reasoning=False, force_reasoning=<thinking on>)
  .parse_non_stream(text)``, then ``Qwen25Detector().has_tool_call(text)`` and
  ``.detect_and_parse(text, tools)``;
- deepseek-v3 (no reasoning parser): ``DeepSeekV3Detector().has_tool_call`` / ``.detect_and_parse``.
serving_chat: the decoded text without the matched stop token; with a tool-call marker in the text
the detector's normal text replaces it (FunctionCallParser.parse_non_stream), an exception keeps the
text whole; call ids ``call_`` + 24 hex digits (random: compared by shape); finish "stop" ->
"tool_calls" when calls were parsed; ``reasoning_content`` None when empty, ``content`` "" when empty.
"""

from __future__ import annotations

import random
import re

import pytest

from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from sglang_support import import_sglang_modules
from pipeline.cases.family_outputs import (
    ARGUMENTS, CJK, CODE, EMOJI, NAMES, deepseek_call, deepseek_ids, qwen3_call, qwen3_ids, random_deepseek, random_qwen3,
)

reasoning_parser, qwen25, deepseekv3, protocol = import_sglang_modules(
    "sglang.srt.parser.reasoning_parser",
    "sglang.srt.function_call.qwen25_detector",
    "sglang.srt.function_call.deepseekv3_detector",
    "sglang.srt.entrypoints.openai.protocol",
)
TOOLS = [protocol.Tool(function=protocol.Function(name=name, parameters={})) for name in NAMES]
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


@pytest.fixture(scope="module")
def qwen3():
    tokenizer = load_tokenizer("qwen3")
    return tokenizer, bind_profile("qwen3", tokenizer)


@pytest.fixture(scope="module")
def deepseek():
    tokenizer = load_tokenizer("deepseek-v3")
    return tokenizer, bind_profile("deepseek-v3", tokenizer)


def sglang_response(ids, finish, profile, tokenizer, detector, *, reasoning_type=None, thinking=False) -> dict:
    """What SGLang 0.5.23 returns for these output ids, computed by its own parsers."""
    if ids and ids[-1] in profile.stop_ids:  # the detokenizer trims the matched stop token
        ids = ids[:-1]
    text = tokenizer.decode(ids)  # skip_special_tokens is False whenever a tool/reasoning parser runs
    reasoning = None
    if reasoning_type:
        parser = reasoning_parser.ReasoningParser(model_type=reasoning_type, stream_reasoning=False, force_reasoning=thinking)
        reasoning, text = parser.parse_non_stream(text)
    tool_calls = None
    if detector.has_tool_call(text):
        try:
            result = detector.detect_and_parse(text, TOOLS)
        except Exception:  # serving_chat's catch-all: the text stays whole, no calls
            result = None
        if result is not None:
            text = result.normal_text
            if result.calls:
                tool_calls = [
                    {"id": "call_" + "%024x" % n, "type": "function", "function": {"name": c.name, "arguments": c.parameters}}
                    for n, c in enumerate(result.calls)
                ]
                if finish == "stop":
                    finish = "tool_calls"
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def _same_but_ids(view: dict) -> dict:
    """The view with its invented call ids checked for shape, then replaced by the index (SGLang's are random)."""
    calls = view["tool_calls"]
    if calls:
        assert all(CALL_ID.fullmatch(c["id"]) for c in calls), calls
        view = {**view, "tool_calls": [{**c, "id": "call_" + "%024x" % n} for n, c in enumerate(calls)]}
    return view


def _qwen3_cases(tokenizer, profile):
    q = lambda *a, **kw: qwen3_ids(tokenizer, profile, *a, **kw)  # noqa: E731
    c = qwen3_call
    return {
        "plain": (q("\nThink.\n", "Answer."), "stop", True),
        "empty-reasoning": (q("\n\n", "Answer."), "stop", True),
        "thinking-off": (q(None, "Answer."), "stop", False),
        "thinking-off-with-call": (q(None, "Let me look.", [c("get", {"q": 1})]), "stop", False),
        "call-right-after-think-end": (q("\nNeed a tool.\n", "", [c("get", {"q": 1})]), "stop", True),
        "two-calls": (q("\nTwo.\n", "", [c("get", {"q": 1}), c("read_file", {"path": "/tmp/a b"})]), "stop", True),
        "text-before-a-call": (q("\nr\n", "I will check.", [c("get", {"q": 1})]), "stop", True),
        "text-after-calls-dropped": (q("\nr\n", "c", [c("get", {"q": 1})], after_calls="\nDone."), "stop", True),
        "compact-args-reserialised": (q("\nr\n", "", [c("get", '{"q":1,"n":[1,2]}')]), "stop", True),
        "non-ascii-args": (q("\nr\n", CJK, [c("查询", {"s": "中文 👍é"}), c("get", '{"e": "\\u00e9"}')]), "stop", True),
        "nested-args": (q("\nr\n", "", [c("run-cmd", {"a": {"b": [1, {"c": None}]}, "t": True})]), "stop", True),
        "cut-in-reasoning": (q("\nA long thought " * 5, "never", close_think=False, stop=False), "length", True),
        "cut-in-content": (q("\nr\n", EMOJI, stop=False)[:-3], "length", True),
        "cut-in-call": (q("\nr\n", "c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-6], "length", True),
        "literal-think-end-in-reasoning": (q("\nI write </think> literally.\n", "Answer."), "stop", True),
        "literal-tool-call-in-content": (q("\nr\n", "Write <tool_call>\n then."), "stop", True),
        "tool-call-without-think-end": (q("\nStraight to tools ", "", [c("get", {"q": 1})], close_think=False), "stop", True),
        "body-not-json": (q("\nr\n", "c", ["\nnot json\n", c("get", {"q": 1})]), "stop", True),
        "body-a-string": (q("\nr\n", "c", ['\n"just a string"\n']), "stop", True),
        "body-a-list": (q("\nr\n", "", ['\n[{"name": "get", "arguments": {}}, {"name": "read_file", "arguments": {"p": 1}}]\n']), "stop", True),
        "code-content": (q("\n" + CODE, CODE), "stop", True),
        "endoftext-stop": (q("\nr\n", "c", stop=False) + [profile.ids["stop.2"]], "stop", True),
        "args-floats": (q("\nr\n", "", [c("get", '{"x": 1.50, "y": 1e3}')]), "stop", True),
        "arguments-strings": (q("\nr\n", "", [c("get", ARGUMENTS[2])]), "stop", True),
    }


def test_qwen3_named_cases_agree_with_sglang(qwen3):
    tokenizer, profile = qwen3
    disagree = {}
    results = {}
    for name, (ids, finish, thinking) in _qwen3_cases(tokenizer, profile).items():
        expected = sglang_response(ids, finish, profile, tokenizer, qwen25.Qwen25Detector(), reasoning_type="qwen3", thinking=thinking)
        got = _same_but_ids(api_view(ids, finish, profile, tokenizer, "sglang"))
        results[name] = expected
        if got != expected:
            disagree[name] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())
    r = results  # the cases reach the branches they are named for
    assert r["empty-reasoning"]["reasoning"] == "\n\n" and r["empty-reasoning"]["content"] == "\n\nAnswer."
    assert r["thinking-off"] == {"reasoning": None, "content": "Answer.", "tool_calls": None, "finish_reason": "stop"}
    assert r["text-before-a-call"]["content"] == "I will check."  # stripped: "\n\n" before and "\n" after are gone
    assert [t["function"]["name"] for t in r["two-calls"]["tool_calls"]] == ["get", "read_file"]
    assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2]}'
    assert r["non-ascii-args"]["tool_calls"][1]["function"]["arguments"] == '{"e": "é"}'
    assert r["cut-in-reasoning"]["content"] == "" and r["cut-in-reasoning"]["reasoning"].startswith("\nA long")
    assert r["cut-in-call"]["tool_calls"] is not None and len(r["cut-in-call"]["tool_calls"]) == 1
    assert r["literal-think-end-in-reasoning"]["reasoning"] == "\nI write "
    assert r["tool-call-without-think-end"]["reasoning"] == "\nStraight to tools "
    assert r["body-a-string"]["tool_calls"] is None and "<tool_call>" in r["body-a-string"]["content"]
    assert len(r["body-a-list"]["tool_calls"]) == 2
    assert r["args-floats"]["tool_calls"][0]["function"]["arguments"] == '{"x": 1.5, "y": 1000.0}'


def test_qwen3_random_outputs_agree_with_sglang(qwen3):
    tokenizer, profile = qwen3
    rng = random.Random(20261130)
    disagree, kinds = [], set()
    for n in range(400):
        ids, finish, thinking = random_qwen3(tokenizer, profile, rng)
        expected = sglang_response(ids, finish, profile, tokenizer, qwen25.Qwen25Detector(), reasoning_type="qwen3", thinking=thinking)
        got = _same_but_ids(api_view(ids, finish, profile, tokenizer, "sglang"))
        kinds.add((expected["reasoning"] is None, bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if got != expected:
            disagree.append(f"#{n} ({finish}, thinking {thinking}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/400 disagree:\n" + "\n".join(disagree[:5])
    assert len(kinds) >= 10, f"random outputs too uniform: {sorted(kinds)}"


def _deepseek_cases(tokenizer, profile):
    d = lambda *a, **kw: deepseek_ids(tokenizer, profile, *a, **kw)  # noqa: E731
    c = deepseek_call
    return {
        "plain": (d("Answer."), "stop"),
        "empty": (d(""), "stop"),
        "one-call": (d("", [c("get", {"q": 1})]), "stop"),
        "two-calls": (d("", [c("get", {"q": 1}), c("read_file", {"path": "/tmp/a b"})]), "stop"),
        "text-before-a-call": (d("  I will check.\n", [c("get", {"q": 1})]), "stop"),
        "compact-args-reserialised": (d("", [c("get", '{"q":1,"n":[1,2]}')]), "stop"),
        "non-ascii-args": (d(CJK, [c("查询", {"s": "中文 👍é"}), c("get", '{"e": "\\u00e9"}')]), "stop"),
        "nested-args": (d("", [c("run-cmd", {"a": {"b": [1, {"c": None}]}, "t": True})]), "stop"),
        "empty-list-args-become-object": (d("", [c("get", "[]")]), "stop"),
        "calls-without-newline-between": (d("", [c("get", {"q": 1}), c("get", {"q": 2})], between=""), "stop"),
        "fence-without-json-tag": (d("c", [c("get", {"q": 1})], fence="\n```\n"), "stop"),
        "args-not-json": (d("c", [c("get", '{"cut": ')]), "stop"),
        "cut-in-content": (d(EMOJI, stop=False)[:-3], "length"),
        "cut-in-call": (d("c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-8], "length"),
        "cut-after-first-call": (d("c", [c("get", {"q": 1}), c("put", {"long": 2})], section_end=False, stop=False)[:-14], "length"),
        "literal-section-marker-in-content": (d("Write <｜tool▁calls▁begin｜> first."), "stop"),
        "code-content": (d(CODE), "stop"),
        "args-floats": (d("", [c("get", '{"x": 1.50, "y": 1e3}')]), "stop"),
        "arguments-strings": (d("", [c("get", ARGUMENTS[2])]), "stop"),
    }


def test_deepseek_named_cases_agree_with_sglang(deepseek):
    tokenizer, profile = deepseek
    disagree, r = {}, {}
    for name, (ids, finish) in _deepseek_cases(tokenizer, profile).items():
        expected = sglang_response(ids, finish, profile, tokenizer, deepseekv3.DeepSeekV3Detector())
        got = _same_but_ids(api_view(ids, finish, profile, tokenizer, "sglang"))
        r[name] = expected
        if got != expected:
            disagree[name] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())
    assert r["text-before-a-call"]["content"] == "I will check."
    assert [t["function"]["name"] for t in r["two-calls"]["tool_calls"]] == ["get", "read_file"]
    assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2]}'
    assert r["empty-list-args-become-object"]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert r["fence-without-json-tag"]["tool_calls"] is None and "<｜tool▁sep｜>" in r["fence-without-json-tag"]["content"]
    assert r["args-not-json"]["tool_calls"] is None
    assert len(r["cut-in-call"]["tool_calls"]) == 1
    assert r["literal-section-marker-in-content"]["content"] == "Write"


def test_deepseek_random_outputs_agree_with_sglang(deepseek):
    tokenizer, profile = deepseek
    rng = random.Random(20261130)
    disagree, kinds = [], set()
    for n in range(400):
        ids, finish = random_deepseek(tokenizer, profile, rng)
        expected = sglang_response(ids, finish, profile, tokenizer, deepseekv3.DeepSeekV3Detector())
        got = _same_but_ids(api_view(ids, finish, profile, tokenizer, "sglang"))
        kinds.add((bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if got != expected:
            disagree.append(f"#{n} ({finish}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/400 disagree:\n" + "\n".join(disagree[:5])
    assert len(kinds) >= 6, f"random outputs too uniform: {sorted(kinds)}"
