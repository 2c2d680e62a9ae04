"""Which engine renders a chat template: MiniJinja, or transformers' renderer where MiniJinja cannot match it.

transformers' ``render_jinja_template`` is the reference (what every engine's ``apply_chat_template``
runs), but importing it costs 1.1-1.4 s of CPU and a render in jinja2's sandbox 0.2-0.6 ms.
:mod:`pipeline.core.minijinja_renderer` renders the same templates in the same environment for a
fraction of that. ``ChatRenderer`` uses it wherever it renders identically, and otherwise
transformers' (``template_adapter.TemplateRenderer``), which is imported only then:

* a template MiniJinja refuses (``Unsupported``: it does not compile, or uses a construct MiniJinja
  renders differently) is rendered by transformers, every conversation;
* a render whose inputs MiniJinja would print otherwise (``plain_inputs``) is rendered by transformers;
* a render MiniJinja fails is rendered again by transformers: where that fails too, its error is the
  render's error (the same text as without MiniJinja); where it renders, transformers renders that
  template from then on. ``raise_exception`` in the template is the template's own error on either engine.

Each kind of fallback is said once per process and template (a ``TemplateFallback`` warning), and
:func:`fallbacks` lists them. A renderer cannot make a wrong prompt pass: the verdict compares the ids
of whatever text was rendered with the engine's ``prompt_ids``, and the two engines are proven
byte-identical on every shipped and generated conversation (``tests/test_minijinja_renderer.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

from .minijinja_renderer import MiniJinjaTemplate, TemplateRaised, Unsupported, plain_inputs
from .template_adapter import Prepared, TemplateRenderer
from .watchdog import TimeLimitExceeded

__all__ = ["ChatRenderer", "TemplateFallback", "fallbacks", "ENGINE_ENV"]

ENGINE_ENV = "TOKFIDELITY_TEMPLATE_ENGINE"  # "transformers": render every template with transformers' renderer


class TemplateFallback(UserWarning):
    """A chat template (or one input of it) rendered by transformers' renderer instead of MiniJinja."""


_said: dict[tuple[str, str], str] = {}  # (template's first line, kind of fallback) -> why, once per process


def fallbacks() -> list[tuple[str, str]]:
    """What this process rendered with transformers: (the template's first line, why), each once."""
    return [(head, why) for (head, _), why in _said.items()]


def _say(template: str, why: str, kind: str) -> None:
    head = next((line.strip() for line in template.splitlines() if line.strip()), "")[:80]
    if (head, kind) in _said:
        return
    _said[head, kind] = why
    warnings.warn(f"tokfidelity: the chat template beginning {head!r} is rendered by transformers' renderer, not "
                  f"MiniJinja: {why}", TemplateFallback, stacklevel=4)


def _engine_forced() -> bool:
    import os

    return os.environ.get(ENGINE_ENV, "") == "transformers"


class ChatRenderer:
    """One chat template, compiled once, rendering conversations as transformers' ``render_jinja_template``
    renders them (``TemplateRenderer``'s interface: conversation of plain dicts, ``Prepared``, generation prompt)."""

    def __init__(self, template: str):
        self.template = template
        self._mini: MiniJinjaTemplate | None = None
        self._reference: TemplateRenderer | None = None
        if _engine_forced():
            self._reference = TemplateRenderer(template)
            return
        try:
            self._mini = MiniJinjaTemplate(template)
        except Unsupported as e:
            _say(template, str(e), "template")
            self._reference = TemplateRenderer(template)  # compiled now: a lone pytest does this before its judges fork

    @property
    def engine(self) -> str:
        return "minijinja" if self._mini is not None else "transformers"

    def reference(self) -> TemplateRenderer:
        if self._reference is None:
            self._reference = TemplateRenderer(self.template)
        return self._reference

    def __call__(self, conversation: Sequence[Mapping], prepared: Prepared, add_generation_prompt: bool) -> str:
        mini = self._mini
        if mini is None:
            return self._reference(conversation, prepared, add_generation_prompt)
        if prepared.plain is None:
            prepared.plain = plain_inputs(prepared.tools) and plain_inputs(prepared.variables)
        if not (prepared.plain and plain_inputs(conversation)):
            _say(self.template, "an input holds a value MiniJinja prints otherwise (a float with an exponent, an "
                                "integer over 64 bits, a value not of JSON's types); those renders only", "input")
            return self.reference()(conversation, prepared, add_generation_prompt)
        try:
            return mini(conversation, prepared.tools, prepared.variables, add_generation_prompt)
        except TemplateRaised:
            raise
        except Exception as e:  # noqa: BLE001 - whatever MiniJinja refused, transformers' renderer decides
            failure = e
        except BaseException as e:  # the caller's time limit, arriving while MiniJinja ran Python code, is a panic there
            if type(e).__name__ == "PanicException" and TimeLimitExceeded.__name__ in str(e):
                raise TimeLimitExceeded() from None
            raise
        text = self.reference()(conversation, prepared, add_generation_prompt)  # its error, if it fails too, is the render's
        self._mini = None
        _say(self.template, f"MiniJinja failed a conversation transformers renders ({type(failure).__name__}: "
                            f"{str(failure).splitlines()[0][:200] if str(failure) else ''})", "render")
        return text
