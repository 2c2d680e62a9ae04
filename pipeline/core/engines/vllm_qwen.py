"""vLLM 0.32.0 serving Qwen3, restated: ``--reasoning-parser qwen3 --tool-call-parser hermes``.

* Reasoning (``vllm/parser/qwen3.py`` through the parser engine, see ``vllm_engine``), only with
  thinking on (the request's ``enable_thinking``, default on; when the request is not known, taken to
  be on exactly when the output opens ``<think>``, as the model does then); the text starts as reasoning: ``<think>`` dropped, ``</think>`` ends the reasoning (a later
  ``</think>`` is deleted), so does ``<tool_call>`` (its text stays in the content); whitespace kept;
  the literal text of the tokenizer class's special tokens (``<|im_end|>``, ``<|endoftext|>``, ...)
  deleted. With thinking off the text is all content, untouched. vLLM 0.33, thinking on: when the request's
  prompt already closed the reasoning (``</think>`` after the last turn boundary), the text starts as content.
* Tool calls (``hermes_tool_parser.py``): with ``<tool_call>`` in the text, every
  ``<tool_call>(.*?)</tool_call>`` (or an unclosed ``<tool_call>(.*)``) body is ``json.loads``ed and must
  be an object with ``name`` and ``arguments``, re-serialised ``json.dumps(..., ensure_ascii=False)``;
  the content is the text before the first ``<tool_call>``, unstripped (null when only whitespace). Any body that fails makes the
  whole text content, no calls. With ``tool_choice`` ``none`` (or no tools declared) the parser is not
  run: the content passes unchanged. No schema correction: the arguments are the model's JSON.
"""

from __future__ import annotations

import json
import re

from .request import ASSUMED, NONE
from .registry import register
from .view import release
from .vllm_decode import class_special_texts
from .vllm_engine import ARGS, BETWEEN, CONTENT, NAME, PREAMBLE, REASONING, EngineConfig, reasoning_pass

__all__ = ["Qwen3Reasoning", "HermesTools", "engine_config"]


def engine_config(profile, drop_texts, *, reasoning: bool = True) -> EngineConfig:
    """The terminals and transitions of ``vllm/parser/qwen3.py``'s parser engine, which serves Qwen3 (with its
    reasoning parser) and Qwen3-Coder (its ``qwen3_coder`` tool adapter, no reasoning parser: ``reasoning``
    False leaves ``<think>`` / ``</think>`` out of the terminals, so they are text in any state)."""
    t = profile.texts
    terminals = {"TOOL_START": t["tool_call_begin"], "TOOL_END": t["tool_call_end"], "FUNC_PREFIX": "<function=",
                 "FUNC_END": "</function>", "PARAM_START": "<parameter=", "PARAM_END": "</parameter>", "CLOSE_ANGLE": ">"}
    transitions = {
        (CONTENT, "TOOL_START"): (PREAMBLE, ("REASONING_END", "TOOL_CALL_START")),
        (CONTENT, "FUNC_PREFIX"): (NAME, ("TOOL_CALL_START",)),
        (PREAMBLE, "TOOL_END"): (CONTENT, ("TOOL_CALL_END",)),
        (PREAMBLE, "FUNC_PREFIX"): (NAME, ()),
        (NAME, "CLOSE_ANGLE"): (ARGS, ()),
        (NAME, "FUNC_END"): (BETWEEN, ("TOOL_CALL_END",)),
        (ARGS, "FUNC_END"): (BETWEEN, ("TOOL_CALL_END",)),
        (ARGS, "PARAM_START"): (ARGS, ("ARG_VALUE_CHUNK",)),
        (ARGS, "PARAM_END"): (ARGS, ("ARG_VALUE_CHUNK",)),
        (BETWEEN, "TOOL_END"): (CONTENT, ()),
        (BETWEEN, "TOOL_START"): (PREAMBLE, ("TOOL_CALL_START",)),
        (BETWEEN, "FUNC_PREFIX"): (NAME, ("TOOL_CALL_START",)),
    }
    if reasoning:
        terminals.update(THINK_START=t["think_begin"], THINK_END=t["think_end"])
        transitions.update({
            (REASONING, "THINK_START"): (REASONING, ()),
            (REASONING, "THINK_END"): (CONTENT, ("REASONING_END",)),
            (CONTENT, "THINK_END"): (CONTENT, ()),
            (REASONING, "TOOL_START"): (PREAMBLE, ("REASONING_END", "TOOL_CALL_START")),
        })
    return EngineConfig(terminals, transitions, strip_reasoning=False, drop_texts=drop_texts)


@register("vllm", "reasoning", "qwen3")
class Qwen3Reasoning:
    __slots__ = ("config", "think_begin", "prompt_rule", "ends", "opens", "bounds")

    def __init__(self, profile, view, tokenizer):
        self.config = engine_config(profile, class_special_texts(view.decode, tokenizer))
        t, ids = profile.texts, tokenizer.special_tokens
        self.think_begin = t["think_begin"]
        # vLLM 0.33: the parser starts in content when the prompt closed the reasoning: scanning the prompt
        # back, a reasoning end (</think>, <tool_call>) before a <think> or a turn boundary.
        self.prompt_rule = release(view.version) >= (0, 33)
        self.ends = frozenset(ids[x] for x in (t["think_end"], t["tool_call_begin"]) if x in ids)
        self.opens = ids.get(t["think_begin"])
        self.bounds = frozenset(ids[x] for x in ("<|im_start|>", "<|im_end|>") if x in ids)

    def _prompt_closed(self, prompt_ids) -> bool:
        for token in reversed(prompt_ids):
            if token in self.ends:
                return True
            if token == self.opens or token in self.bounds:
                return False
        return False

    def __call__(self, text: str, request=ASSUMED) -> tuple[str | None, str | None]:
        on = request.template_flag("enable_thinking")
        if on is None:  # the request does not say: the output opens <think> exactly when thinking is on
            on = text.startswith(self.think_begin)
        if not on:  # thinking off: the parser returns the text as it is
            return None, text
        if self.prompt_rule and request.prompt_ids and self._prompt_closed(request.prompt_ids):
            return reasoning_pass(text, self.config, thinking=False)
        return reasoning_pass(text, self.config, thinking=True)


@register("vllm", "tool", "hermes")
class HermesTools:
    __slots__ = ("begin", "regex")

    def __init__(self, profile, view=None, tokenizer=None):
        t = profile.texts
        self.begin = t["tool_call_begin"]
        b, e = re.escape(t["tool_call_begin"]), re.escape(t["tool_call_end"])
        self.regex = re.compile(f"{b}(.*?){e}|{b}(.*)", re.DOTALL)

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        if text is None or self.begin not in text or request.choice == NONE:  # DelegatingParser passes the content on unchanged (null stays null)
            return text, []
        try:
            calls = []
            for closed, unclosed in self.regex.findall(text):
                call = json.loads(closed if closed else unclosed)
                calls.append((call["name"], json.dumps(call["arguments"], ensure_ascii=False), None))
        except Exception:  # hermes logs it and returns the text as content
            return text, []
        for name, _, _ in calls:
            if not isinstance(name, str):  # FunctionCall(name=...) is validated: not a call
                return text, []
        content = text[: text.find(self.begin)]
        return (content if content.strip() else None), calls  # DelegatingParser: whitespace-only content is null
