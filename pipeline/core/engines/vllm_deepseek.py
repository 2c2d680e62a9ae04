"""vLLM 0.32.0's ``deepseek_v3`` tool-call parser, restated (``tool_parsers/deepseekv3_tool_parser.py``).

With ``<｜tool▁calls▁begin｜>`` in the text, each match of
``<｜tool▁call▁begin｜>(TYPE.*)<｜tool▁sep｜>(NAME.*)\\n```json\\n(ARGS.*)\\n```<｜tool▁call▁end｜>`` is a call,
name and arguments verbatim; the regex does not cross lines (no DOTALL), so a call whose arguments
span lines is lost; a call whose type is not ``function`` fails validation and makes the whole text
content, no calls. The content is the text before ``<｜tool▁calls▁begin｜>``, unstripped, null when empty
(also when no call matched). The request keeps ``skip_special_tokens`` on; the tool markers are not
special tokens of the class, so they stay in the text. With ``tool_choice`` ``none`` (or no tools declared)
the parser is not run. No schema correction.
"""

from __future__ import annotations

import re

from .request import ASSUMED, NONE

__all__ = ["DeepSeekV3Tools"]


class DeepSeekV3Tools:
    __slots__ = ("begin", "regex")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.begin = t["tool_calls_begin"]
        b, s, e = re.escape(t["tool_call_begin"]), re.escape(t["tool_sep"]), re.escape(t["tool_call_end"])
        self.regex = re.compile(f"{b}(?P<type>.*){s}(?P<function_name>.*)\n```json\n(?P<function_arguments>.*)\n```{e}")

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        if text is None or self.begin not in text or request.choice == NONE:  # DelegatingParser passes the content on unchanged (null stays null)
            return text, []
        calls = []
        for kind, name, arguments in self.regex.findall(text):
            if kind != "function":  # ToolCall(type=...) accepts only "function": hermes-style fallback
                return text, []
            calls.append((name, arguments, None))
        content = text[: text.find(self.begin)]
        return (content if content.strip() else None), calls  # DelegatingParser: whitespace-only content is null
