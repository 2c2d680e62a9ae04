"""Qwen3 and DeepSeek-V3 output ids built the way each model writes them (its chat template's
layout): text runs as ordinary tokens (``encode_ordinary``), structure as the profile's marker ids.
The one writer of these layouts: the differential tests, the round-trip tests and the golden-set script
(``scripts/make_family_golden.py``, through ``QWEN3.write`` / ``DEEPSEEK_V3.write``) all use it. A text
piece may also be given as ids (a list), written as they are: a golden quirk's non-canonical split."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from . import CaseGenerator
from .kimi_outputs import ARGUMENTS, CJK, CODE, EMOJI, TEXTS

NAMES = ("get", "search_web", "read_file", "run-cmd", "查询")


def _ids(tokenizer, pieces) -> list[int]:
    """Marker ids (int), id runs (list) and text runs (str) to ids; adjacent text runs are encoded together."""
    out: list[int] = []
    text = ""
    for piece in pieces:
        if isinstance(piece, str):
            text += piece
            continue
        if text:
            out += tokenizer.encode_ordinary(text)
            text = ""
        out += piece if isinstance(piece, list) else [piece]
    if text:
        out += tokenizer.encode_ordinary(text)
    return out


def qwen3_call(name: str, arguments) -> str:
    """A call body as Qwen3 writes it (its template: tojson, so json.dumps spacing), or with a raw
    arguments text when ``arguments`` is a string."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f'\n{{"name": "{name}", "arguments": {args}}}\n'


def qwen3_ids(
    tokenizer,
    profile,
    reasoning: str | None = None,
    content: str | list[int] = "",
    calls: Sequence[str] = (),
    *,
    close_think: bool = True,
    gap: str = "\n\n",
    content_separator: str = "\n",
    between: str = "\n",
    after_calls: str = "",
    stop: bool = True,
    stop_id: int | None = None,
) -> list[int]:
    """Qwen3 output: ``<think>{reasoning}</think>{gap}`` (reasoning None: thinking off, no block; the
    model's own newlines are part of ``reasoning``), content, ``content_separator`` before the first
    call when there is content, each call body (``qwen3_call``) in ``<tool_call>...</tool_call>`` with
    ``between`` between calls, ``after_calls``, ``<|im_end|>`` (or ``stop_id``)."""
    m = profile.ids
    pieces: list = []
    if reasoning is not None:
        pieces += [m["think_begin"], reasoning]
        if close_think:
            pieces += [m["think_end"], gap]
    pieces.append(content)
    if calls and content:
        pieces.append(content_separator)
    for i, body in enumerate(calls):
        if i:
            pieces.append(between)
        pieces += [m["tool_call_begin"], body, m["tool_call_end"]]
    pieces.append(after_calls)
    if stop:
        pieces.append(stop_id or m["stop"])
    return _ids(tokenizer, pieces)


def deepseek_call(name: str, arguments, kind: str = "function") -> tuple[str, str, str]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return kind, name, args


def deepseek_ids(
    tokenizer, profile, content: str | list[int] = "", calls: Sequence[tuple[str, str, str]] = (), *, between: str = "\n",
    fence: str = "\n```json\n", close: str = "\n```", section_end: bool = True, stop: bool = True,
    sep: int | list[int] | None = None, section_end_id: int | None = None, stop_id: int | None = None,
) -> list[int]:
    """DeepSeek-V3 output: content, ``<｜tool▁calls▁begin｜>``, each (type, name, arguments) call as
    ``<｜tool▁call▁begin｜>type<｜tool▁sep｜>name{fence}args{close}<｜tool▁call▁end｜>`` with ``between``
    between calls, ``<｜tool▁calls▁end｜>``, ``<｜end▁of▁sentence｜>``; ``sep``, ``section_end_id`` and
    ``stop_id`` write other ids in those places."""
    m = profile.ids
    pieces: list = [content]
    if calls:
        pieces.append(m["tool_calls_begin"])
        for i, (kind, name, args) in enumerate(calls):
            if i:
                pieces.append(between)
            pieces += [m["tool_call_begin"], kind, sep or m["tool_sep"], name + fence + args + close, m["tool_call_end"]]
        if section_end:
            pieces.append(section_end_id or m["tool_calls_end"])
    if stop:
        pieces.append(stop_id or m["stop"])
    return _ids(tokenizer, pieces)


QWEN3_LITERALS = ("the literal </think> tag", "a literal <tool_call>\n in prose", "a <think> mention")
DEEPSEEK_LITERALS = ("a literal <｜tool▁calls▁begin｜> in prose", "ends with ``` fence")


def _text(rng: random.Random, pool) -> str:
    parts = rng.sample(pool, rng.randint(0, 3))
    return rng.choice(("", " ", "\n", "\n\n")) + rng.choice(("", " ", "\n")).join(parts) + rng.choice(("", " ", "\n"))


def random_qwen3(tokenizer, profile, rng: random.Random) -> tuple[list[int], str, bool]:
    """(ids, finish reason, thinking on): a varied Qwen3 output."""
    pool = TEXTS + QWEN3_LITERALS + ("", "Plain answer.")
    thinking = rng.random() < 0.75
    calls = []
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        arguments = rng.choice(ARGUMENTS + ({"q": 1, "s": "中文 👍"}, {"a": [1, 2.5, None]}, '{"cut": ', "[1, 2]"))
        calls.append(qwen3_call(rng.choice(NAMES), arguments) if rng.random() < 0.9 else rng.choice(('\n"just a string"\n', "\nnot json\n", "{}")))
    ids = qwen3_ids(
        tokenizer, profile, ("\n" + _text(rng, pool) + "\n") if thinking else None, _text(rng, pool), calls,
        close_think=rng.random() < 0.9, gap=rng.choice(("\n\n", "\n\n", "\n", "")),
        between=rng.choice(("\n", "\n", "", " \n")), after_calls=rng.choice(("", "", "\n", "Done.")),
    )
    if rng.random() < 0.25:
        return ids[: rng.randint(0, len(ids) - 1)], "length", thinking
    return ids, "stop", thinking


def random_deepseek(tokenizer, profile, rng: random.Random) -> tuple[list[int], str]:
    pool = TEXTS + DEEPSEEK_LITERALS + ("", "Plain answer.")
    calls = []
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        arguments = rng.choice(ARGUMENTS + ({"q": 1, "s": "中文 👍"}, '{"cut": ', "[1, 2]", "[]"))
        calls.append(deepseek_call(rng.choice(NAMES), arguments, rng.choice(("function",) * 9 + ("tool",))))
    ids = deepseek_ids(
        tokenizer, profile, _text(rng, pool), calls, between=rng.choice(("\n", "\n", "")),
        fence=rng.choice(("\n```json\n",) * 9 + ("\n```\n",)),
    )
    if rng.random() < 0.25:
        return ids[: rng.randint(0, len(ids) - 1)], "length"
    return ids, "stop"


def write_qwen3(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``reasoning``: None for thinking off, ``content``, ``calls``: (name, arguments text) pairs) as
    Qwen3's template writes it: ``<think>\n`` + reasoning.strip("\n") + ``\n</think>\n\n``. A turn's
    quirk keys write something else: ``content_ids``, ``between``, ``after_calls``, ``stop_id``."""
    reasoning = turn["reasoning"]
    return qwen3_ids(
        tokenizer, profile, None if reasoning is None else "\n" + reasoning.strip("\n") + "\n",
        turn.get("content_ids") or turn["content"], [qwen3_call(name, args) for name, args in turn["calls"]],
        between=turn.get("between", "\n"), after_calls=turn.get("after_calls", ""), stop=stop, stop_id=turn.get("stop_id"),
    )


def write_deepseek(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``content``, ``calls``: (name, arguments text) pairs; no reasoning) as DeepSeek-V3's template
    writes it. Quirk keys: ``content_ids``, ``between``, ``sep_ids``, ``section_end``, ``stop_id``."""
    return deepseek_ids(
        tokenizer, profile, turn.get("content_ids") or turn["content"],
        [deepseek_call(name, args) for name, args in turn["calls"]], between=turn.get("between", "\n"),
        sep=turn.get("sep_ids"), section_end_id=turn.get("section_end"), stop=stop, stop_id=turn.get("stop_id"),
    )


QWEN3 = CaseGenerator(write=write_qwen3, random_output=random_qwen3)
DEEPSEEK_V3 = CaseGenerator(write=write_deepseek, random_output=random_deepseek)

__all__ = [
    "QWEN3", "DEEPSEEK_V3", "write_qwen3", "write_deepseek",
    "NAMES", "qwen3_call", "qwen3_ids", "deepseek_call", "deepseek_ids", "random_qwen3", "random_deepseek",
    "CODE", "CJK", "EMOJI", "ARGUMENTS",
]
