"""DeepSeek-V3: its profile, and its `sglang` view: SGLang 0.5.23 with ``--tool-call-parser deepseekv3``
(no reasoning parser; this tokenizer has no think tokens).

The model writes (``../shared/tokenizers/deepseek-v3/tokenizer_config.json``'s chat template, and the
format SGLang's ``DeepSeekV3Detector`` documents):

    {content}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{ARGS}\\n```<｜tool▁call▁end｜>
    \\n<｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache

from .spec import ProfileSpec, ToolCallFormat

__all__ = ["SPECS", "parse_sglang"]


@lru_cache(maxsize=8)
def _regexes(call_begin: str, call_end: str, sep: str) -> tuple[re.Pattern, re.Pattern]:
    b, e, s = re.escape(call_begin), re.escape(call_end), re.escape(sep)
    return re.compile(f"{b}.*?{e}", re.DOTALL), re.compile(f"{b}(.*){s}(.*)\n```json\n(.*)\n```{e}", re.DOTALL)


def parse_sglang(text: str, texts: Mapping[str, str]) -> tuple[None, str, list[tuple[str, str]]]:
    """SGLang 0.5.23's ``DeepSeekV3Detector.detect_and_parse`` and serving_chat, non-streaming:
    (None, content, [(name, arguments)]).

    With ``<｜tool▁calls▁begin｜>`` in the text, content is the text before it, ``.strip()``ped; each
    ``<｜tool▁call▁begin｜>.*?<｜tool▁call▁end｜>`` is matched against
    ``<｜tool▁call▁begin｜>(.*)<｜tool▁sep｜>(.*)\\n```json\\n(.*)\\n```<｜tool▁call▁end｜>``; the name is group 2
    (it must be a declared tool: the view assumes every name the model calls was declared), the
    arguments group 3, ``json.loads``ed and re-serialised ``json.dumps(args or {}, ensure_ascii=False)``.
    Any call that does not match or is not JSON makes SGLang return the whole text as content, no calls."""
    bot = texts["tool_calls_begin"]
    idx = text.find(bot)
    if idx < 0:
        return None, text, []
    find_calls, detail = _regexes(texts["tool_call_begin"], texts["tool_call_end"], texts["tool_sep"])
    calls: list[tuple[str, str]] = []
    for match in find_calls.findall(text):
        m = detail.search(match)
        if m is None:
            return None, text, []
        try:
            arguments = json.loads(m.group(3))
        except ValueError:
            return None, text, []
        name = m.group(2)
        if name:
            calls.append((name, json.dumps(arguments or {}, ensure_ascii=False)))
    return None, text[:idx].strip(), calls


SPECS = (
    ProfileSpec(
        name="deepseek-v3",
        default_tokenizer="deepseek-ai/DeepSeek-V3",
        markers={
            "tool_calls_begin": "<｜tool▁calls▁begin｜>",
            "tool_calls_end": "<｜tool▁calls▁end｜>",
            "tool_call_begin": "<｜tool▁call▁begin｜>",
            "tool_sep": "<｜tool▁sep｜>",
            "tool_call_end": "<｜tool▁call▁end｜>",
            "stop": "<｜end▁of▁sentence｜>",
        },
        prompt_markers={"bos": "<｜begin▁of▁sentence｜>", "user": "<｜User｜>", "assistant": "<｜Assistant｜>"},
        tool_calls=ToolCallFormat(
            call=("@tool_call_begin", "function", "@tool_sep", "$name", "\n```json\n", "$arguments", "\n```", "@tool_call_end"),
            separator="\n",
            strips_content=True,
            head_end="tool_sep",
        ),
        parse_text=parse_sglang,
        description="DeepSeek-V3: content, <｜tool▁calls▁begin｜> calls with JSON code-block arguments "
        "<｜tool▁calls▁end｜>, <｜end▁of▁sentence｜>; no thinking.",
    ),
)
