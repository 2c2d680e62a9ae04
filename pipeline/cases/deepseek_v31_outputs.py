"""DeepSeek-V3.1 output ids built the way the model writes them (its chat template's layout): text runs as
ordinary tokens, structure as the profile's marker ids. Shared by the V3.1 differential tests (both
engines) and the golden-set script."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from . import CaseGenerator
from .family_outputs import NAMES, _ids, _text
from .kimi_outputs import ARGUMENTS, TEXTS

V31_LITERALS = ("a literal <｜tool▁calls▁begin｜> in prose", "the literal </think> tag", "a <think> mention",
                "a literal <tool_call> (Qwen's)", "multi\nline\n  text")
MULTILINE_ARGS = ('{\n  "q": 1,\n  "s": "two\\nlines"\n}', '{"code": "def f():\\n    return 1"}')


def think_block(profile, reasoning: str | None, close_think: bool = True) -> list:
    """The pieces DeepSeek-V3.1 and V3.2 open their output with: ``{reasoning}</think>`` (the prompt opened the
    block), nothing with thinking off (``reasoning`` None), no ``</think>`` when ``close_think`` is false (a cut)."""
    if reasoning is None:
        return []
    return [reasoning, profile.ids["think_end"]] if close_think else [reasoning]


def v31_call(name: str, arguments) -> tuple[str, str]:
    """(name, arguments text): ``arguments`` as the model writes JSON (``json.dumps`` spacing) or a raw text."""
    return name, arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def v31_ids(
    tokenizer, profile, reasoning: str | None = None, content: str = "", calls: Sequence[tuple[str, str]] = (), *,
    close_think: bool = True, between: str = "", after_calls: str = "", section_end: bool = True, stop: bool = True,
) -> list[int]:
    """DeepSeek-V3.1 output: ``{reasoning}</think>`` (reasoning None: thinking off, no think block), content,
    ``<｜tool▁calls▁begin｜>``, each (name, arguments) as ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``
    with ``between`` between calls, ``<｜tool▁calls▁end｜>``, ``after_calls``, ``<｜end▁of▁sentence｜>``."""
    m = profile.ids
    pieces: list = [*think_block(profile, reasoning, close_think), content]
    if calls:
        pieces.append(m["tool_calls_begin"])
        for i, (name, args) in enumerate(calls):
            if i:
                pieces.append(between)
            pieces += [m["tool_call_begin"], name, m["tool_sep"], args, m["tool_call_end"]]
        if section_end:
            pieces.append(m["tool_calls_end"])
    pieces.append(after_calls)
    if stop:
        pieces.append(m["stop"])
    return _ids(tokenizer, pieces)


def random_v31(tokenizer, profile, rng: random.Random) -> tuple[list[int], str, bool]:
    """(ids, finish reason, thinking on): a varied DeepSeek-V3.1 output."""
    pool = TEXTS + V31_LITERALS + ("", "Plain answer.")
    thinking = rng.random() < 0.6
    calls = []
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        arguments = rng.choice(ARGUMENTS + MULTILINE_ARGS + ({"q": 1, "s": "中文 👍"}, '{"cut": ', "[1, 2]", "[]", "{}"))
        calls.append(v31_call(rng.choice(NAMES), arguments) if rng.random() < 0.93 else ("get" + rng.choice(("", "\n")), "not json"))
    ids = v31_ids(
        tokenizer, profile, _text(rng, pool) if thinking else None, _text(rng, pool), calls,
        close_think=rng.random() < 0.9, between=rng.choice(("", "", "", "\n")), after_calls=rng.choice(("", "", "", "\nDone.")),
        section_end=rng.random() < 0.95,
    )
    if rng.random() < 0.25:
        return ids[: rng.randint(0, len(ids) - 1)], "length", thinking
    return ids, "stop", thinking


def write_v31(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``reasoning``: None for thinking off, ``content``, ``calls``: (name, arguments text) pairs) as
    DeepSeek-V3.1 writes it. Quirk keys write something else: ``content_ids``, ``between``, ``after_calls``."""
    return v31_ids(tokenizer, profile, turn.get("reasoning"), turn.get("content_ids") or turn.get("content") or "",
                   list(turn.get("calls", ())), between=turn.get("between", ""), after_calls=turn.get("after_calls", ""),
                   stop=stop)


CASES = CaseGenerator(write=write_v31, random_output=random_v31)

__all__ = ["CASES", "write_v31", "v31_call", "v31_ids", "random_v31", "MULTILINE_ARGS"]
