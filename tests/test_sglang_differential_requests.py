"""The ``sglang`` views answer the request as sglang 0.5.23 does: 400 random schema-bearing requests per
profile of every family with a case generator whose sglang view parses tool calls (Kimi K2.5, Kimi K2, Qwen3,
DeepSeek-V3, DeepSeek-V3.1, DeepSeek-V3.2, Llama 3.1, Qwen3-Coder: ``PROFILES``, read from the registry), each
with calls written by the family's case generator against its tools, compared field by field with sglang's own
parsers, reached by the names the view declares (``sglang_support/serving.py``: the detector sglang's
``ToolCallParserEnum`` maps the tool-call parser name to, the reasoning detector and its thinking switch).
Where thinking is the request's choice (DeepSeek-V3.1 and V3.2), half the outputs think and the request asks
for it (``chat_template_kwargs``), half do not.

The requests (``vllm_support/schemas.py``) declare typed tools (or none) with ``tool_choice`` auto,
unset or ``none``: the detectors' ``.has_tool_call`` and ``.detect_and_parse(text, tools)`` get the request's
tools as ``protocol.Tool`` objects, after ``ReasoningParser(...).parse_non_stream``; serving_chat around them,
with ``_tool_call_parsing_active``: the tool parser runs only when the request declares tools and
``tool_choice`` is not ``none``. What the request changes in sglang's answer: a bare-counter Kimi call is named
from the tools' schemas (``_infer_tool_name``) or dropped; the JSON families' detectors drop calls to
undeclared tools; Qwen3-Coder's converts each parameter by its schema type; without tools or with ``none`` the
text stays whole.

``tool_choice`` ``required`` or a named tool (400 more requests per profile): sglang constrains the
decoding (``_process_messages``: a structural tag in the model's own call format where the detector
supports one, else a JSON-schema grammar for a JSON array of calls), then ``_process_tool_calls`` parses
the output with the detector when the detector "owns" its format (``FunctionCallParser.owns_tool_format``:
a required-tool parser, ``supports_structural_tag()`` or ``parses_required_natively()``), else as that JSON
array (``[{"name", "parameters"}]``, content "", ``finish_reason`` "tool_calls"). Every detector an sglang view
names supports the structural tag (asked of each here), so a forced call is parsed exactly as ``auto`` parses
it and the ids the grammar allowed are read the same way; the views do that (the JSON-array branch, which none
of them reaches, is not restated).
"""

from __future__ import annotations

import random

import pytest

from pipeline.core.engines.request import Request, request_of
from pipeline.cases import family_outputs as fo
from pipeline.cases import kimi_outputs as ko
from pipeline.core.families import family_of, specs
from pipeline.core.profiles import bind_profile
from pipeline.core.views import api_view
from family_support import tokenizer_for
from sglang_support.serving import detector_class, owns_format, sglang_response, thinking_kwargs
from vllm_support.schemas import random_arguments, random_request

CASES = 400
NAMES = ("get_weather", "search", "read_file", "book.flight", "run-cmd")
# Every profile of a family with a case generator whose sglang view parses tool calls from the decoded text (a view
# keeping a stop token, gpt-oss's, has its own file).
PROFILES = [s.name for s in specs() if family_of(s.name).cases and "sglang" in s.views and s.views["sglang"].tool_parser
            and not s.views["sglang"].decode.keeps_stops]
# Every tool-call parser an sglang view names.
TOOL_PARSERS = sorted({s.views[v].tool_parser for s in specs() for v in s.views
                       if s.views[v].engine == "sglang" and s.views[v].tool_parser})


def _writer(family, tokenizer, profile):
    """Calls written by the family's case generator: a reasoning "r" where the profile thinks (where thinking is the
    request's choice, on or off at random, asked for by the switch sglang's reasoning detector reads), content or
    none; where the template writes call ids (Kimi's ``$id``), each call's head is the model's id or a bare counter.
    Returns (ids, chat template kwargs)."""
    cases, spec = family_of(family).case_generator(), profile.spec
    reasoning_parser = spec.views["sglang"].reasoning_parser

    def write(calls, rng):
        if spec.tool_calls is not None and "$id" in spec.tool_calls.call:
            calls = [(f"functions.{n}:{i}" if rng.random() < 0.7 else str(i), a) for i, (n, a) in enumerate(calls)]
        thinking = rng.random() < 0.5 if spec.think_optional else spec.thinking
        kwargs = thinking_kwargs(reasoning_parser, thinking) if spec.think_optional else {}
        turn = {"reasoning": "r" if thinking else None, "content": rng.choice(("", "Let me check.")), "calls": calls}
        return cases.write(tokenizer, profile, turn), kwargs

    return write


def _cases(family, tokenizer, profile, seed, forced=False):
    """CASES outputs answering random requests: with ``tool_choice`` auto, unset or none, or (``forced``)
    ``required`` or a named tool."""
    rng = random.Random(seed)
    write = _writer(family, tokenizer, profile)
    out = []
    while len(out) < CASES:
        tools, sent, choice = random_request(rng, NAMES)
        if (choice in ("required",) or isinstance(choice, dict)) != forced:
            continue
        calls = []
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            tool = rng.choice(tools)
            calls.append((tool["function"]["name"] if rng.random() < 0.85 else "undeclared_tool", random_arguments(rng, tool)))
        (ids, kwargs), finish = write(calls, rng), "stop"
        if rng.random() < 0.2:
            ids, finish = ids[: rng.randint(0, len(ids) - 1)], "length"
        out.append((ids, finish, sent, choice, kwargs))
    return out


def _bind(family):
    tokenizer = tokenizer_for(family)
    return tokenizer, bind_profile(family, tokenizer)


@pytest.mark.parametrize("family", PROFILES)
def test_schema_bearing_requests_agree_with_sglang(family):
    tokenizer, profile = _bind(family)
    disagree, changed = [], 0
    for n, (ids, finish, sent, choice, kwargs) in enumerate(_cases(family, tokenizer, profile, 3320 + len(family))):
        expected = sglang_response(ids, finish, profile, tokenizer, sent, choice, kwargs)
        got = api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice, kwargs))
        changed += got != api_view(ids, finish, profile, tokenizer, "sglang", Request(chat_template_kwargs=kwargs, any_tool=True))
        if got != expected:
            disagree.append(f"#{n} ({finish}) {choice!r} {[t['function']['name'] for t in sent or []]} {kwargs}\n"
                            f"  text {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert changed >= 40, (family, changed)  # the request matters in a good share of the cases


@pytest.mark.parametrize("family", PROFILES)
def test_required_and_named_tool_choice_agree_with_sglang(family):
    """``required`` and a named tool: each detector owns its format (sglang's own answer), so the output is
    parsed as for ``auto``; the view's response equals sglang's on every case, calls or none."""
    tokenizer, profile = _bind(family)
    detector = detector_class(profile.spec.views["sglang"].tool_parser)()
    disagree, called = [], 0
    for n, (ids, finish, sent, choice, kwargs) in enumerate(_cases(family, tokenizer, profile, 3340 + len(family), forced=True)):
        assert owns_format(detector, choice), (family, choice)
        expected = sglang_response(ids, finish, profile, tokenizer, sent, choice, kwargs)
        got = api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice, kwargs))
        called += bool(expected["tool_calls"])
        if got != expected:
            disagree.append(f"#{n} ({finish}) {choice!r} {kwargs}\n  text {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert called >= 150, called  # most forced outputs hold calls: the parse is exercised


@pytest.mark.parametrize("parser", TOOL_PARSERS)
@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get"}}])
def test_every_sglang_views_detector_owns_its_format(parser, choice):
    """Every tool parser an ``sglang`` view restates (gpt-oss's too) owns its format for a forced choice, so
    serving_chat never reads such an output as a JSON array: the views parse it as ``auto``."""
    assert owns_format(detector_class(parser)(), choice)


def test_held_out_real_schema_calls_agree_with_sglang():
    """The held-out Kimi K2.5 calls on the Berkeley Function Calling Leaderboard's tools (``tests/heldout/``):
    sglang's detector, given each sample's tools, answers what the ``sglang`` view says, on every sample."""
    from vllm_support.cases import kimi_k25_bfcl

    group = kimi_k25_bfcl()
    disagree, calls = [], 0
    for name, (ids, finish) in group.cases.items():
        sent, choice = group.requests[name]
        expected = sglang_response(ids, finish, group.profile, group.tokenizer, sent, choice)
        got = api_view(ids, finish, group.profile, group.tokenizer, "sglang", group.request(name))
        calls += len(expected["tool_calls"] or ())
        if got != expected:
            disagree.append(f"{name}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{len(group.cases)} disagree:\n" + "\n".join(disagree[:5])
    assert len(group.cases) >= 105 and calls >= 150, (len(group.cases), calls)


def test_the_request_named_behaviours_are_what_sglang_does():
    """A bare-counter Kimi call is named by the schema its arguments fit best; Qwen3's detector drops a
    call to an undeclared tool; with ``tool_choice`` ``none`` the markup stays in the content."""
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {k: {"type": "string"}}}}}
             for n, k in (("get_weather", "city"), ("search", "q"))]
    tokenizer, profile = _bind("kimi-k2.5")
    ids = ko.kimi_ids(tokenizer, profile, "r", "", [("0", '{"q": "x"}')])
    expected = sglang_response(ids, "stop", profile, tokenizer, tools, "auto")
    assert expected["tool_calls"][0]["function"]["name"] == "search"
    assert api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, "auto")) == expected
    assert api_view(ids, "stop", profile, tokenizer, "sglang")["tool_calls"] is None  # no schemas known: dropped

    tokenizer, profile = _bind("qwen3")
    ids = fo.qwen3_ids(tokenizer, profile, "\nr\n", "", [fo.qwen3_call("search", {"q": 1}), fo.qwen3_call("other", {"q": 2})])
    expected = sglang_response(ids, "stop", profile, tokenizer, tools, None)
    assert [c["function"]["name"] for c in expected["tool_calls"]] == ["search"]
    got = api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, None))
    assert [c["function"]["name"] for c in got["tool_calls"]] == ["search"]
    none = sglang_response(ids, "stop", profile, tokenizer, tools, "none")
    assert none["tool_calls"] is None and "<tool_call>" in none["content"]
    assert api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, "none")) == none
