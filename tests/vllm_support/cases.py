"""The differential cases for the ``vllm`` views, for every registered profile with a case generator and a vllm
view (``GROUPS``, checked against the registry by ``all_groups``): per profile and prompt (thinking on and off
where the request chooses it), named cases of the engines' behaviours, plus 400 random outputs of the family's
case generator (markers written as plain text, whitespace around every marker, non-ASCII and multi-line
arguments, length cuts, several calls), plus 400 random schema-bearing requests (``schemas``: typed tool
parameters, ``tool_choice`` auto/none/required/named, no tools) with calls whose arguments stress them, each
with the driver set-up that serves it. Built with the real tokenizers; shared by the vLLM differential test, the
recorded-release test (``tests/test_engine_releases.py``) and the test that runs every diverging case through
diagnosis."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer
from pipeline.cases import chatml_outputs as co
from pipeline.cases import deepseek_v31_outputs as d31
from pipeline.cases import deepseek_v32_outputs as d32
from pipeline.cases import family_outputs as fo
from pipeline.cases import kimi_outputs as ko
from pipeline.cases import llama_coder_outputs as lo
from pipeline.core.families import family_of, specs

from . import setup_for
from .schemas import random_arguments, random_request

RANDOM = 400
SCHEMA = 400
TOOL_NAMES = ("get_weather", "search", "read_file", "book.flight", "run-cmd")


@dataclass
class Group:
    """One driver set-up (a family served one way) and its cases: name -> (ids, finish)."""

    family: str
    profile: object
    tokenizer: object
    setup: dict
    cases: dict[str, tuple[list[int], str]] = field(default_factory=dict)
    # name -> (the request's tools or None, its tool_choice or None); a case not here declares the
    # driver's default tools (no schemas) with tool_choice auto
    requests: dict[str, tuple[list | None, object]] = field(default_factory=dict)
    label: str = ""  # tells apart two groups of one family and template kwargs (a different prompt)

    def request(self, name: str):
        """The case's request as the views take it."""
        from pipeline.core.engines.request import Request, request_of

        kwargs, prompt = dict(self.setup.get("chat_template_kwargs") or {}), self.setup["prompt_ids"]
        if name not in self.requests:  # the driver's default tools: every name the cases call, no schemas
            return Request(None, None, kwargs, any_tool=True, prompt_ids=prompt)
        tools, choice = self.requests[name]
        return request_of(tools, choice, kwargs, prompt)

    def driver_case(self, name: str) -> dict:
        ids, finish = self.cases[name]
        if name not in self.requests:
            return {"ids": ids, "finish": finish, "tools": True}
        tools, choice = self.requests[name]
        return {"ids": ids, "finish": finish, "tools": tools or False, "tool_choice": choice}


def add_schema_cases(g: Group, rng: random.Random, write, n: int = SCHEMA) -> None:
    """``n`` cases ``schema-K``: a random request with typed tools, and an output ``write(calls, rng)``
    makes from 0-3 calls ((name, arguments text)) to its tools (now and then to an undeclared one);
    a quarter cut at a random length."""
    for k in range(n):
        tools, sent, choice = random_request(rng, TOOL_NAMES)
        calls = []
        for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
            tool = rng.choice(tools)
            name = tool["function"]["name"] if rng.random() < 0.93 else "undeclared_tool"
            calls.append((name, random_arguments(rng, tool)))
        ids = write(calls, rng)
        finish = "stop"
        if rng.random() < 0.25:
            ids, finish = ids[: rng.randint(0, len(ids) - 1)], "length"
        g.cases[f"schema-{k}"] = (ids, finish)
        g.requests[f"schema-{k}"] = (sent, choice)


def add_random(g: Group, seed: int, thinking: bool | None = None) -> None:
    """``RANDOM`` cases ``random-N``: outputs of the family's case generator (``Family.cases``); where an output
    says whether the model thought, only those that match the group's ``thinking`` (None: every output)."""
    random_output = family_of(g.family).case_generator().random_output
    rng = random.Random(seed)
    n = 0
    while n < RANDOM:
        ids, finish, *rest = random_output(g.tokenizer, g.profile, rng)
        if thinking is None or not rest or rest[0] == thinking:
            g.cases[f"random-{n}"] = (ids, finish)
            n += 1


# Kimi K2.5 calls to a tool typed n: number, i: integer, b: boolean, o: integer or null (issue 33's values).
SCHEMA_NAMED = {
    "number-integral-float-becomes-int": '{"n": 5.0, "s": "x"}',
    "number-exponent-becomes-int": '{"n":1e3}',
    "number-negative-zero-becomes-0": '{"n": -0.0}',
    "number-above-2-53-rounded": '{"n": 9007199254740993}',
    "integer-written-as-string": '{"i": "5"}',
    "integer-written-as-float-verbatim": '{"i":5.0}',
    "boolean-written-as-1": '{"b": 1}',
    "nullable-written-as-string-null": '{"o": "null"}',
    "untyped-key-verbatim": '{"zz":5.0}',
}


def _texts(rng: random.Random) -> tuple[str, str]:
    pool = ("", "Let me check.", " ", "\n", "I'll call the tool.\n", "中文 ok")
    return rng.choice(pool), rng.choice(pool)


def case_writer(g: Group, reasoning: str | None = None):
    """A schema case's output, written by the family's case generator (``Family.cases``): ``reasoning`` (None:
    thinking off, or a family without reasoning), a drawn content, the calls."""
    write = family_of(g.family).case_generator().write

    def written(calls, rng):
        _, content = _texts(rng)
        return write(g.tokenizer, g.profile, {"reasoning": reasoning, "content": content, "calls": calls})

    return written

def _group(profile_name: str, folder: str, prompt: str, **kwargs) -> Group:
    tokenizer = load_tokenizer(folder)
    profile = bind_profile(profile_name, tokenizer)
    view = profile.spec.views["vllm"]
    setup = setup_for(view, folder, tokenizer.encode(prompt), profile.stop_ids, kwargs.get("chat_template_kwargs"))
    return Group(profile_name, profile, tokenizer, setup)



def kimi_k25() -> Group:
    g = _group("kimi-k2.5", "kimi-k2.5", "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|><think>")
    t, p = g.tokenizer, g.profile
    k = lambda *a, **kw: ko.kimi_ids(t, p, *a, **kw)  # noqa: E731
    call = lambda name, args, i=0: (f"functions.{name}:{i}", args)  # noqa: E731
    g.cases.update({
        "reasoning-trailing-whitespace-stripped": ([48187, 341, 163607, 33853, 13, 163586], "stop"),
        "no-spaces-around-markers": (k(" Think.\n\n", "\n\nAnswer. ", [call("get", '{"q": 1}')]), "stop"),
        "special-text-in-content-deleted": ([81, 163607, 9570, 22652, 348, 11129, 91, 29, 2506, 13, 163586], "stop"),
        "special-text-in-reasoning-deleted": (k("Say [EOS] then <|im_user|> here.", "ok"), "stop"),
        "literal-think-end-in-content-deleted": (k("r", "Use </think> to close."), "stop"),
        "length-cut-after-complete-call": (k("r", "c", [call("get", '{"q": 1}')], stop=False)[:-1], "length"),
        "length-cut-inside-utf8": (k("r", "Sure: 👍", stop=False)[:-1], "length"),
        "non-ascii-args-verbatim": (k("r", "", [call("查询", '{"s": "Córdoba 中文"}')]), "stop"),
        "multi-line-args": (k("r", "", [call("get", '{\n  "a": 1\n}')]), "stop"),
        "several-calls-and-whitespace": (k("r", " \n", [call("get", "{}"), call("put", '{"x": 1.50}', 1)], between="\n"), "stop"),
        "header-without-counter": (k("r", "c", [("7", '{"q": 1}')]), "stop"),
        "cut-while-reasoning": (k("A long thought ", close_think=False, stop=False), "length"),
    })
    add_random(g, 2112501)
    typed = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {
        "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"}, "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}}}]
    for name, args in SCHEMA_NAMED.items():
        g.cases[name] = (k("r", "", [call("get", args)]), "stop")
        g.requests[name] = (typed, "auto")
    g.cases["tool-choice-none-suppresses"] = (k("r", "c", [call("get", '{"n": 1}')]), "stop")
    g.requests["tool-choice-none-suppresses"] = (typed, "none")
    g.cases["tool-choice-named-finish"] = (k("r", "", [call("get", '{"n": 1}')]), "stop")
    g.requests["tool-choice-named-finish"] = (typed, {"type": "function", "function": {"name": "get"}})
    g.cases["tool-choice-required-no-call"] = (k("r", "Just text."), "stop")
    g.requests["tool-choice-required-no-call"] = (typed, "required")
    add_schema_cases(g, random.Random(3312501), _kimi_writer(g))
    return g


def _kimi_writer(g: Group):
    def write(calls, rng):
        reasoning, content = _texts(rng)
        heads = [(f"functions.{name}:{i}" if rng.random() < 0.9 else str(i), args) for i, (name, args) in enumerate(calls)]
        return ko.kimi_ids(g.tokenizer, g.profile, reasoning or "r", content, heads, between=rng.choice(("", "\n")))
    return write


def kimi_k2() -> Group:
    g = _group("kimi-k2", "kimi-k2", "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|>")
    add_random(g, 2112502)
    add_schema_cases(g, random.Random(3312502), _kimi_writer(g))
    return g


def qwen3(thinking: bool) -> Group:
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" + ("" if thinking else "<think>\n\n</think>\n\n")
    g = _group("qwen3", "qwen3", prompt, chat_template_kwargs={"enable_thinking": thinking})
    t, p = g.tokenizer, g.profile
    q = lambda *a, **kw: fo.qwen3_ids(t, p, *a, **kw)  # noqa: E731
    c = fo.qwen3_call
    r = "\nr\n" if thinking else None
    g.cases.update({
        "content-before-call-unstripped": (q(r, "Let me look that up.", [c("get", {"q": 1})]), "stop"),
        "literal-think-end-in-content": (q(r, "Write </think> here."), "stop"),
        "special-text-in-content": (q(r, "Ends <|im_end|> and <|endoftext|> text."), "stop"),
        "compact-args-reserialised": (q(r, "", [c("get", '{"q":1,"n":[1,2]}')]), "stop"),
        "non-ascii-args": (q(r, "", [c("查询", {"s": "Córdoba 中文"})]), "stop"),
        "length-cut-in-call": (q(r, "c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-6], "length"),
        "length-cut-inside-utf8": (q(r, "Sure: 👍", stop=False)[:-1], "length"),
        "body-not-json": (q(r, "c", ["\nnot json\n", c("get", {"q": 1})]), "stop"),
    })
    add_random(g, 2112503 + thinking, thinking)

    add_schema_cases(g, random.Random(3312503 + thinking), case_writer(g, r))
    return g


def qwen3_prompt_closed() -> Group:
    """Qwen3 with thinking on (the request's enable_thinking) but a prompt that already closed the reasoning
    (``<think>\n\n</think>\n\n``, as continue_final_message or a template switching thinking off leaves it):
    vLLM 0.32 parses the output as reasoning, 0.33 as content. Outputs written with thinking off."""
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    g = _group("qwen3", "qwen3", prompt, chat_template_kwargs={"enable_thinking": True})
    g.label = "prompt closed reasoning"
    t, p = g.tokenizer, g.profile
    g.cases.update({
        "starts-in-content": (fo.qwen3_ids(t, p, None, "Answer."), "stop"),
        "literal-think-end": (fo.qwen3_ids(t, p, None, "Write </think> here."), "stop"),
        "call": (fo.qwen3_ids(t, p, None, "c", [fo.qwen3_call("get", {"q": 1})]), "stop"),
    })
    add_random(g, 2112507, False)
    return g


def deepseek_v3() -> Group:
    g = _group("deepseek-v3", "deepseek-v3", "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>")
    g.setup["model_type"] = "deepseek_v3"  # a served model's config.json: transformers then reads tokenizer.json as is
    t, p = g.tokenizer, g.profile
    d = lambda *a, **kw: fo.deepseek_ids(t, p, *a, **kw)  # noqa: E731
    c = fo.deepseek_call
    g.cases.update({
        "multi-line-args-lost": ([128806, 128808, 8701, 128814, 1133, 65, 50219, 201, 9854, 14479, 201, 2054, 223, 582,
                                  37399, 3362, 582, 51119, 2701, 1778, 9854, 128809, 128807, 1], "stop"),
        "args-verbatim": (d("", [c("get", '{"q":1,"n":[1,2]}')]), "stop"),
        "content-unstripped": (d("  I will check.\n", [c("get", {"q": 1})]), "stop"),
        "non-ascii-args": (d("", [c("查询", {"s": "Córdoba 中文"})]), "stop"),
        "two-calls-one-line": (d("", [c("get", {"q": 1}), c("get", {"q": 2})], between=""), "stop"),
        "length-cut-in-call": (d("c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-8], "length"),
        "length-cut-inside-utf8": (d("Sure: 👍", stop=False)[:-1], "length"),
    })
    add_random(g, 2112504)

    add_schema_cases(g, random.Random(3312504), case_writer(g))
    return g




def chatml() -> Group:
    g = _group("chatml", "qwen3", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    t, p = g.tokenizer, g.profile
    g.cases["length-cut-inside-utf8"] = (t.encode_ordinary("Sure: 👍")[:-1], "length")
    g.cases["special-id-inside-output"] = (t.encode_ordinary("a") + [p.stop_id] + t.encode_ordinary("b") + [p.stop_id], "stop")
    add_random(g, 2112505)
    add_schema_cases(g, random.Random(3312505),
                     lambda calls, rng: co.chatml_ids(t, p, co.random_text(rng) + "".join(a for _, a in calls)))
    return g


def gpt_oss() -> Group:
    from pipeline.core.harmony import harmony_encoding
    from pipeline.cases import gpt_oss_outputs as go

    g = _group("gpt-oss", "o200k/o200k_harmony", "<|start|>user<|message|>hi<|end|><|start|>assistant")
    t, p = g.tokenizer, g.profile
    gen = go.HarmonyOutputs(harmony_encoding(t), t, p)
    endoftext = t.encode("<|endoftext|>")[0]
    cut = gen.turn("Weather.", None, [("get_weather", '{"city": "Nairobi", "units": "metric"}')])
    g.cases.update({
        "partial-args-become-a-call": (cut[: len(cut) - 1 - len(t.encode_ordinary('units": "metric"}'))], "length"),
        "non-ascii-args-escaped": (gen.turn("r", None, [("get_weather", '{"city": "Córdoba"}')]), "stop"),
        "preamble-not-stripped": (gen.turn("r", " Let me check. \n", [("get_weather", '{"city": "Oslo"}')]), "stop"),
        "endoftext-text-kept": (gen.turn("r", "Answer.")[:-1] + [endoftext], "stop"),
        "two-calls": (gen.turn("r", None, [("get_weather", '{"city": "A"}'), ("read_file", '{"p": 1}')]), "stop"),
    })
    add_random(g, 2112506)

    def write(calls, rng):
        reasoning, content = _texts(rng)
        return gen.turn(reasoning or "r", content or None, calls)

    add_schema_cases(g, random.Random(3312506), write)
    return g


HELDOUT = Path(__file__).resolve().parents[1] / "heldout" / "bfcl_kimi_k25.jsonl"


def kimi_k25_bfcl() -> Group:
    """Held-out real-schema calls: Kimi K2.5 calling the Berkeley Function Calling Leaderboard's tools
    (``tests/heldout/``, built by ``scripts/make_bfcl_heldout.py``), each sample laid out as Kimi writes
    its output (reasoning, ``</think>``, content, the tool-call section with ``functions.NAME:N`` ids,
    ``<|im_end|>``) and sent with its own tools and ``tool_choice`` auto."""
    g = _group("kimi-k2.5", "kimi-k2.5", "<|im_user|>user<|im_middle|>hi<|im_end|><|im_assistant|>assistant<|im_middle|><think>")
    g.label = "bfcl held-out"
    for line in HELDOUT.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        calls = [(f"functions.{name}:{i}", arguments) for i, (name, arguments) in enumerate(sample["calls"])]
        g.cases[sample["id"]] = (ko.kimi_ids(g.tokenizer, g.profile, sample["reasoning"], sample["content"], calls), "stop")
        g.requests[sample["id"]] = (sample["tools"], "auto")
    return g


def deepseek_v31(thinking: bool) -> Group:
    prompt = "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>" + ("<think>" if thinking else "</think>")
    g = _group("deepseek-v3.1", "deepseek-v3.1", prompt, chat_template_kwargs={"thinking": thinking})
    g.setup["model_type"] = "deepseek_v3"  # a served model's config.json: transformers then reads tokenizer.json as is
    t, p = g.tokenizer, g.profile
    d = lambda *a, **kw: d31.v31_ids(t, p, *a, **kw)  # noqa: E731
    c = d31.v31_call
    r = "Think." if thinking else None
    g.cases.update({
        "args-verbatim": (d(r, "", [c("get", '{"q":1,"n":[1,2],"f":1e3}')]), "stop"),
        "content-unstripped": (d(r, "  I will check.\n", [c("get", {"q": 1})]), "stop"),
        "non-ascii-args": (d(r, "", [c("查询", {"s": "Córdoba 中文"})]), "stop"),
        "two-calls": (d(r, "", [c("get", {"q": 1}), c("read_file", {"p": "/a b"})]), "stop"),
        "multi-line-args": (d(r, "", [c("get", d31.MULTILINE_ARGS[0])]), "stop"),
        "args-not-json-verbatim": (d(r, "c", [c("get", "not json")]), "stop"),
        "text-after-calls": (d(r, "c", [c("get", {"q": 1})], after_calls="\nDone."), "stop"),
        "literal-think-end-in-content": (d(r, "Write </think> here."), "stop"),
        "length-cut-in-call": (d(r, "c", [c("get", {"q": 1}), c("put", {"long": 2})])[:-6], "length"),
        "length-cut-inside-utf8": (d(r, "Sure: 👍", stop=False)[:-1], "length"),
        "cut-in-reasoning": (d("A long thought " * 3, "", close_think=False, stop=False), "length"),
    })
    add_random(g, 2113100 + thinking, thinking)

    add_schema_cases(g, random.Random(3313100 + thinking), case_writer(g, r))
    return g


def deepseek_v32(thinking: bool) -> Group:
    from pipeline.core.dsv32_prompts import dsv32_prompt_text
    
    prompt = dsv32_prompt_text([{"role": "user", "content": "hi"}], None, {"thinking": thinking})
    g = _group("deepseek-v3.2", "deepseek-v3.1", prompt, chat_template_kwargs={"thinking": thinking})
    g.setup["model_type"] = "deepseek_v3"
    t, p = g.tokenizer, g.profile
    d = lambda *a, **kw: d32.v32_ids(t, p, *a, **kw)  # noqa: E731
    r = "Think." if thinking else None
    g.cases.update({
        "one-call": (d(r, "", [d32.invoke("get", {"q": 1, "s": "中文"})]), "stop"),
        "content-keeps-blank-line": (d(r, "Let me check.", [d32.invoke("get", {"q": 1})]), "stop"),
        "string-values-unstripped": (d(r, "", [d32.invoke("get", {"s": "  padded \n", "m": "two\nlines"})]), "stop"),
        "typed-params": (d(r, "c", [d32.invoke("get", {"n": 5.0, "b": True, "l": [1, 2], "o": {"k": None}, "big": 2**64})]), "stop"),
        "json-body": (d(r, "", [d32.invoke("get", {"q": 1e3}, form="json")]), "stop"),
        "no-string-attribute": (d(r, "", [d32.invoke("get", {}, form=f'<{d32.DSML}parameter name="x">5</{d32.DSML}parameter>')]), "stop"),
        "bare-invoke": (d(r, "c\n\n" + d32.invoke("get", {"q": 1})), "stop"),
        "text-after-block-dropped": (d(r, "c", [d32.invoke("get", {"q": 1})], after="\nDone."), "stop"),
        "length-cut-in-call": (d(r, "c", [d32.invoke("get", {"q": 1}), d32.invoke("read_file", {"p": "/a b"})])[:-12], "length"),
        "wrapped-arguments": (d(r, "", [d32.invoke("get", {"arguments": {"q": 1}})]), "stop"),
    })
    add_random(g, 2113200 + thinking, thinking)

    def write(calls, rng):
        _, content = _texts(rng)
        invokes = []
        for name, args in calls:
            values = json.loads(args)
            invokes.append(d32.random_invoke(rng, name, values))
        return d32.v32_ids(t, p, r, content, invokes)

    add_schema_cases(g, random.Random(3313200 + thinking), write)
    return g


LLAMA3_PROMPT = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"


def llama3() -> Group:
    g = _group("llama3", "llama-3.1", LLAMA3_PROMPT)
    t, p = g.tokenizer, g.profile
    ids = lambda *a, **kw: lo.llama3_ids(t, p, *a, **kw)  # noqa: E731
    call = lo.llama_call
    g.cases.update({
        "answer": (ids("Hello!"), "stop"),
        "json-call": (ids("", [call("get", {"q": "München"})]), "stop"),
        "compact-args-reserialised": (ids("", [call("get", '{"q":1,"n":[1,2]}')]), "stop"),
        "content-tag-call-content-dropped": (ids("Let me check. ", [call("get", {"q": 1})]), "stop"),
        "two-calls": (ids("", [call("get", {"q": 1}), call("read_file", {"path": "/a b"})]), "stop"),
        "builtin-call-tag-skipped": (ids("", ['brave_search.call(query="x")'], tag=True, stop="stop.2"), "stop"),
        "brace-text-not-json": (ids("Use {braces} here."), "stop"),
        "missing-name": (ids("", ['{"parameters": {"q": 1}}']), "stop"),
        "cut-in-call": (ids("", [call("get", {"q": "a long value"})])[:-4], "length"),
        "cut-after-call": (ids("", [call("get", {"q": 1})])[:-1], "length"),
    })
    add_random(g, 3511)

    def write(calls, rng):
        return lo.llama3_ids(t, p, rng.choice(("", "", "Sure. ")), [lo.llama_call(name, args) for name, args in calls],
                             sep=rng.choice(("; ", ";")))

    add_schema_cases(g, random.Random(3512), write)
    return g


CODER_PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
TYPED = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {
    "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"}, "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "a": {"type": "array", "items": {"type": "integer"}}, "s": {"type": "string"}}}}}]


def qwen3_coder() -> Group:
    g = _group("qwen3-coder", "qwen3", CODER_PROMPT)
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
    add_random(g, 3521)

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


# Each profile's groups: one per prompt (and template kwargs) it is served with, each with its named cases, its random
# outputs (the family's case generator) and its schema-bearing requests. The case sets are the ones recorded under
# tests/engine_responses/ (their inputs' digests are checked), so each keeps its seeds and writers.
GROUPS = {
    "kimi-k2.5": (kimi_k25, kimi_k25_bfcl),
    "kimi-k2": (kimi_k2,),
    "qwen3": (lambda: qwen3(True), lambda: qwen3(False), qwen3_prompt_closed),
    "deepseek-v3": (deepseek_v3,),
    "chatml": (chatml,),
    "gpt-oss": (gpt_oss,),
    "deepseek-v3.1": (lambda: deepseek_v31(True), lambda: deepseek_v31(False)),
    "deepseek-v3.2": (lambda: deepseek_v32(True), lambda: deepseek_v32(False)),
    "llama3": (llama3,),
    "qwen3-coder": (qwen3_coder,),
}


def profiles() -> list[str]:
    """Every registered profile with a case generator and a vllm view: each must have its groups here."""
    return [s.name for s in specs() if family_of(s.name).cases and any(v.engine == "vllm" for v in s.views.values())]


def all_groups() -> list[Group]:
    out = []
    for name in profiles():
        if name not in GROUPS:
            raise LookupError(f"profile {name} has a case generator and vllm views but no groups in tests/vllm_support/cases.py")
        out += [build() for build in GROUPS[name]]
    return out
