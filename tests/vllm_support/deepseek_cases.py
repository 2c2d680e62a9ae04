"""The vLLM differential cases of DeepSeek-V3.1 (``--reasoning-parser deepseek_v3 --tool-call-parser
deepseek_v31``) and DeepSeek-V3.2 (``--tool-call-parser deepseek_v32``), with thinking on and off: named cases, 400 random outputs and 400 random schema-bearing
requests each (``cases.add_schema_cases``). Kept apart from ``cases.all_groups()`` and recorded per release
under ``tests/engine_responses/deepseek/`` (``scripts/record-engine-responses --cases deepseek``)."""

from __future__ import annotations

import json
import random

from pipeline.cases import deepseek_v31_outputs as do

from .cases import RANDOM, Group, _group, _texts, add_schema_cases

__all__ = ["deepseek_v31", "deepseek_v32", "deepseek_groups"]


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


def deepseek_v32(thinking: bool) -> Group:
    from pipeline.core.dsv32_prompts import dsv32_prompt_text
    from pipeline.cases import deepseek_v32_outputs as vo

    prompt = dsv32_prompt_text([{"role": "user", "content": "hi"}], None, {"thinking": thinking})
    g = _group("deepseek-v3.2", "deepseek-v3.1", prompt, chat_template_kwargs={"thinking": thinking})
    g.setup["model_type"] = "deepseek_v3"
    t, p = g.tokenizer, g.profile
    d = lambda *a, **kw: vo.v32_ids(t, p, *a, **kw)  # noqa: E731
    r = "Think." if thinking else None
    g.cases.update({
        "one-call": (d(r, "", [vo.invoke("get", {"q": 1, "s": "中文"})]), "stop"),
        "content-keeps-blank-line": (d(r, "Let me check.", [vo.invoke("get", {"q": 1})]), "stop"),
        "string-values-unstripped": (d(r, "", [vo.invoke("get", {"s": "  padded \n", "m": "two\nlines"})]), "stop"),
        "typed-params": (d(r, "c", [vo.invoke("get", {"n": 5.0, "b": True, "l": [1, 2], "o": {"k": None}, "big": 2**64})]), "stop"),
        "json-body": (d(r, "", [vo.invoke("get", {"q": 1e3}, form="json")]), "stop"),
        "no-string-attribute": (d(r, "", [vo.invoke("get", {}, form=f'<{vo.DSML}parameter name="x">5</{vo.DSML}parameter>')]), "stop"),
        "bare-invoke": (d(r, "c\n\n" + vo.invoke("get", {"q": 1})), "stop"),
        "text-after-block-dropped": (d(r, "c", [vo.invoke("get", {"q": 1})], after="\nDone."), "stop"),
        "length-cut-in-call": (d(r, "c", [vo.invoke("get", {"q": 1}), vo.invoke("read_file", {"p": "/a b"})])[:-12], "length"),
        "wrapped-arguments": (d(r, "", [vo.invoke("get", {"arguments": {"q": 1}})]), "stop"),
    })
    rng = random.Random(2113200 + thinking)
    n = 0
    while n < RANDOM:
        ids, finish, on = vo.random_v32(t, p, rng)
        if on == thinking:
            g.cases[f"random-{n}"] = (ids, finish)
            n += 1

    def write(calls, rng):
        _, content = _texts(rng)
        invokes = []
        for name, args in calls:
            values = json.loads(args)
            invokes.append(vo.random_invoke(rng, name, values))
        return vo.v32_ids(t, p, r, content, invokes)

    add_schema_cases(g, random.Random(3313200 + thinking), write)
    return g


def deepseek_groups() -> list[Group]:
    return [deepseek_v31(True), deepseek_v31(False), deepseek_v32(True), deepseek_v32(False)]
