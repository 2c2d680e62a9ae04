"""The prompt renderers a profile names (``ProfileSpec.prompt_renderer``): each family's one way of turning a
conversation into the prompt ids its engines feed the model.

Every caller that renders a prompt goes through ``prompt_renderer(spec)``: ``render.render_prompt`` (the
``tokfidelity render`` command, capture, the engine check, the golden scripts), ``api.render_prompt_ids``, the
prompt verdicts (``prompt_check.PromptJudge``) and the build. No caller asks which family it renders for.

* ``template``: the model's own chat template (:mod:`pipeline.core.render`), rendered as transformers does;
  its file is read, pinned by the gate and compiled once per process (``uses_template``);
* ``harmony``: openai-harmony, gpt-oss's official renderer (:mod:`pipeline.core.harmony_prompts`);
* ``dsv32``: DeepSeek-V3.2's Python encoder, restated (:mod:`pipeline.core.dsv32_prompts`); the model
  ships no template.

A family of another package registers its own renderer with ``register_prompt_renderer`` (from the module its
entry point names) and names it in its profile spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import TokfidelityError

__all__ = ["PromptRenderer", "register_prompt_renderer", "prompt_renderer", "prompt_renderer_names"]


@dataclass(frozen=True)
class PromptRenderer:
    name: str
    # (messages, tools, chat_template_kwargs, profile, tokenizer, add_generation_prompt) -> the prompt ids
    ids: Callable[..., list[int]]
    # (messages, tools, chat_template_kwargs, profile, tokenizer) -> the ids the renderer writes before the first
    # turn on its own (harmony's system and developer messages); None: it writes none (a template's preamble
    # belongs to the first message)
    preamble_ids: Callable[..., list[int]] | None = None
    uses_template: bool = False  # renders the model's chat template: its file is read, pinned and compiled


_RENDERERS: dict[str, PromptRenderer] = {}


def register_prompt_renderer(renderer: PromptRenderer) -> PromptRenderer:
    """Register ``renderer`` under its name; a name taken by another renderer is an error."""
    found = _RENDERERS.get(renderer.name)
    if found is not None and found is not renderer:
        raise TokfidelityError(f"prompt renderer {renderer.name!r} is registered twice", field="prompt_renderer")
    _RENDERERS[renderer.name] = renderer
    return renderer


def prompt_renderer_names() -> tuple[str, ...]:
    return tuple(_RENDERERS)


def prompt_renderer(spec: Any) -> PromptRenderer:
    """The renderer a profile spec (or a bound profile) names."""
    spec = getattr(spec, "spec", spec)
    found = _RENDERERS.get(spec.prompt_renderer)
    if found is None:
        raise TokfidelityError(f"profile {spec.name}: no prompt renderer {spec.prompt_renderer!r}; registered: "
                               f"{', '.join(_RENDERERS)}", field="prompt_renderer")
    return found


def _template_ids(messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None, profile, tokenizer,
                  add_generation_prompt: bool = True) -> list[int]:
    from .render import render_text

    return tokenizer.encode(render_text(messages, tools, profile, tokenizer, add_generation_prompt, chat_template_kwargs=kwargs))


def _harmony_ids(messages, tools, kwargs, profile, tokenizer, add_generation_prompt: bool = True) -> list[int]:
    from .harmony_prompts import harmony_prompt_ids

    return harmony_prompt_ids(messages, tools, kwargs, tokenizer, add_generation_prompt, dict(profile.spec.chat_template_kwargs))


def _harmony_preamble(messages, tools, kwargs, profile, tokenizer) -> list[int]:
    from .harmony_prompts import harmony_preamble_ids

    return harmony_preamble_ids(messages, tools, kwargs, tokenizer, profile.spec.chat_template_kwargs)


def _dsv32_ids(messages, tools, kwargs, profile, tokenizer, add_generation_prompt: bool = True) -> list[int]:
    """The encoder writes the assistant's opening after the last user message itself: there is no prompt without it."""
    from .dsv32_prompts import dsv32_prompt_ids

    return dsv32_prompt_ids(messages, tools, kwargs, tokenizer)


register_prompt_renderer(PromptRenderer("template", _template_ids, uses_template=True))
register_prompt_renderer(PromptRenderer("harmony", _harmony_ids, _harmony_preamble))
register_prompt_renderer(PromptRenderer("dsv32", _dsv32_ids))
