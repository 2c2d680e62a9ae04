"""SGLang 0.5.23's ``deepseekv32`` tool-call parser, restated (``DeepSeekV32Detector.detect_and_parse``,
non-streaming, then serving_chat). The reasoning parser is ``deepseek-v3`` (``sglang_deepseek_v31``).

With ``<｜DSML｜function_calls>`` in the text the content is the text before it less one trailing ``\\n\\n``, and
each ``<｜DSML｜function_calls>(.*?)</｜DSML｜function_calls>`` section is searched for invokes; without it, a bare
``<｜DSML｜invoke`` starts the one section (to the end) and the content is the text before the first DSML tag
(less a trailing ``\\n\\n``). No section: that content, no calls. Each
``<｜DSML｜invoke name="NAME">BODY</｜DSML｜invoke>`` (or self-closing ``/>``; an unclosed one is dropped) is a call:
a BODY that is a JSON object after ``.strip()`` is kept as written (NaN/Infinity refused); otherwise each
``<｜DSML｜parameter name="K" string="S">V</｜DSML｜parameter>``: ``string="true"`` gives ``V.strip()``, any other
``json.loads(V.strip())`` (the stripped text when that fails); stray DSML between parameters, or text with no
parameter at all, drops the call. The call's arguments are then ``json.loads``ed and written again
``json.dumps(..., ensure_ascii=False)``; a call to a tool the request does not declare is dropped. serving_chat
runs the parser only when the request declares tools and ``tool_choice`` is not ``none``.
``tests/test_sglang_differential_families.py`` and ``test_sglang_differential_requests.py`` run sglang's own detector on the same ids.
"""

from __future__ import annotations

import json
import re

from .registry import register
from .request import ASSUMED, NONE

__all__ = ["DeepSeekV32Tools"]

DSML = "｜DSML｜"
_BOT, _EOT, _INVOKE = f"<{DSML}function_calls>", f"</{DSML}function_calls>", f"<{DSML}invoke"
_SECTIONS = re.compile(f"{re.escape(_BOT)}(.*?){re.escape(_EOT)}", re.DOTALL)
_INVOKES = re.compile(rf'<{DSML}invoke\s+name="(?P<name>[^"]+)"\s*(?:(?P<self_close>/>)|>(?P<body>.*?)(?P<end>(?:</{DSML}invoke>|$)))',
                      re.DOTALL)
_PARAM = re.compile(rf'<{DSML}parameter\s+name="([^"]+)"\s+string="([^"]+)"\s*>(.*?)</{DSML}parameter>', re.DOTALL)


def _reject(value: str):
    raise ValueError(f"Invalid JSON constant: {value}")


def _before_dsml(text: str) -> str:
    idx = text.find(DSML)
    if idx == -1:
        return text
    if idx >= 2 and text[idx - 2 : idx] == "</":
        idx -= 2
    elif idx >= 1 and text[idx - 1] == "<":
        idx -= 1
    return text[:idx].removesuffix("\n\n")


def _arguments(body: str) -> str:
    """``_parse_parameters_from_xml``: the arguments' JSON text, or ValueError."""
    stripped = body.strip()
    if stripped.startswith("{"):
        if not isinstance(json.loads(stripped, parse_constant=_reject), dict):
            raise ValueError("DeepSeek tool arguments must be a JSON object")
        return stripped
    params, leftover, last = {}, [], 0
    matches = list(_PARAM.finditer(body))
    for m in matches:
        leftover.append(body[last : m.start()])
        last = m.end()
        name, kind, value = m.group(1), m.group(2), m.group(3)
        if kind == "true":
            params[name] = value.strip()
        else:
            try:
                params[name] = json.loads(value.strip(), parse_constant=_reject)
            except ValueError:
                params[name] = value.strip()
    leftover.append(body[last:])
    rest = "".join(leftover)
    if DSML in rest or (not matches and rest.strip()):
        raise ValueError("Malformed DeepSeek tool parameter")
    return json.dumps(params, ensure_ascii=False)


@register("sglang", "tool", "deepseekv32")
class DeepSeekV32Tools:
    __slots__ = ()

    def __init__(self, profile, view=None, tokenizer=None):
        pass

    def __call__(self, text: str, request=ASSUMED) -> tuple[str, list[tuple[str, str, None]]]:
        if request.choice == NONE or not (_BOT in text or _INVOKE in text):
            return text, []
        idx = text.find(_BOT)
        if idx != -1:
            content, sections = text[:idx].removesuffix("\n\n"), _SECTIONS.findall(text)
        else:
            content, sections = _before_dsml(text), [text[text.find(_INVOKE) :]]
        calls: list[tuple[str, str, None]] = []
        for section in sections:
            for m in _INVOKES.finditer(section):
                name = m.group("name").strip()
                if not (m.group("self_close") or m.group("end")):
                    continue  # an unclosed invoke is dropped
                try:
                    arguments = _arguments("" if m.group("self_close") else m.group("body"))
                except ValueError:
                    continue
                if name and request.declares(name):
                    calls.append((name, json.dumps(json.loads(arguments) or {}, ensure_ascii=False), None))
        return content, calls
