"""gpt-oss's ``sglang`` API view agrees with sglang 0.5.23's own gpt-oss parsers, run here on the same ids.

sglang functions called (nothing of them is stubbed; see tests/sglang_support):
- ``sglang.srt.parser.reasoning_parser.ReasoningParser("gpt-oss", stream_reasoning=False,
  tool_call_parser_active=True).parse_non_stream(text)`` (its ``GptOssDetector`` over ``HarmonyParser``);
- ``sglang.srt.function_call.gpt_oss_detector.GptOssDetector().has_tool_call(text)`` and
  ``.detect_and_parse(text, tools)``, with ``tools`` declaring every name the outputs call.
Around them, what sglang's detokenizer and serving_chat (v1 chat completions, non-streaming) do is
restated in ``sglang_response``: the matched stop token trimmed from the text unless it is 200012
``<|call|>`` (``DetokenizerManager.trim_matched_stop`` with ``--tool-call-parser gpt-oss``), special
tokens kept in the text (``skip_special_tokens=False`` for gpt-oss), ``FunctionCallParser.parse_non_stream``
(the detector's normal text whenever ``has_tool_call``), ``reasoning_content`` None when empty,
``content`` "" when empty, call ids ``call_`` + 24 hex digits, finish "stop" -> "tool_calls" with calls.
"""

from __future__ import annotations

import random
import re

import pytest

from pipeline.core.diagnose import diagnose
from pipeline.core.harmony import harmony_encoding
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from sglang_support import import_sglang_gpt_oss
from pipeline.cases.gpt_oss_outputs import CJK, CODE, EMOJI, NAMES, HarmonyOutputs, random_output

reasoning_parser, gpt_oss_detector, protocol = import_sglang_gpt_oss()
SGLANG_CALL_TOKEN = 200012  # hard-coded in sglang's detokenizer_manager.trim_matched_stop
DECLARED = sorted({name.split(".")[-1] for name in NAMES})
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


@pytest.fixture(scope="module")
def oss():
    tokenizer = load_tokenizer("o200k_harmony")
    profile = bind_profile("gpt-oss", tokenizer)
    return tokenizer, profile, HarmonyOutputs(harmony_encoding(tokenizer), tokenizer, profile)


def sglang_response(ids, finish_reason, profile, tokenizer, declared=DECLARED) -> dict:
    """What SGLang 0.5.23 returns for these output ids, computed by its own parsers."""
    stops = {profile.ids[r] for r in profile.ids if r == "stop" or r.startswith("stop.")}
    if finish_reason == "stop" and ids and ids[-1] in stops and ids[-1] != SGLANG_CALL_TOKEN:
        ids = ids[:-1]
    text = tokenizer.decode(ids)
    parser = reasoning_parser.ReasoningParser(model_type="gpt-oss", stream_reasoning=False, tool_call_parser_active=True)
    reasoning, text = parser.parse_non_stream(text)
    tools = [protocol.Tool(type="function", function=protocol.Function(name=n, parameters={})) for n in declared]
    detector = gpt_oss_detector.GptOssDetector()
    tool_calls, finish = None, finish_reason
    if detector.has_tool_call(text):
        result = detector.detect_and_parse(text, tools)
        text = result.normal_text
        if result.calls:
            tool_calls = [{"id": "call_" + "%024x" % random.getrandbits(96), "type": "function",
                           "function": {"name": c.name, "arguments": c.parameters}} for c in result.calls]
            finish = "tool_calls" if finish == "stop" else finish
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}


def _same(view: dict, sglang: dict) -> bool:
    """Equal, call ids aside: both invent them (``call_`` + 24 hex digits)."""
    def strip(r):
        calls = [(c["function"]["name"], c["function"]["arguments"], bool(CALL_ID.fullmatch(c["id"]))) for c in r["tool_calls"] or []]
        return {**r, "tool_calls": calls}
    return strip(view) == strip(sglang)


def _cut_inside_character(tokenizer, ids):
    """The longest prefix of ids whose bytes end inside a UTF-8 character."""
    for k in range(len(ids) - 1, 0, -1):
        try:
            tokenizer.decode_bytes(ids[:k]).decode("utf-8")
        except UnicodeDecodeError:
            return ids[:k]
    raise AssertionError("no token boundary inside a character")


def _named_cases(gen: HarmonyOutputs):
    t, m = gen.turn, gen.message
    eot = gen.tok.encode("<|endoftext|>")[0]
    return {
        "plain": (t("Think.", "Answer."), "stop"),
        "no-reasoning": (t(None, "Answer."), "stop"),
        "empty-reasoning": (t("", "Answer."), "stop"),
        "whitespace-kept": (t("  Think.\n\n", "\n\nAnswer.  "), "stop"),
        "call-right-after-reasoning": (t("Need the weather.", None, [("get_weather", '{"city":"Paris"}')]), "stop"),
        "two-calls": (t("Two lookups.", None, [("get_weather", '{"city": "Oslo"}'), ("read_file", '{"path": "/a"}')]), "stop"),
        "text-before-a-call": (t("r", "  Let me check.  ", [("get_weather", '{"city": "Rome"}')]), "stop"),
        "call-without-reasoning": (t(None, None, [("read_file", "{}")]), "stop"),
        "empty-args": (t("r", None, [("read_file", "")]), "stop"),
        "args-not-json": (t("r", None, [("read_file", '{"cut": '), ("get_weather", '{"ok": 1}')]), "stop"),
        "args-not-an-object": (t("r", None, [("read_file", "[1, 2]")]), "stop"),
        "args-unicode-escaped": (t("r", None, [("get_weather", '{"city": "Z\\u00fcrich"}')]), "stop"),
        "dotted-name": (t("r", None, [("search.web", '{"q": "x"}')]), "stop"),
        "recipient-in-role-header": (gen.output([m("analysis", "r"), m("commentary", "{}", "functions.read_file", role_header=True)]), "stop"),
        "cut-inside-reasoning": (t("A long thought " * 5, None)[:-3], "length"),
        "cut-right-after-analysis-header": (t("r", None)[:3], "length"),
        "cut-inside-final": (t("r", CODE + CJK)[:-4], "length"),
        "cut-inside-tool-call": (t("r", None, [("get_weather", '{"city": "Lima"}')])[:-3], "length"),
        "cut-inside-emoji": (_cut_inside_character(gen.tok, t("r", EMOJI + " 🦜🧬")), "length"),
        "literal-end-in-reasoning": (t("I write <|end|> literally, then go on.", "Answer."), "stop"),
        "literal-return-in-final": (t("r", "Type <|return|> to finish, then more."), "stop"),
        "literal-call-in-args": (t("r", None, [("get_weather", '{"s": "<|call|>"}')]), "stop"),
        "stopped-on-endoftext": (t("r", "Answer.")[:-1] + [eot], "stop"),
        "preamble-then-final": (gen.output([m("analysis", "r"), m("commentary", "Working."), m("final", "Done.")]), "stop"),
        "word-commentary-after-call": (gen.output([m("analysis", "r"), m("commentary", "{}", "functions.read_file")]) + gen.tok.encode_ordinary("commentary"), "length"),
    }


@pytest.fixture(scope="module")
def named_cases(oss):
    return _named_cases(oss[2])


def test_named_cases_agree_with_sglang(oss, named_cases):
    tokenizer, profile, _ = oss
    disagree = {}
    for name, (ids, finish) in named_cases.items():
        expected = sglang_response(ids, finish, profile, tokenizer)
        got = api_view(ids, finish, profile, tokenizer, "sglang")
        if not _same(got, expected):
            disagree[name] = (got, expected)
    assert not disagree, "\n".join(f"{n}: view {g!r}\n   sglang {e!r}" for n, (g, e) in disagree.items())


def test_named_cases_are_not_trivial(oss, named_cases):
    """The cases reach the branches they are named for (so agreement means something)."""
    tokenizer, profile, _ = oss
    r = {name: sglang_response(ids, finish, profile, tokenizer) for name, (ids, finish) in named_cases.items()}
    assert r["empty-reasoning"]["reasoning"] is None and r["empty-reasoning"]["content"] == "Answer."
    assert r["whitespace-kept"] == {"reasoning": "  Think.\n\n", "content": "\n\nAnswer.  ", "tool_calls": None, "finish_reason": "stop"}
    right_after = r["call-right-after-reasoning"]
    assert right_after["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert right_after["finish_reason"] == "tool_calls" and right_after["content"] == ""
    assert [c["function"]["name"] for c in r["two-calls"]["tool_calls"]] == ["get_weather", "read_file"]
    assert r["text-before-a-call"]["content"] == "Let me check."  # stripped by the tool-call parser
    assert r["call-without-reasoning"]["tool_calls"] is None  # no <|start|>assistant before the first call
    assert r["empty-args"]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert [c["function"]["name"] for c in r["args-not-json"]["tool_calls"]] == ["get_weather"]
    assert r["args-unicode-escaped"]["tool_calls"][0]["function"]["arguments"] == '{"city": "Zürich"}'
    assert r["dotted-name"]["tool_calls"][0]["function"]["name"] == "web"
    assert r["recipient-in-role-header"]["tool_calls"] is None
    assert r["cut-inside-reasoning"]["reasoning"].startswith("A long thought") and r["cut-inside-reasoning"]["content"] == ""
    assert r["cut-inside-tool-call"]["tool_calls"] is None
    assert r["cut-inside-emoji"]["content"].endswith("\ufffd")
    assert r["literal-end-in-reasoning"]["reasoning"] == "I write "
    assert r["stopped-on-endoftext"]["content"] == "Answer."


def test_random_outputs_agree_with_sglang(oss):
    tokenizer, profile, gen = oss
    rng = random.Random(20261130)
    disagree, kinds = [], set()
    for n in range(300):
        ids, finish = random_output(gen, rng)
        expected = sglang_response(ids, finish, profile, tokenizer)
        got = api_view(ids, finish, profile, tokenizer, "sglang")
        kinds.add((expected["reasoning"] is None, bool(expected["content"]), expected["tool_calls"] is None, expected["finish_reason"]))
        if not _same(got, expected):
            disagree.append(f"#{n} ({finish}) {tokenizer.decode(ids)!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert not disagree, f"{len(disagree)}/300 disagree:\n" + "\n".join(disagree[:5])
    assert len(kinds) >= 8, f"random outputs too uniform: {sorted(kinds)}"


def test_mangled_outputs_agree_with_sglang(oss):
    """Outputs with a token dropped or a stray marker id inserted (what a sampling slip or a cut makes):
    the view still agrees, wherever the text holds <|channel|> or <|start|> (sglang's TextStrategy, for text
    without either, is not restated) and every name called was declared (the view cannot know the request)."""
    tokenizer, profile, gen = oss
    rng = random.Random(99)
    markers = [profile.ids[r] for r in ("start", "channel", "message", "constrain", "end", "call", "stop")]
    compared, disagree = 0, []
    for n in range(400):
        ids, finish = random_output(gen, rng)
        i = rng.randrange(len(ids))
        ids = ids[:i] + ids[i + 1 :] if rng.random() < 0.5 else ids[:i] + [rng.choice(markers)] + ids[i:]
        text = tokenizer.decode(ids)
        if "<|channel|>" not in text and "<|start|>" not in text:
            continue
        declared = sorted({name.split(".")[-1] for name in re.findall(r"to=([a-zA-Z_][a-zA-Z0-9_.-]*)", text)})
        compared += 1
        expected = sglang_response(ids, finish, profile, tokenizer, declared)
        got = api_view(ids, finish, profile, tokenizer, "sglang")
        if not _same(got, expected):
            disagree.append(f"#{n} ({finish}) {text!r}\n  view   {got!r}\n  sglang {expected!r}")
    assert compared > 300 and not disagree, f"{len(disagree)}/{compared} disagree:\n" + "\n".join(disagree[:5])


SURVIVE = ("plain", "no-reasoning", "whitespace-kept", "two-calls", "cut-inside-reasoning", "cut-inside-final")


def test_what_survives_the_api_is_rebuilt_exactly(oss, named_cases):
    tokenizer, profile, _ = oss
    for name in SURVIVE + ("call-right-after-reasoning-spaced",):
        if name == "call-right-after-reasoning-spaced":
            ids, finish = oss[2].turn("Need it.", None, [("get_weather", '{"city": "Paris"}')]), "stop"
        else:
            ids, finish = named_cases[name]
        response = sglang_response(ids, finish, profile, tokenizer)
        assert reconstruct_output_ids(response, profile, tokenizer) == ids, name


@pytest.mark.parametrize(
    "case, cls",
    [
        ("args-unicode-escaped", "tool-args-json"),  # json.dumps(ensure_ascii=False) unescaped \u00fc
        ("dotted-name", "tool-call-id"),  # functions.search.web came back as "web"
        ("text-before-a-call", "whitespace"),  # the preamble was .strip()ped
        ("stopped-on-endoftext", "stop-token"),  # the engine stopped on <|endoftext|>; <|return|> is rebuilt
        ("cut-inside-tool-call", "dropped-text"),  # the parser drops a call the length limit cut off
        ("cut-inside-emoji", "truncated-utf8"),
        ("empty-args", "tool-args-json"),  # the model wrote no arguments; SGLang returns "{}"
        ("call-right-after-reasoning", "tool-args-json"),  # compact {"city":"Paris"} re-serialised with spaces
    ],
)
def test_what_the_parser_loses_gets_the_right_class(oss, named_cases, case, cls):
    """Lost information shows as its divergence class, never as a silently wrong id."""
    tokenizer, profile, _ = oss
    ids, finish = named_cases[case]
    rebuilt = reconstruct_output_ids(sglang_response(ids, finish, profile, tokenizer), profile, tokenizer)
    d = diagnose(ids, rebuilt, tokenizer, profile=profile, finish_reason=finish)
    assert d.hunks
    assert d.hunks[0].cls == cls, [h.cls for h in d.hunks]
