"""The vLLM differential cases of the qwen3-coder family (``--tool-call-parser qwen3_coder``): named cases,
400 random outputs (``sglang_support/llama_coder_outputs.py``) and 400 random schema-bearing requests
(``schemas``: typed tools, ``tool_choice`` auto / none / required / named, no tools) with XML calls
written against them, as one ``cases.Group`` for ``driver.py``; recorded per release under
``tests/engine_responses/qwen3-coder/`` (``cases_llama3.record``)."""

from __future__ import annotations

import random
from pathlib import Path

from pipeline.cases import llama_coder_outputs as lo

from .cases import RANDOM, SCHEMA, TOOL_NAMES, Group, _group
from .schemas import random_request

RECORDED = Path(__file__).resolve().parents[1] / "engine_responses" / "qwen3-coder"
PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
TYPED = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {
    "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"}, "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "a": {"type": "array", "items": {"type": "integer"}}, "s": {"type": "string"}}}}}]


def qwen3_coder() -> Group:
    g = _group("qwen3-coder", "qwen3", PROMPT)
    t, p = g.tokenizer, g.profile
    ids = lambda *a, **kw: lo.coder_ids(t, p, *a, **kw)  # noqa: E731
    c = lo.coder_call
    g.cases.update({
        "answer": (ids("Hello!"), "stop"),
        "one-call": (ids("", [c("get", {"q": "Oslo"})]), "stop"),
        "content-stripped": (ids("Let me check.\n\n", [c("get", {"q": "Oslo"})]), "stop"),
        "text-between-dropped": (ids("", [c("get", {"q": 1}), c("read_file", {"p": "/a"})], between="\nnext\n"), "stop"),
        "unclosed-call": (ids("", [c("get", {"q": 1})], close_last=False), "stop"),
        "cut-in-call": (ids("", [c("get", {"q": "a long value"})], stop=False)[:-5], "length"),
        "literal-think-end": (ids("Write </think> here."), "stop"),
        "special-text-in-content": (ids("Ends <|im_end|> and <|endoftext|> text.", [c("get", {"q": 1})]), "stop"),
    })
    for name, values in {"number-integral": {"n": "5.0"}, "number-exponent": {"n": "1e3"}, "number-negative-zero": {"n": "-0.0"},
                         "number-above-2-53": {"n": "9007199254740993"}, "integer-as-float": {"i": "5.0"},
                         "boolean-capitalised": {"b": "True"}, "nullable-null": {"o": "null"}, "array": {"a": "[1, 2.0]"},
                         "string-stays": {"s": "5"}}.items():
        g.cases[name] = (ids("", [c("get", values)]), "stop")
        g.requests[name] = (TYPED, "auto")
    g.cases["tool-choice-none"] = (ids("c", [c("get", {"n": "1"})]), "stop")
    g.requests["tool-choice-none"] = (TYPED, "none")
    g.cases["no-tools"] = (ids("c", [c("get", {"n": "1"})]), "stop")
    g.requests["no-tools"] = (None, None)
    rng = random.Random(3521)
    for n in range(RANDOM):
        g.cases[f"random-{n}"] = lo.random_qwen3_coder(t, p, rng)

    rng = random.Random(3522)
    for k in range(SCHEMA):  # the parameters' value texts written as the model writes them (no JSON quoting)
        tools, sent, choice = random_request(rng, TOOL_NAMES)
        bodies = []
        for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
            tool = rng.choice(tools)
            name = tool["function"]["name"] if rng.random() < 0.93 else "undeclared_tool"
            values = {key: rng.choice(texts) for key, texts in tool["_values"].items() if rng.random() < 0.85}
            bodies.append(c(name, {key: v.strip('"') if rng.random() < 0.7 else v for key, v in values.items()}))
        out, finish = ids(rng.choice(("", "", "Sure.\n\n")), bodies), "stop"
        if rng.random() < 0.25:
            out, finish = out[: rng.randint(0, len(out) - 1)], "length"
        g.cases[f"schema-{k}"] = (out, finish)
        g.requests[f"schema-{k}"] = (sent, choice)
    return g


def groups() -> list[Group]:
    return [qwen3_coder()]
