"""Qwen3 (hybrid thinking): its profile, and its `sglang` view: SGLang 0.5.23 serving it with
``--reasoning-parser qwen3 --tool-call-parser qwen25``.

The model writes (``../shared/tokenizers/qwen3/tokenizer_config.json``'s chat template):

    <think>\\n{reasoning}\\n</think>\\n\\n{content}\\n<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>
    \\n<tool_call>\\n...\\n</tool_call><|im_end|>

(the "\\n" before the first call only after non-empty content, one "\\n" between calls). With
``enable_thinking=false`` the prompt ends ``<think>\\n\\n</think>\\n\\n`` and the output is content and
calls only. ``<think>``, ``</think>``, ``<tool_call>`` and ``</tool_call>`` are single ids; the engine stops
on ``<|im_end|>`` and ``<|endoftext|>`` (Qwen3's generation_config eos ids).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from .spec import ProfileSpec, ToolCallFormat

__all__ = ["SPECS", "parse_sglang"]


def parse_sglang(text: str, texts: Mapping[str, str]) -> tuple[str | None, str, list[tuple[str, str]]]:
    """SGLang 0.5.23's ``qwen3`` reasoning parser then its ``qwen25`` tool-call detector, non-streaming,
    on the decoded output text (stop token trimmed): (reasoning, content, [(name, arguments)]).

    * Reasoning (``Qwen3Detector``): in reasoning when forced (the request's thinking flag) or when the
      text holds ``<think>`` anywhere. The output opens ``<think>`` itself exactly when thinking is on, so
      "forced" is taken to be "the output starts with <think>", which the second test already covers:
      without ``<think>`` in the text everything is content. Leading ``<think>`` tags are dropped; the
      reasoning ends at the first ``</think>``, else at the first ``<tool_call>`` (kept in the rest), else
      runs to the end (cut). Whitespace is kept verbatim.
    * Tool calls (``Qwen25Detector.detect_and_parse``, then serving_chat): with ``<tool_call>\\n`` in the
      text, content is the text before it, ``.strip()``ped; each ``<tool_call>\\n(.*?)\\n</tool_call>`` body
      is ``json.loads``ed (bodies that are not JSON are dropped; a list is several calls); a call's name
      must be a declared tool (the view assumes every name the model calls was declared); its arguments
      are re-serialised ``json.dumps(..., ensure_ascii=False)``. A body that is JSON but not an object
      raises inside SGLang, which then returns the whole text as content and no calls."""
    think_begin, think_end, call_begin = texts["think_begin"], texts["think_end"], texts["tool_call_begin"]
    reasoning = None
    if think_begin in text:
        while text.startswith(think_begin):
            text = text[len(think_begin) :]
        i = text.find(think_end)
        if i >= 0:
            reasoning, text = text[:i], text[i + len(think_end) :]
        else:
            j = text.find(call_begin)
            reasoning, text = (text[:j], text[j:]) if j >= 0 else (text, "")

    bot, eot = call_begin + "\n", "\n" + texts["tool_call_end"]
    idx = text.find(bot)
    if idx < 0:
        return reasoning, text, []
    calls: list[tuple[str, str]] = []
    for body in re.findall(re.escape(bot) + "(.*?)" + re.escape(eot), text, re.DOTALL):
        try:
            parsed = json.loads(body.strip())
        except json.JSONDecodeError:
            continue
        for act in parsed if isinstance(parsed, list) else [parsed]:
            if not isinstance(act, dict):  # act.get raises: SGLang's catch-all returns the text unparsed
                return reasoning, text, []
            name = act.get("name")
            if name and isinstance(name, (list, dict)):  # unhashable: `name in tool_indices` raises
                return reasoning, text, []
            if not (name and isinstance(name, str)):
                continue
            arguments = act.get("parameters") or act.get("arguments", {})
            calls.append((name, json.dumps(arguments, ensure_ascii=False)))
    return reasoning, text[:idx].strip(), calls


SPECS = (
    ProfileSpec(
        name="qwen3",
        default_tokenizer="Qwen/Qwen3-8B",
        markers={
            "think_begin": "<think>",
            "think_end": "</think>",
            "tool_call_begin": "<tool_call>",
            "tool_call_end": "</tool_call>",
            "stop": "<|im_end|>",
        },
        extra_stops=("<|endoftext|>",),
        prompt_markers={"start": "<|im_start|>", "end": "<|im_end|>"},
        thinking=True,
        think_gap="\n\n",
        tool_calls=ToolCallFormat(
            call=("@tool_call_begin", '\n{"name": "', "$name", '", "arguments": ', "$arguments", "}\n", "@tool_call_end"),
            separator="\n",
            content_separator="\n",
            strips_content=True,
        ),
        parse_text=parse_sglang,
        description="Qwen3 hybrid thinking: <think>\\n...\\n</think>\\n\\n, content, <tool_call> JSON blocks, <|im_end|>; "
        "with thinking off (enable_thinking=false) no think block.",
    ),
)
