"""vLLM's ``deepseek_v32`` tool-call parser (0.32.0 and 0.33.0: the same code), restated: ``vllm/parser/deepseek_v32.py``
run through the parser engine's tool adapter (``extract_tool_calls_from_content``; see ``vllm_engine``). The
reasoning parser is ``deepseek_v3`` (``vllm_deepseek_v31``).

* The engine starts in content. ``<｜DSML｜function_calls>`` opens the calls (text up to the first invoke is
  dropped); each ``<｜DSML｜invoke name="`` starts a call (also in content, without the opener), ``">`` ends its
  name, ``</｜DSML｜invoke>`` (or ``</｜DSML｜function_calls>``) ends it; text between calls and everything after
  the block is dropped. The literal text of the tokenizer class's special tokens is deleted.
* A call's arguments: every ``<｜DSML｜parameter name="K" string="S">V`` up to ``</｜DSML｜parameter>`` (or the
  next parameter): ``string="true"`` gives V as it is (unstripped), any other (or none) ``json.loads(V)``, V when
  that fails; written ``json.dumps(..., ensure_ascii=False)``; a call with no body is ``{}``. An unclosed invoke at
  the end (a length cut) still is a call, with the parameters closed so far. With tools declared: a lone
  ``arguments`` or ``input`` key holding an object of the tool's own keys is unwrapped, and values are corrected
  by the tool's schema (``vllm_schema.fix_arg_types``).
* The content is the text before the calls, unstripped (null when only whitespace). When no call is found,
  and with ``tool_choice`` ``none``, ``DelegatingParser`` keeps the whole text as the content (composed with the
  ``deepseek_v3`` reasoning parser, the adapter is not treated as "engine based").
"""

from __future__ import annotations

import json
import re

from .registry import register
from .request import ASSUMED, NONE
from .view import release
from .vllm_decode import class_special_texts
from .vllm_engine import ARGS, BETWEEN, CONTENT, NAME, PREAMBLE, EngineConfig, tool_pass
from .vllm_schema import fix_arg_types

__all__ = ["DeepSeekV32Tools"]

DSML = "｜DSML｜"
_START, _CLOSE = re.escape(f"<{DSML}parameter"), re.escape(f"</{DSML}parameter>")
_PARAM = re.compile(rf'{_START}\s+name="([^"]+)"(?:\s+string="([^"]*)")?\s*>(.*?)(?:{_CLOSE}|(?={_START}\s+name=))', re.DOTALL)


def _config(drop_texts) -> EngineConfig:
    terminals = {"TOOL_START": f"<{DSML}function_calls>", "TOOL_END": f"</{DSML}function_calls>",
                 "INVOKE_PREFIX": f'<{DSML}invoke name="', "INVOKE_NAME_END": '">', "INVOKE_END": f"</{DSML}invoke>",
                 "PARAM_START": f"<{DSML}parameter", "PARAM_CLOSE": f"</{DSML}parameter>"}
    start = ("TOOL_CALL_START",)
    transitions = {
        (CONTENT, "TOOL_START"): (PREAMBLE, ()), (PREAMBLE, "INVOKE_PREFIX"): (NAME, start),
        (CONTENT, "INVOKE_PREFIX"): (NAME, start), (NAME, "INVOKE_NAME_END"): (ARGS, ()),
        (ARGS, "INVOKE_END"): (BETWEEN, ("TOOL_CALL_END",)), (ARGS, "TOOL_END"): (BETWEEN, ("TOOL_CALL_END",)),
        (BETWEEN, "INVOKE_PREFIX"): (NAME, start), (BETWEEN, "TOOL_END"): (BETWEEN, ()), (BETWEEN, "TOOL_START"): (PREAMBLE, ()),
    }
    return EngineConfig(terminals, transitions, strip_reasoning=False, drop_texts=drop_texts)


def dsml_arguments_json(raw: str) -> str:
    """``_dsml_arg_converter(raw, partial=False)``."""
    params: dict = {}
    for m in _PARAM.finditer(raw):
        name, is_str, value = m.group(1), m.group(2), m.group(3)
        if is_str == "true":
            params[name] = value
        else:
            try:
                params[name] = json.loads(value)
            except ValueError:
                params[name] = value
    return json.dumps(params, ensure_ascii=False)


def _unwrap(args_json: str, properties) -> str:
    """``_unwrap_wrapper_args``: a lone ``arguments`` / ``input`` key wrapping the tool's own keys."""
    if not properties:
        return args_json
    args = json.loads(args_json)
    allowed = set(properties)
    for wrapper in ("arguments", "input"):
        if set(args) != {wrapper} or wrapper in allowed:
            continue
        inner = args[wrapper]
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return args_json
        if isinstance(inner, dict) and set(inner).issubset(allowed):
            return json.dumps(inner, ensure_ascii=False)
    return args_json


@register("vllm", "tool", "deepseek_v32")
class DeepSeekV32Tools:
    __slots__ = ("config", "int_first")

    def __init__(self, profile, view, tokenizer):
        self.config = _config(class_special_texts(view.decode, tokenizer))
        self.int_first = release(view.version) >= (0, 33)

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        if text is None or request.choice == NONE:  # DelegatingParser: the parser is not run
            return text, []
        pieces, slots = tool_pass(text, self.config)
        calls = []
        for head, raw in slots:
            name = head.strip()
            if not name:
                continue
            arguments = "{}"
            if raw.strip():
                arguments = dsml_arguments_json(raw)
                if request.tools:
                    arguments = _unwrap(arguments, request.properties(head))
            if request.tools:
                arguments = fix_arg_types(arguments, request.properties(name), int_first=self.int_first)
            calls.append((name, arguments, None))
        if not calls:  # no call: DelegatingParser keeps the text it was given (this adapter is not "engine based" there)
            return text, []
        content = "".join(pieces)
        return (content if content.strip() else None), calls
