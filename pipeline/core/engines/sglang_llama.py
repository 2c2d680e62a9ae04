"""SGLang 0.5.23's ``llama3`` tool-call parser, restated (``Llama32Detector.detect_and_parse`` and
serving_chat, non-streaming; Llama 3.x has no reasoning parser).

The parser runs when the text holds ``<|python_tag|>`` or starts with ``{`` (serving_chat: only when the
request declares tools and ``tool_choice`` is not ``none``). The text is split at the first
``<|python_tag|>`` (content before it; without the tag, content "" and the whole text is the action
part). The action part is read as JSON objects one after another with ``raw_decode``, each followed by
one separator character (``;``) that is skipped unread; where no JSON value starts, a ``{...}`` span
(counted braces) that ``ast.literal_eval`` reads as a Python dict is taken through ``json.dumps``;
otherwise reading resumes at the next ``{"name":``, or stops. Each value found must be an object
(anything else, or a ``name`` that is a list or an object, raises inside SGLang, which then returns the
whole text as content, no calls); a call whose name the request does not declare is dropped; its
arguments are ``parameters`` or else ``arguments`` (``{}`` when missing), re-serialised
``json.dumps(..., ensure_ascii=False)``. The content is the text before the tag plus the unread rest of
the action part, ``.strip()``ped. No schema coercion.

``tests/test_sglang_differential_families.py`` and ``test_sglang_differential_requests.py`` run sglang's own detector on the same ids.
"""

from __future__ import annotations

import ast
import json
import warnings

from .registry import register
from .request import ASSUMED, NONE

__all__ = ["Llama3Tools"]

_DECODER = json.JSONDecoder()
SEPARATOR = ";"


def _literal_dict_json(text: str) -> str:
    """``Llama32Detector._convert_python_dict_to_json``: a Python dict literal as JSON, else the text."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=SyntaxWarning)
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            parsed = ast.literal_eval(text.strip())
        if isinstance(parsed, dict):
            return json.dumps(parsed, ensure_ascii=False)
    except BaseException:  # noqa: BLE001 - SGLang's bare except
        pass
    return text


def _braced_end(action: str, idx: int) -> int:
    depth = 0
    for i in range(idx, len(action)):
        if action[i] == "{":
            depth += 1
        elif action[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return idx


def _actions(action: str) -> tuple[list, int]:
    """The values read from the action part, and where the read part ends."""
    idx = safe = 0
    found: list = []
    while idx < len(action):
        try:
            obj, end = _DECODER.raw_decode(action[idx:])
            found.append(obj)
            idx += end + len(SEPARATOR)
            safe = idx
            continue
        except json.JSONDecodeError:
            pass
        try:
            end = _braced_end(action, idx)
            if end > idx:
                piece = action[idx:end]
                converted = _literal_dict_json(piece)
                if converted != piece:
                    obj, _ = _DECODER.raw_decode(converted)
                    found.append(obj)
                    idx = safe = end + len(SEPARATOR)
                    continue
        except BaseException:  # noqa: BLE001 - SGLang's bare except
            pass
        following = action.find('{"name":', idx + 1)
        if following == -1:
            break
        idx = following
    return found, safe


@register("sglang", "tool", "llama3")
class Llama3Tools:
    __slots__ = ("tag",)

    def __init__(self, profile, view=None, tokenizer=None):
        self.tag = profile.texts["tool_call_begin"]

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        if request.choice == NONE or not (self.tag in text or text.startswith("{")):
            return text, []
        if self.tag in text:
            normal, action = text.split(self.tag, 1)
        else:
            normal, action = "", text
        found, safe = _actions(action)
        calls: list[tuple[str, str, None]] = []
        for act in found:
            if not isinstance(act, dict):  # act.get raises: SGLang's catch-all returns the text unparsed
                return text, []
            name = act.get("name")
            if isinstance(name, (list, dict)):  # unhashable: `name in tool_indices` raises
                return text, []
            if not (name and isinstance(name, str) and request.declares(name)):
                continue
            calls.append((name, json.dumps(act.get("parameters") or act.get("arguments", {}), ensure_ascii=False), None))
        trailing = action[safe:].strip() if safe < len(action) else ""
        return normal + trailing, calls
