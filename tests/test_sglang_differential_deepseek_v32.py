"""The ``sglang`` view of DeepSeek-V3.2 agrees with sglang 0.5.23's own parsers, run here on the same ids (its
package __init__ bypassed, nothing stubbed: see tests/sglang_support): named cases, 400 random outputs and 400
random schema-bearing requests.

sglang functions called: ``ReasoningParser("deepseek-v3", stream_reasoning=False, force_reasoning=<the request's
thinking>).parse_non_stream(text)``, then ``DeepSeekV32Detector().has_tool_call(text)`` and
``.detect_and_parse(text, tools)`` with the request's tools. serving_chat around them as in
tests/test_sglang_differential_deepseek.py (SGLang's ``dsv32`` chat encoding has no output adapter: the
parsers answer).
"""

from __future__ import annotations

import json
import random

import pytest

from pipeline.core.engines.request import request_of
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from sglang_support import import_sglang_modules
from pipeline.cases.deepseek_v32_outputs import invoke, random_invoke, random_v32, v32_ids
from pipeline.cases.family_outputs import CJK, CODE, NAMES
from test_sglang_differential_deepseek import _same_but_ids
from vllm_support.schemas import random_request, random_tools

reasoning_parser, deepseekv32, protocol = import_sglang_modules(
    "sglang.srt.parser.reasoning_parser",
    "sglang.srt.function_call.deepseekv32_detector",
    "sglang.srt.entrypoints.openai.protocol",
)
CASES = 400
DEFAULT_TOOLS = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in NAMES]


@pytest.fixture(scope="module")
def v32():
    tokenizer = load_tokenizer("deepseek-v3.1")
    return tokenizer, bind_profile("deepseek-v3.2", tokenizer)


def sglang_response(ids, finish, profile, tokenizer, thinking, sent=DEFAULT_TOOLS, choice=None) -> dict:
    if ids and ids[-1] in profile.stop_ids:
        ids = ids[:-1]
    text = tokenizer.decode(ids)
    parser = reasoning_parser.ReasoningParser(model_type="deepseek-v3", stream_reasoning=False, force_reasoning=thinking)
    reasoning, text = parser.parse_non_stream(text)
    detector = deepseekv32.DeepSeekV32Detector()
    tool_calls = None
    if sent and choice != "none" and detector.has_tool_call(text):
        tools = [protocol.Tool(function=protocol.Function(name=t["function"]["name"], parameters=t["function"]["parameters"]))
                 for t in sent]
        try:
            result = detector.detect_and_parse(text, tools)
        except Exception:
            result = None
        if result is not None:
            text = result.normal_text
            if result.calls:
                tool_calls = [{"id": "call_%024x" % n, "type": "function", "function": {"name": c.name, "arguments": c.parameters}}
                              for n, c in enumerate(result.calls)]
                if finish == "stop":
                    finish = "tool_calls"
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def _view(ids, finish, profile, tokenizer, thinking, sent=DEFAULT_TOOLS, choice=None):
    return _same_but_ids(api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice, {"thinking": thinking})))


def _cases(tokenizer, profile):
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


def test_named_cases_agree_with_sglang(v32):
    tokenizer, profile = v32
    disagree, r = {}, {}
    for name, (ids, finish, thinking) in _cases(tokenizer, profile).items():
        expected = sglang_response(ids, finish, profile, tokenizer, thinking)
        got = _view(ids, finish, profile, tokenizer, thinking)
        r[name] = expected
        if got != expected:
            disagree[name] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())
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


def test_random_outputs_agree_with_sglang(v32):
    tokenizer, profile = v32
    rng = random.Random(20261232)
    disagree, kinds = [], set()
    for n in range(CASES):
        ids, finish, thinking = random_v32(tokenizer, profile, rng)
        expected = sglang_response(ids, finish, profile, tokenizer, thinking)
        got = _view(ids, finish, profile, tokenizer, thinking)
        kinds.add((expected["reasoning"] is None, bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if got != expected:
            disagree.append(f"#{n} ({finish}, thinking {thinking}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert len(kinds) >= 10, f"random outputs too uniform: {sorted(kinds)}"


def test_schema_bearing_requests_agree_with_sglang(v32):
    tokenizer, profile = v32
    rng = random.Random(3336)
    names = ("get_weather", "search", "read_file", "book.flight", "run-cmd")
    disagree, changed, n = [], 0, 0
    while n < CASES:
        tools, sent, choice = random_request(rng, names)
        if choice not in (None, "auto", "none"):
            continue
        invokes = []
        for t in (rng.choice(tools) for _ in range(rng.choice((0, 1, 1, 2, 3)))):
            drawn = {k: _loads(rng.choice(v)) for k, v in t["_values"].items() if rng.random() < 0.85}
            values = {k: v for k, v in drawn.items() if v is not _BAD}  # the model writes values through its encoder
            name = t["function"]["name"] if rng.random() < 0.85 else "undeclared_tool"
            invokes.append(random_invoke(rng, name, values))
        thinking = rng.random() < 0.5
        ids, finish = v32_ids(tokenizer, profile, "r" if thinking else None, rng.choice(("", "Let me check.")), invokes), "stop"
        if rng.random() < 0.2:
            ids, finish = ids[: rng.randint(0, len(ids) - 1)], "length"
        expected = sglang_response(ids, finish, profile, tokenizer, thinking, sent, choice)
        got = _view(ids, finish, profile, tokenizer, thinking, sent, choice)
        changed += got != _view(ids, finish, profile, tokenizer, thinking)
        if got != expected:
            disagree.append(f"#{n} ({finish}) {choice!r}\n  text {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
        n += 1
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert changed >= 40, changed


_BAD = object()


def _loads(text):
    try:
        return json.loads(text)
    except ValueError:
        return _BAD


def test_reconstruction_round_trips_the_models_layout(v32):
    """What the model writes (string values unpadded, JSON values as the encoder writes them) comes back exactly."""
    tokenizer, profile = v32
    tools = random_tools(random.Random(5), ["get", "search"])
    for thinking, content in ((True, "Let me check."), (False, ""), (True, CJK)):
        ids = v32_ids(tokenizer, profile, "r" if thinking else None, content,
                      [invoke("get", {"q": 1, "s": "中文", "l": [1, 2.5], "o": {"k": None}}), invoke("search", {"q": "x"})])
        response = api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools and [{k: v for k, v in t.items()
                                                                                          if k != "_values"} for t in tools],
                                                                                         None, {"thinking": thinking}))
        assert response["tool_calls"] and reconstruct_output_ids(response, profile, tokenizer) == ids
