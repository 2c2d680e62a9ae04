"""SGLang 0.5.23's ``qwen3_coder`` tool-call parser, restated (``Qwen3CoderDetector.detect_and_parse``,
with ``get_schema_properties`` / ``infer_type_from_json_schema`` from ``function_call/utils.py``, and
serving_chat, non-streaming; no reasoning parser).

With ``<tool_call>`` in the text (serving_chat: only when the request declares tools and
``tool_choice`` is not ``none``), each ``<tool_call>(.*?)</tool_call>`` body (or, with none closed but
``<function=`` in the text, the whole text) is searched for ``<function=(.*?)</function>`` (or an
unclosed ``<function=(.*)$``); a body without ``>`` is skipped; the name runs to the first ``>``. Its
parameters are each ``<parameter=`` up to ``</parameter>``, the next ``<parameter=``, ``</function>`` or
the end; the key runs to the first ``>`` (none: skipped), one leading and one trailing newline of the
value are dropped. Each value is converted by the type the called tool's schema gives its key
(``_convert_param_value``): ``null`` (any case) is null; a key the schema does not declare, or a string
type, stays a string; integers ``int()``; numbers ``float()`` (an integral one without ``.`` or ``e``
sent as an int); booleans ``== "true"`` after lower-casing (anything else false); objects and arrays
``json.loads``, else ``ast.literal_eval``, else the string. Calls are not checked against the declared
names. The arguments are ``json.dumps(..., ensure_ascii=False)``; the content is the text before the
first ``<tool_call>`` (or ``<function=``), unstripped, "" when that is at the start. Any exception returns
the whole text as content, no calls.

``tests/test_sglang_differential_families.py`` and ``test_sglang_differential_requests.py`` run sglang's own detector on the same ids.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Mapping
from typing import Any

from .registry import register
from .request import ASSUMED, NONE
from .sglang_kimi import schema_properties  # sglang's one get_schema_properties (function_call/utils.py)

__all__ = ["Qwen3CoderTools", "schema_properties", "infer_type"]

_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FUNCTION = re.compile(r"<function=(.*?)</function>|<function=(.*)$", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.DOTALL)


_ENUM_TYPES = ((type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"))


def _union(schemas) -> str | None:
    types = [t for t in map(infer_type, schemas) if t]
    if not types:
        return None
    if len(set(types)) == 1:
        return types[0]
    if len(set(types)) == 2 and "null" in types:
        return next(t for t in types if t != "null")
    return "string" if "string" in types else types[0]


def infer_type(schema: Any) -> Any:
    """``infer_type_from_json_schema``: a parameter's primary type, or None."""
    if not isinstance(schema, dict):
        return None
    if "type" in schema:
        declared = schema["type"]
        if isinstance(declared, str):
            return declared
        if isinstance(declared, list) and declared:
            return next((t for t in declared if t != "null"), "string")
    if "anyOf" in schema or "oneOf" in schema:
        branches = schema.get("anyOf") or schema.get("oneOf")
        found = _union(branches) if isinstance(branches, list) else None
        if found:
            return found
    if isinstance(schema.get("enum"), list):
        if not schema["enum"]:
            return "string"
        kinds = {next((n for k, n in _ENUM_TYPES if isinstance(v, k)), None) for v in schema["enum"]} - {None}
        return kinds.pop() if len(kinds) == 1 else "string"
    if isinstance(schema.get("allOf"), list):
        return next((t for t in map(infer_type, schema["allOf"]) if t and t != "string"), "string")
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return None


def _config(request, name: str) -> Mapping:
    """``_get_arguments_config``: the called tool's properties (its whole parameters without any)."""
    if request.tools is None:
        return {}
    for tool_name, params in request.functions():
        if tool_name == name:
            if isinstance(params, dict):
                props = schema_properties(params)
                return props if props or "properties" in params else params
            return {}
    return {}


def _literal(value: str) -> Any:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SyntaxWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        return ast.literal_eval(value)


def convert(value: str, key: str, config: Mapping) -> Any:
    """``_convert_param_value``."""
    if value.lower() == "null":
        return None
    if key not in config:
        return value
    kind = infer_type(config[key])
    kind = "string" if kind is None else str(kind).strip().lower()
    if kind in ("string", "str", "text", "varchar", "char", "enum"):
        return value
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(value)
        except Exception:  # noqa: BLE001
            return value
    if kind.startswith(("num", "float")):
        try:
            whole = not ("." in value or "e" in value.lower())
            number = float(value)
            return int(number) if whole and number.is_integer() else number
        except Exception:  # noqa: BLE001
            return value
    if kind in ("boolean", "bool", "binary"):
        return value.lower() == "true"
    if kind in ("object", "array", "arr") or kind.startswith(("dict", "list")):
        try:
            return json.loads(value)
        except Exception:  # noqa: BLE001
            pass
    try:
        return _literal(value)
    except Exception:  # noqa: BLE001
        return value


def _calls(text: str, request) -> list[tuple[str, str, None]]:
    bodies = _CALL.findall(text)
    if not bodies and "<function=" in text:
        bodies = [text]
    calls = []
    for body in bodies:
        for closed, unclosed in _FUNCTION.findall(body):
            function = closed or unclosed
            if ">" not in function:
                continue
            name, params = function[: function.index(">")], function[function.index(">") + 1 :]
            config = _config(request, name)
            parsed: dict = {}
            for match in _PARAMETER.findall(params):
                if ">" not in match:
                    continue
                key, value = match[: match.index(">")], match[match.index(">") + 1 :]
                value = value[1:] if value.startswith("\n") else value
                value = value[:-1] if value.endswith("\n") else value
                parsed[key] = convert(value, key, config)
            calls.append((name, json.dumps(parsed, ensure_ascii=False), None))
    return calls


@register("sglang", "tool", "qwen3_coder")
class Qwen3CoderTools:
    __slots__ = ("begin",)

    def __init__(self, profile, view=None, tokenizer=None):
        self.begin = profile.texts["tool_call_begin"]

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        if request.choice == NONE or self.begin not in text:
            return text, []
        try:
            calls = _calls(text, request)
        except Exception:  # noqa: BLE001 - SGLang logs it and returns the text as content
            return text, []
        start = text.find(self.begin)
        return (text[:start] if start > 0 else ""), calls
