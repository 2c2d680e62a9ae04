"""vLLM's ``qwen3_coder`` tool-call parser (0.32.0 and 0.33.0), restated: ``Qwen3EngineToolParser``, the
tool adapter of ``vllm/parser/qwen3.py``'s parser engine, with no reasoning parser (see ``vllm_engine``).

* The request: with tools and ``tool_choice`` other than ``none`` the parser's ``adjust_request`` turns
  ``skip_special_tokens`` off; the literal text of the tokenizer class's other special tokens is deleted.
* The engine starts in content; reasoning markup (``<think>``, ``</think>``) is plain text (no reasoning
  parser is configured). ``<tool_call>`` opens a call (text up to ``<function=`` dropped), so does a bare
  ``<function=``; the name is the text up to ``>``; the arguments are the raw text up to ``</function>``
  (or the end), ``<parameter=`` / ``</parameter>`` included; text between calls is dropped.
* Each call with a non-empty name (stripped) is kept, its arguments ``_qwen3_arg_converter``: every
  ``<parameter=KEY>VALUE</parameter>`` (or up to the next ``<parameter=``) a string, one wrapping newline
  trimmed, ``json.dumps``; "{}" when the body is empty; then corrected by the called tool's schema
  (``vllm_schema.fix_arg_types``; 0.33 tries ``int()`` first for a number). Names are not checked.
* Content: the text before the first call; text after a call is kept only when no call got a name;
  with calls it is ``.strip()``ped (null when empty). ``tool_choice`` ``none`` with tools: calls
  suppressed, the tool markup's inner text dropped from the content; without tools the calls are
  parsed and discarded, and the content is what is left.
"""

from __future__ import annotations

import json
import re

from .registry import register
from .request import ASSUMED, NONE
from .view import release
from .vllm_decode import class_special_texts
from .vllm_engine import ARGS, BETWEEN, CONTENT, DROP, NAME, PREAMBLE, EngineConfig
from .vllm_qwen import engine_config
from .vllm_schema import fix_arg_types

__all__ = ["Qwen3CoderTools", "arg_converter"]

_PARAM = re.compile(r"<\s*parameter\s*=\s*([^>]*)>(.*?)(?:<\s*/\s*parameter\s*>|(?=<\s*parameter\s*=))", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')


def arg_converter(raw: str) -> str:
    """``_qwen3_arg_converter(raw, partial=False)``."""
    params = {}
    for match in _PARAM.finditer(raw):
        value = match.group(2)
        value = value[1:] if value.startswith("\n") else value
        params[match.group(1)] = value[:-1] if value.endswith("\n") else value
    return json.dumps(params, ensure_ascii=False)


class _Slot:
    __slots__ = ("name", "args", "named")

    def __init__(self):
        self.name, self.args, self.named = "", "", False

    def announce(self) -> None:
        """The engine sends the call's name once known (first argument chunk or the call's end)."""
        if not self.named and (self.name or _NAME.search(self.args)):
            self.named = True


def _run(text: str, config: EngineConfig, suppress: bool) -> tuple[list[str], list[str], list[_Slot]]:
    """(content before any tool event, content after one, the calls' slots)."""
    state, before, after, slots = CONTENT, [], [], []
    seen = False
    for term, value in config.lex(text):
        if term is DROP:
            continue
        step = config.transitions.get((state, term)) if term else None
        if step is None:
            if state == CONTENT:
                (after if seen else before).append(value)
            elif not suppress and state == NAME:
                slots[-1].name += value
            elif not suppress and state == ARGS:
                slots[-1].args += value
                slots[-1].announce()
            continue
        state, events = step
        if suppress:
            continue
        for event in events:
            seen = True
            if event == "TOOL_CALL_START":
                slots.append(_Slot())
            elif event == "ARG_VALUE_CHUNK":
                slots[-1].args += value
                slots[-1].announce()
            elif event == "TOOL_CALL_END" and slots:
                slots[-1].announce()
    if state in (PREAMBLE, NAME, ARGS, BETWEEN) and slots and not suppress:  # finish(): the open call ends
        slots[-1].announce()
    return before, after, slots


@register("vllm", "tool", "qwen3_coder")
class Qwen3CoderTools:
    __slots__ = ("config", "int_first")

    def __init__(self, profile, view, tokenizer):
        self.config = engine_config(profile, class_special_texts(view.decode, tokenizer), reasoning=False)
        self.int_first = release(view.version) >= (0, 33)

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        suppress = request.choice == NONE and bool(request.tools)
        before, after, slots = _run(text or "", self.config, suppress)
        calls = []
        for slot in slots:
            name, body = slot.name.strip(), slot.args
            if not name and body.strip():  # no name: the body read as {"name": ..., "arguments": ...}
                name, arguments = _name_and_args(body)
            elif body.strip():
                arguments = arg_converter(body)
            else:
                arguments = "{}"
            if name:
                if request.tools:
                    arguments = fix_arg_types(arguments, request.properties(name), int_first=self.int_first)
                calls.append((name, arguments, None))
        content = "".join(before)
        if after and not any(s.named for s in slots):
            content += "".join(after)
        if slots and not content.strip():
            content = ""
        if calls:
            content = content.strip()
        if request.choice == NONE:
            return content or None, []
        return content or None, calls


def _name_and_args(body: str) -> tuple[str, str]:
    """``ParserEngine._extract_name_and_args``."""
    body = body.strip()
    try:
        parsed = json.loads(body)
    except ValueError:
        return "", body
    if not isinstance(parsed, dict):
        return "", body
    name = parsed.get("name", "")
    for key in ("arguments", "parameters"):
        if key in parsed:
            value = parsed[key]
            return name, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return name, json.dumps({k: v for k, v in parsed.items() if k != "name"}, ensure_ascii=False)
