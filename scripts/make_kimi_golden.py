#!/usr/bin/env python3
"""Rebuild golden/B1_glaive and golden/B3_magicoder byte for byte.

These Kimi K2.5 datasets are CONSTRUCTED, not captured: the assistant turns are written for
this project (hand-written pieces in scripts/kimi_golden/, composed with a fixed seed) and
turned into ids with the real Kimi K2.5 tokenizer, exactly as the model lays out its output:
reasoning (ordinary text), </think>, content, the tool-call section (markers as the profile's
ids, call ids functions.NAME:IDX with a conversation-wide counter), <|im_end|>. Prompt ids are what
Kimi K2.5's own tokenizer feeds the model: its chat template (chat_template.jinja) rendered with the
tools deep-sorted and declared in TypeScript (tools_ts_str, pipeline/core/kimi_tools_ts.py), thinking
on, encoded with every special allowed.

Some samples carry a recorded provider response with a quirk that text cannot survive
(see QUIRKS below and each sample's "quirk" field), so the fidelity suites meet every
divergence class with a known cause.

    .venv/bin/python scripts/make_kimi_golden.py [--out golden] [--tokenizer moonshotai/Kimi-K2.5]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from kimi_golden import b1_glaive, b1_multi_turn, b3_magicoder  # noqa: E402
from kimi_golden.kimi_turn import (  # noqa: E402
    Call,
    KimiIds,
    api_tool_calls,
    chat_response,
    load_template,
    non_canonical_split,
)
from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer, resolve_tokenizer_dir  # noqa: E402

TOKENIZER = "moonshotai/Kimi-K2.5"
PROFILE = "kimi-k2.5"

SOURCE = (
    "CONSTRUCTED, not captured: assistant turns written for the tokfidelity project (hand-written pieces in "
    "scripts/kimi_golden/ composed with a fixed seed) and laid out as Kimi K2.5 output ids with the real Kimi K2.5 "
    "tokenizer (tiktoken.model sha256 b6c497a7...5103): reasoning, </think>, content and arguments as ordinary text, "
    "markers as the kimi-k2.5 profile's ids, tool-call ids functions.NAME:IDX with a conversation-wide counter, "
    "<|im_end|> at the end; prompt_ids as Kimi K2.5's own tokenizer renders them: its chat_template.jinja with the "
    "tools deep-sorted and declared in TypeScript (tools_ts_str, as its tokenizer class writes them; "
    "pipeline/core/kimi_tools_ts.py, checked against the official encoder), thinking on, every special allowed. "
    "Samples with a 'response' hold a "
    "recorded provider response showing a known quirk ('quirk' says which). Rebuild: scripts/make_kimi_golden.py."
)


# ------------------------------------------------------------------------------------------
# Finishing a sample: plain (the API view is computed from the ids) or with a recorded response
# ------------------------------------------------------------------------------------------
class Finisher:
    def __init__(self, kimi: KimiIds):
        self.kimi = kimi
        self.tok = kimi.tok
        self.stop_id = kimi.ids["stop"]

    def stop_reason(self):
        return {"type": "stop", "matched": self.stop_id}

    def record(self, s, output_ids, finish_reason, response=None, quirk=None):
        out = {"id": s["id"], "messages": s["messages"]}
        if s.get("tools"):
            out["tools"] = s["tools"]
        out["prompt_ids"] = self.kimi.prompt_ids(s["messages"], s.get("tools"))
        out["output_ids"] = output_ids
        out["finish_reason"] = finish_reason
        if response is not None:
            out["response"] = response
        if quirk is not None:
            out["quirk"] = quirk
        return out

    def plain(self, s):
        return self.record(s, self.kimi.output_ids(s["turn"]), self.stop_reason())

    def response_for(self, s, output_ids, *, reasoning=None, content=None, tool_calls=None, finish=None, key="reasoning_content"):
        t = s["turn"]
        calls = t.calls
        return chat_response(
            t.reasoning if reasoning is None else reasoning,
            t.content if content is None else content,
            (api_tool_calls(calls) if calls else None) if tool_calls is None else tool_calls,
            finish or ("tool_calls" if calls else "stop"),
            len(output_ids),
            reasoning_key=key,
        )


# ------------------------------------------------------------------------------------------
# Quirks. Each takes (finisher, sample) and returns the finished record.
# ------------------------------------------------------------------------------------------
def q_exact_call_ids(f, s):
    """Provider returns call_... ids (OpenAI style); first tool round, so rebuilding
    functions.NAME:IDX from the per-turn index gives back the model's ids: exact."""
    ids = f.kimi.output_ids(s["turn"])
    api_ids = [f"call_{abs(hash_text(s['id'] + str(i))) % 16**12:012x}" for i in range(len(s["turn"].calls))]
    resp = f.response_for(s, ids, tool_calls=api_tool_calls(s["turn"].calls, ids=api_ids))
    return f.record(s, ids, f.stop_reason(), resp, "none: call_ ids rebuilt from the per-turn index match (first tool round)")


def q_exact_history_ids(f, s):
    """SGLang counts earlier tool calls (history) and returns the model's own ids: exact."""
    ids = f.kimi.output_ids(s["turn"])
    return f.record(s, ids, f.stop_reason(), f.response_for(s, ids, key="reasoning"),
                    "none: ids functions.NAME:IDX continue the conversation-wide counter, as the model wrote them")


def q_tool_call_id_reindexed(f, s):
    """A provider rebuilds ids with a per-response index, dropping the conversation-wide counter."""
    ids = f.kimi.output_ids(s["turn"])
    calls = s["turn"].calls
    rebuilt = [f"functions.{c.name}:{i}" for i, c in enumerate(calls)]
    resp = f.response_for(s, ids, tool_calls=api_tool_calls(calls, ids=rebuilt))
    return f.record(s, ids, f.stop_reason(), resp, "tool-call-id: provider rebuilt ids with a per-turn index (:0) "
                    "while the model continued the conversation-wide counter")


def q_tool_call_id_openai(f, s):
    ids = f.kimi.output_ids(s["turn"])
    calls = s["turn"].calls
    api_ids = [f"call_{abs(hash_text(s['id'] + c.name)) % 16**24:024x}" for c in calls]
    resp = f.response_for(s, ids, tool_calls=api_tool_calls(calls, ids=api_ids))
    return f.record(s, ids, f.stop_reason(), resp, "tool-call-id: provider returned call_... ids in a second tool "
                    "round; the rebuilt functions.NAME:0 loses the model's counter")


def q_args_reserialised_ascii(f, s):
    """json.dumps re-serialisation (tool_choice required / streaming remainder): \\u escapes for non-ASCII."""
    ids = f.kimi.output_ids(s["turn"])
    calls = s["turn"].calls
    args = [json.dumps(json.loads(c.arguments)) for c in calls]
    resp = f.response_for(s, ids, tool_calls=api_tool_calls(calls, arguments=args))
    return f.record(s, ids, f.stop_reason(), resp, "tool-args-json: provider re-serialised arguments with json.dumps "
                    "(ensure_ascii: non-ASCII became \\u escapes)")


def q_args_reserialised_spacing(f, s):
    ids = f.kimi.output_ids(s["turn"])
    calls = s["turn"].calls
    args = [json.dumps(json.loads(c.arguments), ensure_ascii=False) for c in calls]
    resp = f.response_for(s, ids, tool_calls=api_tool_calls(calls, arguments=args))
    return f.record(s, ids, f.stop_reason(), resp, "tool-args-json: provider re-serialised arguments with "
                    "json.dumps; only the spacing changed")


def q_legacy_strip(f, s):
    """SGLang before PR #24251: .strip() on reasoning and content (non-streaming)."""
    t = s["turn"]
    if not (t.reasoning != t.reasoning.strip() or t.content != t.content.strip()):
        t.content = "\n\n" + t.content.lstrip()
        t.reasoning = t.reasoning.rstrip() + "\n"
    ids = f.kimi.output_ids(t)
    resp = f.response_for(s, ids, reasoning=t.reasoning.strip(), content=t.content.strip())
    return f.record(s, ids, f.stop_reason(), resp, "whitespace: provider on SGLang before PR #24251 stripped "
                    "whitespace around </think>")


def q_wrong_section_end(f, s):
    """The model closed the tool-call section with <|tool_call_end|> instead of <|tool_calls_section_end|>;
    SGLang's regex parser still finds every call, so the API response looks normal."""
    ids = f.kimi.output_ids(s["turn"])
    k = f.kimi.ids
    i = len(ids) - 2
    assert ids[i] == k["tool_calls_end"] and ids[-1] == k["stop"]
    ids[i] = k["tool_call_end"]
    return f.record(s, ids, f.stop_reason(), f.response_for(s, ids), "special-token-id: the model emitted "
                    "<|tool_call_end|> where <|tool_calls_section_end|> belongs; the parsed response cannot show it")


def q_length_reported_as_tool_calls(f, s):
    """Cut at max_tokens right after the tool section; the provider reports finish_reason tool_calls."""
    ids = f.kimi.output_ids(s["turn"], stop=False)
    resp = f.response_for(s, ids, finish="tool_calls")
    return f.record(s, ids, {"type": "length", "length": len(ids)}, resp, "finish-rewritten: engine cut at the length "
                    "limit after the tool section; the provider normalised finish_reason to tool_calls")


def q_stop_at_length_limit(f, s):
    """<|im_end|> was the max_new_tokens-th token, and the engine tested the length cap before the stop token
    (older SGLang's check_finished did; 0.5.23's update_finish_state tests the stop token first)."""
    ids = f.kimi.output_ids(s["turn"])
    return f.record(s, ids, {"type": "length", "length": len(ids)}, None, "stop-token: <|im_end|> was the last "
                    "allowed token and an older SGLang (length cap tested before the stop token) reported "
                    "finish_reason length, so text-side reconstruction drops the stop")


def q_non_canonical(f, s, splits=1):
    t = s["turn"]
    content_ids = f.kimi.enc(t.content)
    start = len(content_ids) // 3
    for _ in range(splits):
        found = non_canonical_split(f.tok, content_ids, start=start)
        assert found, s["id"]
        content_ids, at = found
        start = at + 2 + len(content_ids) // 5
    ids = f.kimi.output_ids(t, content_ids=content_ids)
    return f.record(s, ids, f.stop_reason(), None, f"non-canonical-split: the model emitted {splits} word(s) split "
                    "differently from the canonical encoding (same bytes)")


def q_non_canonical_2(f, s):
    return q_non_canonical(f, s, splits=2)


def q_truncated_utf8(f, s):
    """Cut at the length limit inside an emoji: the API text ends in U+FFFD."""
    t = s["turn"]
    t.content = t.content.rstrip() + "\n\nHappy coding 🦜🧬"
    ids = f.kimi.output_ids(t, stop=False)
    tb = f.tok.token_bytes
    data = b"".join(tb(i) for i in ids)
    cut = len(ids) - 1
    while cut > 0:  # drop tokens from the end until the bytes end inside a character
        data = data[: len(data) - len(tb(ids[cut]))]
        cut -= 1
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            break
    ids = ids[: cut + 1]
    return f.record(s, ids, {"type": "length", "length": len(ids)}, None, "truncated-utf8: cut at max_new_tokens "
                    "inside a 4-byte emoji")


def q_invalid_utf8(f, s):
    """The model emitted the first bytes of an emoji, then went on with text: partial UTF-8 inside the text."""
    t = s["turn"]
    lead = f.kimi.enc("🦜")[0]  # the token of the emoji's first two bytes
    assert len(f.tok.token_bytes(lead)) < 4
    cut = t.content.rfind("\n\n")
    before, after = t.content[:cut], t.content[cut:]
    content_ids = f.kimi.enc(before + " ") + [lead] + f.kimi.enc(after)
    ids = f.kimi.output_ids(t, content_ids=content_ids)
    return f.record(s, ids, f.stop_reason(), None, "invalid-utf8: a lone partial emoji (2 of 4 bytes) inside the text, "
                    "decoded as U+FFFD")


def q_think_text_in_reasoning(f, s):
    """The reasoning quotes the literal text `</think>` (ordinary tokens). SGLang's reasoning parser splits at
    the first `</think>` TEXT, so part of the reasoning (and the real </think>) end up in content."""
    t = s["turn"]
    marker = "</think>"
    t.reasoning = (
        "The user's parser must split Kimi output at the end-of-thinking marker. In the raw text it is written "
        f"`{marker}`, but the model emits it as one special token, so matching the text is fragile.\n\n" + t.reasoning
    )
    ids = f.kimi.output_ids(t)
    text = t.reasoning + marker + t.content
    first = text.index(marker)
    resp = f.response_for(s, ids, reasoning=text[:first], content=text[first + len(marker):])
    return f.record(s, ids, f.stop_reason(), resp, "marker-text: reasoning quotes `</think>` as ordinary tokens; the "
                    "parser split there and the real </think> became content text")


B1_QUIRKS = {
    3: q_exact_call_ids, 17: q_exact_call_ids, 40: q_exact_call_ids,
    9: q_exact_history_ids, 58: q_exact_history_ids,
    12: q_tool_call_id_reindexed, 71: q_tool_call_id_reindexed,
    33: q_tool_call_id_openai,
    5: q_args_reserialised_ascii, 48: q_args_reserialised_ascii,
    25: q_args_reserialised_spacing,
    20: q_legacy_strip, 84: q_legacy_strip,
    61: q_wrong_section_end,
    95: q_length_reported_as_tool_calls,
}
B3_QUIRKS = {
    4: q_non_canonical, 21: q_non_canonical, 47: q_non_canonical_2, 88: q_non_canonical,
    10: q_truncated_utf8, 66: q_truncated_utf8,
    15: q_invalid_utf8, 79: q_invalid_utf8,
    30: q_legacy_strip, 101: q_legacy_strip,
    52: q_think_text_in_reasoning, 93: q_think_text_in_reasoning,
    38: q_stop_at_length_limit,
}


def hash_text(text: str) -> int:
    """A stable hash (Python's hash() is salted per process)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


# ------------------------------------------------------------------------------------------
def _pick_quirk_targets(samples, quirks, needs):
    """Map quirk slots to sample indices that fit what the quirk needs (deterministic)."""
    chosen, used = {}, set()
    for slot, fn in quirks.items():
        need = needs.get(fn, lambda s: True)
        i = slot
        while i in used or not need(samples[i % len(samples)]):
            i += 1
        chosen[i % len(samples)] = fn
        used.add(i % len(samples))
    return chosen


def _has_non_ascii_args(s):
    return any(any(ord(ch) > 127 for ch in c.arguments) for c in s["turn"].calls)


def _compact_args(s):
    return s["turn"].calls and all(", " not in c.arguments and "\n" not in c.arguments and "{ " not in c.arguments
                                   for c in s["turn"].calls) and "\"" in s["turn"].calls[0].arguments


NEEDS = {
    q_exact_call_ids: lambda s: s["turn"].calls and s["counter"] == 0,
    q_exact_history_ids: lambda s: s["turn"].calls and s["counter"] > 0,
    q_tool_call_id_reindexed: lambda s: s["turn"].calls and s["counter"] > 0,
    q_tool_call_id_openai: lambda s: s["turn"].calls and s["counter"] > 0,
    q_args_reserialised_ascii: lambda s: bool(s["turn"].calls) and _has_non_ascii_args(s),
    q_args_reserialised_spacing: _compact_args,
    q_wrong_section_end: lambda s: bool(s["turn"].calls),
    q_length_reported_as_tool_calls: lambda s: bool(s["turn"].calls),
    q_invalid_utf8: lambda s: "\n\n" in s["turn"].content,
}


def finish_dataset(kimi, samples, quirks):
    f = Finisher(kimi)
    targets = _pick_quirk_targets(samples, quirks, NEEDS)
    out = []
    for i, s in enumerate(samples):
        fn = targets.get(i)
        if fn is None and s.get("counter", 0) > 0 and s["turn"].calls:
            # a later tool round: record what SGLang returns (history-aware ids), since a view of the ids alone
            # cannot know the conversation's counter
            out.append(q_exact_history_ids(f, s))
        else:
            out.append(fn(f, s) if fn else f.plain(s))
    return out


def manifest(name, description, samples):
    return {
        "name": name,
        "profile": PROFILE,
        "tokenizer": TOKENIZER,
        "api_view": "sglang",
        "source": SOURCE,
        "description": description,
        "max_known_divergence_rate": known_divergence_rate(samples),
        "samples": len(samples),
    }


def known_divergence_rate(samples) -> float:
    """Share of samples whose reconstruction differs from the golden ids (the quirk samples, each
    reviewed and recorded as a known divergence), rounded up to 3 decimals."""
    divergent = sum(1 for s in samples if "quirk" in s and not s["quirk"].startswith("none"))
    return math.ceil(1000 * divergent / len(samples)) / 1000


def build_all(tokenizer_spec: str = TOKENIZER):
    tokenizer = load_tokenizer(tokenizer_spec)
    folder, _ = resolve_tokenizer_dir(tokenizer_spec)
    folder = folder if folder.is_dir() else folder.parent
    kimi = KimiIds(tokenizer, bind_profile(PROFILE, tokenizer), load_template(folder))
    single = b1_glaive.build(kimi)
    b1 = finish_dataset(kimi, single + b1_multi_turn.build(kimi, start=len(single)), B1_QUIRKS)
    b3 = finish_dataset(kimi, b3_magicoder.build(kimi), B3_QUIRKS)
    return {
        "B1_glaive": (manifest("B1_glaive", "Kimi K2.5 tool-calling turns (glaive-function-calling style): one or "
                               "several calls, empty content, nested arguments, unusual spacing, non-ASCII values; and multi-turn "
                               "conversations with tool results (1-3 rounds, parallel calls, earlier answers whose "
                               "reasoning the template drops), the answer or the next round's calls as output.", b1), b1),
        "B3_magicoder": (manifest("B3_magicoder", "Kimi K2.5 coding turns (Magicoder style): code blocks with tabs "
                                  "and space runs, long reasoning, CJK comments, diffs, JSON.", b3), b3),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "golden"), help="golden dir to write into (default: the project's golden/)")
    p.add_argument("--tokenizer", default=TOKENIZER, help="the Kimi K2.5 tokenizer (path, folder name or hub id)")
    args = p.parse_args(argv)
    for name, (man, samples) in build_all(args.tokenizer).items():
        path = write_dataset(Path(args.out) / name, man, samples)
        tokens = sum(len(s["output_ids"]) for s in samples)
        quirks = sum(1 for s in samples if "quirk" in s and not s["quirk"].startswith("none"))
        print(f"{path}: {len(samples)} samples, {tokens} output tokens, {quirks} with a known quirk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
