"""vLLM serving DeepSeek-V3.1 (0.32.0, and 0.33.0 where said), restated: ``--reasoning-parser deepseek_v3
--tool-call-parser deepseek_v31`` (``reasoning/deepseek_v3_reasoning_parser.py``,
``tool_parsers/deepseekv31_tool_parser.py``).

* Reasoning (``DeepSeekV3ReasoningParser``): with the request's ``thinking`` or ``enable_thinking`` template
  variable true, ``DeepSeekR1ReasoningParser`` (``BaseThinkingReasoningParser.extract_reasoning``): the text
  after the first ``<think>`` if any; without ``</think>`` all of it is reasoning and there is no content;
  else the reasoning is the text before the first ``</think>`` and the content the rest (null when empty).
  Otherwise ``IdentityReasoningParser``: no reasoning, the text is the content. A request not known
  (``ASSUMED``) is taken to have asked for thinking exactly when the text holds ``</think>``.
* Tool calls (``DeepSeekV31ToolParser.extract_tool_calls``): with ``<｜tool▁calls▁begin｜>`` in the text, each
  match of ``<｜tool▁call▁begin｜>(NAME.*?)<｜tool▁sep｜>(ARGS.*?)<｜tool▁call▁end｜>`` is a call, name and
  arguments verbatim (no JSON check, no schema coercion); the regex does not cross lines, so a call whose
  arguments span lines is lost (vLLM 0.33: the arguments may span lines, ``[\\s\\S]*?``). The content is the
  text before ``<｜tool▁calls▁begin｜>``, unstripped, null when only whitespace (``DelegatingParser``). The
  tool markers and ``</think>`` are not special tokens of the class, so ``skip_special_tokens`` (left on)
  keeps them. With ``tool_choice`` ``none`` (or no tools declared) the parser is not run.
"""

from __future__ import annotations

import re

from .registry import register
from .request import ASSUMED, NONE
from .view import release

__all__ = ["DeepSeekV3Reasoning", "DeepSeekV31Tools"]


def thinking_requested(request, text: str, think_end: str) -> bool:
    """``DeepSeekV3ReasoningParser``'s switch: ``thinking`` or ``enable_thinking`` true in the template
    variables; for a request not known, whether the text closes a think block."""
    if request is ASSUMED:
        return think_end in text
    kwargs = request.chat_template_kwargs or {}
    return bool(kwargs.get("thinking", False)) or bool(kwargs.get("enable_thinking", False))


@register("vllm", "reasoning", "deepseek_v3")
class DeepSeekV3Reasoning:
    __slots__ = ("think_begin", "think_end")

    def __init__(self, profile, view=None, tokenizer=None):
        self.think_begin = profile.spec.prompt_markers.get("think_begin", "<think>")
        self.think_end = profile.texts["think_end"]

    def __call__(self, text: str, request=ASSUMED) -> tuple[str | None, str | None]:
        if not thinking_requested(request, text, self.think_end):
            return None, text
        before, opened, after = text.partition(self.think_begin)
        text = after if opened else before
        if self.think_end not in text:
            return text, None
        reasoning, _, content = text.partition(self.think_end)
        return reasoning, content or None


@register("vllm", "tool", "deepseek_v31")
class DeepSeekV31Tools:
    __slots__ = ("begin", "regex")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.begin = t["tool_calls_begin"]
        b, s, e = re.escape(t["tool_call_begin"]), re.escape(t["tool_sep"]), re.escape(t["tool_call_end"])
        args = r"[\s\S]*?" if view is not None and release(view.version) >= (0, 33) else ".*?"
        self.regex = re.compile(f"{b}(.*?){s}({args}){e}")

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        if text is None or self.begin not in text or request.choice == NONE:
            return text, []
        calls = [(name, arguments, None) for name, arguments in self.regex.findall(text)]
        content = text[: text.find(self.begin)]
        return (content if content.strip() else None), calls
