"""The vLLM differential cases of DeepSeek-V3.1 (``--reasoning-parser deepseek_v3 --tool-call-parser
deepseek_v31``), with thinking on and off: named cases, 400 random outputs and 400 random schema-bearing
requests each (``cases.add_schema_cases``). Kept apart from ``cases.all_groups()`` and recorded per release
under ``tests/engine_responses/deepseek/`` (``scripts/record-engine-responses --cases deepseek``)."""

from __future__ import annotations

import random

from sglang_support import deepseek_v31_outputs as do

from .cases import RANDOM, Group, _group, _texts, add_schema_cases

__all__ = ["deepseek_v31", "deepseek_groups"]


def deepseek_v31(thinking: bool) -> Group:
    prompt = "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>" + ("<think>" if thinking else "</think>")
    g = _group("deepseek-v3.1", "deepseek-v3.1", prompt, chat_template_kwargs={"thinking": thinking})
    g.setup["model_type"] = "deepseek_v3"  # a served model's config.json: transformers then reads tokenizer.json as is
    t, p = g.tokenizer, g.profile
    d = lambda *a, **kw: do.v31_ids(t, p, *a, **kw)  # noqa: E731
    c = do.v31_call
    r = "Think." if thinking else None
    g.cases.update({
        "args-verbatim": (d(r, "", [c("get", '{"q":1,"n":[1,2],"f":1e3}')]), "stop"),
        "content-unstripped": (d(r, "  I will check.\n", [c("get", {"q": 1})]), "stop"),
        "non-ascii-args": (d(r, "", [c("查询", {"s": "Córdoba 中文"})]), "stop"),
        "two-calls": (d(r, "", [c("get", {"q": 1}), c("read_file", {"p": "/a b"})]), "stop"),
        "multi-line-args": (d(r, "", [c("get", do.MULTILINE_ARGS[0])]), "stop"),
        "args-not-json-verbatim": (d(r, "c", [c("get", "not json")]), "stop"),
        "text-after-calls": (d(r, "c", [c("get", {"q": 1})], after_calls="\nDone."), "stop"),
        "literal-think-end-in-content": (d(r, "Write </think> here."), "stop"),
        "length-cut-in-call": (d(r, "c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-6], "length"),
        "length-cut-inside-utf8": (d(r, "Sure: 👍", stop=False)[:-1], "length"),
        "cut-in-reasoning": (d("A long thought " * 3, "", close_think=False, stop=False), "length"),
    })
    rng = random.Random(2113100 + thinking)
    n = 0
    while n < RANDOM:
        ids, finish, on = do.random_v31(t, p, rng)
        if on == thinking:
            g.cases[f"random-{n}"] = (ids, finish)
            n += 1

    def write(calls, rng):
        _, content = _texts(rng)
        return do.v31_ids(t, p, r, content, [do.v31_call(name, args) for name, args in calls])

    add_schema_cases(g, random.Random(3313100 + thinking), write)
    return g


def deepseek_groups() -> list[Group]:
    return [deepseek_v31(True), deepseek_v31(False)]
