#!/usr/bin/env python3
"""Build tests/heldout/bfcl_kimi_k25.jsonl: Kimi K2.5 tool calls on real tool schemas from the Berkeley
Function Calling Leaderboard, held out from the views' design (none of these schemas or argument texts
shaped a view).

Reads the BFCL data that the ``bfcl-eval`` wheel ships (``bfcl_eval/data/BFCL_v4_*.json`` with
``possible_answer/``; Apache-2.0, https://github.com/ShishirPatil/gorilla); get it with
``pip download --no-deps bfcl-eval==2026.3.23`` and pass the wheel, or the folder it unpacks to.

Per sample (a fixed-seed choice from the simple, multiple, parallel and parallel-multiple categories, live
and not, every sample with a non-ASCII question among them): the functions as BFCL itself sends them to an
OpenAI-compatible server (``convert_to_tool`` for open models: ``.`` in names as ``_``, its types mapped by
``GORILLA_TO_OPENAPI``, ``format: float`` on floats), and one call per ground-truth call with the first
acceptable value of each parameter (a non-ASCII one preferred: the user's own language), its arguments
written as a model writes JSON: spaced, compact or indented, now and then with non-ASCII escaped; an
integer as ``5``, ``5.0``, ``"5"`` or ``1e3``; a float as ``2.5``, ``5.0``, ``5`` or ``2.5e-1``; an optional
parameter left out or sent as ``null``. The ids are made from this text by the tests (the real Kimi K2.5
tokenizer, Kimi's output layout: ``tests/vllm_support/cases.py``).

    .venv/bin/python scripts/make_bfcl_heldout.py --bfcl bfcl_eval-2026.3.23-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "heldout" / "bfcl_kimi_k25.jsonl"
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
              "live_parallel", "live_parallel_multiple")
PER_CATEGORY = {"simple_python": 22, "multiple": 14, "parallel": 12, "parallel_multiple": 10, "live_simple": 22,
                "live_multiple": 24, "live_parallel": 6, "live_parallel_multiple": 6}
# bfcl_eval/constants/type_mappings.py
GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "dict": "object", "object": "object", "tuple": "array",
    "any": "string", "byte": "integer", "short": "integer", "long": "integer", "double": "number", "char": "string",
    "ArrayList": "array", "Array": "array", "HashMap": "object", "Hashtable": "object", "Queue": "array",
    "Stack": "array", "Any": "string", "String": "string", "Bigint": "integer",
}
NON_ASCII = re.compile(r"[^\x00-\x7f]")


def read_bfcl(source: Path, category: str) -> tuple[list[dict], dict[str, dict]]:
    names = (f"bfcl_eval/data/BFCL_v4_{category}.json", f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")
    if source.is_file():
        with zipfile.ZipFile(source) as wheel:
            texts = [wheel.read(n).decode() for n in names]
    else:
        texts = [(source / n).read_text(encoding="utf-8") for n in names]
    questions = [json.loads(line) for line in texts[0].splitlines() if line.strip()]
    answers = {a["id"]: a for a in (json.loads(line) for line in texts[1].splitlines() if line.strip())}
    return questions, answers


def _cast(properties: dict) -> dict:
    """bfcl_eval.model_handler.utils._cast_to_openai_type."""
    for key, value in properties.items():
        if "type" not in value:
            value["type"] = "string"
        else:
            if value["type"] == "float":
                value["format"] = "float"
                value["description"] = value.get("description", "") + " This is a float type value."
            value["type"] = GORILLA_TO_OPENAPI.get(value["type"], "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = GORILLA_TO_OPENAPI[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast(items["properties"])
    return properties


def openai_tools(functions: list[dict]) -> list[dict]:
    """bfcl_eval.model_handler.utils.convert_to_tool(..., GORILLA_TO_OPENAPI, ModelStyle.OSSMODEL)."""
    tools = []
    for function in copy.deepcopy(functions):
        function["name"] = function["name"].replace(".", "_")
        function["parameters"]["type"] = "object"
        function["parameters"]["properties"] = _cast(function["parameters"]["properties"])
        tools.append({"type": "function", "function": _undescribed(function)})
    return tools


def _undescribed(schema):
    """The schema without its ``description`` texts (no parser reads them; they are most of BFCL's bytes)."""
    if isinstance(schema, dict):
        return {k: _undescribed(v) for k, v in schema.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_undescribed(v) for v in schema]
    return schema


def _chosen(options: list):
    """The value a model writes: a non-ASCII option first (the user's language), else the first; options
    written with literal ``\\uXXXX`` stand for those characters. ``""`` alone: the parameter left out."""
    def decoded(v):
        return json.loads(f'"{v}"') if isinstance(v, str) and "\\u" in v else v

    values = [decoded(v) for v in options if v != ""]
    if not values:
        return None, False
    for v in values:
        if NON_ASCII.search(json.dumps(v, ensure_ascii=False)):
            return v, True
    return values[0], True


class Writer:
    """Writes one call's arguments as a model might: a style per call (separators, indentation, escaping)
    and a spelling per number."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.indent = 2 if rng.random() < 0.12 else None
        self.item_sep, self.key_sep = (",", ":") if rng.random() < 0.25 else (", ", ": ")
        self.ascii = rng.random() < 0.3

    def value(self, v, schema: dict | None, depth: int = 0) -> str:
        kind = (schema or {}).get("type")
        if v is None or isinstance(v, bool):
            return json.dumps(v)
        if isinstance(v, int):
            return self.integer(v, kind)
        if isinstance(v, float):
            return self.floating(v, kind)
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=self.ascii)
        if isinstance(v, list):
            items = (schema or {}).get("items")
            return self.container("[", "]", [self.value(x, items, depth + 1) for x in v], depth)
        if isinstance(v, dict):
            props = (schema or {}).get("properties") or {}
            parts = [json.dumps(k, ensure_ascii=self.ascii) + self.key_sep + self.value(x, props.get(k), depth + 1)
                     for k, x in v.items()]
            return self.container("{", "}", parts, depth)
        return json.dumps(v, ensure_ascii=self.ascii)

    def container(self, open_: str, close: str, parts: list[str], depth: int) -> str:
        if not parts:
            return open_ + close
        if self.indent is None:
            return open_ + self.item_sep.join(parts) + close
        pad, inner = " " * (self.indent * depth), " " * (self.indent * (depth + 1))
        return open_ + "\n" + ",\n".join(inner + p for p in parts) + "\n" + pad + close

    def integer(self, v: int, kind) -> str:
        r = self.rng.random()
        exponent = _exponent(v)
        if kind == "number":  # a float parameter holding a whole number
            if r < 0.45:
                return f"{v}.0"
            if r < 0.65 and exponent:
                return exponent
            return str(v)
        if r < 0.12:
            return f"{v}.0"
        if r < 0.22:
            return f'"{v}"'
        if r < 0.3 and exponent and abs(v) >= 100:
            return exponent
        return str(v)

    def floating(self, v: float, kind) -> str:
        r = self.rng.random()
        if v.is_integer():
            if r < 0.25:
                return str(int(v))
            return _exponent(int(v)) if r < 0.35 and _exponent(int(v)) else repr(v)
        if r < 0.2:
            mantissa, exp = f"{v:.6e}".split("e")
            return mantissa.rstrip("0").rstrip(".") + "e" + str(int(exp))
        if r < 0.25 and kind != "string":
            return f'"{v!r}"'
        return repr(v)


def _exponent(v: int) -> str | None:
    """``1000`` -> ``1e3``: a whole number written with an exponent (None when it has no trailing zeros)."""
    if v == 0 or v % 10:
        return None
    digits = str(abs(v)).rstrip("0")
    return ("-" if v < 0 else "") + digits + "e" + str(len(str(abs(v))) - len(digits))


def arguments(call_values: dict, schema: dict, writer: Writer) -> str:
    props = schema.get("properties") or {}
    values = {}
    for key, options in call_values.items():
        value, present = _chosen(options)
        optional = "" in options or key not in schema.get("required", ())
        if optional and writer.rng.random() < 0.2:
            values[key] = None  # an optional parameter sent as null
        elif present:
            values[key] = value
    return writer.value(values, {"properties": props})


def sample(question: dict, answer: dict, rng: random.Random) -> dict:
    tools = openai_tools(question["function"])
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    calls = []
    for gt in answer["ground_truth"]:
        (name, values), = gt.items()
        name = name.replace(".", "_")
        calls.append([name, arguments(values, by_name[name], Writer(rng))])
    user = next(m["content"] for m in reversed(question["question"][-1]) if m["role"] == "user")
    names = ", ".join(dict.fromkeys(n for n, _ in calls))
    reasoning = f"The user asks: {user[:90].strip()} I'll call {names}."
    content = rng.choice(("", "", "", "Let me look that up.", "\n"))
    return {"id": question["id"], "tools": tools, "reasoning": reasoning, "content": content, "calls": calls}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bfcl", type=Path, required=True, help="the bfcl-eval wheel, or the folder it unpacks to")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rng = random.Random(3312533)
    out = []
    for category in CATEGORIES:
        questions, answers = read_bfcl(args.bfcl, category)
        usable = [q for q in questions if q["id"] in answers and answers[q["id"]]["ground_truth"]]
        foreign = [q for q in usable if NON_ASCII.search(json.dumps(q["question"], ensure_ascii=False))]
        rest = [q for q in usable if q not in foreign]
        picked = foreign + rng.sample(rest, max(0, PER_CATEGORY[category] - len(foreign)))
        out += [sample(q, answers[q["id"]], rng) for q in sorted(picked, key=lambda q: usable.index(q))]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for s in out:
            f.write(json.dumps(s, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{len(out)} samples, {sum(len(s['calls']) for s in out)} calls in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
