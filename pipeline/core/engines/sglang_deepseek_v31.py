"""SGLang 0.5.23 serving DeepSeek-V3.1, restated: ``--reasoning-parser deepseek-v3 --tool-call-parser deepseekv31``
(``_DeepSeekV3Detector`` and ``DeepSeekV31Detector.detect_and_parse``, non-streaming, then serving_chat).

* Reasoning (``_DeepSeekV3Detector``, a ``Qwen3Detector`` whose ``reasoning_default`` is
  ``explicit_thinking``): serving_chat forces reasoning only when the request's ``chat_template_kwargs``
  set ``thinking`` to true (the prompt then ends ``<think>``); otherwise the text is reasoning only when it
  holds ``<think>`` somewhere. In reasoning, leading ``<think>`` tags are dropped and the reasoning ends at
  the first ``</think>``, else at the first literal ``<tool_call>`` (a Qwen3 marker this model never writes
  as one token, kept in the rest), else runs to the end (a cut). Whitespace is kept. A request not known
  (``ASSUMED``) is taken to have asked for thinking exactly when the text holds ``</think>``.
* Tool calls (``DeepSeekV31Detector``): with ``<｜tool▁calls▁begin｜>`` in the text, the content is the text
  before it, ``.strip()``ped; each ``<｜tool▁call▁begin｜>.*?<｜tool▁call▁end｜>`` (across lines) is matched against
  ``<｜tool▁call▁begin｜>(.*)<｜tool▁sep｜>(.*)<｜tool▁call▁end｜>``: the name is group 1 verbatim, the arguments
  group 2, ``json.loads``ed and written again ``json.dumps(args or {}, ensure_ascii=False)`` (compact JSON,
  ``1e3`` and ``5.0`` change; no schema coercion); a call to a tool the request does not declare is dropped
  (``parse_base_json``). Arguments that are not JSON make SGLang return the whole text as content, no calls.
  serving_chat runs the tool parser only when the request declares tools and ``tool_choice`` is not ``none``.

``tests/test_sglang_differential_families.py`` and ``test_sglang_differential_requests.py`` run sglang's own detectors on the same ids.
"""

from __future__ import annotations

from .registry import register
from .request import ASSUMED
from .sglang_deepseek import SectionTools

__all__ = ["DeepSeekV3Reasoning", "DeepSeekV31Tools"]

_QWEN_TOOL_START = "<tool_call>"  # Qwen3Detector's tool_start_token, inherited by _DeepSeekV3Detector


def thinking_requested(request, text: str, think_end: str) -> bool:
    """Whether the request asked for thinking (``chat_template_kwargs.thinking`` is true); for a request not
    known, whether the text closes a think block."""
    if request is ASSUMED:
        return think_end in text
    return (request.chat_template_kwargs or {}).get("thinking") is True


@register("sglang", "reasoning", "deepseek-v3")
class DeepSeekV3Reasoning:
    __slots__ = ("think_begin", "think_end")

    def __init__(self, profile, view=None, tokenizer=None):
        self.think_begin = profile.spec.prompt_markers.get("think_begin", "<think>")
        self.think_end = profile.texts["think_end"]

    def __call__(self, text: str, request=ASSUMED) -> tuple[str | None, str]:
        if not (thinking_requested(request, text, self.think_end) or self.think_begin in text):
            return None, text
        while text.startswith(self.think_begin):
            text = text[len(self.think_begin) :]
        i = text.find(self.think_end)
        if i >= 0:
            return text[:i], text[i + len(self.think_end) :]
        j = text.find(_QWEN_TOOL_START)
        return (text[:j], text[j:]) if j >= 0 else (text, "")


@register("sglang", "tool", "deepseekv31")
class DeepSeekV31Tools(SectionTools):
    __slots__ = ()

    @staticmethod
    def detail_pattern(begin: str, sep: str, end: str) -> str:
        return f"{begin}(?P<name>.*){sep}(?P<args>.*){end}"
