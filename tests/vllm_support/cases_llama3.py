"""The vLLM differential cases of the llama3 family (``--tool-call-parser llama3_json``): named cases,
400 random outputs (``sglang_support/llama_coder_outputs.py``) and 400 random schema-bearing requests
(``schemas``: typed tools, ``tool_choice`` auto / none / required / named, no tools) with JSON calls
written against them, as one ``cases.Group`` for ``driver.py``.

Their responses from each vLLM release are recorded under ``tests/engine_responses/llama3/``
(``record``), apart from the other families' recordings, so that they can be recorded on their own."""

from __future__ import annotations

import random
from pathlib import Path

from pipeline.cases import llama_coder_outputs as lo

from .cases import RANDOM, Group, _group, add_schema_cases

RECORDED = Path(__file__).resolve().parents[1] / "engine_responses" / "llama3"
PROMPT = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"


def llama3() -> Group:
    g = _group("llama3", "llama-3.1", PROMPT)
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
    rng = random.Random(3511)
    for n in range(RANDOM):
        g.cases[f"random-{n}"] = lo.random_llama3(t, p, rng)

    def write(calls, rng):
        return lo.llama3_ids(t, p, rng.choice(("", "", "Sure. ")), [lo.llama_call(name, args) for name, args in calls],
                             sep=rng.choice(("; ", ";")))

    add_schema_cases(g, random.Random(3512), write)
    return g


def groups() -> list[Group]:
    return [llama3()]


def record(python: str, overlay: str | None = None, family: str = "llama3") -> Path:
    """Run a vLLM release's own code (``python``'s environment, ``overlay`` first on its path) on every
    case of ``family`` (llama3 or qwen3-coder) and write its responses under that family's folder."""
    import subprocess

    from . import vllm_responses
    from .recorded import write_release

    code = "import vllm._version as v; print(v.__version__)"
    env = {"PYTHONPATH": overlay} if overlay else {}
    version = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.strip()
    if family == "qwen3-coder":
        from . import cases_qwen3_coder as cases
    else:
        import sys

        cases = sys.modules[__name__]
    found = cases.groups()
    responses = vllm_responses([(g.setup, [g.driver_case(n) for n in g.cases]) for g in found], python=python, overlay=overlay)
    return write_release("vllm", version, found, responses, cases.RECORDED)
