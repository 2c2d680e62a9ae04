"""DeepSeek-V3.2 output ids built the way the model writes them (its encoder's assistant layout): reasoning and
``</think>`` as ids where thinking is on, everything else, DSML calls included, one run of ordinary text.
Shared by the V3.2 differential tests and the golden-set script."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from pipeline.core.dsv32_prompts import DSML, dsml_arguments

from . import CaseGenerator
from .deepseek_v31_outputs import think_block
from .family_outputs import NAMES, _ids, _text
from .kimi_outputs import TEXTS

V32_LITERALS = ("a literal <｜DSML｜function_calls> in prose", "the literal </think> tag", "a <think> mention",
                "multi\nline\n  text", "a ｜DSML｜ token", "ends with a blank line\n\n")
VALUES = ({"q": 1, "s": "中文 👍"}, {"path": "/tmp/a b", "lines": [1, 2.5, None]}, {"a": {"b": [1, {"c": None}]}, "t": True},
          {"code": "def f():\n    return 1\n"}, {"n": 5.0, "big": 12345678901234567890, "neg": -0.0}, {}, {"s": "  padded  "},
          {"e": "é", "esc": "tab\there \"quoted\""})


def invoke(name: str, arguments, *, form: str = "params") -> str:
    """One invoke block: ``params`` (the model's DSML parameters), ``json`` (a JSON object body), or a raw body."""
    if form == "params":
        body = dsml_arguments(arguments)
    elif form == "json":
        body = json.dumps(arguments, ensure_ascii=False)
    else:
        body = form
    return f'<{DSML}invoke name="{name}">\n{body}\n</{DSML}invoke>'


def v32_ids(tokenizer, profile, reasoning: str | None = None, content: str = "", invokes: Sequence[str] = (), *,
            close_think: bool = True, gap: str = "\n\n", block_end: bool = True, after: str = "", stop: bool = True,
            between: str = "\n") -> list[int]:
    """DeepSeek-V3.2 output: ``{reasoning}</think>`` (None: thinking off), content, ``gap`` and the
    ``<｜DSML｜function_calls>`` block of these invoke texts (``between`` between two), ``after``,
    ``<｜end▁of▁sentence｜>``."""
    m = profile.ids
    pieces: list = [*think_block(profile, reasoning, close_think), content]
    if invokes:
        pieces.append(f"{gap}<{DSML}function_calls>\n" + between.join(invokes) + (f"\n</{DSML}function_calls>" if block_end else ""))
    pieces.append(after)
    if stop:
        pieces.append(m["stop"])
    return _ids(tokenizer, pieces)


def random_invoke(rng: random.Random, name: str, arguments=None) -> str:
    arguments = rng.choice(VALUES) if arguments is None else arguments
    roll = rng.random()
    if roll < 0.75:
        return invoke(name, arguments)
    if roll < 0.85:
        return invoke(name, arguments, form="json")
    return invoke(name, arguments, form=rng.choice((
        f'<{DSML}parameter name="x">no string attribute</{DSML}parameter>', "just prose", "",
        f'<{DSML}parameter name="n" string="false">NaN</{DSML}parameter>', '{"not": "closed"',
        f'<{DSML}parameter name="n" string="false">not json</{DSML}parameter>', "[1, 2]",
        f'<{DSML}parameter name="s" string="true">  x  </{DSML}parameter>\nstray text')))


def random_v32(tokenizer, profile, rng: random.Random) -> tuple[list[int], str, bool]:
    """(ids, finish reason, thinking on): a varied DeepSeek-V3.2 output."""
    pool = TEXTS + V32_LITERALS + ("", "Plain answer.")
    thinking = rng.random() < 0.6
    invokes = [random_invoke(rng, rng.choice(NAMES)) for _ in range(rng.choice((0, 0, 1, 2, 3)))]
    if invokes and rng.random() < 0.05:
        invokes[-1] = f'<{DSML}invoke name="get"/>'
    ids = v32_ids(tokenizer, profile, _text(rng, pool) if thinking else None, _text(rng, pool), invokes,
                  close_think=rng.random() < 0.9, gap=rng.choice(("\n\n",) * 6 + ("\n", "")), block_end=rng.random() < 0.95,
                  after=rng.choice(("", "", "", "\nDone.")))
    if rng.random() < 0.25:
        return ids[: rng.randint(0, len(ids) - 1)], "length", thinking
    return ids, "stop", thinking


def write_v32(tokenizer, profile, turn, *, stop: bool = True) -> list[int]:
    """A turn (``reasoning``: None for thinking off, ``content``, ``calls``: (name, arguments text) pairs) as
    DeepSeek-V3.2's encoder writes it: each call an invoke of DSML parameters (arguments that are no JSON object
    written as the invoke's text). Quirk keys: ``content_ids``, ``between``, ``after_calls``, ``params`` (a
    function writing an arguments object's parameters, instead of the encoder's)."""
    params = turn.get("params", dsml_arguments)
    invokes = []
    for name, args in turn.get("calls", ()):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        invokes.append(invoke(name, None, form=params(parsed) if isinstance(parsed, dict) else args))
    return v32_ids(tokenizer, profile, turn.get("reasoning"), turn.get("content_ids") or turn.get("content") or "", invokes,
                   between=turn.get("between", "\n"), after=turn.get("after_calls", ""), stop=stop)


CASES = CaseGenerator(write=write_v32, random_output=random_v32)

__all__ = ["CASES", "write_v32", "invoke", "v32_ids", "random_invoke", "random_v32", "VALUES"]
