"""Kimi K2.5 output ids built the way the model emits them: text parts as ordinary tokens
(``encode_ordinary``), structure as the profile's marker ids. Shared by the sglang differential
test and the round-trip tests."""

from __future__ import annotations

import random
from collections.abc import Sequence

from . import CaseGenerator

# Text that stresses tokenization and parsers.
CODE = 'def f(x):\n\tif x  >  1:\n\t\treturn  x\t# tab\n    pass\n\n\nclass  A :  pass\n'
CJK = "中文测试，汉字与标点。日本語のテキストと한국어"
EMOJI = "family 👩\u200d👩\u200d👧\u200d👦, flag 🏳️\u200d🌈, thumbs 👍🏽!"
DIGITS = "1234567890 3.14159 -42 1e10 0x1F 2026-11-29"
CONTRACTIONS = "I'M sure you'RE right; they'Ve said DON'T, can't, WE'LL, she'd, It's"
SPACES = "  two leading, then\ttab,   three,\n\n\nand trailing   "
TEXTS = (CODE, CJK, EMOJI, DIGITS, CONTRACTIONS, SPACES)

# Marker text written by the model as ordinary tokens: a server's text parser cannot tell it
# from the marker itself.
LITERAL_MARKERS = (
    "the literal </think> tag",
    "a literal <|tool_calls_section_begin|> in prose",
    "ends with <|im_end|> text",
)

ARGUMENTS = (
    '{"q": 1}',
    '{ "path" :"/tmp/a b" ,\n  "n":[1, 2 ,3] }',
    '{"s": "中文 👍\\u00e9", "t": "tab\\there"}',
    "{}",
    '{"nested": {"a": {"b": "}"}}, "c": null}',
    '{\n\t"multi": "line",\n\t"x": 1.50\n}',
)
NAMES = ("get", "search.web", "read_file", "run-cmd")


def kimi_ids(
    tokenizer,
    profile,
    reasoning: str = "",
    content: str = "",
    calls: Sequence[tuple[str, str]] = (),
    *,
    close_think: bool = True,
    between: str = "",
    stop: bool = True,
) -> list[int]:
    """Output ids: reasoning, ``</think>`` (if ``close_think``), content, the tool-call section
    for ``calls`` ((call id text, arguments text) pairs; ``between`` written before each call),
    ``<|im_end|>`` (if ``stop``)."""
    enc = tokenizer.encode_ordinary
    m = profile.ids
    ids: list[int] = []
    if profile.spec.thinking:
        ids += enc(reasoning)
        if close_think:
            ids.append(m["think_end"])
    ids += enc(content)
    if calls:
        ids.append(m["tool_calls_begin"])
        for call_id, arguments in calls:
            ids += enc(between)
            ids.append(m["tool_call_begin"])
            ids += enc(call_id)
            ids.append(m["tool_call_argument_begin"])
            ids += enc(arguments)
            ids.append(m["tool_call_end"])
        ids += enc(between)
        ids.append(m["tool_calls_end"])
    if stop:
        ids.append(m["stop"])
    return ids


def random_output(tokenizer, profile, rng: random.Random) -> tuple[list[int], str]:
    """One varied output and its finish reason ("stop" or "length")."""
    pool = TEXTS + LITERAL_MARKERS + ("", " ", "\n", "Plain answer.")

    def text() -> str:
        parts = rng.sample(pool, rng.randint(0, 3))
        return rng.choice(("", " ", "\n", "\n\n")) + rng.choice(("", " ", "\n")).join(parts) + rng.choice(("", " ", "\n"))

    calls = []
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        name = rng.choice(NAMES)
        call_id = rng.choice((f"functions.{name}:{rng.randint(0, 12)}", f"{name}:{rng.randint(0, 3)}", str(rng.randint(0, 5))))
        arguments = rng.choice(ARGUMENTS + (" " + ARGUMENTS[0] + "\n", "[1, 2]", '{"cut": '))
        calls.append((rng.choice(("", " ")) + call_id + rng.choice(("", "\n")), arguments))
    ids = kimi_ids(
        tokenizer,
        profile,
        text(),
        text(),
        calls,
        close_think=rng.random() < 0.85,
        between=rng.choice(("", "", "\n", " ")),
    )
    if rng.random() < 0.25:  # cut at the length limit somewhere (never keeping the stop token)
        return ids[: rng.randint(0, len(ids) - 1)], "length"
    return ids, "stop"


def write(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``reasoning``, ``content``, ``calls``: (call id text, arguments) pairs) as Kimi writes it."""
    return kimi_ids(tokenizer, profile, turn.get("reasoning") or "", turn.get("content") or "", turn.get("calls", ()),
                    between=turn.get("between", ""), stop=stop)


CASES = CaseGenerator(write=write, random_output=random_output)
