"""Qwen3 and DeepSeek-V3 turns laid out as each model writes them, served through the `sglang` view
(SGLang 0.5.23's own parsers agree with it: tests/test_sglang_differential_families.py), rebuilt by
``reconstruct_output_ids``: every output whose information survives the API is rebuilt exactly, and
each one that cannot be is diagnosed with the class of what the API lost, never as a wrong id."""

from __future__ import annotations

import pytest

from pipeline.core.diagnose import diagnose
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.views import api_view
from pipeline.cases.family_outputs import CJK, CODE, EMOJI, deepseek_call, deepseek_ids, qwen3_call, qwen3_ids

NESTED = {"filter": {"price": {"max": 30, "currency": "EUR"}, "tags": ["a", "b"]}, "strict": True, "note": None}
NON_ASCII = {"city": "東京", "name": "Zoë Müller", "emoji": "👍🏽"}


@pytest.fixture(scope="module")
def qwen3():
    tokenizer = load_tokenizer("qwen3")
    return tokenizer, bind_profile("qwen3", tokenizer)


@pytest.fixture(scope="module")
def deepseek():
    tokenizer = load_tokenizer("deepseek-v3")
    return tokenizer, bind_profile("deepseek-v3", tokenizer)


def split_once(tokenizer, text: str, word: str) -> list[int]:
    """``text`` encoded with ``word`` split in two ordinary tokens where the tokenizer writes one."""
    i = text.index(word)
    for cut in range(1, len(word)):
        ids = tokenizer.encode_ordinary(text[:i] + word[:cut]) + tokenizer.encode_ordinary(word[cut:] + text[i + len(word):])
        if ids != tokenizer.encode_ordinary(text) and tokenizer.decode(ids) == text:
            return ids
    raise AssertionError(f"no non-canonical split of {word!r}")


def qwen3_exact(t, p):
    q, c = (lambda *a, **kw: qwen3_ids(t, p, *a, **kw)), qwen3_call  # noqa: E731
    return {
        "reasoning-and-content": (q("\nThe user wants a haiku.\n", "Autumn moonlight—\na worm digs silently\ninto the chestnut."), "stop"),
        "empty-reasoning": (q("\n\n", "Sure."), "stop"),
        "thinking-off": (q(None, "Paris is the capital of France."), "stop"),
        "thinking-off-call": (q(None, "Let me check.", [c("get_weather", {"city": "Paris"})]), "stop"),
        "call-right-after-think-end": (q("\nI need the weather tool.\n", "", [c("get_weather", {"city": "Paris"})]), "stop"),
        "two-calls": (q("\nTwo cities.\n", "", [c("get_weather", {"city": "Paris"}), c("get_weather", {"city": "Rome"})]), "stop"),
        "text-before-call": (q("\nCheck first.\n", "I'll look that up.", [c("search", {"q": "tokfidelity"})]), "stop"),
        "nested-args": (q("\nFilter.\n", "", [c("search_products", NESTED)]), "stop"),
        "non-ascii-args": (q("\n天气。\n", CJK, [c("查询", NON_ASCII)]), "stop"),
        "code-content": (q("\nWrite code.\n", "```python\n" + CODE + "```"), "stop"),
        "emoji": (q("\nEmoji.\n", EMOJI), "stop"),
        "cut-in-reasoning": (q("\nA long thought " * 20, close_think=False, stop=False), "length"),
        "cut-in-content": (q("\nShort.\n", "The answer is forty-two, because", stop=False), "length"),
    }


def qwen3_lost(t, p):
    """Outputs the API cannot give back, with the class of what it lost."""
    q, c = (lambda *a, **kw: qwen3_ids(t, p, *a, **kw)), qwen3_call  # noqa: E731
    split = [p.ids["think_begin"]] + t.encode_ordinary("\nSplit.\n") + [p.ids["think_end"]] + split_once(t, "\n\nCall the initializer twice.", "initializer") + [p.stop_id]
    return {
        "quoted-think-end-in-reasoning": (q("\nThe tag is written </think> in text.\n", "Done."), "stop", "marker-text"),
        "compact-args-reserialised": (q("\nr\n", "", [c("get", '{"q":1,"tags":["a","b"]}')]), "stop", "tool-args-json"),
        "escaped-args-reserialised": (q("\nr\n", "", [c("get", '{"city": "\\u6771\\u4eac"}')]), "stop", "tool-args-json"),
        "float-args-reserialised": (q("\nr\n", "", [c("get", '{"x": 1.50}')]), "stop", "tool-args-json"),
        "non-canonical-split": (split, "stop", "non-canonical-split"),
        "content-space-stripped": (q("\nr\n", "Checking. ", [c("get", {"q": 1})]), "stop", "whitespace"),
        "text-after-calls-dropped": (q("\nr\n", "", [c("get", {"q": 1})], after_calls="\nDone."), "stop", "dropped-text"),
        "cut-inside-a-call": (q("\nr\n", "c", [c("get", {"q": 1}), c("put", {"long": "x" * 20})])[:-8], "length", "dropped-text"),
        "endoftext-stop": (q("\nr\n", "c", stop=False) + [p.ids["stop.2"]], "stop", "stop-token"),
    }


def deepseek_exact(t, p):
    d, c = (lambda *a, **kw: deepseek_ids(t, p, *a, **kw)), deepseek_call  # noqa: E731
    return {
        "content": (d("Paris is the capital of France."), "stop"),
        "one-call": (d("", [c("get_weather", {"city": "Paris"})]), "stop"),
        "text-before-call": (d("I'll look that up.", [c("search", {"q": "tokfidelity"})]), "stop"),
        "two-calls": (d("", [c("get_weather", {"city": "Paris"}), c("get_weather", {"city": "Rome"})]), "stop"),
        "nested-args": (d("", [c("search_products", NESTED)]), "stop"),
        "non-ascii-args": (d(CJK, [c("查询", NON_ASCII)]), "stop"),
        "code": (d("```python\n" + CODE + "```"), "stop"),
        "cut-in-content": (d("The answer is forty-two, because", stop=False), "length"),
    }


def deepseek_lost(t, p):
    d, c = (lambda *a, **kw: deepseek_ids(t, p, *a, **kw)), deepseek_call  # noqa: E731
    return {
        "compact-args-reserialised": (d("", [c("get", '{"q":1}')]), "stop", "tool-args-json"),
        "content-newline-stripped": (d("Checking.\n\n", [c("get", {"q": 1})]), "stop", "whitespace"),
        "text-between-calls-dropped": (d("", [c("get", {"q": 1}), c("get", {"q": 2})], between="\nAnd then:\n"), "stop", "dropped-text"),
        "cut-inside-a-call": (d("c", [c("get", {"q": 1}), c("put", {"long": "x" * 20})])[:-8], "length", "dropped-text"),
    }


# Each family's cases: the outputs rebuilt exactly, and those the API cannot give back with their class.
CASES = {"qwen3": (qwen3_exact, qwen3_lost), "deepseek-v3": (deepseek_exact, deepseek_lost)}


@pytest.fixture(scope="module", params=list(CASES))
def family(request):
    tokenizer = load_tokenizer(request.param)
    return request.param, tokenizer, bind_profile(request.param, tokenizer)


def round_trip(ids: list[int], finish: str, profile, tokenizer) -> list[int]:
    return reconstruct_output_ids(api_view(ids, finish, profile, tokenizer), profile, tokenizer)


def test_surviving_outputs_are_rebuilt_exactly(family):
    name, tokenizer, profile = family
    exact, _ = CASES[name]
    wrong = {}
    for case, (ids, finish) in exact(tokenizer, profile).items():
        rebuilt = round_trip(ids, finish, profile, tokenizer)
        if rebuilt != ids:
            wrong[case] = diagnose(ids, rebuilt, tokenizer, profile=profile, finish_reason=finish).render()
    assert not wrong, "\n\n".join(f"{n}:\n{r}" for n, r in wrong.items())


def test_lost_information_gets_the_right_class(family):
    name, tokenizer, profile = family
    _, lost = CASES[name]
    got = {}
    for case, (ids, finish, expected) in lost(tokenizer, profile).items():
        rebuilt = round_trip(ids, finish, profile, tokenizer)
        assert rebuilt != ids, case
        got[case] = (diagnose(ids, rebuilt, tokenizer, profile=profile, finish_reason=finish).classes, [expected])
    assert all(g == e for g, e in got.values()), {n: g for n, (g, e) in got.items() if g != e}


def test_reconstruct_reads_reasoning_content_or_reasoning_and_ignores_extra_fields(qwen3):
    tokenizer, profile = qwen3
    ids = qwen3_ids(tokenizer, profile, "\nHm.\n", "", [qwen3_call("get", {"q": 1})])
    view = api_view(ids, "stop", profile, tokenizer)
    for key in ("reasoning", "reasoning_content"):
        line = {"id": "chatcmpl-1", "model": "Qwen/Qwen3-8B", key: view["reasoning"], "content": view["content"],
                "tool_calls": view["tool_calls"], "finish_reason": view["finish_reason"]}
        assert reconstruct_output_ids(line, profile, tokenizer) == ids


def test_regions_of_qwen3_and_deepseek_outputs(qwen3, deepseek):
    """split_output (what diagnosis asks for regions) reads each family's layout from its profile data."""
    from pipeline.core.layout import BETWEEN, CONTENT, REASONING, TOOL_ARGUMENTS, split_output

    t, p = qwen3
    ids = qwen3_ids(t, p, "\nr\n", "c", [qwen3_call("get", {"q": 1}), qwen3_call("put", {"q": 2})])
    layout = split_output(ids, p)
    assert t.decode(ids[layout.reasoning.start:layout.reasoning.end]) == "\nr\n" and layout.think_closed
    assert t.decode(ids[layout.content.start:layout.content.end]) == "\n\nc\n"
    assert [t.decode(ids[c.arguments.start:c.arguments.end]) for c in layout.tool_calls] == [
        '\n{"name": "get", "arguments": {"q": 1}}\n', '\n{"name": "put", "arguments": {"q": 2}}\n']
    assert all(c.complete and len(c.id) == 0 for c in layout.tool_calls)
    assert [s.kind for s in layout.spans].count(BETWEEN) == 1 and layout.stop_index == len(ids) - 1
    off = split_output(qwen3_ids(t, p, None, "plain"), p)  # thinking off: no reasoning region at all
    assert off.reasoning is None and [s.kind for s in off.spans][:1] == [CONTENT]

    t, p = deepseek
    ids = deepseek_ids(t, p, "c", [deepseek_call("get", {"q": 1})])
    layout = split_output(ids, p)
    (call,) = layout.tool_calls
    assert t.decode(ids[call.id.start:call.id.end]) == "function"
    assert t.decode(ids[call.arguments.start:call.arguments.end]) == 'get\n```json\n{"q": 1}\n```'
    assert REASONING not in {s.kind for s in layout.spans} and TOOL_ARGUMENTS in {s.kind for s in layout.spans}
