"""The ``sglang`` views answer the request as sglang 0.5.23 does: 400 random schema-bearing requests per
profile whose tool calls follow a template (every such profile of the family registry: Kimi K2.5, Kimi K2,
Qwen3, DeepSeek-V3), each with calls written by the family's case generator against its tools, compared
field by field with sglang's own detectors (found by the parser names the view declares) given the
request's tools.

The requests (``vllm_support/schemas.py``) declare typed tools (or none) with ``tool_choice`` auto,
unset or ``none``. sglang functions called (nothing stubbed): ``KimiK2Detector`` / ``Qwen25Detector`` /
``DeepSeekV3Detector`` ``.has_tool_call`` and ``.detect_and_parse(text, tools)`` with the request's tools as
``protocol.Tool`` objects, after ``ReasoningParser(...).parse_non_stream``. Around them serving_chat,
restated as the other sglang differential tests restate it, plus ``_tool_call_parsing_active``: the tool
parser runs only when the request declares tools and ``tool_choice`` is not ``none`` (none of these
detectors ``parses_without_tools``). What the request changes in sglang's answer: a bare-counter Kimi call
is named from the tools' schemas (``_infer_tool_name``) or dropped; Qwen3's and DeepSeek's detectors drop
calls to undeclared tools; without tools or with ``none`` the text stays whole. No schema coercion: the
detectors pass Kimi's arguments verbatim and re-serialise the JSON families' with ``json.dumps``.

``tool_choice`` ``required`` or a named tool (400 more requests per family): sglang constrains the
decoding (``_process_messages``: a structural tag in the model's own call format where the detector
supports one, else a JSON-schema grammar for a JSON array of calls), then ``_process_tool_calls`` parses
the output with the detector when the detector "owns" its format (``FunctionCallParser.owns_tool_format``:
a required-tool parser, ``supports_structural_tag()`` or ``parses_required_natively()``), else as that JSON
array (``[{"name", "parameters"}]``, content "", ``finish_reason`` "tool_calls"). Restated here with the
detectors' own answers to those questions: Kimi's, Qwen's and DeepSeek's detectors support the structural
tag, so a forced call is parsed exactly as ``auto`` parses it and the ids the grammar allowed are read the
same way; the views do that (the JSON-array branch, which none of them reaches, is not restated).
"""

from __future__ import annotations

import random

import pytest

from pipeline.core.engines.request import request_of
from pipeline.cases import family_outputs as fo
from pipeline.cases import kimi_outputs as ko
from pipeline.core.families import family_of, specs
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from sglang_support import import_sglang_modules
from vllm_support.schemas import random_arguments, random_request

reasoning_parser, kimik2, qwen25, deepseekv3, gpt_oss, protocol = import_sglang_modules(
    "sglang.srt.parser.reasoning_parser",
    "sglang.srt.function_call.kimik2_detector",
    "sglang.srt.function_call.qwen25_detector",
    "sglang.srt.function_call.deepseekv3_detector",
    "sglang.srt.function_call.gpt_oss_detector",
    "sglang.srt.entrypoints.openai.protocol",
)
CASES = 400
NAMES = ("get_weather", "search", "read_file", "book.flight", "run-cmd")
# sglang's own detectors, by the name its --tool-call-parser flag gives them (its FunctionCallParser map).
DETECTORS = {"kimi_k2": kimik2.KimiK2Detector, "qwen25": qwen25.Qwen25Detector, "deepseekv3": deepseekv3.DeepSeekV3Detector}
# Every registered profile whose calls follow a template and whose sglang view parses them.
# (Families whose calls the generic generator does not write, or whose detector is not in DETECTORS, have
# differential files of their own: test_sglang_differential_deepseek*.py, test_sglang_differential_llama_coder.py.)
PROFILES = [s.name for s in specs() if s.tool_calls is not None and "sglang" in s.views
            and s.views["sglang"].tool_parser in DETECTORS and family_of(s.name).cases]


def _tools(sent):
    return [protocol.Tool(function=protocol.Function(name=t["function"]["name"], parameters=t["function"]["parameters"]))
            for t in sent or []]


def sglang_response(ids, finish, profile, tokenizer, family, sent, choice) -> dict:
    """What sglang 0.5.23 returns for these ids answering this request, computed by its own parsers."""
    if ids and ids[-1] in profile.stop_ids:
        ids = ids[:-1]
    text = tokenizer.decode(ids)
    reasoning = None
    view = profile.spec.views["sglang"]
    if view.reasoning_parser:
        parser = reasoning_parser.ReasoningParser(model_type=view.reasoning_parser, stream_reasoning=False,
                                                  force_reasoning=profile.spec.thinking)
        reasoning, text = parser.parse_non_stream(text)
    detector = DETECTORS[view.tool_parser]()
    ids_format = view.assembly.call_id
    tool_calls = None
    if sent and choice != "none":  # _tool_call_parsing_active
        text, tool_calls, finish = process_tool_calls(detector, text, sent, choice, finish, ids_format)
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def _choice(choice):
    """The request's tool_choice as sglang's protocol holds it."""
    if isinstance(choice, dict):
        return protocol.ToolChoice(function=protocol.ToolChoiceFuncName(name=choice["function"]["name"]))
    return choice


def owns_format(detector, choice) -> bool:
    """``FunctionCallParser.owns_tool_format``, asked of the detector itself."""
    required = detector.get_required_tool_parser(_choice(choice))
    return required is not None or detector.supports_structural_tag() or detector.parses_required_natively()


def process_tool_calls(detector, text, sent, choice, finish, ids_format):
    """serving_chat's ``_process_tool_calls`` for a detector that owns its format: (content text, calls or
    None, finish reason)."""
    is_required = choice == "required" or isinstance(choice, dict)
    owns = owns_format(detector, choice)
    if (not is_required or owns) and detector.has_tool_call(text):
        try:
            result = detector.detect_and_parse(text, _tools(sent))
        except Exception:  # serving_chat's catch-all: the text stays whole, no calls
            return text, None, finish
        if not result.calls:
            return result.normal_text, None, finish
        calls = [{"id": ids_format.format(name=c.name, index=n), "type": "function",
                  "function": {"name": c.name, "arguments": c.parameters}} for n, c in enumerate(result.calls)]
        return result.normal_text, calls, "tool_calls" if finish == "stop" else finish
    # A required or named choice with a detector that does not own its format would be read as a JSON array of
    # {"name", "parameters"} (the JSON-schema grammar's output): no family here reaches it (owns_format).
    assert not is_required or owns, "serving_chat's JSON-array branch is not restated"
    return text, None, finish


def _writer(family, tokenizer, profile):
    """Calls written by the family's case generator: a reasoning "r" where the profile thinks, content
    or none; where the template writes call ids (Kimi's ``$id``), each call's head is the model's id or a
    bare counter."""
    cases, spec = family_of(family).case_generator(), profile.spec

    def write(calls, rng):
        if "$id" in spec.tool_calls.call:
            calls = [(f"functions.{n}:{i}" if rng.random() < 0.7 else str(i), a) for i, (n, a) in enumerate(calls)]
        turn = {"reasoning": "r" if spec.thinking else None, "content": rng.choice(("", "Let me check.")), "calls": calls}
        return cases.write(tokenizer, profile, turn)

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
        ids, finish = write(calls, rng), "stop"
        if rng.random() < 0.2:
            ids, finish = ids[: rng.randint(0, len(ids) - 1)], "length"
        out.append((ids, finish, sent, choice))
    return out


@pytest.mark.parametrize("family", PROFILES)
def test_schema_bearing_requests_agree_with_sglang(family):
    tokenizer = load_tokenizer(family)
    profile = bind_profile(family, tokenizer)
    disagree, changed = [], 0
    for n, (ids, finish, sent, choice) in enumerate(_cases(family, tokenizer, profile, 3320 + len(family))):
        expected = sglang_response(ids, finish, profile, tokenizer, family, sent, choice)
        got = api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice))
        changed += got != api_view(ids, finish, profile, tokenizer, "sglang")
        if got != expected:
            disagree.append(f"#{n} ({finish}) {choice!r} {[t['function']['name'] for t in sent or []]}\n"
                            f"  text {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert changed >= 40, (family, changed)  # the request matters in a good share of the cases


@pytest.mark.parametrize("family", PROFILES)
def test_required_and_named_tool_choice_agree_with_sglang(family):
    """``required`` and a named tool: each detector owns its format (sglang's own answer), so the output is
    parsed as for ``auto``; the view's response equals sglang's on every case, calls or none."""
    tokenizer = load_tokenizer(family)
    profile = bind_profile(family, tokenizer)
    detector = DETECTORS[profile.spec.views["sglang"].tool_parser]()
    disagree, called = [], 0
    for n, (ids, finish, sent, choice) in enumerate(_cases(family, tokenizer, profile, 3340 + len(family), forced=True)):
        assert owns_format(detector, choice), (family, choice)
        expected = sglang_response(ids, finish, profile, tokenizer, family, sent, choice)
        got = api_view(ids, finish, profile, tokenizer, "sglang", request_of(sent, choice))
        called += bool(expected["tool_calls"])
        if got != expected:
            disagree.append(f"#{n} ({finish}) {choice!r}\n  text {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:5])
    assert called >= 150, called  # most forced outputs hold calls: the parse is exercised


@pytest.mark.parametrize("detector", ["KimiK2Detector", "Qwen25Detector", "DeepSeekV3Detector", "GptOssDetector"])
@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get"}}])
def test_every_sglang_views_detector_owns_its_format(detector, choice):
    """Every tool parser an ``sglang`` view restates (gpt-oss's too) owns its format for a forced choice, so
    serving_chat never reads such an output as a JSON array: the views parse it as ``auto``."""
    module = {"KimiK2Detector": kimik2, "Qwen25Detector": qwen25, "DeepSeekV3Detector": deepseekv3,
              "GptOssDetector": gpt_oss}[detector]
    assert owns_format(getattr(module, detector)(), choice)


def test_held_out_real_schema_calls_agree_with_sglang():
    """The held-out Kimi K2.5 calls on the Berkeley Function Calling Leaderboard's tools (``tests/heldout/``):
    sglang's detector, given each sample's tools, answers what the ``sglang`` view says, on every sample."""
    from vllm_support.cases import kimi_k25_bfcl

    group = kimi_k25_bfcl()
    disagree, calls = [], 0
    for name, (ids, finish) in group.cases.items():
        sent, choice = group.requests[name]
        expected = sglang_response(ids, finish, group.profile, group.tokenizer, "kimi-k2.5", sent, choice)
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
    tokenizer = load_tokenizer("kimi-k2.5")
    profile = bind_profile("kimi-k2.5", tokenizer)
    ids = ko.kimi_ids(tokenizer, profile, "r", "", [("0", '{"q": "x"}')])
    expected = sglang_response(ids, "stop", profile, tokenizer, "kimi-k2.5", tools, "auto")
    assert expected["tool_calls"][0]["function"]["name"] == "search"
    assert api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, "auto")) == expected
    assert api_view(ids, "stop", profile, tokenizer, "sglang")["tool_calls"] is None  # no schemas known: dropped

    tokenizer = load_tokenizer("qwen3")
    profile = bind_profile("qwen3", tokenizer)
    ids = fo.qwen3_ids(tokenizer, profile, "\nr\n", "", [fo.qwen3_call("search", {"q": 1}), fo.qwen3_call("other", {"q": 2})])
    expected = sglang_response(ids, "stop", profile, tokenizer, "qwen3", tools, None)
    assert [c["function"]["name"] for c in expected["tool_calls"]] == ["search"]
    got = api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, None))
    assert [c["function"]["name"] for c in got["tool_calls"]] == ["search"]
    none = sglang_response(ids, "stop", profile, tokenizer, "qwen3", tools, "none")
    assert none["tool_calls"] is None and "<tool_call>" in none["content"]
    assert api_view(ids, "stop", profile, tokenizer, "sglang", request_of(tools, "none")) == none
