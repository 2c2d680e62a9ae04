"""Seeded generators of tool sets and conversations the golden data never shows.

Tool schemas cover what real tool declarations hold and what the official Kimi K2.5 encoder handles or
rejects: nested objects, arrays of objects, enums (strings with quotes, numbers, booleans, null, typed and
untyped), anyOf, oneOf (rejected unless a ``type`` beside it wins), $ref/$defs (and ``#`` self references,
and references to missing definitions), nullable type lists, defaults of every JSON type, required and
optional fields, additionalProperties, constraints, descriptions with newlines, blank lines and quotes,
and non-ASCII names. A few sets are malformed on purpose (a number as description, a string as
``required``), since what fails decides whether the prompt declares the tools as TypeScript or JSON.
"""

from __future__ import annotations

import random
from typing import Any

NAMES = ["city", "query", "limit", "größe", "名前", "naïve_flag", "user_id", "tags", "options", "mode", "x",
         "start-date", "priority", "données", "filters", "page", "Ключ", "radius_km", "include_archived", "sort"]
WORDS = ["search", "the", "catalog", "for", "items", "city", "weather", "Zürich", "日本語", "quoted \"term\"",
         "it's", "path\\to", "emoji 🦜", "  spaced  ", "tab\there", "{braces}", "<|im_end|>"]
SCALARS = ["string", "integer", "number", "boolean", "null"]


def _text(rng: random.Random, lines: int = 1) -> str:
    out = []
    for _ in range(lines):
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))))
    if lines > 1 and rng.random() < 0.4:
        out.insert(1, "")  # a blank line inside a description
    return "\n".join(out)


def _default(rng: random.Random, kind: str) -> Any:
    return {
        "string": lambda: rng.choice(["", "auto", "naïve", 'say "hi"', "multi\nline"]),
        "integer": lambda: rng.choice([0, 1, -5, 10**12]),
        "number": lambda: rng.choice([0.5, 1.0, -2.25, 1e-7, 3]),
        "boolean": lambda: rng.choice([True, False]),
        "null": lambda: None,
        "array": lambda: rng.choice([[], ["a", "ü"], [1, 2]]),
        "object": lambda: rng.choice([{}, {"k": "v", "n": 1}, {"ä": [True, None]}]),
    }[kind]()


class SchemaGenerator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.defs: dict[str, Any] = {}

    def schema(self, depth: int = 0) -> Any:
        rng = self.rng
        roll = rng.random()
        if depth > 2 or roll < 0.30:
            return self.scalar()
        if roll < 0.42:
            return self.enum()
        if roll < 0.55:
            return self.object(depth + 1)
        if roll < 0.66:
            return self.array(depth + 1)
        if roll < 0.74:
            return {"anyOf": [self.schema(depth + 1) for _ in range(rng.randint(1, 3))],
                    **({"description": _text(rng)} if rng.random() < 0.3 else {})}
        if roll < 0.755:
            one_of = {"oneOf": [self.scalar(), self.scalar()]}
            if rng.random() < 0.3:
                one_of["type"] = rng.choice(SCALARS)  # the type wins, oneOf is ignored
            return one_of
        if roll < 0.86:
            return self.ref()
        if roll < 0.92:
            return {"type": rng.sample(SCALARS + ["object", "array"], rng.randint(1, 3))}
        if roll < 0.95:
            return rng.choice([{}, True, False, {}, True, {"description": _text(rng)}])
        return {"type": rng.choice(SCALARS), "format": "date-time", "const": "x"}

    def scalar(self) -> dict:
        rng = self.rng
        kind = rng.choice(SCALARS)
        out: dict[str, Any] = {"type": kind}
        if rng.random() < 0.4:
            out["description"] = _text(rng, rng.randint(1, 3))
        if kind == "string" and rng.random() < 0.3:
            out.update(rng.choice([{"maxLength": 64}, {"minLength": 1, "pattern": "^[a-z]+$"}]))
        if kind in ("integer", "number") and rng.random() < 0.3:
            out.update({"minimum": 0, "maximum": rng.choice([10, 2.5])})
        if rng.random() < 0.2:
            out["type"] = [kind, "null"] if kind != "null" else ["null", "string"]
        return out

    def enum(self) -> dict:
        rng = self.rng
        values, fitting = rng.choice([(["a", "b c", 'say "x"', "ü"], ["string", ["string"], ["null", "string"]]),
                                      ([1, 2, 3], ["integer", "number", ["integer", "null"]]),
                                      ([True, False], ["boolean"]), (["on", None], ["string", ["string", "null"]]),
                                      ([1.5, "mixed", None], [])])
        out: dict[str, Any] = {"enum": list(values)}
        if rng.random() < 0.6:
            mismatched = ["string", "integer", "boolean", ["string", "integer"], ["string", "integer", "null"]]
            out["type"] = rng.choice(fitting if fitting and rng.random() < 0.85 else mismatched)
        if rng.random() < 0.4:
            out["description"] = _text(rng, 2)
        return out

    def object(self, depth: int, *, n: int | None = None) -> dict:
        rng = self.rng
        names = rng.sample(NAMES, n if n is not None else rng.randint(0, 5))
        props = {}
        for name in names:
            prop = self.schema(depth)
            if isinstance(prop, dict) and rng.random() < 0.3:
                kind = prop.get("type") if isinstance(prop.get("type"), str) else None
                prop["default"] = _default(rng, kind) if kind in ("string", "integer", "number", "boolean", "null", "array", "object") \
                    else _default(rng, rng.choice(["string", "boolean", "integer", "object"]))
            props[name] = prop
        out: dict[str, Any] = {"type": "object", "properties": props}
        if names:
            out["required"] = rng.sample(names, rng.randint(0, len(names)))
        if rng.random() < 0.25:
            out["additionalProperties"] = rng.choice([True, False, {"type": "string"}, {}])
        if rng.random() < 0.3:
            out["description"] = _text(rng, 2)
        return out

    def array(self, depth: int) -> dict:
        rng = self.rng
        out: dict[str, Any] = {"type": "array"}
        roll = rng.random()
        if roll < 0.45:
            out["items"] = self.object(depth)  # arrays of objects
        elif roll < 0.9:
            out["items"] = self.schema(depth)
        if rng.random() < 0.3:
            out.update({"minItems": 1, "maxItems": rng.choice([3, 10])})
        if rng.random() < 0.3:
            out["description"] = _text(rng)
        return out

    def ref(self) -> dict:
        rng = self.rng
        roll = rng.random()
        if roll < 0.1:
            return {"$ref": "#"}
        if roll < 0.15:
            return {"$ref": "#/$defs/Missing"}
        if roll < 0.18:
            return {"$ref": "#/definitions/Old"}
        name = rng.choice(["Address", "Item", "Filter", "Ünit"])
        if name not in self.defs:
            self.defs[name] = None  # reserve the name: a definition may refer to itself
            self.defs[name] = rng.choice([self.object(2), self.enum(), self.scalar()])
            if rng.random() < 0.4 and isinstance(self.defs[name], dict):
                self.defs[name]["description"] = _text(rng, 2)
        out: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
        if rng.random() < 0.3:
            out["description"] = _text(rng)
        return out

    def tool(self) -> dict:
        rng = self.rng
        self.defs = {}
        params = self.object(0, n=rng.randint(0, 6))
        if self.defs:
            params["$defs"] = {k: v for k, v in self.defs.items() if v is not None}
        function: dict[str, Any] = {"name": rng.choice(["get_weather", "search", "book", "名前_lookup", "run_sql"])
                                    + f"_{rng.randint(0, 99)}", "parameters": params}
        if rng.random() < 0.8:
            function["description"] = _text(rng, rng.randint(1, 3))
        if rng.random() < 0.05:
            function.pop("parameters")
        return {"type": "function", "function": function}

    def tools(self) -> list:
        rng = self.rng
        tools = [self.tool() for _ in range(rng.randint(1, 3))]
        roll = rng.random()
        if roll < 0.04:
            tools.append({"type": "_plugin", "_plugin": {"name": "browser"}})
        elif roll < 0.07:
            tools[0]["function"]["description"] = 42  # malformed: the official encoder raises
        elif roll < 0.10:
            tools[0]["function"].setdefault("parameters", {})["required"] = "city"  # a string: its characters are the names
        return tools


def generated_tool_sets(seed: int, count: int) -> list[list]:
    gen = SchemaGenerator(seed)
    return [gen.tools() for _ in range(count)]


def generated_conversations(seed: int, count: int) -> list[tuple[list, list | None]]:
    """(messages, tools) pairs: single and multi-turn, system prompts, tool calls and results,
    reasoning kept or dropped by the template, names, text parts, marker text typed by a user."""
    rng = random.Random(seed)
    tool_sets = generated_tool_sets(seed + 1, count)
    out = []
    for i in range(count):
        tools = tool_sets[i] if rng.random() < 0.7 else None
        messages: list[dict[str, Any]] = []
        if rng.random() < 0.4:
            messages.append({"role": "system", "content": _text(rng, rng.randint(1, 2))})
        counter = 0
        for turn in range(rng.randint(1, 3)):
            content: Any = _text(rng, rng.randint(1, 3))
            if rng.random() < 0.15:
                content = [{"type": "text", "text": _text(rng)}, {"type": "text", "text": _text(rng)}]
            user: dict[str, Any] = {"role": "user", "content": content}
            if rng.random() < 0.1:
                user["name"] = "alice"
            messages.append(user)
            if turn == 0 and rng.random() < 0.5 or rng.random() < 0.3:
                continue
            assistant: dict[str, Any] = {"role": "assistant", "content": _text(rng) if rng.random() < 0.7 else ""}
            if rng.random() < 0.6:
                assistant[rng.choice(["reasoning_content", "reasoning"])] = _text(rng, 2)
            elif rng.random() < 0.3:
                assistant["reasoning_content"] = None  # null fields, as OpenAI-style clients send them
            if tools and rng.random() < 0.5:
                calls = []
                for _ in range(rng.randint(1, 2)):
                    name = tools[0]["function"]["name"]
                    args = rng.choice(['{"city": "Zürich"}', '{ "q" : "x" }', {"limit": 3, "ü": [1, None]}])
                    calls.append({"id": f"functions.{name}:{counter}", "type": "function",
                                  "function": {"name": name, "arguments": args}})
                    counter += 1
                assistant["tool_calls"] = calls
                if rng.random() < 0.2:
                    assistant["content"] = None
                messages.append(assistant)
                for call in calls:
                    result = {"role": "tool", "tool_call_id": call["id"], "content": _text(rng)}
                    if rng.random() < 0.5:
                        result["name"] = call["function"]["name"]
                    messages.append(result)
            else:
                messages.append(assistant)
        out.append((messages, tools))
    return out
