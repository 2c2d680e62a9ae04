"""SGLang 0.5.23's ``kimi_k2`` parsers, restated (``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2``).

Reasoning (``sglang/srt/parser/reasoning_parser.py``, non-streaming, forced reasoning: K2.5's template
opens ``<think>`` in the prompt): leading ``<think>`` dropped; the reasoning ends at the first
``</think>``, or with none at the tool-call section marker (kept in the rest), or with neither (cut)
runs to the end; whitespace around ``</think>`` is kept. Tool calls (``kimik2_detector.py``): the
detector's regex (whitespace around the id and arguments dropped, arguments otherwise verbatim, calls
that do not match dropped, text between calls dropped); content is the text before the tool-call
section; the call's name comes from an id shaped ``[functions.]NAME:INDEX``; a bare counter (``7``) is
named from the request's tools (``_infer_tool_name``): the only tool when there is one, else the tool
whose schema's properties best match the argument keys (overlap minus extra keys, first best), none
without tools or with arguments that are not a JSON object (the call is dropped). serving_chat runs
the tool parser only when the request declares tools and ``tool_choice`` is not ``none``.
``tests/test_sglang_differential.py`` runs sglang's own parsers on the same ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from .request import ASSUMED, NONE
from .registry import register

__all__ = ["KimiK2Reasoning", "KimiK2Tools"]

_TOOL_CALL_ID = re.compile(r"^(?:functions\.)?(?P<name>[\w.\-]+):(?P<index>\d+)$")
_COUNTER = re.compile(r"^\d+$")


def schema_properties(schema) -> dict:
    """sglang's ``get_schema_properties`` (``function_call/utils.py``, which its Kimi and Qwen3-Coder detectors
    share): top-level ``properties``, else merged from anyOf/oneOf/allOf."""
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        return properties
    merged: dict = {}
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                for key, value in schema_properties(branch).items():
                    merged.setdefault(key, value)
    return merged


def infer_tool_name(request, arguments: str) -> str | None:
    """``KimiK2Detector._infer_tool_name``: the tool a bare-counter call is taken to call."""
    tools = request.functions()
    if not tools:
        return None
    if len(tools) == 1:
        return tools[0][0]
    if not arguments:
        return None
    try:
        keys = set(json.loads(arguments).keys())
    except (ValueError, TypeError, AttributeError):
        return None
    best, best_score = None, -1
    for name, parameters in tools:
        props = set(schema_properties(parameters or {}).keys())
        if not props:
            continue
        score = len(keys & props) - len(keys - props)
        if score > best_score:
            best, best_score = name, score
    return best


@register("sglang", "reasoning", "kimi_k2")
class KimiK2Reasoning:
    __slots__ = ("think_start", "think_end", "tools_begin")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.think_start = t.get("prompt.think_begin", "<think>")
        self.think_end = t["think_end"]
        self.tools_begin = t.get("tool_calls_begin")

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, str]:
        start = self.think_start
        while text.startswith(start):
            text = text[len(start) :]
        i = text.find(self.think_end)
        if i >= 0:
            return text[:i], text[i + len(self.think_end) :]
        if self.tools_begin:
            j = text.find(self.tools_begin)
            if j >= 0:  # the tool-call section also ends reasoning; its marker stays in the rest
                return text[:j], text[j:]
        return text, ""  # cut while reasoning


@register("sglang", "tool", "kimi_k2")
class KimiK2Tools:
    __slots__ = ("tools_begin", "call_regex")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.tools_begin = t["tool_calls_begin"]
        call, arg, end = (re.escape(t[r]) for r in ("tool_call_begin", "tool_call_argument_begin", "tool_call_end"))
        self.call_regex = re.compile(
            rf"{call}\s*(?P<tool_call_id>[^\s<|]+)\s*{arg}\s*(?P<function_arguments>\{{.*?\}})\s*{end}", re.DOTALL
        )

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        section = text.find(self.tools_begin)
        if section < 0 or request.choice == NONE:
            return text, []
        calls = []
        for call_id, arguments in self.call_regex.findall(text):
            m = _TOOL_CALL_ID.match(call_id)
            if m is not None:
                calls.append((m.group("name"), arguments, None))
            elif _COUNTER.match(call_id) and (name := infer_tool_name(request, arguments)):
                calls.append((name, arguments, None))
        return text[:section], calls
