"""The ``sglang`` view of DeepSeek-V3.1 agrees with sglang 0.5.23's own parsers, run here on the same ids
(its package __init__ bypassed, nothing stubbed: see tests/sglang_support): named cases, 400 random outputs
and 400 random schema-bearing requests.

sglang functions called: ``ReasoningParser("deepseek-v3", stream_reasoning=False, force_reasoning=<the
request's thinking>).parse_non_stream(text)`` (serving_chat's ``_get_reasoning_from_request`` for the
``explicit_thinking`` default: forced exactly when ``chat_template_kwargs.thinking`` is true), then
``DeepSeekV31Detector().has_tool_call(text)`` and ``.detect_and_parse(text, tools)`` with the request's tools.
Around them serving_chat, restated as in the other sglang differential tests: the tool parser runs only when
the request declares tools and ``tool_choice`` is not ``none``; an exception keeps the text whole; call ids
``call_`` + 24 hex digits (random: compared by shape); finish "stop" -> "tool_calls" when calls were parsed;
``reasoning_content`` None when empty, ``content`` "" when empty.
"""

from __future__ import annotations

import random
import re

import pytest

from pipeline.core.engines.request import request_of
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from sglang_support import import_sglang_modules
from pipeline.cases.deepseek_v31_outputs import MULTILINE_ARGS, random_v31, v31_call, v31_ids
from pipeline.cases.family_outputs import CJK, CODE, EMOJI, NAMES
from vllm_support.schemas import random_arguments, random_request

reasoning_parser, deepseekv31, protocol = import_sglang_modules(
    "sglang.srt.parser.reasoning_parser",
    "sglang.srt.function_call.deepseekv31_detector",
    "sglang.srt.entrypoints.openai.protocol",
)
CASES = 400
CALL_ID = re.compile(r"call_[0-9a-f]{24}")
DEFAULT_TOOLS = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in NAMES]


@pytest.fixture(scope="module")
def v31():
    tokenizer = load_tokenizer("deepseek-v3.1")
    return tokenizer, bind_profile("deepseek-v3.1", tokenizer)


def _tools(sent):
    return [protocol.Tool(function=protocol.Function(name=t["function"]["name"], parameters=t["function"]["parameters"]))
            for t in sent or []]


def sglang_response(ids, finish, profile, tokenizer, thinking, sent=DEFAULT_TOOLS, choice=None) -> dict:
    """What sglang 0.5.23 returns for these ids answering this request, computed by its own parsers."""
    if ids and ids[-1] in profile.stop_ids:  # the detokenizer trims the matched stop token
        ids = ids[:-1]
    text = tokenizer.decode(ids)  # skip_special_tokens is off whenever a parser runs
    parser = reasoning_parser.ReasoningParser(model_type="deepseek-v3", stream_reasoning=False, force_reasoning=thinking)
    reasoning, text = parser.parse_non_stream(text)
    detector = deepseekv31.DeepSeekV31Detector()
    tool_calls = None
    if sent and choice != "none" and detector.has_tool_call(text):
        try:
            result = detector.detect_and_parse(text, _tools(sent))
        except Exception:  # serving_chat's catch-all: the text stays whole, no calls
            result = None
        if result is not None:
            text = result.normal_text
            if result.calls:
                tool_calls = [{"id": "call_%024x" % n, "type": "function", "function": {"name": c.name, "arguments": c.parameters}}
                              for n, c in enumerate(result.calls)]
                if finish == "stop":
                    finish = "tool_calls"
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def _same_but_ids(view: dict) -> dict:
    calls = view["tool_calls"]
    if calls:
        assert all(CALL_ID.fullmatch(c["id"]) for c in calls), calls
        view = {**view, "tool_calls": [{**c, "id": "call_%024x" % n} for n, c in enumerate(calls)]}
    return view


def _view(ids, finish, profile, tokenizer, thinking, sent=DEFAULT_TOOLS, choice=None):
    request = request_of(sent, choice, {"thinking": thinking})
    return _same_but_ids(api_view(ids, finish, profile, tokenizer, "sglang", request))


def _cases(tokenizer, profile):
    d = lambda *a, **kw: v31_ids(tokenizer, profile, *a, **kw)  # noqa: E731
    c = v31_call
    return {
        "plain": (d("Think.", "Answer."), "stop", True),
        "thinking-off": (d(None, "Answer."), "stop", False),
        "thinking-off-with-call": (d(None, "Let me look.", [c("get", {"q": 1})]), "stop", False),
        "empty-reasoning": (d("", "Answer."), "stop", True),
        "call-right-after-think-end": (d("Need a tool.", "", [c("get", {"q": 1})]), "stop", True),
        "two-calls": (d("Two.", "", [c("get", {"q": 1}), c("read_file", {"path": "/tmp/a b"})]), "stop", True),
        "text-around-content-stripped": (d("r", "\n  I will check.\n", [c("get", {"q": 1})]), "stop", True),
        "compact-args-reserialised": (d("r", "", [c("get", '{"q":1,"n":[1,2],"f":1e3,"g":5.0}')]), "stop", True),
        "non-ascii-args": (d("r", CJK, [c("查询", {"s": "中文 👍é"}), c("get", '{"e": "\\u00e9"}')]), "stop", True),
        "nested-args": (d("r", "", [c("run-cmd", {"a": {"b": [1, {"c": None}]}, "t": True})]), "stop", True),
        "multi-line-args": (d("r", "", [c("get", MULTILINE_ARGS[0])]), "stop", True),
        "empty-list-args-become-object": (d("r", "", [c("get", "[]")]), "stop", True),
        "args-not-json": (d("r", "c", [c("get", "{\"cut\": "), c("put", {"q": 1})]), "stop", True),
        "undeclared-tool-dropped": (d("r", "", [c("nope", {"q": 1}), c("get", {"q": 2})]), "stop", True),
        "newline-between-calls": (d("r", "", [c("get", {"q": 1}), c("get", {"q": 2})], between="\n"), "stop", True),
        "text-after-calls-dropped": (d("r", "c", [c("get", {"q": 1})], after_calls="\nDone."), "stop", True),
        "cut-in-reasoning": (d("A long thought " * 5, "never", close_think=False, stop=False), "length", True),
        "cut-in-content": (d("r", EMOJI, stop=False)[:-3], "length", True),
        "cut-in-call": (d("r", "c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-6], "length", True),
        "literal-think-end-thinking-off": (d(None, "I write </think> literally."), "stop", False),
        "literal-think-begin-thinking-off": (d(None, "A <think>mention</think> here."), "stop", False),
        "qwen-tool-start-ends-reasoning": (d("see <tool_call> here", "x", close_think=False), "stop", True),
        "literal-section-marker-in-content": (d("r", "Write <｜tool▁calls▁begin｜> first."), "stop", True),
        "code-content": (d(CODE, CODE), "stop", True),
    }


def test_named_cases_agree_with_sglang(v31):
    tokenizer, profile = v31
    disagree, r = {}, {}
    for name, (ids, finish, thinking) in _cases(tokenizer, profile).items():
        expected = sglang_response(ids, finish, profile, tokenizer, thinking)
        got = _view(ids, finish, profile, tokenizer, thinking)
        r[name] = expected
        if got != expected:
            disagree[name] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())
    assert r["plain"] == {"reasoning": "Think.", "content": "Answer.", "tool_calls": None, "finish_reason": "stop"}
    assert r["thinking-off"]["reasoning"] is None and r["empty-reasoning"]["reasoning"] is None
    assert r["text-around-content-stripped"]["content"] == "I will check."
    assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2], "f": 1000.0, "g": 5.0}'
    assert r["multi-line-args"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "s": "two\\nlines"}'
    assert r["empty-list-args-become-object"]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert r["args-not-json"]["tool_calls"] is None and "<｜tool▁sep｜>" in r["args-not-json"]["content"]
    assert [t["function"]["name"] for t in r["undeclared-tool-dropped"]["tool_calls"]] == ["get"]
    assert r["cut-in-reasoning"]["content"] == "" and r["cut-in-reasoning"]["reasoning"].startswith("A long")
    assert len(r["cut-in-call"]["tool_calls"]) == 1
    assert r["literal-think-begin-thinking-off"]["reasoning"] == "A <think>mention"  # <think> anywhere starts reasoning
    assert r["qwen-tool-start-ends-reasoning"]["content"].startswith("<tool_call>")


def test_random_outputs_agree_with_sglang(v31):
    tokenizer, profile = v31
    rng = random.Random(20261203)
    disagree, kinds = [], set()
    for n in range(CASES):
        ids, finish, thinking = random_v31(tokenizer, profile, rng)
        expected = sglang_response(ids, finish, profile, tokenizer, thinking)
        got = _view(ids, finish, profile, tokenizer, thinking)
        kinds.add((expected["reasoning"] is None, bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if got != expected:
            disagree.append(f"#{n} ({finish}, thinking {thinking}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert len(kinds) >= 10, f"random outputs too uniform: {sorted(kinds)}"


def test_schema_bearing_requests_agree_with_sglang(v31):
    """Typed tools (integer, number, boolean, enum, array, nested object, anyOf/nullable; values such as 5.0,
    1e3, -0.0, "5", integers above 2**53), tool_choice auto, unset or none, or no tools at all."""
    tokenizer, profile = v31
    rng = random.Random(3335)
    names = ("get_weather", "search", "read_file", "book.flight", "run-cmd")
    disagree, changed, n = [], 0, 0
    while n < CASES:
        tools, sent, choice = random_request(rng, names)
        if choice not in (None, "auto", "none"):  # sglang constrains those by grammar: not a parser question
            continue
        calls = [((t["function"]["name"] if rng.random() < 0.85 else "undeclared_tool"), random_arguments(rng, t))
                 for t in (rng.choice(tools) for _ in range(rng.choice((0, 1, 1, 2, 3))))]
        thinking = rng.random() < 0.5
        ids, finish = v31_ids(tokenizer, profile, "r" if thinking else None, rng.choice(("", "Let me check.")), calls), "stop"
        if rng.random() < 0.2:
            ids, finish = ids[: rng.randint(0, len(ids) - 1)], "length"
        expected = sglang_response(ids, finish, profile, tokenizer, thinking, sent, choice)
        got = _view(ids, finish, profile, tokenizer, thinking, sent, choice)
        changed += got != _view(ids, finish, profile, tokenizer, thinking)
        if got != expected:
            disagree.append(f"#{n} ({finish}) {choice!r}\n  text {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
        n += 1
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert changed >= 40, changed  # the request matters in a good share of the cases
