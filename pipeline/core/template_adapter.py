"""Every use of transformers' private chat-template code, in one place (checked against transformers 5.24.0).

transformers' ``render_jinja_template`` (what ``apply_chat_template`` calls, in every engine) does three
things on each call: it compiles the template (cached, ``_compile_jinja_template``), rebuilds the tools,
the template variables and the conversation out of plain JSON data (``_plain_template_data``, a deep
copy), aliases a message's reasoning under its other names (``_alias_reasoning_fields``), then renders.
A judge renders thousands of conversations that share a few tool sets, and the deep copy of the tools
was about a quarter of each render. ``TemplateRenderer`` does the same steps with the same functions,
but makes the plain tools and variables once per distinct set (``prepare``); the conversation is
still rebuilt on every render. Nothing is reimplemented: a template sees exactly what
``render_jinja_template`` gives it, the same objects in the same environment.

Where the installed transformers is not the version this was checked against, ``TemplateRenderer``
calls the public ``render_jinja_template`` on every render instead (the same text, more time).
``tests/test_library_adapters.py`` fails loudly when a new transformers changes any of this, and
``tests/test_render.py`` renders every shipped conversation both ways.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CHECKED_VERSION", "TemplateRenderer", "Prepared", "checked"]

CHECKED_VERSION = "5.24.0"
_checked: bool | None = None


def checked() -> bool:
    """Whether the installed transformers is the version the private path was checked against."""
    global _checked
    if _checked is None:
        from importlib.metadata import version

        _checked = version("transformers") == CHECKED_VERSION
    return _checked


class Prepared:
    """A render's tools and template variables, as given (``tools``, ``variables``), made once per distinct set
    and shared by every render with them: no template can change them (jinja's immutable sandbox,
    MiniJinja's values). ``jinja()`` gives them as transformers' template sees them (plain data on the
    checked path), made on first use; ``plain`` is the MiniJinja renderer's note of whether it may render them."""

    __slots__ = ("tools", "variables", "plain", "_jinja")

    def __init__(self, tools: list | None, variables: Mapping[str, Any]):
        self.tools, self.variables = tools, dict(variables)
        self.plain: bool | None = None
        self._jinja: tuple[list | None, dict[str, Any]] | None = None

    def jinja(self) -> tuple[list | None, dict[str, Any]]:
        if self._jinja is None:
            if checked():
                from transformers.utils.chat_template_utils import _plain_template_data

                self._jinja = (_plain_template_data(self.tools), _plain_template_data(self.variables))
            else:
                self._jinja = (self.tools, self.variables)
        return self._jinja


class TemplateRenderer:
    """One chat template, compiled once, rendering conversations as ``render_jinja_template`` does
    (no documents, no assistant mask, no continued final message: what an engine's chat endpoint
    renders for a generation)."""

    def __init__(self, template: str):
        from transformers.utils import chat_template_utils as utils

        self.template = template
        self._utils = utils
        self._compiled = utils._compile_jinja_template(template) if checked() else None

    def __call__(self, conversation: Sequence[Mapping], prepared: Prepared, add_generation_prompt: bool) -> str:
        utils = self._utils
        tools, variables = prepared.jinja()
        if self._compiled is None:
            rendered, _ = utils.render_jinja_template([conversation], tools=tools, chat_template=self.template,
                                                      add_generation_prompt=add_generation_prompt, **variables)
            return rendered[0]
        chat = utils._plain_template_data(conversation)
        for message in chat:
            if not isinstance(message, dict):
                raise TypeError(f"Chat messages should be dicts, dataclasses or pydantic models, but got {message!r}.")
        chat = utils._alias_reasoning_fields(chat)
        return self._compiled.render(messages=chat, tools=tools, documents=None,
                                     add_generation_prompt=add_generation_prompt, **variables)
