"""Requests with typed tool schemas, and tool-call arguments written against them, for the differential
tests: what the engines' parsers read besides the text.

Each random request declares a few tools whose parameters are typed (``integer``, ``number``,
``boolean``, ``enum``, ``array`` of typed items, nested ``object``, ``anyOf`` with ``null``, type lists
such as ``["number", "null"]``, ``string``) and a ``tool_choice`` (mostly ``auto``; also ``none``,
``required``, a named tool, and no tools at all). The arguments the "model" writes stress the
engines' schema handling: ``5.0``, ``1e3``, ``-0.0``, ``"5"`` for an integer, integers above 2**53,
``1`` / ``"true"`` for a boolean, ``"null"`` for a nullable value, values of the wrong type, keys the
schema does not declare, and compact or spaced JSON (so a re-serialisation shows).
"""

from __future__ import annotations

import json
import random

INTEGERS = ("5", "5.0", "1e3", "-0.0", "-0", '"5"', '"05"', "9007199254740993", "12345678901234567890", "3.7", '"x"', "null",
            "true", "0", "1E2", '" 7 "')
NUMBERS = ("2.5", "5.0", "1e3", "-0.0", "0.0", "9007199254740993", "1.50", '"2.5"', '"1e3"', "1e400", '"nan"', "7", "-1.25e-3",
           "null", '"abc"', "123456789012345678901234567890.0")
BOOLEANS = ("true", "false", "1", "0", '"true"', '"False"', '"1"', '"yes"', "null", "2")
STRINGS = ('"plain"', '"中文 👍"', '"5"', '"null"', "5", "true", "null", '"tab\\there"', "[1, 2]", '{"a": 1}')
NULLABLE = ("null", '"null"', "5", "5.0", '"5"', '"None"', "-0.0")


def _property(rng: random.Random, depth: int = 0) -> tuple[dict, tuple[str, ...]]:
    """A typed property schema and the value texts to write for it."""
    kind = rng.choice(("integer", "number", "boolean", "string", "enum-s", "enum-i", "array-i", "array-n", "object",
                       "anyof", "typelist", "untyped", "alias"))
    if kind == "integer":
        return {"type": "integer"}, INTEGERS
    if kind == "number":
        return {"type": "number", "description": "a number"}, NUMBERS
    if kind == "boolean":
        return {"type": "boolean"}, BOOLEANS
    if kind == "string":
        return {"type": "string"}, STRINGS
    if kind == "enum-s":
        return {"type": "string", "enum": ["celsius", "fahrenheit"]}, ('"celsius"', '"kelvin"', "5", "null")
    if kind == "enum-i":
        return {"enum": [1, 2, 3]}, ("1", "2.0", '"3"', "4", "null", '"one"')
    if kind in ("array-i", "array-n"):
        item = {"type": "integer"} if kind == "array-i" else {"type": "number"}
        values = INTEGERS if kind == "array-i" else NUMBERS
        arrays = tuple("[" + ", ".join(rng.sample(values, rng.randint(0, 3))) + "]" for _ in range(4))
        return {"type": "array", "items": item}, arrays + ('"[1, 2]"', "5")
    if kind == "object" and depth < 2:
        props, texts = {}, {}
        for n in range(rng.randint(1, 3)):
            schema, values = _property(rng, depth + 1)
            props[f"k{n}"] = schema
            texts[f"k{n}"] = values
        objects = tuple(_object_text(rng, {k: rng.choice(v) for k, v in texts.items() if rng.random() < 0.8}) for _ in range(4))
        return {"type": "object", "properties": props}, objects + ('"{}"', "null")
    if kind == "anyof":
        return {"anyOf": [{"type": "integer"}, {"type": "null"}]}, NULLABLE
    if kind == "typelist":
        return {"type": ["number", "null"]}, NULLABLE + NUMBERS[:6]
    if kind == "alias":
        return {"type": rng.choice(("int", "float", "bool", "double", "Integer "))}, INTEGERS[:6] + BOOLEANS[:4]
    return {"description": "no type"}, STRINGS + INTEGERS[:4]


def _object_text(rng: random.Random, values: dict[str, str]) -> str:
    """A JSON object written from value texts, compact or spaced, sometimes with an undeclared key."""
    items = list(values.items())
    if rng.random() < 0.2:
        items.append(("extra", rng.choice(("5.0", '"x"', "1e3"))))
    rng.shuffle(items)
    colon, comma = rng.choice(((":", ","), (": ", ", "), (" : ", " ,")))
    return "{" + comma.join(f"{json.dumps(k)}{colon}{v}" for k, v in items) + "}"


def random_tools(rng: random.Random, names) -> list[dict]:
    """Function tools (OpenAI form) with typed parameters, one per name; returns also each tool's value texts
    in ``tool["_values"]`` (removed before the request is sent)."""
    tools = []
    for name in names:
        props, values = {}, {}
        for n in range(rng.randint(1, 4)):
            schema, texts = _property(rng)
            props[f"p{n}"] = schema
            values[f"p{n}"] = texts
        parameters = {"type": "object", "properties": props, "required": list(props)[:1]}
        tools.append({"type": "function", "function": {"name": name, "description": f"tool {name}", "parameters": parameters},
                      "_values": values})
    return tools


def random_arguments(rng: random.Random, tool: dict) -> str:
    """Argument text for a call to ``tool``, its values drawn from the texts its schema stresses."""
    values = {k: rng.choice(v) for k, v in tool["_values"].items() if rng.random() < 0.85}
    return _object_text(rng, values)


def random_request(rng: random.Random, names) -> tuple[list[dict], list[dict] | None, object]:
    """(the tools with their value texts, the request's tools or None, its tool_choice or None)."""
    tools = random_tools(rng, rng.sample(list(names), rng.randint(1, min(3, len(names)))))
    sent = [{k: v for k, v in t.items() if k != "_values"} for t in tools]
    roll = rng.random()
    if roll < 0.70:
        return tools, sent, rng.choice((None, "auto"))
    if roll < 0.80:
        return tools, sent, "none"
    if roll < 0.88:
        return tools, sent, "required"
    if roll < 0.96:
        return tools, sent, {"type": "function", "function": {"name": rng.choice(sent)["function"]["name"]}}
    return tools, None, None
