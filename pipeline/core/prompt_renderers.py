"""The prompt renderers a profile names (``ProfileSpec.prompt_renderer``): each family's one way of turning a
conversation into the prompt ids its engines feed the model.

Every caller that renders a prompt goes through ``prompt_renderer(spec)``: ``render_prompt`` (the
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
from .render import TemplateMismatch, render_text, template_choice, template_digest, template_pin, use_chat_template

__all__ = ["PromptRenderer", "register_prompt_renderer", "prompt_renderer", "prompt_renderer_names", "render_prompt",
           "use_manifest_template", "prompt_template_pins", "TemplateMismatch"]


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


def render_prompt(messages: Sequence[Mapping], tools: Sequence | None, profile, tokenizer, add_generation_prompt: bool = True,
                  *, chat_template_kwargs: Mapping[str, Any] | None = None) -> list[int]:
    """The prompt ids an engine feeds the model, from the profile's own prompt renderer: the model's chat
    template, its text encoded as the model's tokenizer does (marker text becomes its special id, exactly as
    in the engine); openai-harmony for gpt-oss; DeepSeek-V3.2's encoder."""
    return prompt_renderer(profile).ids(messages, tools, chat_template_kwargs, profile, tokenizer, add_generation_prompt)


def use_manifest_template(manifest, profile, tokenizer) -> None:
    """Before a dataset's prompts are rendered: the chat template its manifest names, read and checked
    (``render.TemplateMismatch``), then the template read (and pinned) once, before judges fork. Nothing for a
    profile whose prompt renderer reads no template."""
    if prompt_renderer(profile).uses_template:
        use_chat_template(tokenizer, template_choice(manifest))
        template_pin(tokenizer)


def prompt_template_pins(profile, tokenizer, *, fresh: bool = False) -> tuple[dict[str, str], str | None]:
    """(``template_pin``, ``template_digest``) of the template this profile's prompts are rendered with;
    ({}, None) when its prompt renderer reads none (openai-harmony, DeepSeek-V3.2's encoder). ``fresh``: as
    ``template_digest``'s."""
    if not prompt_renderer(profile).uses_template:
        return {}, None
    return template_pin(tokenizer), template_digest(tokenizer, fresh=fresh)
