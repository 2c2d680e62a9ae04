"""Divergence diagnosis: every class on real Kimi token ids, the first-hunk window, speed."""

import json
from pathlib import Path

import pytest

from pipeline.core.alignment import divergent_blocks
from pipeline.core.diagnose import diagnose
from pipeline.core.divergence_classes import CLASSES, TEXT_PRESERVING_CLASSES
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def byte_id(kimi):
    """Ordinary id of each token's bytes, to build partial-UTF-8 splits from real tokens."""
    table = {}
    for i in range(kimi.n_vocab):
        if i not in kimi.special_ids:
            table.setdefault(kimi.token_bytes(i), i)
    return table


def single_bytes(byte_id, data: bytes) -> list[int]:
    return [byte_id[bytes([b])] for b in data]


def turn(kimi, profile, reasoning, content, calls=(), stop=True):
    """Golden-style Kimi K2.5 output ids: reasoning </think> content [tool section] <|im_end|>."""
    ids, enc = profile.ids, kimi.encode_ordinary
    out = enc(reasoning) + [ids["think_end"]] + enc(content)
    if calls:
        out.append(ids["tool_calls_begin"])
        for call_id, arguments in calls:
            out += [ids["tool_call_begin"], *enc(call_id), ids["tool_call_argument_begin"], *enc(arguments)]
            out.append(ids["tool_call_end"])
        out.append(ids["tool_calls_end"])
    return out + ([ids["stop"]] if stop else [])


def shape(d):
    return [(h.cls, h.golden_start, h.golden_end, h.recon_start, h.recon_end) for h in d.hunks]


def test_class_names_are_the_documented_ones():
    assert CLASSES == (
        "special-token-id",
        "stop-token",
        "non-canonical-split",
        "marker-text",
        "whitespace",
        "tool-args-json",
        "tool-call-id",
        "dropped-text",
        "special-text-deleted",
        "stop-text-kept",
        "think-not-closed",
        "message-structure",
        "cut-in-markup",
        "finish-rewritten",
        "truncated-utf8",
        "invalid-utf8",
        "other",
    )
    assert TEXT_PRESERVING_CLASSES == frozenset({"non-canonical-split"})


def test_rebuilt_text_spelling_a_marker_without_a_profile_is_other(kimi):
    """Without a profile there are no messages a parser could have moved pieces of: the marker text the
    reconstruction spells is a text change like any other, not a crash looking for a layout."""
    golden = kimi.encode_ordinary("The answer is here.")
    recon = kimi.encode_ordinary("The answer <|im_end|> is there.")
    d = diagnose(golden, recon, kimi)
    assert d.classes == ["other"] and not d.texts_identical


def test_equal_sequences_have_no_hunks(kimi):
    ids = kimi.encode_ordinary("Nothing differs here.")
    d = diagnose(ids, list(ids), kimi)
    assert d.hunks == [] and d.first_index is None and d.classes == []
    assert d.texts_identical
    assert d.signature() == {"hunks": 0}
    assert "no divergence" in d.render()


def test_special_token_id_replaced_by_lookalike(kimi, profile):
    golden = turn(kimi, profile, "Average them.", " I wish to average.")
    recon = golden[:-1] + [163533]
    d = diagnose(golden, recon, kimi, profile=profile.with_ids(stop=163533))
    n = len(golden) - 1
    assert shape(d) == [("special-token-id", n, n + 1, n, n + 1)]
    assert d.first_index == n
    assert not d.texts_identical
    assert not d.hunks[0].text_preserving
    report = d.render()
    assert "163586" in report and "'<|im_end|>'" in report
    assert "163533" in report and "'chas'" in report
    assert "tokfidelity audit" in report  # the advice line for this class


def test_special_token_id_in_the_middle(kimi, profile):
    """A pipeline that writes <|tool_call_argument_begin|> where the model wrote <|tool_call_begin|>."""
    golden = turn(kimi, profile, "Call it.", "", [("functions.f:0", '{"x": 1}')])
    i = golden.index(profile.ids["tool_call_begin"])
    recon = golden[:i] + [profile.ids["tool_call_argument_begin"]] + golden[i + 1 :]
    d = diagnose(golden, recon, kimi, profile=profile)
    assert shape(d) == [("special-token-id", i, i + 1, i, i + 1)]


def test_stop_token_missing_or_extra(kimi, profile):
    golden = turn(kimi, profile, "Short.", "Hello")
    d = diagnose(golden, golden[:-1], kimi, profile=profile)
    assert shape(d) == [("stop-token", len(golden) - 1, len(golden), len(golden) - 1, len(golden) - 1)]
    d = diagnose(golden[:-1], golden, kimi, profile=profile, finish_reason="length")
    assert d.classes == ["stop-token"]
    # Without a profile the stop token is recognised as a special id at the end.
    assert diagnose(golden, golden[:-1], kimi).classes == ["stop-token"]


def test_stop_token_is_split_from_a_text_change_at_the_end(kimi, profile):
    golden = kimi.encode_ordinary("Hello, world") + [profile.stop_id]
    recon = kimi.encode_ordinary("Hello, there")
    d = diagnose(golden, recon, kimi, profile=profile)
    assert [h.cls for h in d.hunks] == ["other", "stop-token"]
    assert d.hunks[1].golden_start == len(golden) - 1


def test_replaced_special_next_to_a_text_change_is_its_own_hunk(kimi, profile):
    enc = kimi.encode_ordinary
    golden = enc("Hello, world") + [profile.stop_id]
    recon = enc("Hello, there") + [kimi.special_tokens["[EOS]"]]  # another special, not a missing stop
    d = diagnose(golden, recon, kimi, profile=profile)
    assert [h.cls for h in d.hunks] == ["other", "special-token-id"]
    assert (d.hunks[1].golden_start, d.hunks[1].recon_start) == (len(golden) - 1, len(recon) - 1)
    golden = enc("Hmm") + [profile.ids["think_end"]] + enc("Hello, world") + [profile.stop_id]
    recon = enc("Hmm") + [kimi.encode("<think>")[0]] + enc("Hi, world") + [profile.stop_id]
    assert [h.cls for h in diagnose(golden, recon, kimi, profile=profile).hunks] == ["special-token-id", "other"]


def test_non_canonical_split_of_a_word(kimi):
    enc = kimi.encode_ordinary
    golden = enc("The ") + enc("initial") + enc("izer runs")  # the model split the word its own way
    recon = enc("The initializer runs")
    assert golden != recon and kimi.decode(golden) == kimi.decode(recon)
    d = diagnose(golden, recon, kimi)
    assert d.classes == ["non-canonical-split"]
    assert d.texts_identical and d.harmless and d.hunks[0].text_preserving
    assert "identical (only the split differs)" in d.render()


def test_non_canonical_split_of_newlines(kimi):
    enc = kimi.encode_ordinary
    golden = enc("a\n") + enc("\nb")
    recon = enc("a\n\nb")
    assert golden != recon
    assert diagnose(golden, recon, kimi).classes == ["non-canonical-split"]


def test_non_canonical_split_of_a_character_across_tokens(kimi, byte_id):
    """An emoji's bytes split over tokens differently: the text survives, the context check shows it."""
    enc = kimi.encode_ordinary
    emoji = "😀".encode()
    golden = enc("smile") + single_bytes(byte_id, b" " + emoji) + enc(" ok")
    recon = enc("smile 😀 ok")
    d = diagnose(golden, recon, kimi)
    assert d.classes == ["non-canonical-split"]
    assert d.texts_identical
    # The token that completes the character decodes alone to U+FFFD; in context it is the emoji,
    # and the debug script's check decode(prefix) + decode([id]) == decode(prefix + [id]) fails.
    for window in (d.golden_window, d.recon_window):
        completing = [t for t in window if t.context_text == "😀"]
        assert len(completing) == 1
        assert completing[0].text == "\ufffd" and not completing[0].context_ok
    assert all(t.context_ok for t in d.golden_window if t.index < d.first_index)
    assert "DIFFERS" in d.render()


def test_marker_text_both_ways(kimi, profile):
    enc = kimi.encode_ordinary
    think_end = profile.ids["think_end"]
    golden = enc("Hmm.") + [think_end] + enc("Answer") + [profile.stop_id]
    recon = enc("Hmm.</think>Answer") + [profile.stop_id]  # the marker as ordinary text
    d = diagnose(golden, recon, kimi, profile=profile)
    assert d.classes == ["marker-text"]
    assert d.texts_identical and not d.harmless
    # The model wrote marker text as ordinary tokens; a pipeline encoded it with specials allowed.
    golden = enc("Use <|im_end|> to stop.") + [profile.stop_id]
    recon = kimi.encode("Use <|im_end|> to stop.") + [profile.stop_id]
    assert profile.stop_id in recon[:-1]
    assert diagnose(golden, recon, kimi, profile=profile).classes == ["marker-text"]


def test_stop_token_written_as_text_is_marker_text_on_qwen3():
    qwen3 = load_tokenizer("qwen3")
    chatml = bind_profile("chatml", qwen3)
    golden = qwen3.encode_ordinary("Hi there") + [chatml.stop_id]
    recon = qwen3.encode_ordinary("Hi there<|im_end|>")
    assert diagnose(golden, recon, qwen3, profile=chatml).classes == ["marker-text"]
    golden = qwen3.encode_ordinary("The ") + qwen3.encode_ordinary("initializer") + [chatml.stop_id]
    recon = qwen3.encode_ordinary("The initializer") + [chatml.stop_id]
    assert golden != recon
    assert diagnose(golden, recon, qwen3, profile=chatml).classes == ["non-canonical-split"]


def test_marker_text_with_spaces_between_special_tokens(kimi, profile):
    """vLLM's spaces_between_special_tokens: ' </think> ' comes back as text."""
    golden = turn(kimi, profile, "ok", "1")
    recon = kimi.encode_ordinary("ok </think> 1") + [profile.stop_id]
    assert diagnose(golden, recon, kimi, profile=profile).classes == ["marker-text"]


def test_whitespace_stripped_around_think_end(kimi, profile):
    golden = turn(kimi, profile, "Hmm. ", "\n\nAnswer: 4")
    recon = turn(kimi, profile, "Hmm.", "Answer: 4")
    d = diagnose(golden, recon, kimi, profile=profile)
    assert [h.cls for h in d.hunks] == ["whitespace", "whitespace"]
    assert not d.texts_identical


def test_tool_call_id_and_arguments(kimi, profile):
    golden = turn(kimi, profile, "Weather.", "", [("functions.get_weather:3", '{"city":"東京"}')])
    recon = turn(kimi, profile, "Weather.", "", [("functions.get_weather:0", '{"city": "\\u6771\\u4eac"}')])
    d = diagnose(golden, recon, kimi, profile=profile)
    assert d.classes == ["tool-call-id", "tool-args-json"]
    # Re-serialised with other spacing only: json.dumps spacing inside the arguments is tool-args-json
    # (the provider re-serialised them), with that advice, not whitespace ...
    recon = turn(kimi, profile, "Weather.", "", [("functions.get_weather:3", '{"city": "東京"}')])
    d = diagnose(golden, recon, kimi, profile=profile)
    assert d.classes == ["tool-args-json"] and "json.dumps" in d.render() and "</think>" not in d.render()
    # ... while whitespace padding around them (which a parser's regex drops) stays whitespace.
    padded = turn(kimi, profile, "Weather.", "", [("functions.get_weather:3", ' {"city":"東京"}\n')])
    assert diagnose(padded, golden, kimi, profile=profile).classes == ["whitespace"]
    # Without a profile there are no regions to tell arguments from other text.
    recon = turn(kimi, profile, "Weather.", "", [("functions.get_weather:3", '{"city":"Tokyo"}')])
    assert diagnose(golden, recon, kimi, profile=profile).classes == ["tool-args-json"]
    assert diagnose(golden, recon, kimi).classes == ["other"]


def test_several_tool_calls_each_hunk_classed(kimi, profile):
    calls = [("functions.a:0", '{"n": 1}'), ("functions.b:1", '{"s": "x"}'), ("functions.c:2", "{}")]
    golden = turn(kimi, profile, "Three calls.", "Working.", calls)
    recon = turn(
        kimi,
        profile,
        "Three calls.",
        "Working.",
        [("functions.a:0", '{"n": 1.0}'), ("functions.b:7", '{"s": "x"}'), ("functions.c:2", "{ }")],
    )
    d = diagnose(golden, recon, kimi, profile=profile)
    assert [h.cls for h in d.hunks] == ["tool-args-json", "tool-call-id", "tool-args-json"]
    assert d.classes == ["tool-args-json", "tool-call-id"]
    assert d.first_index == d.hunks[0].golden_start == d.hunks[0].recon_start


def test_truncated_utf8_at_the_length_limit(kimi, byte_id):
    enc = kimi.encode_ordinary
    golden = enc("then") + single_bytes(byte_id, " 😀".encode()[:3])  # cut inside the emoji
    api_text = kimi.decode(golden)
    assert api_text.endswith("\ufffd")
    recon = enc(api_text)
    assert diagnose(golden, recon, kimi, finish_reason="length").classes == ["truncated-utf8"]
    # No finish_reason: no stop token at the end means it was cut.
    assert diagnose(golden, recon, kimi).classes == ["truncated-utf8"]


def test_invalid_utf8_inside_the_text(kimi, profile, byte_id):
    enc = kimi.encode_ordinary
    golden = enc("ok") + single_bytes(byte_id, " 😀".encode()[:3]) + enc(" then") + [profile.stop_id]
    recon = enc(kimi.decode(golden[:-1])) + [profile.stop_id]
    d = diagnose(golden, recon, kimi, profile=profile)
    assert d.classes == ["invalid-utf8"]
    assert not d.texts_identical
    # Partial bytes just before the stop token are inside the text, not a length cut.
    golden = enc("ok") + single_bytes(byte_id, " 😀".encode()[:3]) + [profile.stop_id]
    recon = enc(kimi.decode(golden[:-1])) + [profile.stop_id]
    assert diagnose(golden, recon, kimi, profile=profile, finish_reason="stop").classes == ["invalid-utf8"]


def test_real_replacement_character_is_not_invalid_utf8(kimi, byte_id):
    """U+FFFD (EF BF BD) can be real output: classes come from bytes, not from decoded text."""
    enc = kimi.encode_ordinary
    golden = enc("x \ufffd  y")
    recon = enc("x \ufffd y")
    assert diagnose(golden, recon, kimi).classes == ["whitespace"]
    golden = enc("x") + single_bytes(byte_id, " \ufffd".encode()) + enc(" y")
    recon = enc("x \ufffd y")
    d = diagnose(golden, recon, kimi)
    assert d.classes == ["non-canonical-split"] and d.texts_identical
    # Real U+FFFD cut off at the end by length: the bytes are complete, so not truncated-utf8.
    golden = enc("x") + single_bytes(byte_id, " \ufffd".encode())
    recon = enc("x \ufffd")
    assert diagnose(golden, recon, kimi, finish_reason="length").classes == ["non-canonical-split"]


def test_other_text_change(kimi, profile):
    golden = turn(kimi, profile, "Spell it.", "The colour is red.")
    recon = turn(kimi, profile, "Spell it.", "The color is red.")
    d = diagnose(golden, recon, kimi, profile=profile)
    assert d.classes == ["other"]
    assert "the text itself changed" in d.render().lower()


def test_window_five_tokens_either_side(kimi, profile):
    enc = kimi.encode_ordinary
    words = " one two three four five six seven eight nine ten eleven twelve"
    golden = enc(words) + enc(" thirteen") + enc(words)
    recon = enc(words) + enc(" 13") + enc(words)
    d = diagnose(golden, recon, kimi)
    h = d.hunks[0]
    assert [t.index for t in d.golden_window] == list(range(h.golden_start - 5, h.golden_end + 5))
    assert [t.index for t in d.recon_window] == list(range(h.recon_start - 5, h.recon_end + 5))
    assert [t.id for t in d.golden_window] == golden[h.golden_start - 5 : h.golden_end + 5]
    assert [t.in_hunk for t in d.recon_window] == [False] * 5 + [True] * (h.recon_end - h.recon_start) + [False] * 5
    for t in d.golden_window:
        assert t.text == kimi.token_text(t.id) and t.context_text == t.text and t.context_ok
    sig = d.signature()
    assert sig == {
        "classes": ["other"],
        "first_index": h.golden_start,
        "texts_identical": False,
        "golden_window": golden[h.golden_start - 5 : h.golden_end + 5],
        "recon_window": recon[h.recon_start - 5 : h.recon_end + 5],
        "golden_text": [kimi.token_text(i) for i in golden[h.golden_start - 5 : h.golden_end + 5]],
        "recon_text": [kimi.token_text(i) for i in recon[h.recon_start - 5 : h.recon_end + 5]],
    }
    report = d.render()
    for t in d.golden_window + d.recon_window:
        assert str(t.id) in report
    assert "other:" in report  # one advice line per class


def test_divergent_blocks_alignment():
    assert divergent_blocks([1, 2, 3, 4, 5], [1, 9, 3, 4, 6]) == [(1, 2, 1, 2), (4, 5, 4, 5)]
    assert divergent_blocks([1, 2, 3], [1, 2, 3]) == []
    assert divergent_blocks([], [7]) == [(0, 0, 0, 1)]
    assert divergent_blocks([5, 1, 2], [1, 2]) == [(0, 1, 0, 0)]
    # A long repetitive middle (no token occurs once) with changes at both ends.
    body = [10, 11, 12, 13] * 3000
    assert divergent_blocks([1] + body + [2], [3] + body + [4]) == [(0, 1, 0, 1), (12001, 12002, 12001, 12002)]


def test_signature_is_compact_json_and_stable(kimi):
    text = ("Tokens, tokens everywhere; " * 40 + "\n") * 10
    golden, recon = _scattered_resplits(kimi, text, every=37)
    d1 = diagnose(golden, recon, kimi)
    d2 = diagnose(golden, recon, kimi)
    assert d1.signature() == d2.signature()
    encoded = json.dumps(d1.signature())
    assert len(d1.hunks) > 20
    assert set(d1.classes) == {"non-canonical-split"}
    assert len(encoded) < 40 * len(d1.hunks) + 400  # classes per hunk and two short windows, nothing per token
    assert len(d1.golden_window) <= 5 + 12 + 5


def _scattered_resplits(kimi, text, every):
    """Canonical ids, and the same text with every n-th multi-byte-text token split in two."""
    canonical = kimi.encode_ordinary(text)
    resplit = []
    for n, t in enumerate(canonical):
        piece = kimi.token_bytes(t)
        if n % every == 0 and len(piece) > 1 and piece.isascii():
            resplit += kimi.encode_ordinary(piece[:1].decode()) + kimi.encode_ordinary(piece[1:].decode())
        else:
            resplit.append(t)
    return resplit, canonical


def test_long_outputs_give_the_right_hunks(kimi):
    """Correctness on 10k tokens (its speed is measured by bench/bench_diagnose.py, not asserted here)."""
    text = open(__file__, encoding="utf-8").read() * 8
    golden, recon = _scattered_resplits(kimi, text, every=97)
    golden, recon = golden[:10_000], recon[:10_000]
    d = diagnose(golden, recon, kimi)
    assert len(d.hunks) > 50
    # Both ends changed around a long shared middle.
    d = diagnose([1] + recon + [2], [3] + recon + [4], kimi)
    assert len(d.hunks) == 2


def test_empty_sides(kimi, profile):
    stop = profile.stop_id
    assert diagnose([], [], kimi).hunks == []
    d = diagnose([], kimi.encode_ordinary("text"), kimi)
    assert d.classes == ["other"] and d.golden_window == [] and d.first_index == 0
    assert "reconstructed[0:1]" in d.render()
    assert diagnose([stop], [], kimi, profile=profile).classes == ["stop-token"]
    assert diagnose([], [stop], kimi, profile=profile, finish_reason="length").classes == ["stop-token"]


def test_engine_losses_have_their_own_classes(kimi, profile):
    """Losses vLLM's chat endpoint makes (docs/views.md), each built as the engine returns it, each named."""
    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.views import api_view

    def classes(ids, finish, view="vllm"):
        response = api_view(ids, finish, profile, kimi, view)
        rebuilt = reconstruct_output_ids(response, profile, kimi)
        return diagnose(ids, rebuilt, kimi, profile=profile, finish_reason=finish,
                        response_finish_reason=response["finish_reason"]).classes

    literal = kimi.encode_ordinary("r") + [profile.ids["think_end"]] + kimi.encode_ordinary("Write <|im_end|> last.")
    assert classes(literal + [profile.stop_id], "stop") == ["special-text-deleted"]
    call = turn(kimi, profile, "r", "c")[:-1] + [profile.ids["tool_calls_begin"], profile.ids["tool_call_begin"]]
    call += kimi.encode_ordinary("functions.get:0") + [profile.ids["tool_call_argument_begin"]]
    call += kimi.encode_ordinary('{"q": 1}') + [profile.ids["tool_call_end"]]
    assert set(classes(call, "length", "vllm-0.32")) == {"finish-rewritten"}  # a cut before the section's end, sent as tool_calls
    assert set(classes(call, "length")) == {"cut-in-markup"}  # vLLM 0.33 says "length": the closing marker is a guess
    # vLLM with a tool schema declaring the property a number re-dumps the arguments, 5.0 coerced to 5 (the
    # view sees the request's schema): the loss is named tool-args-json.
    from pipeline.core.engines.request import request_of

    floats = turn(kimi, profile, "r", "", [("functions.get:0", '{"a":5.0}')])
    typed = [{"type": "function", "function": {"name": "get", "parameters": {"properties": {"a": {"type": "number"}}}}}]
    response = api_view(floats, "stop", profile, kimi, "vllm", request_of(typed))
    assert response["tool_calls"][0]["function"]["arguments"] == '{"a": 5}'
    rebuilt = reconstruct_output_ids(response, profile, kimi)
    assert diagnose(floats, rebuilt, kimi, profile=profile).classes == ["tool-args-json"]
    # The same cut through SGLang: finish stays "length", the closing marker is a guess.
    response = api_view(call, "length", profile, kimi, "sglang")
    rebuilt = reconstruct_output_ids(response, profile, kimi)
    assert diagnose(call, rebuilt, kimi, profile=profile, finish_reason="length").classes == ["cut-in-markup"]
    # Reasoning straight into the tool calls, no </think>: the reconstruction writes one.
    straight = kimi.encode_ordinary("Reasoning then tools") + call[call.index(profile.ids["tool_calls_begin"]):]
    straight += [profile.ids["tool_calls_end"], profile.stop_id]
    rebuilt = reconstruct_output_ids(api_view(straight, "stop", profile, kimi), profile, kimi)
    assert diagnose(straight, rebuilt, kimi, profile=profile).classes == ["think-not-closed"]


def served_classes(family: str, folder: str, pieces, finish: str, view: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The classes of an output of ``family`` (``pieces``: marker texts as their ids, any other string as ordinary
    text, so marker text the model wrote stays text) served by ``view`` and rebuilt from the response, and each
    hunk as (class, golden text, rebuilt text)."""
    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.views import api_view

    tokenizer = load_tokenizer(folder)
    profile = bind_profile(family, tokenizer)
    markers = set(profile.texts.values())
    ids = [i for piece in pieces for i in ([tokenizer.special_tokens[piece]] if piece in markers
                                            else tokenizer.encode_ordinary(piece))]
    response = api_view(ids, finish, profile, tokenizer, view)
    rebuilt = reconstruct_output_ids(response, profile, tokenizer)
    assert rebuilt != ids
    d = diagnose(ids, rebuilt, tokenizer, profile=profile, finish_reason=finish,
                 response_finish_reason=response["finish_reason"])
    hunks = [(h.cls, tokenizer.decode(ids[h.golden_start:h.golden_end]), tokenizer.decode(rebuilt[h.recon_start:h.recon_end]))
             for h in d.hunks]
    return d.classes, hunks


def test_llama_content_around_a_call_dropped_by_vllm():
    """vLLM's llama3_json returns only the calls: the content before <|python_tag|> (with the tag), and before
    and after a JSON call written without the tag, are dropped-text; the call written without the tag is read all
    the same and comes back re-serialised (`arguments` key as `parameters`, 1.50 as 1.5): tool-args-json."""
    classes, hunks = served_classes("llama3", "llama-3.1", ["Sure. ", "<|python_tag|>", '{"name": "get", "parameters": {"q": 1}}',
                                                            "<|eot_id|>"], "stop", "vllm")
    assert hunks == [("dropped-text", "Sure. <|python_tag|>", "")]
    classes, hunks = served_classes("llama3", "llama-3.1", ['Sure.{"name": "get", "arguments": {"q": 1.50}}\nThanks', "<|eot_id|>"],
                                    "stop", "vllm")
    assert hunks[0] == ("dropped-text", "Sure.", "")
    assert [h[0] for h in hunks[1:]] == ["tool-args-json", "tool-args-json"] and hunks[1][1:] == ("arguments", "parameters")


def test_llama_text_after_the_calls_moved_into_the_content_by_sglang():
    """SGLang's llama3 detector returns the text it does not read as calls (after the calls, a call cut at the
    length limit) in the content, which the layout writes before the calls: message-structure where it lands,
    tool-args-json where the model wrote it (inside the call section)."""
    _, hunks = served_classes("llama3", "llama-3.1", ["<|python_tag|>", '{"name": "get", "parameters": {"q": 1}} done', "<|eot_id|>"],
                              "stop", "sglang")
    assert hunks == [("message-structure", "", "done"), ("tool-args-json", " done", "")]
    _, hunks = served_classes("llama3", "llama-3.1", ["Sure.", "<|python_tag|>", '{"name": "get", "parameters": {"q": 1}}; {"name": "get'],
                              "length", "sglang")
    assert hunks == [("message-structure", "", '{"name": "get'), ("tool-args-json", '; {"name": "get', "")]


def test_deepseek_text_after_a_written_think_moved_into_the_reasoning():
    """DeepSeek-V3.1 with thinking off writes `<think>` as ordinary text: vLLM's reasoning parser returns what
    follows it as the reasoning; that moved text is marker-text, the rest of the output dropped-text."""
    classes, hunks = served_classes("deepseek-v3.1", "deepseek-v3.1", ["\na literal <tool_call> (Qwen's)\n", "</think>",
                                                                      " a <think> mention", "<｜end▁of▁sentence｜>"], "stop", "vllm")
    assert hunks == [("marker-text", "\na literal <tool_call> (Qwen's)\n", " mention"), ("dropped-text", " a <think> mention", "")]


DSML = "｜DSML｜"


def test_deepseek_v32_dsml_written_otherwise_is_named():
    """DSML is ordinary text, and the layout splits at the block the model opens after a blank line. A bare invoke
    (no function_calls block) vLLM reads anyway: the block the layout writes around it lies in the rebuilt call,
    tool-args-json; a block after no blank line whose invoke holds direct JSON comes back from SGLang as DSML
    parameters, tool-args-json; the block's opening text in prose (SGLang cuts the content there) or a block never
    closed (SGLang drops it) is dropped-text."""
    invoke = f'<{DSML}invoke name="get">\n<{DSML}parameter name="q" string="false">1</{DSML}parameter>\n</{DSML}invoke>'
    classes, _ = served_classes("deepseek-v3.2", "deepseek-v3.1", ["Think.", "</think>", "c\n\n" + invoke, "<｜end▁of▁sentence｜>"],
                                "stop", "vllm")
    assert classes == ["tool-args-json"]
    direct = f'Plain answer.<{DSML}function_calls>\n<{DSML}invoke name="get">\n{{"q": 1}}\n</{DSML}invoke>\n</{DSML}function_calls>'
    classes, _ = served_classes("deepseek-v3.2", "deepseek-v3.1", ["Think.", "</think>", direct, "<｜end▁of▁sentence｜>"], "stop", "sglang")
    assert set(classes) == {"whitespace", "tool-args-json"}
    prose = f"a literal <{DSML}function_calls> in prose, then more."
    _, hunks = served_classes("deepseek-v3.2", "deepseek-v3.1", ["Think.", "</think>", prose, "<｜end▁of▁sentence｜>"], "stop", "sglang")
    assert hunks == [("dropped-text", f" <{DSML}function_calls> in prose, then more.", " ")]
    unclosed = f"Answer.<{DSML}function_calls>\n" + invoke
    classes, _ = served_classes("deepseek-v3.2", "deepseek-v3.1", ["Think.", "</think>", unclosed, "<｜end▁of▁sentence｜>"], "stop", "sglang")
    assert classes == ["dropped-text"]
