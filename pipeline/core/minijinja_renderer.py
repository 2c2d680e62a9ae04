"""Chat templates rendered by MiniJinja (a Rust engine), in the environment transformers gives them.

transformers' ``render_jinja_template`` renders a template in jinja2's immutable sandbox with
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, its own ``tojson`` filter
(``json.dumps`` with ``ensure_ascii``, ``indent``, ``separators``, ``sort_keys``; no HTML escaping),
and the globals ``raise_exception``, ``strftime_now``, ``dict`` and ``namespace``. The messages it
renders are a plain copy with a message's reasoning aliased under ``reasoning_content`` and
``thinking``. ``MiniJinjaTemplate`` gives a template the same: MiniJinja's ``pycompat`` mode supplies
Python's string, dict and list methods (``.strip()``, ``.get()``, ``.items()``...), its ``loop``
object has jinja2's attributes, ``break`` and ``continue`` are built in, and values print as
Python prints them.

What MiniJinja does otherwise is refused, never guessed at:

* a template that does not compile, or uses a construct in :data:`UNSUPPORTED` (MiniJinja is known to
  differ there), raises :class:`Unsupported` when it is built;
* an input MiniJinja would print otherwise (:func:`plain_inputs`: a float Python writes with an
  exponent, an integer over 64 bits, anything but JSON's types) is left to the caller;
* a render that fails (or runs out of its :data:`FUEL`) raises what MiniJinja raised, except ``raise_exception``'s own
  :class:`TemplateRaised`, which carries the template's message.

:mod:`pipeline.core.render` falls back to transformers' renderer for each of these, and
``tests/test_minijinja_renderer.py`` proves the two renderers byte-identical on every shipped
conversation and on generated ones.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = ["MiniJinjaTemplate", "Unsupported", "TemplateRaised", "UNSUPPORTED", "unsupported", "plain_inputs", "alias_reasoning"]

# Constructs whose result MiniJinja computes differently from jinja2 (found by the differential tests):
# ``is sequence`` is false for a string; ``title`` leaves Unicode titlecase letters another way; ``%``
# and ``format`` follow Rust's formatting; ``namespace`` and ``dict`` are MiniJinja's own, which do not
# refuse underscore names as transformers' do; ``{% generation %}`` is transformers' extension.
UNSUPPORTED = {
    "is sequence": re.compile(r"\bis\s+(?:not\s+)?sequence\b"),
    "title": re.compile(r"\|\s*title\b|\.\s*title\s*\("),
    "format": re.compile(r"\|\s*format\b|\.\s*format\s*\(|['\"]\s*%"),
    "underscore attribute": re.compile(r"\.\s*_|\[\s*['\"]_|namespace\s*\(\s*_|\bfromkeys\b"),
    "generation block": re.compile(r"^-?\s*(?:end)?generation\b"),
    "whitespace override": re.compile(r"^\+|\+$"),  # jinja2's "{%+" and "+%}"
}
_CODE = re.compile(r"\{([{%])(.*?)[}%]\}", re.S)  # what a template's tags and expressions say (its text is not code)


def unsupported(template: str) -> str | None:
    """The first construct of :data:`UNSUPPORTED` the template's code uses, or None."""
    for _, code in _CODE.findall(template):
        for name, pattern in UNSUPPORTED.items():
            if pattern.search(code):
                return name
    return None


# MiniJinja runs a template in Rust, where no Python time limit reaches: a render gets this many instructions
# ("fuel"), about 3-7 s of a loaded core, then fails, and transformers' renderer (under the caller's time limit)
# decides. A shipped conversation takes a few thousand.
FUEL = 50_000_000


class Unsupported(Exception):
    """This template is not rendered by MiniJinja: the reason, in words."""


class TemplateRaised(Exception):
    """The template called ``raise_exception(message)``."""


def _raise_exception(message):
    raise TemplateRaised(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    if x is None:  # MiniJinja hands a filter an undefined value as None; jinja2's tojson of one raises
        raise TypeError("Object of type Undefined is not JSON serializable")
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format):
    return datetime.now().strftime(format)


_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def alias_reasoning(message: dict) -> dict:
    """A message's reasoning under every name templates read it by, as transformers aliases it: ``thinking``
    first (where the message does not set it), ``reasoning_content`` last (always the reasoning found)."""
    for key in _REASONING_FIELDS:
        reasoning = message.get(key)
        if reasoning is not None:
            return {"thinking": reasoning, **message, "reasoning_content": reasoning}
    return message


_MAX_INT = 1 << 63


def plain_inputs(value: Any) -> bool:
    """Whether ``value`` holds only data MiniJinja prints as Python does: str, bool, None, integers within
    64 bits, floats Python writes without an exponent, and lists and dicts (string keys) of them."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_MAX_INT <= value < _MAX_INT
    if kind is float:
        return value == 0.0 or (math.isfinite(value) and 1e-4 <= abs(value) < 1e16)
    if kind is dict:
        return all(type(k) is str and plain_inputs(v) for k, v in value.items())
    if kind is list:
        return all(plain_inputs(v) for v in value)
    return False


class MiniJinjaTemplate:
    """One chat template compiled by MiniJinja; ``Unsupported`` when it cannot be (see the module)."""

    def __init__(self, template: str):
        import minijinja

        construct = unsupported(template)
        if construct is not None:
            raise Unsupported(f"it uses {construct}, which MiniJinja renders differently from jinja2")
        env = minijinja.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, pycompat=True, fuel=FUEL)
        env.add_filter("tojson", _tojson)
        env.add_global("raise_exception", _raise_exception)
        env.add_global("strftime_now", _strftime_now)
        try:
            env.add_template("chat", template)
        except minijinja.TemplateError as e:
            raise Unsupported(f"MiniJinja cannot compile it: {str(e).splitlines()[0][:300]}") from None
        self.template = template
        self._render = env.render_template

    def __call__(self, conversation: Sequence[Mapping], tools: list | None, variables: Mapping[str, Any],
                 add_generation_prompt: bool) -> str:
        """The text: the conversation's messages (plain dicts) with their reasoning aliased, the tools and
        variables as given (``plain_inputs`` checked by the caller)."""
        return self._render("chat", **variables, messages=[alias_reasoning(m) for m in conversation], tools=tools,
                            documents=None, add_generation_prompt=add_generation_prompt)
