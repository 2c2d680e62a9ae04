"""sglang 0.5.23's serving of a chat completion around its own parsers, restated for the differential tests,
with every parser reached by the name a view declares (``View.reasoning_parser`` / ``View.tool_parser``, the
names of sglang's ``--reasoning-parser`` / ``--tool-call-parser`` flags).

* Detectors: ``FunctionCallParser.ToolCallParserEnum`` maps a tool-call parser name to its detector class.
  ``function_call_parser.py`` itself cannot be imported here (it imports xgrammar), so its map is read from
  that file's own source (``ast``: the dict literal and the imports naming each class), and the detector's
  module is imported with sglang's code (``import_sglang_modules``). No hand-kept name list.
* Reasoning: ``ReasoningParser(model_type=name, stream_reasoning=False, force_reasoning=...)``. Whether
  serving_chat forces it is ``_get_reasoning_from_request``'s answer for a request with no inferred template
  config: the detector's own ``reasoning_default`` (``always``; ``thinking`` / ``enable_thinking``: unless the
  request's ``chat_template_kwargs`` sets that switch false; ``explicit_thinking`` /
  ``explicit_enable_thinking``: only when it sets it true). ``thinking_kwargs`` is the request that asks for
  thinking on or off by that same switch.
* serving_chat around them (non-streaming): the decoded text without the matched stop token
  (``skip_special_tokens`` off whenever a parser runs); the tool parser only when the request declares tools
  and ``tool_choice`` is not ``none`` (``_tool_call_parsing_active``); for ``required`` or a named tool,
  ``_process_tool_calls`` parses with the detector when it owns its format
  (``FunctionCallParser.owns_tool_format``: ``get_required_tool_parser``, ``supports_structural_tag()`` or
  ``parses_required_natively()``), else reads a JSON array (not restated: every detector a view names owns
  its format, which the tests assert); an exception keeps the text whole; finish "stop" -> "tool_calls"
  when calls were parsed; ``reasoning_content`` None when empty, ``content`` "" when empty. Call ids:
  sglang draws them at random; the view's own format (``Assembly.call_id``) stands for them.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

from . import import_sglang_modules

__all__ = ["detector_class", "reasoning_mode", "force_reasoning", "thinking_kwargs", "sglang_response", "owns_format"]

FUNCTION_CALL_PARSER = "sglang.srt.function_call.function_call_parser"


@functools.cache
def _detector_map() -> dict[str, tuple[str, str]]:
    """``ToolCallParserEnum`` as (module, class) by parser name, read from sglang's own source."""
    import_sglang_modules("sglang.srt.function_call.base_format_detector")  # sglang registered as a bare package
    spec = importlib.util.find_spec(FUNCTION_CALL_PARSER)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    imported = {alias.asname or alias.name: node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "ToolCallParserEnum":
            return {key.value: (imported[value.id], value.id) for key, value in zip(node.value.keys, node.value.values)}
    raise LookupError(f"no ToolCallParserEnum in {spec.origin}")


def detector_class(name: str) -> type:
    """sglang's detector class for ``--tool-call-parser NAME``."""
    module, cls = _detector_map()[name]
    return getattr(import_sglang_modules(module)[0], cls)


def _reasoning_parser():
    return import_sglang_modules("sglang.srt.parser.reasoning_parser")[0]


def reasoning_mode(name: str) -> str:
    """The reasoning detector's own ``reasoning_default``."""
    return _reasoning_parser().ReasoningParser(model_type=name).detector.reasoning_default


def force_reasoning(name: str, kwargs: dict | None) -> bool:
    """serving_chat's ``_get_reasoning_from_request`` by the detector's ``reasoning_default``."""
    mode = reasoning_mode(name)
    if mode == "always":
        return True
    if mode in ("thinking", "enable_thinking"):
        return not kwargs or kwargs.get(mode) is not False
    if mode in ("explicit_thinking", "explicit_enable_thinking"):
        return kwargs is not None and kwargs.get(mode.replace("explicit_", "")) is True
    raise AssertionError(f"reasoning_default {mode!r} of {name} is not restated")


def thinking_kwargs(name: str | None, thinking: bool | None) -> dict:
    """The chat template kwargs asking for thinking on or off by the switch sglang's detector reads ({} when the
    output does not say, or the detector has no switch)."""
    if name is None or thinking is None:
        return {}
    mode = reasoning_mode(name)
    return {} if mode == "always" else {mode.replace("explicit_", ""): thinking}


def _protocol():
    return import_sglang_modules("sglang.srt.entrypoints.openai.protocol")[0]


def _tools(sent):
    protocol = _protocol()
    return [protocol.Tool(function=protocol.Function(name=t["function"]["name"], parameters=t["function"]["parameters"]))
            for t in sent or []]


def _choice(choice):
    """The request's tool_choice as sglang's protocol holds it."""
    if isinstance(choice, dict):
        protocol = _protocol()
        return protocol.ToolChoice(function=protocol.ToolChoiceFuncName(name=choice["function"]["name"]))
    return choice


def owns_format(detector, choice) -> bool:
    """``FunctionCallParser.owns_tool_format``, asked of the detector itself."""
    required = detector.get_required_tool_parser(_choice(choice))
    return required is not None or detector.supports_structural_tag() or detector.parses_required_natively()


def _process_tool_calls(detector, text, sent, choice, finish, ids_format):
    """serving_chat's ``_process_tool_calls`` for a detector that owns its format: (content, calls or None, finish)."""
    is_required = choice == "required" or isinstance(choice, dict)
    owns = owns_format(detector, choice)
    assert not is_required or owns, "serving_chat's JSON-array branch is not restated"
    if not detector.has_tool_call(text):
        return text, None, finish
    try:
        result = detector.detect_and_parse(text, _tools(sent))
    except Exception:  # serving_chat's catch-all: the text stays whole, no calls
        return text, None, finish
    if not result.calls:
        return result.normal_text, None, finish
    calls = [{"id": ids_format.format(name=c.name, index=n), "type": "function",
              "function": {"name": c.name, "arguments": c.parameters}} for n, c in enumerate(result.calls)]
    return result.normal_text, calls, "tool_calls" if finish == "stop" else finish


def sglang_response(ids, finish, profile, tokenizer, sent, choice=None, kwargs=None) -> dict:
    """What sglang 0.5.23 serving ``profile`` (its ``sglang`` view's parser names) returns for these output ids
    answering a request with tools ``sent``, ``tool_choice`` ``choice`` and chat template ``kwargs``."""
    if ids and ids[-1] in profile.stop_ids:  # the detokenizer trims the matched stop token
        ids = ids[:-1]
    text = tokenizer.decode(ids)
    reasoning = None
    view = profile.spec.views["sglang"]
    if view.reasoning_parser:
        parser = _reasoning_parser().ReasoningParser(model_type=view.reasoning_parser, stream_reasoning=False,
                                                     force_reasoning=force_reasoning(view.reasoning_parser, kwargs))
        reasoning, text = parser.parse_non_stream(text)
    tool_calls = None
    if view.tool_parser and sent and choice != "none":  # _tool_call_parsing_active
        detector = detector_class(view.tool_parser)()
        text, tool_calls, finish = _process_tool_calls(detector, text, sent, choice, finish, view.assembly.call_id)
    return {"reasoning": reasoning or None, "content": text or "", "tool_calls": tool_calls, "finish_reason": finish}
