"""The held-out real-schema calls (tests/heldout/bfcl_kimi_k25.jsonl, built by scripts/make_bfcl_heldout.py)
hold what they are for: at least 105 samples and 150 calls, each to a tool its sample declares, with
arguments that are JSON objects written the ways a model writes them (integral floats, exponents, integers
as strings, nested objects, arrays, nulls, non-ASCII raw and escaped), on schemas in the form BFCL sends
them to an open model's server. The builder's conversion is BFCL's own (``convert_to_tool``)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "heldout" / "bfcl_kimi_k25.jsonl"
OPENAPI = {"integer", "number", "string", "boolean", "array", "object"}


@pytest.fixture(scope="module")
def samples():
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def builder():
    spec = importlib.util.spec_from_file_location("make_bfcl_heldout", ROOT / "scripts" / "make_bfcl_heldout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _types(schema):
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), str):
            yield schema["type"]
        for key in ("properties",):
            for sub in (schema.get(key) or {}).values():
                yield from _types(sub)
        if isinstance(schema.get("items"), dict):
            yield from _types(schema["items"])


def test_every_call_is_to_a_declared_tool_with_object_arguments(samples):
    assert len(samples) >= 105 and sum(len(s["calls"]) for s in samples) >= 150
    assert len({s["id"] for s in samples}) == len(samples)
    for s in samples:
        names = {t["function"]["name"] for t in s["tools"]}
        assert all("." not in n for n in names), s["id"]
        for tool in s["tools"]:
            assert set(_types(tool["function"]["parameters"])) <= OPENAPI, (s["id"], tool)
        for name, arguments in s["calls"]:
            assert name in names, (s["id"], name)
            assert isinstance(json.loads(arguments), dict), (s["id"], arguments)


def test_the_arguments_are_written_the_ways_a_model_writes_them(samples):
    texts = [a for s in samples for _, a in s["calls"]]
    seen = {
        "integral float": sum(bool(re.search(r"[:\[, ]-?\d+\.0\b", a)) for a in texts),
        "exponent": sum(bool(re.search(r"\de-?\d", a)) for a in texts),
        "null": sum("null" in a for a in texts),
        "nested object": sum(bool(re.search(r"\{[^{}]*\{", a)) for a in texts),
        "array": sum("[" in a for a in texts),
        "non-ASCII": sum(bool(re.search(r"[^\x00-\x7f]", a)) for a in texts),
        "escaped": sum("\\u" in a for a in texts),
        "multi-line": sum("\n" in a for a in texts),
    }
    assert all(n >= 3 for n in seen.values()), seen
    quoted = 0  # an integer parameter written as a string
    for s in samples:
        props = {t["function"]["name"]: t["function"]["parameters"].get("properties", {}) for t in s["tools"]}
        for name, arguments in s["calls"]:
            for key, value in json.loads(arguments).items():
                quoted += (props[name].get(key) or {}).get("type") == "integer" and isinstance(value, str) and value.isdigit()
    assert quoted >= 5, quoted


def test_the_builder_converts_tools_as_bfcl_does(builder):
    function = {"name": "math.gcd", "description": "d", "parameters": {"type": "dict", "required": ["a"], "properties": {
        "a": {"type": "integer", "description": "x"}, "f": {"type": "float", "description": "y"},
        "t": {"type": "tuple", "items": {"type": "float"}}, "o": {"type": "dict", "properties": {"k": {"type": "any"}}},
        "u": {"description": "no type"}}}}
    (tool,) = builder.openai_tools([function])
    assert tool == {"type": "function", "function": {"name": "math_gcd", "parameters": {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "integer"}, "f": {"type": "number", "format": "float"}, "t": {"type": "array", "items": {"type": "number"}},
        "o": {"type": "object", "properties": {"k": {"type": "string"}}}, "u": {"type": "string"}}}}}
    assert [builder._exponent(v) for v in (1000, 20, -300, 5, 0)] == ["1e3", "2e1", "-3e2", None, None]
    assert builder._chosen(["", "\\u4e0a\\u6d77", "Shanghai"]) == ("上海", True)  # the user's language first
    assert builder._chosen([""]) == (None, False)
