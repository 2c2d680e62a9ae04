"""The tinychat server's tool-call parser, restated: registered under the server's own name with
tokfidelity's decorator, so a view declaring ``--tool-call-parser tinychat`` finds it.

It reads the decoded text as the server does: the content is what comes before the first
``<tool_call>``, ``.strip()``ped; each ``<tool_call>...</tool_call>`` block holding a JSON object with
a declared ``name`` is a call, its ``arguments`` re-serialised with ``json.dumps``; a request with
``tool_choice`` "none" gets no parsing at all.
"""

from __future__ import annotations

import json
import re

from pipeline.core.engines.registry import register
from pipeline.core.engines.request import ASSUMED, NONE


@register("sglang", "tool", "tinychat")
class TinychatTools:
    def __init__(self, profile, view=None, tokenizer=None):
        self.begin, end = profile.texts["tool_call_begin"], profile.texts["tool_call_end"]
        self.block = re.compile(re.escape(self.begin) + r"(.*?)" + re.escape(end), re.DOTALL)

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        if request.choice == NONE or self.begin not in text:
            return text, []
        at = text.index(self.begin)
        calls = []
        for body in self.block.findall(text, at):
            try:
                obj = json.loads(body)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("name"), str) and request.declares(obj["name"]):
                calls.append((obj["name"], json.dumps(obj.get("arguments", {}), ensure_ascii=False), None))
        return text[:at].strip(), calls
