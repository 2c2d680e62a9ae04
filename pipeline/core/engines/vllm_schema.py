"""vLLM's schema-aware argument correction, restated: ``ParserEngine._fix_arg_types`` with
``_coerce_dict`` / ``_coerce_value`` (``vllm/parser/engine/parser_engine.py``) and
``extract_types_from_schema`` / ``coerce_to_schema_type`` (``vllm/tool_parsers/utils.py``).

Every parser built on vLLM's parser engine (``kimi_k2`` among the views here) runs it on each call's
arguments, with the request's tools: the arguments are ``json.loads``ed; each value whose property
the called tool's schema declares is coerced to the declared type(s), strings from their text, other
values from their ``json.dumps``; when any value changed, the whole object is written again with
``json.dumps(..., ensure_ascii=False)`` (so ``{"n":5.0,"s":"x"}`` under ``n: number`` comes back
``{"n": 5, "s": "x"}``); otherwise the arguments stay as the model wrote them.

Types are tried in vLLM's order (null, integer, number, boolean, object, array, string). A
``number`` is ``float()``ed and an integral one sent as an ``int`` (``5.0`` -> ``5``, ``-0.0`` -> ``0``,
integers above 2**53 rounded through the float); vLLM 0.33 tries ``int()`` first (``int_first``),
so integers stay exact there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["fix_arg_types", "coerce_to_schema_type", "extract_types_from_schema"]

_TYPE_ALIASES = {
    "str": "string", "text": "string", "varchar": "string", "char": "string", "enum": "string",
    "int": "integer", "int32": "integer", "int64": "integer", "uint": "integer", "uint32": "integer",
    "uint64": "integer", "long": "integer", "short": "integer", "unsigned": "integer",
    "float": "number", "float32": "number", "float64": "number", "double": "number",
    "bool": "boolean", "dict": "object", "arr": "array", "list": "array", "sequence": "array",
}
_PRIORITY = ("null", "integer", "number", "boolean", "object", "array", "string")


def fix_arg_types(arguments: str, properties: Mapping[str, Any], *, int_first: bool = False) -> str:
    """The arguments as vLLM sends them for a tool whose schema has these ``properties``."""
    if not properties:
        return arguments
    try:
        args = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(args, dict):
        return arguments
    if _coerce_dict(args, properties, int_first):
        return json.dumps(args, ensure_ascii=False)
    return arguments


def _coerce_dict(args: dict, properties: Mapping, int_first: bool) -> bool:
    changed = False
    for key, value in args.items():
        prop = properties.get(key)
        if not isinstance(prop, dict):
            continue
        coerced, value_changed = _coerce_value(value, prop, int_first)
        if value_changed:
            args[key] = coerced
            changed = True
    return changed


def _coerce_value(value: Any, schema: dict, int_first: bool) -> tuple[Any, bool]:
    if isinstance(value, str):
        coerced = coerce_to_schema_type(value, extract_types_from_schema(schema), int_first=int_first)
        return (coerced, True) if coerced is not value else (value, False)
    if isinstance(value, dict):
        nested = schema.get("properties")
        if isinstance(nested, dict):
            return value, _coerce_dict(value, nested, int_first)
        return value, False
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return value, False
        changed = False
        for i, item in enumerate(value):
            coerced, item_changed = _coerce_value(item, items, int_first)
            if item_changed:
                value[i] = coerced
                changed = True
        return value, changed
    as_str = json.dumps(value, ensure_ascii=False)
    coerced = coerce_to_schema_type(as_str, extract_types_from_schema(schema), int_first=int_first)
    if type(coerced) is not type(value) or coerced != value:
        return coerced, True
    return value, False


def extract_types_from_schema(schema: Any) -> list[str]:
    """Every type a JSON Schema allows: ``type`` (a string or a list), the types of ``enum`` values,
    and those of ``anyOf`` / ``oneOf`` / ``allOf``; ``["string"]`` when none can be told."""
    if not isinstance(schema, dict):
        return ["string"]
    types: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        types.add(declared)
    elif isinstance(declared, list):
        types.update(t for t in declared if isinstance(t, str))
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        types.update(t for t in map(_enum_type, enum) if t is not None)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for choice in schema[key]:
                types.update(extract_types_from_schema(choice))
    return list(types) if types else ["string"]


def _enum_type(v: Any) -> str | None:
    if v is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(v, kind):
            return name
    return None


def _finite(obj: Any) -> bool:
    try:
        json.dumps(obj, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return True


def coerce_to_schema_type(value: str, schema_type: str | list[str], *, int_first: bool = False) -> Any:
    """``value`` (a string) as the first of the types it can be read as; the string itself when none."""
    wanted = {_TYPE_ALIASES.get(k, k) for t in ([schema_type] if isinstance(schema_type, str) else schema_type)
              for k in [t.strip().lower()]}
    for kind in _PRIORITY:
        if kind not in wanted:
            continue
        if kind == "null":
            if value.lower() == "null":
                return None
        elif kind == "string":
            return value
        elif kind == "integer":
            try:
                return int(value)
            except (ValueError, TypeError):
                pass
        elif kind == "number":
            number = _number(value, int_first)
            if number is not None:
                return number
        elif kind == "boolean":
            lower = value.lower().strip()
            if lower in ("true", "1"):
                return True
            if lower in ("false", "0"):
                return False
        else:  # object, array
            try:
                parsed = json.loads(value)
            except (ValueError, TypeError):
                continue
            if _finite(parsed):
                return parsed
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if _finite(parsed) else value


def _number(value: str, int_first: bool) -> int | float | None:
    if int_first:
        try:
            return int(value)
        except (ValueError, TypeError):
            pass
    try:
        val = float(value)
    except (ValueError, TypeError):
        return None
    if not math.isfinite(val):
        return None
    return val if val != int(val) else int(val)
