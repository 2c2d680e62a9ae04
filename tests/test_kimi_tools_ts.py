"""pipeline.core.kimi_tools_ts against both public ports of Kimi K2.5's tool-declaration encoder.

Reference: tinker-cookbook's verbatim copy of the official encoder, applied to the deep-sorted tools (as
Kimi's tokenizer does), with "raises" meaning the template's JSON fallback. renderers' port must agree
too, except where it is documented to differ from the official encoder (see RENDERERS_DIFFERS).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from kimi_ports import renderers_kimi, tinker_ts_encoder
from kimi_ports.generated import generated_tool_sets

from pipeline.core.kimi_tools_ts import deep_sort, encode_tools_typescript, tools_typescript

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
GENERATED = 300


def official(tools):
    """The official behaviour: the encoder on the deep-sorted tools, None where it raises."""
    try:
        return tinker_ts_encoder().encode_tools_to_typescript_style(deep_sort(copy.deepcopy(tools)))
    except Exception:  # noqa: BLE001 - Kimi's tokenizer catches every exception and falls back to JSON
        return None


def renderers_port(tools):
    try:
        return renderers_kimi()._encode_tools_typescript(deep_sort(copy.deepcopy(tools)))
    except Exception:  # noqa: BLE001
        return None


def golden_tool_sets():
    sets = {}
    for dataset in ("B1_glaive", "B3_magicoder"):
        for line in (GOLDEN / dataset / "samples.jsonl").read_text(encoding="utf-8").splitlines():
            tools = json.loads(line).get("tools")
            if tools:
                sets.setdefault(json.dumps(tools, sort_keys=True), tools)
    return list(sets.values())


def test_every_golden_tool_set_encodes_as_the_official_encoder():
    sets = golden_tool_sets()
    assert len(sets) == 102  # B1's distinct tool sets; B3's prompts carry no tools
    for tools in sets:
        ours = tools_typescript(deep_sort(tools))
        assert ours is not None and ours == official(tools)
        assert ours == renderers_port(tools)  # B1 has no boolean defaults: the ports agree


def test_generated_schemas_encode_as_the_official_encoder_failures_included():
    sets = generated_tool_sets(seed=20260, count=GENERATED)
    written = fallback = 0
    for i, tools in enumerate(sets):
        want = official(tools)
        got = tools_typescript(deep_sort(copy.deepcopy(tools)))
        assert got == want, f"tool set {i}: {json.dumps(tools, ensure_ascii=False)[:2000]}"
        written += want is not None
        fallback += want is None
    # both paths are exercised in earnest: most sets are written, a fair number fall back to JSON
    assert written >= 140 and fallback >= 60, (written, fallback)


def _schemas(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _schemas(v)
    elif isinstance(value, list):
        for v in value:
            yield from _schemas(v)


def renderers_differs(tools) -> bool:
    """Forms where renderers 0.1.12 is documented to write or fail differently from the official encoder:
    a boolean default (``false`` vs ``False``), a non-string enum value (``true``/``null`` vs ``True``/``None``),
    and an enum whose values do not match its type (the official encoder raises; renderers writes it)."""
    for s in _schemas(tools):
        if isinstance(s.get("default"), bool):
            return True
        if "enum" in s and isinstance(s["enum"], list) and any(not isinstance(v, (str, int, float)) or isinstance(v, bool) for v in s["enum"]):
            return True
        if "enum" in s and "type" in s:
            return True
    return False


def test_renderers_port_agrees_outside_its_documented_differences():
    sets = generated_tool_sets(seed=20260, count=GENERATED)
    agree = differ = 0
    for i, tools in enumerate(sets):
        if renderers_port(tools) == official(tools):
            agree += 1
        else:
            differ += 1
            assert renderers_differs(tools), f"tool set {i}: an undocumented difference"
    assert agree >= 150 and differ >= 10, (agree, differ)


BOOL_DEFAULT = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "verbose": {"type": "boolean", "default": False}, "mode": {"enum": [True, None]}}}}}]


def test_documented_port_difference_boolean_default_and_enum_values():
    ours = tools_typescript(deep_sort(BOOL_DEFAULT))
    assert ours == official(BOOL_DEFAULT)
    assert "// Default: False\n  verbose?: boolean" in ours and "mode?: True | None" in ours
    theirs = renderers_port(BOOL_DEFAULT)
    assert "// Default: false\n  verbose?: boolean" in theirs and "mode?: true | null" in theirs


def test_unsupported_forms_fall_back_to_json():
    one_of = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}}}]
    assert official(one_of) is None and tools_typescript(one_of) is None
    missing = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "v": {"$ref": "#/$defs/Nope"}}}}}]
    assert tools_typescript(missing) is None
    with pytest.raises(ValueError, match="Nope"):
        encode_tools_typescript(missing)
    # no function among the tools: an empty declaration, which the template also replaces by JSON
    assert tools_typescript([{"type": "_plugin", "_plugin": {}}]) == "" == official([{"type": "_plugin", "_plugin": {}}])


def test_refs_self_refs_and_definitions():
    tools = [{"type": "function", "function": {"name": "tree", "description": "A tree.\n\nWith \"quotes\".", "parameters": {
        "type": "object", "$defs": {"Leaf": {"type": "object", "description": "One leaf.", "properties": {"v": {"type": "integer"}},
                                             "required": ["v"]}},
        "properties": {"leaf": {"$ref": "#/$defs/Leaf"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["leaf"]}}}]
    ours = tools_typescript(deep_sort(tools))
    assert ours == official(tools)
    assert "// One leaf.\ninterface Leaf {\n  v: number\n}" in ours
    assert "interface parameters {\n  children?: Array<parameters>,\n  leaf: Leaf\n}" in ours  # schema order, as official
    assert "// A tree.\n\n// With \"quotes\".\ntype tree = (_: parameters) => any;" in ours
