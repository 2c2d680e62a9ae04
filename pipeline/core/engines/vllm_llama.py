"""vLLM's ``llama3_json`` tool-call parser (0.32.0 and 0.33.0), restated
(``tool_parsers/llama_tool_parser.py``, ``Llama3JsonToolParser.extract_tool_calls``).

The request keeps ``skip_special_tokens`` on (the parser's ``adjust_request`` does not turn it off), so
``<|python_tag|>`` and ``<|eom_id|>`` are not in the text it reads. With ``{`` in the text, every ``{``
not inside an object already read starts a JSON value (``raw_decode``); each must be an object with
``name`` (a string) and ``arguments`` or else ``parameters``, re-serialised ``json.dumps(...,
ensure_ascii=False)``. Any ``{`` where that fails (text that is not JSON, a missing key) makes the whole
text content, no calls. With calls, the content is null: text around the objects is dropped. Names are
not checked against the request's tools, and there is no schema correction. With ``tool_choice``
``none`` (or no tools declared) the parser is not run; ``required`` and a named tool are parsed as
``auto`` (the parser has a structural tag, so vLLM does not force JSON output for them).
"""

from __future__ import annotations

import json
import re

from .registry import register
from .request import ASSUMED, NONE

__all__ = ["Llama3JsonTools"]

_DECODER = json.JSONDecoder()
_BRACE = re.compile(r"\{")


@register("vllm", "tool", "llama3_json")
class Llama3JsonTools:
    __slots__ = ("tag",)

    def __init__(self, profile, view=None, tokenizer=None):
        self.tag = profile.texts["tool_call_begin"]

    def __call__(self, text: str | None, request=ASSUMED) -> tuple[str | None, list[tuple[str, str, None]]]:
        if text is None or request.choice == NONE or not (self.tag in text or "{" in text):
            return text, []
        end = -1
        calls: list[tuple[str, str, None]] = []
        for match in _BRACE.finditer(text):
            start = match.start()
            if start <= end:
                continue
            try:
                obj, length = _DECODER.raw_decode(text[start:])
                end = start + length
                name = obj["name"]
                arguments = obj["arguments"] if "arguments" in obj else obj["parameters"]
                if not isinstance(name, str):  # FunctionCall(name=...) is validated
                    raise TypeError(name)
                calls.append((name, json.dumps(arguments, ensure_ascii=False), None))
            except Exception:  # noqa: BLE001 - vLLM logs it and returns the text as content
                return text, []
        if calls:
            return None, calls
        return text, []
