"""SGLang 0.5.23's ``kimi_k2`` parsers, restated (``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2``).

Reasoning (``sglang/srt/parser/reasoning_parser.py``, non-streaming, forced reasoning: K2.5's template
opens ``<think>`` in the prompt): leading ``<think>`` dropped; the reasoning ends at the first
``</think>``, or with none at the tool-call section marker (kept in the rest), or with neither (cut)
runs to the end; whitespace around ``</think>`` is kept. Tool calls (``kimik2_detector.py``): the
detector's regex (whitespace around the id and arguments dropped, arguments otherwise verbatim, calls
that do not match dropped, text between calls dropped); content is the text before the tool-call
section; the call's name comes from an id shaped ``[functions.]NAME:INDEX`` (a bare counter needs the
request's tool list to guess the name; views have none and drop it). ``tests/test_sglang_differential.py``
runs sglang's own parsers on the same ids.
"""

from __future__ import annotations

import re

__all__ = ["KimiK2Reasoning", "KimiK2Tools"]

_TOOL_CALL_ID = re.compile(r"^(?:functions\.)?(?P<name>[\w.\-]+):(?P<index>\d+)$")


class KimiK2Reasoning:
    __slots__ = ("think_start", "think_end", "tools_begin")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.think_start = t.get("prompt.think_begin", "<think>")
        self.think_end = t["think_end"]
        self.tools_begin = t.get("tool_calls_begin")

    def __call__(self, text: str) -> tuple[str, str]:
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


class KimiK2Tools:
    __slots__ = ("tools_begin", "call_regex")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.tools_begin = t["tool_calls_begin"]
        call, arg, end = (re.escape(t[r]) for r in ("tool_call_begin", "tool_call_argument_begin", "tool_call_end"))
        self.call_regex = re.compile(
            rf"{call}\s*(?P<tool_call_id>[^\s<|]+)\s*{arg}\s*(?P<function_arguments>\{{.*?\}})\s*{end}", re.DOTALL
        )

    def __call__(self, text: str) -> tuple[str, list[tuple[str, str, None]]]:
        section = text.find(self.tools_begin)
        if section < 0:
            return text, []
        calls = []
        for call_id, arguments in self.call_regex.findall(text):
            m = _TOOL_CALL_ID.match(call_id)
            if m is not None:
                calls.append((m.group("name"), arguments, None))
        return text[:section], calls
