"""Prompt rendering: a conversation to the prompt ids an engine feeds the model.

An engine (SGLang, vLLM, transformers) calls the model tokenizer's ``apply_chat_template``: the tokenizer
class may pre-process the inputs, transformers renders the model's chat template with them, and the text
is encoded with the model's own tokenizer, every special token allowed. tokfidelity does the same, and
runs no code from a model repository:

* the template is the model's own, from the tokenizer's files (:func:`chat_template`):
  ``chat_template.jinja`` in the tokenizer folder, else ``tokenizer_config.json``'s ``chat_template``,
  else a GGUF file's ``tokenizer.chat_template``;
* it is rendered by transformers' ``render_jinja_template`` (what ``apply_chat_template`` calls);
* the pre-processing a tokenizer class does in Python is data on the profile
  (``ProfileSpec.tools_preprocess``, ``ProfileSpec.chat_template_kwargs``), carried out by
  :data:`TOOL_STEPS`. Kimi K2.5: every tool dict deep-sorted by key, then ``tools_ts_str`` written by
  :mod:`pipeline.core.kimi_tools_ts` (left unset where the official encoder raises, so the template
  writes its compact JSON of the sorted tools), and ``thinking=True``, ``preserve_thinking=False``.

No format is hand-written here: the template is the only description of the prompt, so a new model
needs its tokenizer files and, where its tokenizer class pre-processes, a profile entry.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import TokfidelityError
from .kimi_tools_ts import deep_sort, tools_typescript
from .profiles import Profile
from .tokenizer import Tokenizer

__all__ = ["RenderError", "chat_template", "template_inputs", "render_text", "render_prompt", "TOOL_STEPS"]


class RenderError(TokfidelityError, ValueError):
    """A conversation that cannot be rendered; ``field`` names the message and field."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


# ------------------------------------------------------------------------------------------
# The model's own template
# ------------------------------------------------------------------------------------------
def _gguf_template(path: Path) -> str | None:
    import gguf

    field = gguf.GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    return bytes(field.parts[field.data[0]]).decode("utf-8") if field is not None else None


def _config_templates(config: Path) -> dict[str, str]:
    with open(config, encoding="utf-8") as f:
        value = json.load(f).get("chat_template")
    if isinstance(value, str):
        return {"default": value}
    if isinstance(value, list):  # named templates, as transformers stores several
        return {t["name"]: t["template"] for t in value if isinstance(t, Mapping) and "name" in t and "template" in t}
    return {}


@functools.cache
def _templates(source: str) -> tuple[dict[str, str], str]:
    path = Path(source)
    tried = []
    if path.is_file():
        if path.suffix == ".gguf":
            text = _gguf_template(path)
            if text is not None:
                return {"default": text}, f"{path} (tokenizer.chat_template)"
            tried.append(f"{path} (no tokenizer.chat_template)")
            path = None
        else:
            path = path.parent
    if path is not None:
        jinja = path / "chat_template.jinja"
        if jinja.is_file():
            return {"default": jinja.read_text(encoding="utf-8")}, str(jinja)
        tried.append(str(jinja))
        config = path / "tokenizer_config.json"
        if config.is_file():
            named = _config_templates(config)
            if named:
                return named, f"{config} (chat_template)"
        tried.append(f"{config} (chat_template)")
    raise RenderError("chat_template", f"no chat template for the tokenizer from {source}; looked at: {'; '.join(tried)}. "
                      "Put the model's chat_template.jinja beside its tokenizer files")


def chat_template(tokenizer: Tokenizer, tools: Sequence | None = None) -> tuple[str, str]:
    """(template text, where it came from) for this tokenizer, read once per process. A tokenizer_config
    with named templates gives ``tool_use`` when there are tools, else ``default`` (as transformers)."""
    named, where = _templates(tokenizer.source)
    name = "tool_use" if tools and "tool_use" in named else "default"
    if name not in named:
        raise RenderError("chat_template", f"{where} has templates {sorted(named)} but no 'default'")
    return named[name], where if len(named) == 1 else f"{where}[{name}]"


# ------------------------------------------------------------------------------------------
# What the tokenizer class does before the template (profile data -> steps)
# ------------------------------------------------------------------------------------------
def _deep_sort_step(tools: list, kwargs: dict) -> list:
    return deep_sort(tools)


def _kimi_typescript_step(tools: list, kwargs: dict) -> list:
    declarations = tools_typescript(tools)
    if declarations is not None:  # as Kimi's tokenizer: unset where the encoder raises
        kwargs["tools_ts_str"] = declarations
    return tools


TOOL_STEPS: dict[str, Callable[[list, dict], list]] = {
    "deep-sort": _deep_sort_step,  # every dict key-sorted (Kimi's deep_sort_dict)
    "kimi-typescript": _kimi_typescript_step,  # tools_ts_str, Kimi K2.5's TypeScript declarations
}


def template_inputs(tools: Sequence | None, profile: Profile) -> tuple[list | None, dict[str, Any]]:
    """(tools, extra template variables) as the model's tokenizer class passes them to its template."""
    kwargs = dict(profile.spec.chat_template_kwargs)
    if tools is None:
        return None, kwargs
    if not isinstance(tools, Sequence) or isinstance(tools, str) or not all(isinstance(t, Mapping) for t in tools):
        raise RenderError("tools", "expected a list of tool objects")
    tools = [dict(t) for t in tools]
    if tools:
        for step in profile.spec.tools_preprocess:
            tools = TOOL_STEPS[step](tools, kwargs)
    return tools, kwargs


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        raise RenderError("messages", "expected a list of message objects")
    if not messages:
        raise RenderError("messages", "an empty conversation has no prompt (engines refuse it too)")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RenderError(f"messages[{i}]", "expected an object with a string 'role'")
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                kind = part.get("type") if isinstance(part, Mapping) else None
                if not isinstance(part, Mapping) or kind not in (None, "text") or not isinstance(part.get("text"), str):
                    raise RenderError(f"messages[{i}].content[{j}]",
                                      f"only text parts can be rendered (the ids of media come from the engine), got {kind or type(part).__name__!r}")
        elif content is not None and not isinstance(content, str):
            raise RenderError(f"messages[{i}].content", f"expected a string or a list of text parts, got {type(content).__name__}")


def render_text(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, tokenizer: Tokenizer,
                add_generation_prompt: bool = True) -> str:
    """The prompt text the model's chat template renders (marker text included)."""
    from jinja2 import TemplateError
    from transformers.utils.chat_template_utils import render_jinja_template

    _check_messages(messages)
    tools, kwargs = template_inputs(tools, profile)
    template, where = chat_template(tokenizer, tools)
    try:
        rendered, _ = render_jinja_template([list(messages)], tools=tools, chat_template=template,
                                            add_generation_prompt=add_generation_prompt, **kwargs)
    except (TemplateError, TypeError, ValueError, KeyError, AttributeError) as e:
        raise RenderError("messages", f"the chat template {where} cannot render this conversation: {type(e).__name__}: {e}") from None
    return rendered[0]


def render_prompt(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, tokenizer: Tokenizer,
                  add_generation_prompt: bool = True) -> list[int]:
    """The prompt ids an engine feeds the model: the rendered text encoded as the model's tokenizer
    does (marker text becomes its special id, exactly as in the engine)."""
    return tokenizer.encode(render_text(messages, tools, profile, tokenizer, add_generation_prompt))
