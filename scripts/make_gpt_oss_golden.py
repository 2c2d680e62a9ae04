#!/usr/bin/env python3
"""Rebuild golden/G1_harmony byte for byte.

gpt-oss turns, CONSTRUCTED, not captured: the texts are written for this project (B1's tool
scenarios in scripts/kimi_golden/b1_glaive.py and the answers below, composed with a fixed seed) and
rendered into ids by openai-harmony itself with the real o200k_harmony tokenizer
(../shared/tokenizers/o200k/o200k_base.tiktoken): each assistant message rendered by
``HarmonyEncoding.render`` (pipeline/cases/gpt_oss_outputs.py), joined as the model writes
them (the first without ``<|start|>assistant``, which ends the prompt; a call's recipient in its
channel header; ``<|call|>`` after a call, ``<|return|>`` after an answer). Prompt ids are
``render_conversation_for_completion`` of the system, developer (tools) and user messages.

Several tool calls in one output: a real engine stops at the first ``<|call|>`` (it is a stop
token); those samples lay out what the model would write had it not been stopped, to test the
layout of consecutive calls.

    .venv/bin/python scripts/make_gpt_oss_golden.py [--out golden] [--tokenizer o200k_harmony]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from openai_harmony import (  # noqa: E402
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    SystemContent,
    ToolDescription,
)

from kimi_golden import b1_glaive  # noqa: E402
from kimi_golden.kimi_turn import non_canonical_split  # noqa: E402
from make_kimi_golden import known_divergence_rate  # noqa: E402
from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.harmony import harmony_encoding  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402
from pipeline.cases.gpt_oss_outputs import HarmonyOutputs  # noqa: E402

NAME = "G1_harmony"
TOKENIZER = "o200k_harmony"
SOURCE = (
    "CONSTRUCTED, not captured: gpt-oss assistant turns written for the tokfidelity project (B1's tool scenarios "
    "and hand-written answers composed with a fixed seed) and rendered into ids by openai-harmony 0.0.8 "
    "(HarmonyEncoding.render, one assistant message at a time) with the real o200k_harmony tokenizer "
    "(o200k_base.tiktoken, tiktoken's expected sha256 446a9538...1a2d): analysis, then a commentary preamble and "
    "tool calls to functions.NAME (recipient in the channel header, <|constrain|>json, <|call|>) or a final answer "
    "(<|return|>); prompt_ids from render_conversation_for_completion. Arguments are written as json.dumps "
    "writes them, except where a sample's 'quirk' says otherwise. Samples with several calls lay out what the "
    "model writes if not stopped at the first <|call|> (a real engine stops there). Rebuild: "
    "scripts/make_gpt_oss_golden.py."
)

ANSWERS = [
    ("Say hello in three languages.", "Simple: English, Spanish, Japanese.", "Hello! ¡Hola! こんにちは！"),
    ("What's 17 × 23?", "17*23 = 17*20 + 17*3 = 340 + 51 = 391.", "17 × 23 = **391**."),
    ("Write a haiku about tokenizers.", "Five-seven-five. Mention bytes and merges.",
     "Bytes drift into pairs —\nmerges bloom like winter frost,\nids hold the meaning."),
    ("Explain list comprehensions.", "Show syntax and an example with a condition.",
     "A list comprehension builds a list in one expression:\n\n```python\nsquares = [x * x for x in range(10) if x % 2]\n```\n\nIt reads as *for each x, keep x*x when x is odd*."),
    ("Translate 'good morning' to German and Korean.", "German: Guten Morgen. Korean: 좋은 아침.",
     "- German: **Guten Morgen**\n- Korean: **좋은 아침입니다** (polite)"),
    ("Give me a JSON example of a user.", "Small object, nested address.",
     '```json\n{\n  "id": 42,\n  "name": "Zoë",\n  "address": {"city": "Zürich", "zip": "8001"}\n}\n```'),
    ("What is the capital of Australia?", "Canberra, not Sydney.", "The capital of Australia is Canberra."),
    ("Summarise the plot of Hamlet in one sentence.", "Prince, ghost, revenge, everyone dies.",
     "Prince Hamlet feigns madness to avenge his father's murder by his uncle, and nearly everyone dies."),
    ("Why is the sky blue?", "Rayleigh scattering ∝ 1/λ⁴.", "Sunlight scatters off air molecules, and shorter (blue) "
     "wavelengths scatter much more — Rayleigh scattering goes as 1/λ⁴ — so the sky looks blue. 🌤️"),
    ("Convert 100 °F to Celsius.", "(100 − 32) × 5/9 = 37.78.", "100 °F ≈ 37.8 °C."),
    ("用一句话介绍北京。", "Chinese answer; mention history and capital.", "北京是中国的首都，一座拥有三千多年历史的城市。"),
    ("List three sorting algorithms with complexity.", "Quick, merge, heap.",
     "| algorithm | average | worst |\n|---|---|---|\n| quicksort | O(n log n) | O(n²) |\n| mergesort | O(n log n) | O(n log n) |\n| heapsort | O(n log n) | O(n log n) |"),
]


def _tool_description(tool: dict) -> ToolDescription:
    f = tool["function"]
    return ToolDescription.new(f["name"], f["description"], parameters=f["parameters"])


class G1:
    def __init__(self, tokenizer, profile):
        self.tok = tokenizer
        self.profile = profile
        self.h = harmony_encoding(tokenizer)
        self.gen = HarmonyOutputs(self.h, tokenizer, profile)
        self.samples: list[dict] = []

    def prompt_ids(self, user: str, tools: list[dict], instructions: str | None) -> list[int]:
        system = SystemContent.new().with_conversation_start_date("2026-11-30").with_reasoning_effort(ReasoningEffort.MEDIUM)
        messages = [Message.from_role_and_content(Role.SYSTEM, system)]
        if tools or instructions:
            dev = DeveloperContent.new()
            if instructions:
                dev = dev.with_instructions(instructions)
            if tools:
                dev = dev.with_function_tools([_tool_description(t) for t in tools])
            messages.append(Message.from_role_and_content(Role.DEVELOPER, dev))
        messages.append(Message.from_role_and_content(Role.USER, user))
        return list(self.h.render_conversation_for_completion(Conversation.from_messages(messages), Role.ASSISTANT))

    def add(self, user, output_ids, finish, *, tools=(), instructions=None, quirk=None, matched=None):
        sample = {"id": f"g1-{len(self.samples):04d}", "messages": [{"role": "user", "content": user}]}
        if instructions:
            sample["messages"].insert(0, {"role": "system", "content": instructions})
        if tools:
            sample["tools"] = list(tools)
        # the request's template variables: the date the prompt was rendered on (gpt-oss writes it in its system message)
        sample["chat_template_kwargs"] = {"conversation_start_date": "2026-11-30"}
        sample["prompt_ids"] = self.prompt_ids(user, list(tools), instructions)
        sample["output_ids"] = output_ids
        stop = matched or (self.profile.ids["call"] if output_ids[-1:] == [self.profile.ids["call"]] else self.profile.ids["stop"])
        sample["finish_reason"] = {"type": "stop", "matched": stop} if finish == "stop" else {"type": "length", "length": len(output_ids)}
        if quirk:
            sample["quirk"] = quirk
        self.samples.append(sample)


def build_tool_samples(g: G1, rng: random.Random, count: int) -> None:
    """B1's scenarios as gpt-oss turns: analysis, an optional preamble, one or several calls."""
    for n in range(count):
        user, planned, why = b1_glaive.SCENARIOS[n % len(b1_glaive.SCENARIOS)](rng)
        names = sorted({name for name, _ in planned})
        tools = [b1_glaive.TOOLS[t] for t in dict.fromkeys(names + rng.sample(sorted(b1_glaive.TOOLS), rng.randint(0, 2)))]
        if n % 3 == 0:
            planned = planned[:1]
        calls = [(name, json.dumps(args, ensure_ascii=False)) for name, args in planned]
        preamble = rng.choice([None, None, "Let me check that for you.", "On it — one moment. 🔍", "Je m'en occupe."])
        g.add(user, g.gen.turn(why, preamble, calls), "stop", tools=tools)


def build_answer_samples(g: G1, rng: random.Random) -> None:
    for user, reasoning, answer in ANSWERS:
        g.add(user, g.gen.turn(reasoning, answer), "stop", instructions=rng.choice([None, "Answer concisely."]))
    for user, reasoning, answer in ANSWERS[:2]:  # low reasoning effort can skip the analysis message
        g.add(user, g.gen.turn(None, answer), "stop")
    for user, reasoning, answer in ANSWERS[2:5]:  # cut at the length limit while reasoning
        ids = g.gen.turn(reasoning + " " + reasoning, answer)
        g.add(user, ids[: 3 + len(g.tok.encode_ordinary(reasoning)) + 2], "length")
    for user, reasoning, answer in ANSWERS[5:8]:  # cut in the answer, on a character boundary
        ids = g.gen.turn(reasoning, answer)
        g.add(user, ids[: len(ids) - 4], "length")


# ------------------------------------------------------------------------------------------
# Quirks: one sample per divergence class, each what a real model or server does
# ------------------------------------------------------------------------------------------
WEATHER = b1_glaive.TOOLS["get_weather"]


def build_quirk_samples(g: G1) -> None:
    t, m, tok = g.gen.turn, g.gen.message, g.tok
    eot = g.profile.ids["stop.3"]
    ids = t("Short answer.", "Done.")[:-1] + [eot]
    g.add("Are you done?", ids, "stop", matched=eot, quirk="stop-token: the model ended its answer with "
          "<|endoftext|> (also an eos id of gpt-oss) instead of <|return|>; the API cannot show which")
    g.add("Say OK.", t("Trivial.", "OK."), "length", quirk="stop-token: <|return|> was the last allowed token and an "
          "older SGLang (length cap tested before the stop token) reported finish_reason length")
    answer = ANSWERS[7][2]
    head = len(t("Plot.", "")) - 1  # where the answer's text starts
    ids = t("Plot.", answer)
    found = non_canonical_split(tok, ids[head:-1], start=(len(ids) - head) // 3)
    assert found
    g.add("Summarise Hamlet.", ids[:head] + found[0] + ids[-1:], "stop", quirk="non-canonical-split: the model "
          "emitted a word split differently from the canonical encoding (same bytes)")
    ids = t("Easy.", "Yes.")
    end = ids.index(g.profile.ids["end"])
    g.add("Is water wet?", ids[:end] + tok.encode_ordinary("<|end|>") + ids[end + 1 :], "stop", quirk="marker-text: "
          "the model closed its analysis with `<|end|>` spelled as ordinary tokens; the decoded text is the same, so "
          "the API cannot show it and the rebuilt output has the special <|end|>")
    reasoning = "The marker that ends a message is written <|end|> in the docs; then I answer."
    g.add("How does harmony end a message?", t(reasoning, "With the <|end|> token."), "stop", quirk="marker-text: the "
          "reasoning quotes `<|end|>` as ordinary tokens; SGLang's parser ends the reasoning there and moves the rest "
          "of it into the content")
    g.add("Weather in Oslo?", t("Need the weather.", "  Let me check.\n", [("get_weather", '{"city": "Oslo"}')]),
          "stop", tools=[WEATHER], quirk="whitespace: SGLang's tool-call parser strips the preamble before a call")
    g.add("Weather in Kraków?", t("Need the weather.", None, [("get_weather", '{"city":"Kraków","units":"metric"}')]),
          "stop", tools=[WEATHER], quirk="tool-args-json: the model wrote compact JSON; SGLang re-serialises the "
          "arguments with json.dumps (\", \" and \": \" separators)")
    g.add("Weather in Zürich?", t("Need the weather.", None, [("get_weather", '{"city": "Z\\u00fcrich"}')]), "stop",
          tools=[WEATHER], quirk="tool-args-json: the model escaped non-ASCII (\\u00fc); SGLang's json.dumps("
          "ensure_ascii=False) writes ü")
    call = m("commentary", '{"city": "Lisboa"}', "get_weather")
    g.add("Weather in Lisboa?", g.gen.output([m("analysis", "Need the weather."), call]), "stop", tools=[WEATHER],
          quirk="tool-call-id: the model addressed to=get_weather without the functions. namespace; SGLang returns "
          "the bare name, and the rebuilt recipient is functions.get_weather")
    ids = t("Emoji.", "Happy coding 🦜🧬")
    cut = next(k for k in range(len(ids) - 1, 0, -1) if _ends_inside_character(tok, ids[:k]))
    g.add("Send two emoji.", ids[:cut], "length", quirk="truncated-utf8: cut at max_new_tokens inside a 4-byte emoji")
    lead = tok.encode_ordinary("🦜")[0]
    ids = t("Parrot.", "")
    ids = ids[:-1] + tok.encode_ordinary("Parrots ") + [lead] + tok.encode_ordinary(" are loud.") + ids[-1:]
    g.add("Tell me about parrots.", ids, "stop", quirk="invalid-utf8: a lone partial emoji (its first bytes) inside "
          "the answer, decoded as U+FFFD")
    ids = t("Need the weather.", None, [("get_weather", '{"city": "Nairobi", "units": "metric"}')])
    g.add("Weather in Nairobi?", ids[:-6], "length", tools=[WEATHER], quirk="dropped-text: cut at max_new_tokens "
          "inside the tool call's arguments; SGLang's parser drops the unfinished call")
    g.add("Quick one: 2+2?", t("", "4"), "stop", quirk="message-structure: the model wrote an empty analysis "
          "message; the API shows no reasoning, so the rebuilt output has no analysis message")


def _ends_inside_character(tokenizer, ids) -> bool:
    try:
        tokenizer.decode_bytes(ids).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def build(tokenizer_spec: str = TOKENIZER) -> tuple[dict, list[dict]]:
    tokenizer = load_tokenizer(tokenizer_spec)
    g = G1(tokenizer, bind_profile("gpt-oss", tokenizer))
    rng = random.Random(20261130)
    build_tool_samples(g, rng, 36)
    build_answer_samples(g, rng)
    build_quirk_samples(g)
    manifest = {
        "name": NAME,
        "profile": "gpt-oss",
        "tokenizer": TOKENIZER,
        "api_view": "sglang",
        "source": SOURCE,
        "description": "gpt-oss harmony turns: reasoning, answers (code, tables, CJK, emoji), tool calls (one, "
        "several, nested and non-ASCII arguments), length cuts, one quirk sample per divergence class.",
        "max_known_divergence_rate": known_divergence_rate(g.samples),
        "samples": len(g.samples),
    }
    return manifest, g.samples


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "golden"), help="golden dir to write into (default: the project's golden/)")
    p.add_argument("--tokenizer", default=TOKENIZER, help="the o200k_harmony tokenizer (DIR/o200k_harmony or a name)")
    args = p.parse_args(argv)
    manifest, samples = build(args.tokenizer)
    path = write_dataset(Path(args.out) / NAME, manifest, samples)
    tokens = sum(len(s["output_ids"]) for s in samples)
    quirks = sum(1 for s in samples if "quirk" in s)
    print(f"{path}: {len(samples)} samples, {tokens} output tokens, {quirks} with a known quirk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
