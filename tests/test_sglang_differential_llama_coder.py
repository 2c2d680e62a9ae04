"""The ``sglang`` views of llama3 and qwen3-coder agree with sglang 0.5.23's own parsers, run here on the
same ids (its package __init__ bypassed, nothing stubbed: see tests/sglang_support).

sglang functions called: ``Llama32Detector`` (``--tool-call-parser llama3``) and ``Qwen3CoderDetector``
(``--tool-call-parser qwen3_coder``), ``.has_tool_call(text)`` and ``.detect_and_parse(text, tools)`` with
the request's tools as ``protocol.Tool`` objects. Around them serving_chat, restated as the other sglang
differential tests restate it: the decoded text without the matched stop token (``skip_special_tokens``
off), the tool parser only when the request declares tools and ``tool_choice`` is not ``none``, an
exception keeps the text whole, call ids ``call_`` + 24 hex digits (random: compared by shape),
finish "stop" -> "tool_calls" when calls were parsed, ``content`` "" when empty.

Per family: named cases, 400 random outputs under tools without schemas, and 400 random schema-bearing
requests (``vllm_support/schemas.py``: typed parameters, ``tool_choice`` auto / unset / none, no tools)
with calls written against them: Qwen3-Coder's detector converts each parameter by its schema type.
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
from pipeline.cases import llama_coder_outputs as lo
from vllm_support.schemas import random_request

llama32, qwen3_coder, protocol = import_sglang_modules(
    "sglang.srt.function_call.llama32_detector",
    "sglang.srt.function_call.qwen3_coder_detector",
    "sglang.srt.entrypoints.openai.protocol",
)
CALL_ID = re.compile(r"call_[0-9a-f]{24}")
DEFAULT_TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in lo.NAMES]
RANDOM = SCHEMA = 400


@pytest.fixture(scope="module")
def llama():
    tokenizer = load_tokenizer("llama-3.1")
    return tokenizer, bind_profile("llama3", tokenizer)


@pytest.fixture(scope="module")
def coder():
    tokenizer = load_tokenizer("qwen3")
    return tokenizer, bind_profile("qwen3-coder", tokenizer)


def _tools(sent):
    return [protocol.Tool(function=protocol.Function(name=t["function"]["name"], parameters=t["function"]["parameters"]))
            for t in sent or []]


def sglang_response(ids, finish, profile, tokenizer, detector, sent=DEFAULT_TOOLS, choice=None) -> dict:
    """What sglang 0.5.23 returns for these ids answering this request, computed by its own detector."""
    if ids and ids[-1] in profile.stop_ids:
        ids = ids[:-1]
    text = tokenizer.decode(ids)
    tool_calls = None
    if sent and choice != "none" and detector.has_tool_call(text):
        try:
            result = detector.detect_and_parse(text, _tools(sent))
        except Exception:  # serving_chat's catch-all: the text stays whole, no calls
            result = None
        if result is not None:
            text = result.normal_text
            if result.calls:
                tool_calls = [{"id": "call_%024x" % n, "type": "function",
                               "function": {"name": c.name, "arguments": c.parameters}} for n, c in enumerate(result.calls)]
                if finish == "stop":
                    finish = "tool_calls"
    return {"reasoning": None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def view_response(ids, finish, profile, tokenizer, sent=DEFAULT_TOOLS, choice=None) -> dict:
    got = api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice))
    calls = got["tool_calls"]
    if calls:
        assert all(CALL_ID.fullmatch(c["id"]) for c in calls), calls
        got = {**got, "tool_calls": [{**c, "id": "call_%024x" % n} for n, c in enumerate(calls)]}
    return got


def _compare(cases, profile, tokenizer, detector_class):
    """{name: sglang's response}, after asserting the view gives the same for each case."""
    results, bad = {}, []
    for name, (ids, finish, sent, choice) in cases.items():
        expected = sglang_response(ids, finish, profile, tokenizer, detector_class(), sent, choice)
        got = view_response(ids, finish, profile, tokenizer, sent, choice)
        results[name] = expected
        if got != expected:
            bad.append(f"{name} ({finish}, {choice!r}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not bad, f"{len(bad)}/{len(cases)} disagree:\n" + "\n".join(bad[:6])
    return results


def _kinds(results) -> set:
    return {(bool(r["content"]), r["tool_calls"] is None, r["finish_reason"]) for r in results.values()}


def _schema_cases(rng, write):
    cases = {}
    for k in range(SCHEMA):
        tools, sent, choice = random_request(rng, lo.NAMES)
        calls = []
        for _ in range(rng.choice((0, 1, 1, 2))):
            tool = rng.choice(tools)
            name = tool["function"]["name"] if rng.random() < 0.93 else "undeclared_tool"
            values = {key: rng.choice(texts) for key, texts in tool["_values"].items() if rng.random() < 0.85}
            calls.append((name, values))
        ids = write(calls, rng)
        finish = "stop"
        if rng.random() < 0.2 and len(ids) > 1:
            ids, finish = ids[: rng.randint(1, len(ids) - 1)], "length"
        cases[f"schema-{k}"] = (ids, finish, sent, choice)
    return cases


# ---------------------------------------------------------------------------------------------- llama3
def test_llama3_named_cases_agree_with_sglang(llama):
    t, p = llama
    ids = lambda *a, **kw: lo.llama3_ids(t, p, *a, **kw)  # noqa: E731
    call = lo.llama_call
    cases = {
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
        "trailing-text": (ids("", [call("get", {"q": 1})]) [:-1] + t.encode_ordinary(" thanks") + [p.stop_id], "stop"),
        "cut-in-call": (ids("", [call("get", {"q": "a long value"})])[:-4], "length"),
        "answer-starting-with-brace": (ids("{not json} text"), "stop"),
    }
    cases = {k: (i, f, DEFAULT_TOOLS, None) for k, (i, f) in cases.items()}
    r = _compare(cases, p, t, llama32.Llama32Detector)
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


def test_llama3_random_outputs_agree_with_sglang(llama):
    t, p = llama
    rng = random.Random(3501)
    cases = {}
    for n in range(RANDOM):
        ids, finish = lo.random_llama3(t, p, rng)
        cases[f"random-{n}"] = (ids, finish, DEFAULT_TOOLS, None)
    assert len(_kinds(_compare(cases, p, t, llama32.Llama32Detector))) >= 5


def test_llama3_schema_bearing_requests_agree_with_sglang(llama):
    t, p = llama

    def write(calls, rng):
        bodies = [lo.llama_call(name, "{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + "}") for name, values in calls]
        return lo.llama3_ids(t, p, rng.choice(("", "", "Sure. ")), bodies, sep=rng.choice(("; ", ";")))

    r = _compare(_schema_cases(random.Random(3502), write), p, t, llama32.Llama32Detector)
    assert len(_kinds(r)) >= 4


# ----------------------------------------------------------------------------------------- qwen3-coder
def test_qwen3_coder_named_cases_agree_with_sglang(coder):
    t, p = coder
    ids = lambda *a, **kw: lo.coder_ids(t, p, *a, **kw)  # noqa: E731
    c = lo.coder_call
    typed = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {
        "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"}, "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "a": {"type": "array"}, "d": {"type": "object"}, "s": {"type": "string"}}}}}]
    cases = {
        "answer": (ids("Hello!"), "stop", DEFAULT_TOOLS, None),
        "one-call": (ids("", [c("get", {"q": "Oslo"})]), "stop", DEFAULT_TOOLS, None),
        "content-unstripped": (ids("Let me check.\n\n", [c("get", {"q": "Oslo"})]), "stop", DEFAULT_TOOLS, None),
        "untyped-values-stay-strings": (ids("", [c("get", {"n": "5", "b": "true"})]), "stop", DEFAULT_TOOLS, None),
        "typed-values": (ids("", [c("get", {"n": "5", "i": "7", "b": "True", "o": "null", "a": "[1, 2]", "d": "{'x': 1}", "s": "5"})]),
                         "stop", typed, None),
        "number-forms": (ids("", [c("get", {"n": "1e3"}), c("get", {"n": "5.0"}), c("get", {"n": "-0.0"})]), "stop", typed, None),
        "integer-not-integer": (ids("", [c("get", {"i": "5.0"})]), "stop", typed, None),
        "multi-line-value": (ids("", [c("get", {"s": "line 1\nline 2\n"})]), "stop", typed, None),
        "two-calls-text-between": (ids("", [c("get", {"q": 1}), c("read_file", {"p": "/a"})], between="\nnext\n"), "stop", DEFAULT_TOOLS, None),
        "unclosed-call": (ids("", [c("get", {"q": 1})], close_last=False), "stop", DEFAULT_TOOLS, None),
        "cut-in-call": (ids("", [c("get", {"q": "a long value"})], stop=False)[:-5], "length", DEFAULT_TOOLS, None),
        "choice-none": (ids("c", [c("get", {"q": 1})]), "stop", typed, "none"),
        "no-tools": (ids("c", [c("get", {"q": 1})]), "stop", None, None),
    }
    r = _compare(cases, p, t, qwen3_coder.Qwen3CoderDetector)
    assert r["content-unstripped"]["content"] == "Let me check.\n\n"
    assert r["untyped-values-stay-strings"]["tool_calls"][0]["function"]["arguments"] == '{"n": "5", "b": "true"}'
    assert r["typed-values"]["tool_calls"][0]["function"]["arguments"] == \
        '{"n": 5, "i": 7, "b": true, "o": null, "a": [1, 2], "d": {"x": 1}, "s": "5"}'
    assert [x["function"]["arguments"] for x in r["number-forms"]["tool_calls"]] == ['{"n": 1000.0}', '{"n": 5.0}', '{"n": -0.0}']
    assert r["integer-not-integer"]["tool_calls"][0]["function"]["arguments"] == '{"i": "5.0"}'
    assert r["multi-line-value"]["tool_calls"][0]["function"]["arguments"] == '{"s": "line 1\\nline 2\\n"}'
    assert len(r["two-calls-text-between"]["tool_calls"]) == 2
    assert r["choice-none"]["tool_calls"] is None and r["no-tools"]["tool_calls"] is None


def test_qwen3_coder_random_outputs_agree_with_sglang(coder):
    t, p = coder
    rng = random.Random(3503)
    cases = {}
    for n in range(RANDOM):
        ids, finish = lo.random_qwen3_coder(t, p, rng)
        cases[f"random-{n}"] = (ids, finish, DEFAULT_TOOLS, None)
    assert len(_kinds(_compare(cases, p, t, qwen3_coder.Qwen3CoderDetector))) >= 5


def test_qwen3_coder_schema_bearing_requests_agree_with_sglang(coder):
    t, p = coder

    def write(calls, rng):
        bodies = [lo.coder_call(name, {k: v.strip('"') if rng.random() < 0.7 else v for k, v in values.items()})
                  for name, values in calls]
        return lo.coder_ids(t, p, rng.choice(("", "", "Sure.\n\n")), bodies)

    r = _compare(_schema_cases(random.Random(3504), write), p, t, qwen3_coder.Qwen3CoderDetector)
    typed = sum(1 for x in r.values() for c in x["tool_calls"] or () if '": "' not in c["function"]["arguments"]
                and c["function"]["arguments"] != "{}")
    assert len(_kinds(r)) >= 4 and typed >= 40, typed
