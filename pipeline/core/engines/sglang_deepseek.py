"""SGLang 0.5.23's ``deepseekv3`` tool-call parser, restated (``DeepSeekV3Detector.detect_and_parse`` and
serving_chat, non-streaming; DeepSeek-V3 has no reasoning parser).

With ``<｜tool▁calls▁begin｜>`` in the text, content is the text before it, ``.strip()``ped; each
``<｜tool▁call▁begin｜>.*?<｜tool▁call▁end｜>`` is matched against
``<｜tool▁call▁begin｜>(.*)<｜tool▁sep｜>(.*)\\n```json\\n(.*)\\n```<｜tool▁call▁end｜>``; the name is group 2
(a call to a tool the request does not declare is dropped), the
arguments group 3, ``json.loads``ed and re-serialised ``json.dumps(args or {}, ensure_ascii=False)``.
Any call that does not match or is not JSON makes SGLang return the whole text as content, no calls.
serving_chat runs the tool parser only when the request declares tools and ``tool_choice`` is not ``none``.
``tests/test_sglang_differential_families.py`` runs sglang's own detector on the same ids.
"""

from __future__ import annotations

import json
import re

from .request import ASSUMED, NONE
from .registry import register

__all__ = ["DeepSeekV3Tools", "SectionTools"]


class SectionTools:
    """The mechanism SGLang's DeepSeek detectors share (``deepseekv3``, ``deepseekv31``): with the section marker
    in the text, content is the text before it, ``.strip()``ped; each ``call_begin.*?call_end`` is matched against
    the detector's ``detail`` pattern (named groups ``name`` and ``args``); the arguments are ``json.loads``ed and
    written again ``json.dumps(args or {}, ensure_ascii=False)``; a call to an undeclared tool is dropped; a call
    that does not match or is not JSON returns the whole text, no calls. A subclass gives ``detail_pattern``."""

    __slots__ = ("bot", "find_calls", "detail")

    @staticmethod
    def detail_pattern(begin: str, sep: str, end: str) -> str:
        raise NotImplementedError

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.bot = t["tool_calls_begin"]
        b, e, s = re.escape(t["tool_call_begin"]), re.escape(t["tool_call_end"]), re.escape(t["tool_sep"])
        self.find_calls = re.compile(f"{b}.*?{e}", re.DOTALL)
        self.detail = re.compile(self.detail_pattern(b, s, e), re.DOTALL)

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        idx = text.find(self.bot)
        if idx < 0 or request.choice == NONE:
            return text, []
        calls: list[tuple[str, str, None]] = []
        for match in self.find_calls.findall(text):
            m = self.detail.search(match)
            if m is None:
                return text, []
            try:
                arguments = json.loads(m.group("args"))
            except ValueError:
                return text, []
            name = m.group("name")
            if name and request.declares(name):
                calls.append((name, json.dumps(arguments or {}, ensure_ascii=False), None))
        return text[:idx].strip(), calls


@register("sglang", "tool", "deepseekv3")
class DeepSeekV3Tools(SectionTools):
    __slots__ = ()

    @staticmethod
    def detail_pattern(begin: str, sep: str, end: str) -> str:
        return f"{begin}(.*){sep}(?P<name>.*)\n```json\n(?P<args>.*)\n```{end}"
