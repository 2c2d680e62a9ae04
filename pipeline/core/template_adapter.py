"""Every use of transformers' private chat-template code, in one place (checked range: ``CHECKED``).

transformers' ``render_jinja_template`` (what ``apply_chat_template`` calls, in every engine) does three
things on each call: it compiles the template (cached, ``_compile_jinja_template``), rebuilds the tools,
the template variables and the conversation out of plain JSON data (``_plain_template_data``, a deep
copy), aliases a message's reasoning under its other names (``_alias_reasoning_fields``), then renders.
A judge renders thousands of conversations that share a few tool sets, and the deep copy of the tools
was about a quarter of each render. ``TemplateRenderer`` does the same steps with the same functions,
but makes the plain tools and variables once per distinct set (``prepare``); the conversation is
still rebuilt on every render. Nothing is reimplemented: a template sees exactly what
``render_jinja_template`` gives it, the same objects in the same environment.

Outside the checked releases, ``self_test`` decides (``checked_versions``): it checks that
``render_jinja_template`` still takes these steps and that they render a conversation with tools as it
does. Where it fails, ``TemplateRenderer`` calls the public ``render_jinja_template`` on every render
instead (the same text, more time). ``tests/test_render.py`` renders every shipped conversation both ways.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .checked_versions import CheckedRange, usable

__all__ = ["CHECKED", "TemplateRenderer", "Prepared", "checked", "self_test"]

CHECKED = CheckedRange("transformers", "pipeline/core/template_adapter.py", "5.24.0", "5.24.0")
# The calls render_jinja_template makes that TemplateRenderer repeats (self_test reads its source for them).
STEPS = ("_compile_jinja_template(chat_template)", "_plain_template_data(tool_schemas)", "_plain_template_data(kwargs)",
         "_plain_template_data(chat)", "_alias_reasoning_fields(chat)", "compiled_template.render(")


def checked() -> bool:
    """May the private path be taken with the installed transformers? (Once per process.)"""
    return usable(CHECKED, self_test)


def self_test() -> None:
    """Raise unless render_jinja_template still takes ``STEPS`` and the private path renders as it does."""
    import inspect

    from transformers.utils import chat_template_utils as utils

    source = inspect.getsource(utils.render_jinja_template)
    missing = [step for step in STEPS if step not in source]
    if missing:
        raise AssertionError(f"render_jinja_template no longer calls {', '.join(missing)}")
    template = ("{%- for m in messages %}{{ m.role }}:{{ m.content }}|{{ m.reasoning_content or '' }}\n{%- endfor %}"
                "{%- if tools %}{{ tools | tojson }}{% endif %}{%- if add_generation_prompt %}assistant:{% endif %}")
    conversation = [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": "x", "reasoning": "r"}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    public, _ = utils.render_jinja_template([conversation], tools=tools, chat_template=template, add_generation_prompt=True)
    chat = utils._alias_reasoning_fields(utils._plain_template_data(conversation))
    private = utils._compile_jinja_template(template).render(
        messages=chat, tools=utils._plain_template_data(tools), documents=None, add_generation_prompt=True)
    if private != public[0]:
        raise AssertionError(f"the private steps render {private!r}, render_jinja_template {public[0]!r}")


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
