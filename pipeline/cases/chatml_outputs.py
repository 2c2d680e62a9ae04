"""ChatML output ids as the model writes them: the content as ordinary tokens, then ``<|im_end|>``."""

from __future__ import annotations

import random

from . import CaseGenerator
from .kimi_outputs import TEXTS

__all__ = ["CASES", "write", "POOL", "chatml_ids", "random_text", "random_output"]

POOL = TEXTS + ("literal <|im_end|> and <|im_start|> text", "a <think> tag", "Plain answer.", "👩\u200d👩\u200d👧")


def chatml_ids(tokenizer, profile, content: str, *, stop: bool = True) -> list[int]:
    return tokenizer.encode_ordinary(content) + ([profile.stop_id] if stop else [])


def random_text(rng: random.Random, pool=POOL) -> str:
    parts = rng.sample(pool, rng.randint(0, 3))
    return rng.choice(("", " ", "\n", "\n\n")) + rng.choice(("", " ", "\n")).join(parts) + rng.choice(("", " ", "\n"))


def random_output(tokenizer, profile, rng: random.Random) -> tuple[list[int], str]:
    """(ids, finish reason): varied content, cut at a random place in 30% of the outputs."""
    ids = chatml_ids(tokenizer, profile, random_text(rng))
    return (ids[: rng.randint(0, len(ids) - 1)], "length") if rng.random() < 0.3 else (ids, "stop")


def write(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    return chatml_ids(tokenizer, profile, turn.get("content") or "", stop=stop)


CASES = CaseGenerator(write=write, random_output=random_output)
