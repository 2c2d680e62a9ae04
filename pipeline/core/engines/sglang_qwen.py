"""SGLang 0.5.23 serving Qwen3, restated: ``--reasoning-parser qwen3 --tool-call-parser qwen25``.

* Reasoning (``Qwen3Detector``): in reasoning when forced (the request's thinking flag) or when the
  text holds ``<think>`` anywhere. The output opens ``<think>`` itself exactly when thinking is on, so
  "forced" is taken to be "the output starts with <think>", which the second test already covers:
  without ``<think>`` in the text everything is content. Leading ``<think>`` tags are dropped; the
  reasoning ends at the first ``</think>``, else at the first ``<tool_call>`` (kept in the rest), else
  runs to the end (cut). Whitespace is kept verbatim.
* Tool calls (``Qwen25Detector.detect_and_parse``, then serving_chat): with ``<tool_call>\\n`` in the
  text, content is the text before it, ``.strip()``ped; each ``<tool_call>\\n(.*?)\\n</tool_call>`` body
  is ``json.loads``ed (bodies that are not JSON are dropped; a list is several calls); a call's name
  must be one the request declares (other calls are dropped); its arguments are re-serialised ``json.dumps(..., ensure_ascii=False)``. A body that is JSON but not an object
  raises inside SGLang, which then returns the whole text as content and no calls. serving_chat
  runs the tool parser only when the request declares tools and ``tool_choice`` is not ``none``.

``tests/test_sglang_differential_families.py`` runs sglang's own detectors on the same ids.
"""

from __future__ import annotations

import json
import re

from .request import ASSUMED, NONE
from .registry import register

__all__ = ["Qwen3Reasoning", "Qwen25Tools"]


@register("sglang", "reasoning", "qwen3")
class Qwen3Reasoning:
    __slots__ = ("think_begin", "think_end", "call_begin")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.think_begin, self.think_end, self.call_begin = t["think_begin"], t["think_end"], t["tool_call_begin"]

    def __call__(self, text: str, request=ASSUMED) -> tuple[str | None, str]:
        if self.think_begin not in text:
            return None, text
        while text.startswith(self.think_begin):
            text = text[len(self.think_begin) :]
        i = text.find(self.think_end)
        if i >= 0:
            return text[:i], text[i + len(self.think_end) :]
        j = text.find(self.call_begin)
        return (text[:j], text[j:]) if j >= 0 else (text, "")


@register("sglang", "tool", "qwen25")
class Qwen25Tools:
    __slots__ = ("bot", "body")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.bot = t["tool_call_begin"] + "\n"
        self.body = re.compile(re.escape(self.bot) + "(.*?)" + re.escape("\n" + t["tool_call_end"]), re.DOTALL)

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        idx = text.find(self.bot)
        if idx < 0 or request.choice == NONE:
            return text, []
        calls: list[tuple[str, str, None]] = []
        for body in self.body.findall(text):
            try:
                parsed = json.loads(body.strip())
            except json.JSONDecodeError:
                continue
            for act in parsed if isinstance(parsed, list) else [parsed]:
                if not isinstance(act, dict):  # act.get raises: SGLang's catch-all returns the text unparsed
                    return text, []
                name = act.get("name")
                if name and isinstance(name, (list, dict)):  # unhashable: `name in tool_indices` raises
                    return text, []
                if not (name and isinstance(name, str)) or not request.declares(name):
                    continue
                arguments = act.get("parameters") or act.get("arguments", {})
                calls.append((name, json.dumps(arguments, ensure_ascii=False), None))
        return text[:idx].strip(), calls
