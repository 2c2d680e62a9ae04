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
# ``is sequence`` is false for a string, ``is iterable`` true for none (their plain forms are rewritten:
# ``jinja2_sequence_tests``); ``title`` leaves Unicode titlecase letters another way; ``%``
# and ``format`` follow Rust's formatting; ``namespace`` and ``dict`` are MiniJinja's own, which do not
# refuse underscore names as transformers' do; ``{% generation %}`` is transformers' extension.
UNSUPPORTED = {
    "is sequence": re.compile(r"\bis\s+(?:not\s+)?sequence\b"),
    "is iterable": re.compile(r"\bis\s+(?:not\s+)?iterable\b"),
    "title": re.compile(r"\|\s*title\b|\.\s*title\s*\("),
    "format": re.compile(r"\|\s*format\b|\.\s*format\s*\(|['\"]\s*%"),
    "underscore attribute": re.compile(r"\.\s*_|\[\s*['\"]_|namespace\s*\(\s*_|\bfromkeys\b"),
    "generation block": re.compile(r"^-?\s*(?:end)?generation\b"),
    "whitespace override": re.compile(r"^\+|\+$"),  # jinja2's "{%+" and "+%}"
}
_CODE = re.compile(r"\{([{%])(.*?)[}%]\}", re.S)  # what a template's tags and expressions say (its text is not code)


# ``SUBJECT is [not] sequence`` where the subject is a variable, its attributes and items (``json_dict[json_key]``,
# ``message.content``); whether it is the end of a longer operand is _OPERAND_START's to say.
_SUBJECT = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\s*(?:[A-Za-z_]\w*|'[^'\\\n]*'|\"[^\"\\\n]*\"|\d+)\s*\])*"
_SEQUENCE_TEST = re.compile(rf"({_SUBJECT})\s+is\s+(not\s+)?(sequence|iterable)\b")
_TAG = re.compile(r"\{[{%].*?[}%]\}", re.S)
# What may come before such a subject, so that the test applies to it alone in jinja2 (a test binds tighter than
# any operator but unary minus and plus, and looser than a filter): the tag's start, an opening bracket, a comma, a
# comparison or assignment, or a keyword.
_OPERAND_START = re.compile(r"(?:\{[{%]-?|[(\[,=<>]|(?<![\w.])(?:if|elif|else|and|or|not|in))\s*$")
_RAW = re.compile(r"\{%-?\s*raw\b")
_ESCAPED = re.compile(r"\\.", re.S)


def jinja2_sequence_tests(template: str) -> str:
    """``template`` with each plain ``x is sequence`` and ``x is iterable`` (in its tags, not its text) written so
    that MiniJinja answers as jinja2 does: ``(x is undefined or x is jinja2_sequence)``, and ``x is not sequence``
    as ``(x is defined and x is not jinja2_sequence)``; the same for ``iterable``. jinja2's ``sequence`` is true
    for anything with a length and items (a string, a list, a mapping, an undefined value), MiniJinja's for a
    list only; jinja2's ``iterable`` is false for none, MiniJinja's true. ``jinja2_sequence`` and
    ``jinja2_iterable`` are jinja2's own tests, run in Python; MiniJinja hands them an undefined value as None,
    so that case is decided in the template (both of jinja2's tests are true for it). Other forms are left as
    they are (``unsupported`` then refuses the template), and so is one inside a string literal, and any
    template with a raw block (whose tags are text)."""
    if _RAW.search(template):
        return template

    def test(m: re.Match) -> str:
        before = _ESCAPED.sub("", m.string[: m.start()])
        if before.count("'") % 2 or before.count('"') % 2:  # inside a string literal: text, left as it is
            return m[0]
        if not _OPERAND_START.search(before):  # the subject may be the end of a longer operand: left as it is
            return m[0]
        return (f"({m[1]} is defined and {m[1]} is not jinja2_{m[3]})" if m[2]
                else f"({m[1]} is undefined or {m[1]} is jinja2_{m[3]})")

    return _TAG.sub(lambda tag: _SEQUENCE_TEST.sub(test, tag[0]), template)


def _jinja2_sequence(value) -> bool:
    """jinja2's ``sequence`` test, for a defined value (None is JSON's null: not a sequence)."""
    try:
        len(value)
        value.__getitem__
    except Exception:  # noqa: BLE001 - exactly jinja2's test
        return False
    return True


def _jinja2_iterable(value) -> bool:
    """jinja2's ``iterable`` test, for a defined value (None is JSON's null: not iterable)."""
    try:
        iter(value)
    except TypeError:
        return False
    return True


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

        source = jinja2_sequence_tests(template)
        construct = unsupported(source)
        if construct is not None:
            raise Unsupported(f"it uses {construct}, which MiniJinja renders differently from jinja2")
        env = minijinja.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, pycompat=True, fuel=FUEL)
        env.add_filter("tojson", _tojson)
        env.add_test("jinja2_sequence", _jinja2_sequence)
        env.add_test("jinja2_iterable", _jinja2_iterable)
        env.add_global("raise_exception", _raise_exception)
        env.add_global("strftime_now", _strftime_now)
        try:
            env.add_template("chat", source)
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
