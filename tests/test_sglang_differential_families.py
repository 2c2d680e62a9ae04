"""The ``sglang`` view of every family with a case generator agrees with sglang 0.5.23's own parsers, run here on
the same ids (its package __init__ bypassed, nothing stubbed: see tests/sglang_support): named cases per family,
and 400 random outputs per profile written by the family's case generator (``Family.cases``).

Every parser is sglang's own, reached by the names the profile's ``sglang`` view declares (its reasoning
parser, and the detector sglang's ``ToolCallParserEnum`` maps its tool-call parser name to); serving_chat
around them is restated once, in ``sglang_support/serving.py``. A random output that says whether the model
thought (Qwen3, DeepSeek-V3.1, V3.2: thinking on and off) is sent with the chat template switch sglang's
reasoning detector reads (``enable_thinking``, ``thinking``), so the view and sglang answer the same request.
The request declares every tool name the case generators call (no schemas; ``test_sglang_differential_requests.py``
sends typed schemas and forced ``tool_choice``). Kimi's and gpt-oss's named cases have files of their own
(``test_sglang_differential.py``, ``test_sglang_gpt_oss_differential.py``).
"""

from __future__ import annotations

import json
import random

import pytest

from pipeline.cases import kimi_outputs as ko
from pipeline.cases import llama_coder_outputs as lo
from pipeline.cases.deepseek_v31_outputs import MULTILINE_ARGS, v31_call, v31_ids
from pipeline.cases.deepseek_v32_outputs import invoke, v32_ids
from pipeline.cases.family_outputs import (
    ARGUMENTS, CJK, CODE, EMOJI, NAMES, deepseek_call, deepseek_ids, qwen3_call, qwen3_ids,
)
from pipeline.core.engines import registry
from pipeline.core.engines.request import request_of
from pipeline.core.families import family_of, specs
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.views import api_view
from family_support import tokenizer_for
from sglang_support.serving import sglang_response, thinking_kwargs
from vllm_support.schemas import random_tools

CASES = 400
# Every tool name the case generators call (a random output's "undeclared" call stays undeclared).
DEFAULT_TOOLS = [{"type": "function", "function": {"name": name, "parameters": {}}}
                 for name in dict.fromkeys(NAMES + ko.NAMES + lo.NAMES)]
# Every profile of a family with a case generator whose sglang view is the detokenizer's plain decode (the matched
# stop trimmed) and sglang's parsers on the text: a view that keeps a stop token (gpt-oss's ``<|call|>``, which
# sglang's detokenizer special-cases) or reads the ids has its own file.
PROFILES = [s.name for s in specs() if family_of(s.name).cases and "sglang" in s.views
            and not s.views["sglang"].decode.keeps_stops and not registry.is_whole("sglang", s.views["sglang"].reasoning_parser or "")]


@pytest.fixture(scope="module", params=PROFILES)
def bound(request):
    tokenizer = tokenizer_for(request.param)
    return tokenizer, bind_profile(request.param, tokenizer)


def _bind(name):
    tokenizer = tokenizer_for(name)
    return tokenizer, bind_profile(name, tokenizer)


def compare(ids, finish, profile, tokenizer, thinking=None, sent=DEFAULT_TOOLS, choice=None) -> tuple[dict, dict]:
    """(the view's response, sglang's) to these ids answering a request with these tools and tool_choice,
    asking for thinking on or off (None: the request does not say)."""
    kwargs = thinking_kwargs(profile.spec.views["sglang"].reasoning_parser, thinking)
    expected = sglang_response(ids, finish, profile, tokenizer, sent, choice, kwargs)
    got = api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice, kwargs))
    return got, expected


def _has_calls(spec) -> bool:
    return spec.tool_calls is not None or spec.own_layout is not None


def test_random_outputs_agree_with_sglang(bound):
    tokenizer, profile = bound
    cases = family_of(profile.name).case_generator()
    rng = random.Random(f"sglang random {profile.name}")
    disagree, kinds = [], set()
    for n in range(CASES):
        ids, finish, *rest = cases.random_output(tokenizer, profile, rng)
        thinking = rest[0] if rest else None
        got, expected = compare(ids, finish, profile, tokenizer, thinking)
        kinds.add((expected["reasoning"] is None, bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if got != expected:
            disagree.append(f"#{n} ({finish}, thinking {thinking}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    view = profile.spec.views["sglang"]
    least = (8 if view.reasoning_parser else 5) if _has_calls(profile.spec) else 2
    assert len(kinds) >= least, f"random outputs too uniform: {sorted(kinds)}"


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


def _check_qwen3(r):
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


def _check_deepseek(r):
    assert r["text-before-a-call"]["content"] == "I will check."
    assert [t["function"]["name"] for t in r["two-calls"]["tool_calls"]] == ["get", "read_file"]
    assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2]}'
    assert r["empty-list-args-become-object"]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert r["fence-without-json-tag"]["tool_calls"] is None and "<｜tool▁sep｜>" in r["fence-without-json-tag"]["content"]
    assert r["args-not-json"]["tool_calls"] is None
    assert len(r["cut-in-call"]["tool_calls"]) == 1
    assert r["literal-section-marker-in-content"]["content"] == "Write"


def _deepseek_v31_cases(tokenizer, profile):
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


def _check_deepseek_v31(r):
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


def _deepseek_v32_cases(tokenizer, profile):
    d = lambda *a, **kw: v32_ids(tokenizer, profile, *a, **kw)  # noqa: E731
    return {
        "plain": (d("Think.", "Answer."), "stop", True),
        "thinking-off": (d(None, "Answer."), "stop", False),
        "one-call": (d("r", "", [invoke("get", {"q": 1, "s": "中文"})]), "stop", True),
        "typed-params": (d("r", "c", [invoke("get", {"n": 5.0, "b": True, "l": [1, 2], "o": {"k": None}, "big": 2**64})]), "stop", True),
        "string-values-stripped": (d(None, "", [invoke("get", {"s": "  padded \n", "m": "two\nlines"})]), "stop", False),
        "two-calls": (d("r", "Let me check.", [invoke("get", {"q": 1}), invoke("read_file", {"path": "/tmp/a b"})]), "stop", True),
        "json-body": (d("r", "", [invoke("get", {"q": 1e3}, form="json")]), "stop", True),
        "json-body-nan-dropped": (d("r", "", [invoke("get", {}, form='{"x": NaN}'), invoke("read_file", {"q": 1})]), "stop", True),
        "malformed-param-dropped": (d("r", "", [invoke("get", {}, form="stray prose only")]), "stop", True),
        "undeclared-tool-dropped": (d("r", "", [invoke("nope", {"q": 1}), invoke("get", {"q": 2})]), "stop", True),
        "no-blank-line": (d("r", "c", [invoke("get", {"q": 1})], gap=""), "stop", True),
        "unclosed-block-no-section": (d("r", "c", [invoke("get", {"q": 1})], block_end=False), "stop", True),
        "bare-invoke": (d(None, "c\n\n" + invoke("get", {"q": 1})), "stop", False),
        "cut-in-call": (d("r", "c", [invoke("get", {"q": 1}), invoke("put", {"long": 2})])[:-9], "length", True),
        "cut-in-reasoning": (d("A long thought " * 5, "never", close_think=False, stop=False), "length", True),
        "text-after-block-dropped": (d("r", "c", [invoke("get", {"q": 1})], after="\nDone."), "stop", True),
        "non-ascii": (d(CJK, CJK, [invoke("查询", {"s": "中文 👍é"})]), "stop", True),
        "code-content": (d(CODE, CODE), "stop", True),
    }


def _check_deepseek_v32(r):
    args = lambda n, i=0: json.loads(r[n]["tool_calls"][i]["function"]["arguments"])  # noqa: E731
    assert args("typed-params") == {"n": 5.0, "b": True, "l": [1, 2], "o": {"k": None}, "big": 2**64}
    assert args("string-values-stripped") == {"s": "padded", "m": "two\nlines"}
    assert r["two-calls"]["content"] == "Let me check." and len(r["two-calls"]["tool_calls"]) == 2
    assert args("json-body") == {"q": 1000.0}
    assert [c["function"]["name"] for c in r["json-body-nan-dropped"]["tool_calls"]] == ["read_file"]
    assert r["malformed-param-dropped"]["tool_calls"] is None and r["malformed-param-dropped"]["content"] == ""
    assert [c["function"]["name"] for c in r["undeclared-tool-dropped"]["tool_calls"]] == ["get"]
    assert r["unclosed-block-no-section"] == {"reasoning": "r", "content": "c", "tool_calls": None, "finish_reason": "stop"}
    assert r["bare-invoke"]["content"] == "c" and r["bare-invoke"]["tool_calls"]
    assert r["cut-in-call"]["tool_calls"] is None and r["cut-in-call"]["content"] == "c"  # no closed block: no section


def _llama3_cases(t, p):
    ids = lambda *a, **kw: lo.llama3_ids(t, p, *a, **kw)  # noqa: E731
    call = lo.llama_call
    return {
        "answer": (ids("Hello!"), "stop"),
        "json-call": (ids("", [call("get", {"q": "München"})]), "stop"),
        "arguments-key": (ids("", [call("get", {"q": 1}, "arguments")]), "stop"),
        "compact-args-reserialised": (ids("", [call("get", '{"q":1,"n":[1,2]}')]), "stop"),
        "tag-then-call": (ids("", [call("get", {"q": 1})], tag=True), "stop"),
        "content-tag-call": (ids("Let me check. ", [call("get", {"q": 1})]), "stop"),
        "two-calls": (ids("", [call("get", {"q": 1}), call("read_file", {"path": "/a b"})]), "stop"),
        "python-dict-call": (ids("", ["{'name': 'get', 'arguments': {'q': True}}"]), "stop"),
        "builtin-call": (ids("", ['brave_search.call(query="x")'], tag=True, stop="stop.2"), "stop"),
        "undeclared-name": (ids("", [call("nope", {"q": 1})]), "stop"),
        "not-an-object": (ids("", ["[1, 2]"], tag=True), "stop"),
        "trailing-text": (ids("", [call("get", {"q": 1})])[:-1] + t.encode_ordinary(" thanks") + [p.stop_id], "stop"),
        "cut-in-call": (ids("", [call("get", {"q": "a long value"})])[:-4], "length"),
        "answer-starting-with-brace": (ids("{not json} text"), "stop"),
    }


def _check_llama3(r):
    assert r["json-call"]["tool_calls"][0]["function"]["arguments"] == '{"q": "München"}'
    assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2]}'
    assert r["content-tag-call"]["content"] == "Let me check. "
    assert len(r["two-calls"]["tool_calls"]) == 2
    assert r["python-dict-call"]["tool_calls"][0]["function"]["arguments"] == '{"q": true}'
    assert r["builtin-call"]["content"] == 'brave_search.call(query="x")' and r["builtin-call"]["tool_calls"] is None
    assert r["undeclared-name"]["tool_calls"] is None
    assert r["not-an-object"]["tool_calls"] is None and "<|python_tag|>" in r["not-an-object"]["content"]
    assert r["trailing-text"]["content"] == "thanks"
    assert r["cut-in-call"]["tool_calls"] is None


TYPED = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {
    "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"}, "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "a": {"type": "array"}, "d": {"type": "object"}, "s": {"type": "string"}}}}}]


def _qwen3_coder_cases(t, p):
    ids = lambda *a, **kw: lo.coder_ids(t, p, *a, **kw)  # noqa: E731
    c = lo.coder_call
    return {
        "answer": (ids("Hello!"), "stop"),
        "one-call": (ids("", [c("get", {"q": "Oslo"})]), "stop"),
        "content-unstripped": (ids("Let me check.\n\n", [c("get", {"q": "Oslo"})]), "stop"),
        "untyped-values-stay-strings": (ids("", [c("get", {"n": "5", "b": "true"})]), "stop"),
        "typed-values": (ids("", [c("get", {"n": "5", "i": "7", "b": "True", "o": "null", "a": "[1, 2]", "d": "{'x': 1}", "s": "5"})]),
                         "stop", TYPED, None),
        "number-forms": (ids("", [c("get", {"n": "1e3"}), c("get", {"n": "5.0"}), c("get", {"n": "-0.0"})]), "stop", TYPED, None),
        "integer-not-integer": (ids("", [c("get", {"i": "5.0"})]), "stop", TYPED, None),
        "multi-line-value": (ids("", [c("get", {"s": "line 1\nline 2\n"})]), "stop", TYPED, None),
        "two-calls-text-between": (ids("", [c("get", {"q": 1}), c("read_file", {"p": "/a"})], between="\nnext\n"), "stop"),
        "unclosed-call": (ids("", [c("get", {"q": 1})], close_last=False), "stop"),
        "cut-in-call": (ids("", [c("get", {"q": "a long value"})], stop=False)[:-5], "length"),
        "choice-none": (ids("c", [c("get", {"q": 1})]), "stop", TYPED, "none"),
        "no-tools": (ids("c", [c("get", {"q": 1})]), "stop", None, None),
    }


def _check_qwen3_coder(r):
    assert r["content-unstripped"]["content"] == "Let me check.\n\n"
    assert r["untyped-values-stay-strings"]["tool_calls"][0]["function"]["arguments"] == '{"n": "5", "b": "true"}'
    assert r["typed-values"]["tool_calls"][0]["function"]["arguments"] == \
        '{"n": 5, "i": 7, "b": true, "o": null, "a": [1, 2], "d": {"x": 1}, "s": "5"}'
    assert [x["function"]["arguments"] for x in r["number-forms"]["tool_calls"]] == ['{"n": 1000.0}', '{"n": 5.0}', '{"n": -0.0}']
    assert r["integer-not-integer"]["tool_calls"][0]["function"]["arguments"] == '{"i": "5.0"}'
    assert r["multi-line-value"]["tool_calls"][0]["function"]["arguments"] == '{"s": "line 1\\nline 2\\n"}'
    assert len(r["two-calls-text-between"]["tool_calls"]) == 2
    assert r["choice-none"]["tool_calls"] is None and r["no-tools"]["tool_calls"] is None


# profile -> (its named cases, what sglang's answers to them must show: the branches they are named for)
NAMED = {
    "qwen3": (_qwen3_cases, _check_qwen3),
    "deepseek-v3": (_deepseek_cases, _check_deepseek),
    "deepseek-v3.1": (_deepseek_v31_cases, _check_deepseek_v31),
    "deepseek-v3.2": (_deepseek_v32_cases, _check_deepseek_v32),
    "llama3": (_llama3_cases, _check_llama3),
    "qwen3-coder": (_qwen3_coder_cases, _check_qwen3_coder),
}


def _case(entry):
    """A named case as (ids, finish, thinking, tools, tool_choice): (ids, finish), (ids, finish, thinking) or
    (ids, finish, tools, tool_choice)."""
    if len(entry) == 2:
        return (*entry, None, DEFAULT_TOOLS, None)
    if len(entry) == 3:
        return (*entry, DEFAULT_TOOLS, None)
    return (entry[0], entry[1], None, entry[2], entry[3])


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_cases_agree_with_sglang(name):
    tokenizer, profile = _bind(name)
    build, check = NAMED[name]
    disagree, r = {}, {}
    for case, entry in build(tokenizer, profile).items():
        ids, finish, thinking, sent, choice = _case(entry)
        got, expected = compare(ids, finish, profile, tokenizer, thinking, sent, choice)
        r[case] = expected
        if got != expected:
            disagree[case] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())
    check(r)


def test_deepseek_v32_reconstruction_round_trips_the_models_layout():
    """What DeepSeek-V3.2 writes (string values unpadded, JSON values as the encoder writes them) comes back exactly."""
    tokenizer, profile = _bind("deepseek-v3.2")
    tools = [{k: v for k, v in t.items() if k != "_values"} for t in random_tools(random.Random(5), ["get", "search"])]
    for thinking, content in ((True, "Let me check."), (False, ""), (True, CJK)):
        ids = v32_ids(tokenizer, profile, "r" if thinking else None, content,
                      [invoke("get", {"q": 1, "s": "中文", "l": [1, 2.5], "o": {"k": None}}), invoke("search", {"q": "x"})])
        response = api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, None, {"thinking": thinking}))
        assert response["tool_calls"] and reconstruct_output_ids(response, profile, tokenizer) == ids
