"""Kimi K2.5's TypeScript-style tool declarations (``tools_ts_str``), as its own tokenizer writes them.

Kimi K2.5's tokenizer class (Python in its hub repository, which tokfidelity never runs) deep-sorts the
tools by key, then declares them in a TypeScript-like syntax; its ``chat_template.jinja`` renders that
string in the ``tool_declare`` turn. When the encoder raises (any exception: ``oneOf``, an unknown
``$ref``, a malformed schema), the tokenizer leaves ``tools_ts_str`` unset and the template falls back
to compact JSON of the deep-sorted tools. :func:`tools_typescript` returns the string, or ``None``
where the official encoder raises; the differential test (tests/test_kimi_tools_ts.py) holds this
module to the official encoder (tinker-cookbook's verbatim copy), failures included.

The official encoder in two phases, kept here because they decide what fails and what is written:

* parse: every schema becomes a node; ``$defs`` are registered when the object holding them is parsed
  (properties in key order), and each ``$ref`` must name a definition registered by then;
* write: required fields first, then optional ones, each sorted by name; descriptions and
  constraints as ``//`` comments; defaults as JSON, except numbers and booleans (Python ``repr``:
  ``False``, not ``false``); enum values quoted when strings, else Python ``str``; definitions as
  ``interface NAME ...`` before the function's ``type NAME = (_: ...) => any;``.

Only what a node's writing reaches is checked at write time (as in the official code), so a bad
description under ``anyOf`` passes while the same one on a property fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["tools_typescript", "encode_tools_typescript", "deep_sort", "UnsupportedToolSchema"]

INDENT = "  "
FIELD_SEPARATOR = ",\n"
UNION_TYPES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean",
               "null": "null", "object": "{}", "array": "Array<any>"}
CONSTRAINT_KEYS = {"string": ("maxLength", "minLength", "pattern"), "number": ("maximum", "minimum"),
                   "integer": ("maximum", "minimum")}
ARRAY_CONSTRAINT_KEYS = ("minItems", "maxItems")


class UnsupportedToolSchema(ValueError):
    """A tool schema the official encoder rejects; the template then declares the tools as JSON."""


def deep_sort(value: Any) -> Any:
    """Every dict key-sorted, recursively (the tokenizer's ``deep_sort_dict``)."""
    if isinstance(value, dict):
        return {k: deep_sort(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [deep_sort(v) for v in value]
    return value


def _comment(text: Any, indent: str = "") -> str:
    if not isinstance(text, str):
        raise UnsupportedToolSchema(f"a description must be a string, got {type(text).__name__}")
    return "\n".join(f"{indent}// {line}" if line else "" for line in text.split("\n"))


def _get(schema: Any, key: str, default: Any = None) -> Any:
    if not isinstance(schema, Mapping):
        raise UnsupportedToolSchema(f"expected a schema object, got {type(schema).__name__}")
    return schema.get(key, default)


# ------------------------------------------------------------------------------------------
# Nodes
# ------------------------------------------------------------------------------------------
@dataclass
class _Node:
    kind: str  # scalar | object | array | enum | any_of | union | ref
    description: Any = ""
    constraints: dict[str, Any] = field(default_factory=dict)
    value: Any = None  # scalar: the type; enum: the values; union: TS names; ref: the name
    items: list[Any] = field(default_factory=list)  # object: fields; any_of: nodes; array: [item]
    extra: Any = None  # object: additionalProperties (None, True, False, a node, or anything else)


@dataclass
class _Field:
    name: str
    node: _Node
    optional: bool
    default: Any


class _Registry:
    def __init__(self) -> None:
        self.definitions: dict[str, Any] = {}
        self.self_ref = False

    def register(self, defs: Any) -> None:
        if not defs:
            return
        if not isinstance(defs, Mapping):
            raise UnsupportedToolSchema(f"$defs must be an object, got {type(defs).__name__}")
        self.definitions.update(defs)

    def resolve(self, ref: Any) -> str:
        if not isinstance(ref, str):
            raise UnsupportedToolSchema(f"$ref must be a string, got {type(ref).__name__}")
        if ref == "#":
            self.self_ref = True
            return "parameters"
        if not ref.startswith("#/$defs/"):
            raise UnsupportedToolSchema(f"unsupported $ref {ref!r}")
        name = ref.split("/")[-1]
        if name not in self.definitions:
            raise UnsupportedToolSchema(f"$ref {ref!r} names no definition registered so far")
        if _get(self.definitions[name], "$self_ref", False):
            return "parameters"
        return name


def _scalar(kind: Any, schema: Mapping | None = None) -> _Node:
    schema = schema or {}
    keys = CONSTRAINT_KEYS.get(kind, ()) if isinstance(kind, str) else ()
    return _Node("scalar", schema.get("description", ""), {k: v for k, v in schema.items() if k in keys}, value=kind)


def _iterate(value: Any, what: str) -> list:
    """The elements the official code iterates over (a dict gives its keys, a string its characters)."""
    if isinstance(value, (list, tuple, dict, str)):
        return list(value)
    raise UnsupportedToolSchema(f"{what} must be a list, got {type(value).__name__}")


def _parse(schema: Any, registry: _Registry) -> _Node:
    if isinstance(schema, bool):
        return _scalar("any" if schema else "null")
    if not isinstance(schema, Mapping):
        raise UnsupportedToolSchema(f"expected a schema object, got {type(schema).__name__}")
    description = schema.get("description", "")
    if "$ref" in schema:
        return _Node("ref", description, value=registry.resolve(schema["$ref"]))
    if "anyOf" in schema:
        return _Node("any_of", description, items=[_parse(s, registry) for s in _iterate(schema["anyOf"], "anyOf")])
    if "enum" in schema:
        return _parse_enum(schema)
    if "type" in schema:
        kind = schema["type"]
        if isinstance(kind, list):
            try:
                names = [UNION_TYPES[t] for t in kind]
            except (KeyError, TypeError):
                raise UnsupportedToolSchema(f"unsupported type union {kind!r}") from None
            return _Node("union", description, value=names)
        if kind == "object":
            return _parse_object(schema, registry)
        if kind == "array":
            items = schema.get("items")
            item = _parse(items, registry) if items else _scalar("any")
            constraints = {k: v for k, v in schema.items() if k in ARRAY_CONSTRAINT_KEYS}
            return _Node("array", description, constraints, items=[item])
        return _scalar(kind, schema)
    if not schema:
        return _scalar("any")
    raise UnsupportedToolSchema(f"schema with none of $ref, anyOf, enum, type: keys {sorted(schema)}")


def _parse_enum(schema: Mapping) -> _Node:
    values = schema["enum"]
    if "type" in schema:
        kind = schema["type"]
        if isinstance(kind, list):
            if len(kind) == 1:
                kind = kind[0]
            elif len(kind) == 2 and "null" in kind:
                kind = kind[0] if kind[0] != "null" else kind[1]
            else:
                raise UnsupportedToolSchema(f"enum type {kind!r} is not supported")
        wanted = {"string": str, "number": (int, float), "integer": int, "boolean": bool}
        for value in _iterate(values, "enum"):
            if value is not None and isinstance(kind, str) and kind in wanted and not isinstance(value, wanted[kind]):
                raise UnsupportedToolSchema(f"enum value {value!r} is not of type {kind}")
    return _Node("enum", schema.get("description", ""), value=values)


def _parse_object(schema: Mapping, registry: _Registry) -> _Node:
    node = _Node("object", schema.get("description", ""))
    if not schema:
        return node
    if "$defs" in schema:
        registry.register(schema["$defs"])
    extra = schema.get("additionalProperties")
    node.extra = _parse(extra, registry) if isinstance(extra, Mapping) else extra
    if "properties" not in schema:
        return node
    properties = schema["properties"]
    if not isinstance(properties, Mapping):
        raise UnsupportedToolSchema(f"properties must be an object, got {type(properties).__name__}")
    try:
        required = set(schema.get("required", []))
    except TypeError:
        raise UnsupportedToolSchema("required must be a list of names") from None
    for name, prop in properties.items():
        sub = _parse(prop, registry)
        default = prop.get("default") if isinstance(prop, Mapping) else None
        node.items.append(_Field(name, sub, name not in required, default))
    return node


# ------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    """Where the official code concatenates or joins, a non-string type name fails."""
    if not isinstance(value, str):
        raise UnsupportedToolSchema(f"type {value!r} is not a string")
    return value


def _docstring(node: _Node, indent: str) -> str:
    lines = []
    if node.description:
        lines.append(_comment(node.description, indent))
    if node.constraints:
        lines.append(indent + "// " + ", ".join(f"{k}: {v}" for k, v in sorted(node.constraints.items(), key=lambda kv: kv[0])))
    return "".join(line + "\n" for line in lines)


def _write(node: _Node, indent: str = "") -> Any:
    kind = node.kind
    if kind == "scalar":
        return "number" if node.value == "integer" else node.value
    if kind == "object":
        return _write_object(node, indent)
    if kind == "array":
        (item,) = node.items
        doc = _docstring(item, indent + INDENT)
        if doc:
            return "Array<\n" + doc + indent + INDENT + _text(_write(item, indent + INDENT)) + "\n" + indent + ">"
        return f"Array<{_write(item, indent)}>"
    if kind == "enum":
        return " | ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in _iterate(node.value, "enum"))
    if kind == "any_of":
        return " | ".join(_text(_write(t, indent)) for t in node.items)
    if kind == "union":
        return " | ".join(node.value)
    return node.value  # ref


def _write_field(f: _Field, indent: str) -> str:
    comments = _docstring(f.node, indent)
    if f.default is not None:
        shown = repr(f.default) if isinstance(f.default, (int, float, bool)) else json.dumps(f.default, ensure_ascii=False)
        comments += f"{indent}// Default: {shown}\n"
    return comments + f"{indent}{f.name}{'?' if f.optional else ''}: {_write(f.node, indent)}"


def _write_object(node: _Node, indent: str) -> str:
    fields = sorted((f for f in node.items if not f.optional), key=lambda f: f.name)
    fields += sorted((f for f in node.items if f.optional), key=lambda f: f.name)
    lines = [_write_field(f, indent + INDENT) for f in fields]
    extra = node.extra
    if extra is not None:
        if extra is True:
            shown = "any"
        elif extra is False:
            shown = "never"
        elif isinstance(extra, _Node):
            shown = _write(extra, indent + INDENT)
        else:
            raise UnsupportedToolSchema(f"unknown additionalProperties {extra!r}")
        lines.append(f"{indent + INDENT}[k: string]: {shown}")
    if not lines:
        return "{}"
    return "{\n" + FIELD_SEPARATOR.join(lines) + "\n" + indent + "}"


def _function(function: Any) -> str:
    registry = _Registry()
    parameters = _get(function, "parameters") or {}
    if not isinstance(parameters, Mapping):
        raise UnsupportedToolSchema(f"parameters must be an object, got {type(parameters).__name__}")
    root = _parse_object(parameters, registry)  # parsed as an object whatever its "type" says
    interfaces = []
    self_ref = registry.self_ref
    if self_ref:  # fields in schema order, no additionalProperties: as the official code writes it
        body = FIELD_SEPARATOR.join(_write_field(f, INDENT) for f in root.items)
        interfaces.append("interface parameters {" + (f"\n{body}\n" if body else "") + "}")
    for name, schema in dict(registry.definitions).items():
        written = _write(_parse(schema, registry))
        description = _get(schema, "description", "")
        head = _comment(description) + "\n" if description else ""
        interfaces.append(f"{head}interface {name} {written}")
    name = function.get("name", "function")
    signature = "parameters" if self_ref else _write_object(root, "")
    description = function.get("description")
    parts = ["\n".join(interfaces), (description and _comment(description)) or "", f"type {name} = (_: {signature}) => any;"]
    return "\n".join(p for p in parts if p)


def encode_tools_typescript(tools: Any) -> str:
    """The official encoder's output for ``tools`` (apply :func:`deep_sort` first, as the tokenizer
    does); raises :class:`UnsupportedToolSchema` where it raises. ``""`` when no tool is a function."""
    if not tools:
        return ""
    functions = []
    for tool in _iterate(tools, "tools"):
        if _get(tool, "type") == "function":
            function = tool.get("function", {})
            if function:
                functions.append(_function(function))
    if not functions:
        return ""
    return "# Tools\n\n## functions\nnamespace functions {\n" + "\n".join(functions) + "\n}\n"


def tools_typescript(sorted_tools: Any) -> str | None:
    """``tools_ts_str`` as Kimi K2.5's tokenizer passes it to the template: the declarations of the
    (already deep-sorted) tools, or None where the official encoder raises (the template then writes
    compact JSON). An empty string also makes the template fall back to JSON."""
    try:
        return encode_tools_typescript(sorted_tools)
    except UnsupportedToolSchema:
        return None
    except (TypeError, AttributeError, KeyError, ValueError, RecursionError):
        # Malformed input the checks above do not name: the official encoder raises on it too.
        return None
