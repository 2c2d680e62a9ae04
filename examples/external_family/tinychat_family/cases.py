"""tinychat's case generator: the one writer of its output layout, as the model writes it (text runs
as ordinary tokens, markers as the profile's ids). ``make_golden.py`` writes the golden data with it."""

from __future__ import annotations

import json
import random

from pipeline.cases import CaseGenerator

__all__ = ["CASES", "write", "random_output"]


def write(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``content``, ``calls``: (name, arguments text) pairs) as tinychat writes it."""
    m, out, text = profile.ids, [], turn.get("content") or ""
    for i, (name, arguments) in enumerate(turn.get("calls", ())):
        text += "\n" if (i or text) else ""
        out += tokenizer.encode_ordinary(text) + [m["tool_call_begin"]]
        text = f'\n{{"name": "{name}", "arguments": {arguments}}}\n'
        out += tokenizer.encode_ordinary(text) + [m["tool_call_end"]]
        text = ""
    out += tokenizer.encode_ordinary(text) if text else []
    return out + ([m["stop"]] if stop else [])


def random_output(tokenizer, profile, rng: random.Random) -> tuple[list[int], str]:
    words = ("Sure.", "中文 👍", "  spaced  ", "line\nbreak", "")
    calls = [(rng.choice(("get", "查询")), json.dumps({"q": rng.randint(0, 9)})) for _ in range(rng.choice((0, 1, 2)))]
    ids = write(tokenizer, profile, {"content": rng.choice(words), "calls": calls})
    return (ids[: rng.randint(0, len(ids) - 1)], "length") if rng.random() < 0.25 else (ids, "stop")


CASES = CaseGenerator(write=write, random_output=random_output)
