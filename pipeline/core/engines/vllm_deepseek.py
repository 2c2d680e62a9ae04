"""vLLM's ``deepseek_v3`` tool-call parser (0.32.0, and 0.33.0 where said), restated (``tool_parsers/deepseekv3_tool_parser.py``).

With ``<｜tool▁calls▁begin｜>`` in the text, each match of
``<｜tool▁call▁begin｜>(TYPE.*)<｜tool▁sep｜>(NAME.*)\\n```json\\n(ARGS.*)\\n```<｜tool▁call▁end｜>`` is a call,
name and arguments verbatim; the regex does not cross lines (no DOTALL), so a call whose arguments
span lines is lost; a call whose type is not ``function`` fails validation and makes the whole text
content, no calls. The content is the text before ``<｜tool▁calls▁begin｜>``, unstripped, null when empty
(also when no call matched). The request keeps ``skip_special_tokens`` on; the tool markers are not
special tokens of the class, so they stay in the text. With ``tool_choice`` ``none`` (or no tools declared)
the parser is not run. No schema correction. vLLM 0.33 (``release(view.version)``): the arguments may span
lines (``[\\s\\S]*?``), and the text after the last ``<｜tool▁calls▁end｜>`` is appended to the content.
"""

from __future__ import annotations

import re

from .request import ASSUMED, NONE
from .registry import register
from .view import release

__all__ = ["DeepSeekV3Tools"]


@register("vllm", "tool", "deepseek_v3")
class DeepSeekV3Tools:
    __slots__ = ("begin", "end", "regex", "after")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.begin, self.end = t["tool_calls_begin"], t["tool_calls_end"]
        b, s, e = re.escape(t["tool_call_begin"]), re.escape(t["tool_sep"]), re.escape(t["tool_call_end"])
        newer = view is not None and release(view.version) >= (0, 33)
        args = r"[\s\S]*?" if newer else ".*"  # 0.33: arguments may span lines
        self.regex = re.compile(f"{b}(?P<type>.*){s}(?P<function_name>.*)\n```json\n(?P<function_arguments>{args})\n```{e}")
        self.after = newer  # 0.33: the text after the last calls-end marker is content too

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        if text is None or self.begin not in text or request.choice == NONE:  # DelegatingParser passes the content on unchanged (null stays null)
            return text, []
        calls = []
        for kind, name, arguments in self.regex.findall(text):
            if kind != "function":  # ToolCall(type=...) accepts only "function": hermes-style fallback
                return text, []
            calls.append((name, arguments, None))
        content = text[: text.find(self.begin)]
        end = text.rfind(self.end) if self.after else -1
        if end != -1:
            content += text[end + len(self.end) :]
        return (content if content.strip() else None), calls  # DelegatingParser: whitespace-only content is null
