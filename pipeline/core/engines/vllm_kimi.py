"""vLLM 0.32.0's ``kimi_k2`` parsers, restated (``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2``:
``vllm/parser/kimi_k2.py``, run through the parser engine's adapters; see ``vllm_engine``).

* Reasoning (thinking on: the output starts inside it): ``<think>`` dropped, ``</think>`` ends it (a
  later ``</think>`` in the content is deleted), the tool-call section marker ends it too (the marker
  stays in the content); trailing whitespace of the reasoning is stripped, the content is not.
* Tool calls: content is the text before ``<|tool_calls_section_begin|>``; each call's head (the text
  between ``<|tool_call_begin|>`` and ``<|tool_call_argument_begin|>``) must start ``ID:N``: the id is
  kept as the call's id and the name is the id before ``:`` without ``functions.`` (a head without ``:N`` is
  dropped, or, when no argument text follows it at all, becomes the name of a call with "{}"); arguments are the
  text up to ``<|tool_call_end|>`` (or the section's end, or the end of the output) ``.strip()``ped, "{}"
  when empty; text between and after calls is dropped; whitespace-only content before calls is dropped.
* The request (``pipeline.core.engines.request``): each call's arguments are corrected by the called
  tool's parameter schema (``vllm_schema.fix_arg_types``: ``{"n": 5.0}`` under ``n: number`` comes back
  ``{"n": 5}``); ``tool_choice`` ``none`` with tools declared suppresses the calls (the content keeps
  its whitespace); the chat template kwargs ``thinking`` / ``enable_thinking`` set false turn reasoning
  off (the text is all content, ``</think>`` no marker).
* Everywhere: the literal text of a special token of Kimi's tokenizer class (``Decode.class_special``)
  that is not one of these markers is deleted.

``tests/test_vllm_differential.py`` runs vLLM's own code on the same ids.
"""

from __future__ import annotations

import re

from .request import ASSUMED, NONE
from .registry import register
from .view import release
from .vllm_schema import fix_arg_types
from .vllm_decode import class_special_texts
from .vllm_engine import ARGS, BETWEEN, CONTENT, NAME, PREAMBLE, REASONING, EngineConfig, reasoning_pass, tool_pass

__all__ = ["KimiK2Reasoning", "KimiK2Tools", "thinking"]

_TOOL_ID = re.compile(r"(?P<id>.+:\d+)")


def _config(profile, drop_texts, thinking: bool) -> EngineConfig:
    t = profile.texts
    terminals = {"TOOL_SECTION_START": t["tool_calls_begin"], "TOOL_SECTION_END": t["tool_calls_end"],
                 "TOOL_START": t["tool_call_begin"], "TOOL_END": t["tool_call_end"], "ARG_START": t["tool_call_argument_begin"]}
    transitions = {
        (REASONING, "TOOL_SECTION_START"): (PREAMBLE, ("REASONING_END",)),
        (CONTENT, "TOOL_SECTION_START"): (PREAMBLE, ()),
        (PREAMBLE, "TOOL_START"): (NAME, ("TOOL_CALL_START",)),
        (NAME, "ARG_START"): (ARGS, ()),
        (ARGS, "TOOL_END"): (BETWEEN, ("TOOL_CALL_END",)),
        (ARGS, "TOOL_SECTION_END"): (PREAMBLE, ("TOOL_CALL_END",)),
        (BETWEEN, "TOOL_START"): (NAME, ("TOOL_CALL_START",)),
        (PREAMBLE, "TOOL_SECTION_END"): (PREAMBLE, ()),
        (BETWEEN, "TOOL_SECTION_END"): (PREAMBLE, ()),
    }
    if thinking:
        terminals.update(THINK_START=t.get("prompt.think_begin", "<think>"), THINK_END=t["think_end"])
        transitions.update({
            (REASONING, "THINK_START"): (REASONING, ()),
            (REASONING, "THINK_END"): (CONTENT, ("REASONING_END",)),
            (CONTENT, "THINK_END"): (CONTENT, ()),
        })
    return EngineConfig(terminals, transitions, strip_reasoning=True, drop_texts=drop_texts)


def thinking(request) -> bool:
    """``KimiK2Parser.thinking_enabled``: on unless the chat template kwargs set ``thinking`` /
    ``enable_thinking`` and neither is true."""
    flag = request.template_flag("thinking", "enable_thinking")
    return True if flag is None else flag


@register("vllm", "reasoning", "kimi_k2")
class KimiK2Reasoning:
    __slots__ = ("config",)

    def __init__(self, profile, view, tokenizer):
        self.config = _config(profile, class_special_texts(view.decode, tokenizer), thinking=True)

    def __call__(self, text: str, request=ASSUMED) -> tuple[str | None, str | None]:
        if not thinking(request):
            return None, text
        return reasoning_pass(text, self.config, thinking=True)


@register("vllm", "tool", "kimi_k2")
class KimiK2Tools:
    __slots__ = ("configs", "int_first")

    def __init__(self, profile, view, tokenizer):
        drop = class_special_texts(view.decode, tokenizer)
        on = view.reasoning_parser is not None
        self.configs = {True: _config(profile, drop, on), False: _config(profile, drop, False) if on else None}
        self.int_first = release(view.version) >= (0, 33)  # 0.32 float()s a number first

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, str]]]:
        config = self.configs[True] if self.configs[False] is None or thinking(request) else self.configs[False]
        pieces, slots = tool_pass(text or "", config)
        if request.choice == NONE and request.tools:  # tool_choice "none": the calls suppressed
            return "".join(pieces) or None, []
        calls = []
        for head, arguments in slots:
            m = _TOOL_ID.match(head.strip())
            if m is None:  # no ID:N head: with no arguments at all, the head itself is taken as the name
                if not arguments and head.strip():
                    calls.append((head.strip(), "{}", None))
                continue
            call_id = m.group("id").strip()
            name = call_id.split(":")[0].removeprefix("functions.")
            if name:
                arguments = arguments.strip() or "{}"
                if request.tools:
                    arguments = fix_arg_types(arguments, request.properties(name), int_first=self.int_first)
                calls.append((name, arguments, call_id))
        content = "".join(pieces)
        if slots and not content.strip():
            content = ""
        return content or None, calls
