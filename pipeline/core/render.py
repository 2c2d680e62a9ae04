"""Prompt rendering: a conversation to the prompt ids an engine feeds the model.

An engine (SGLang, vLLM, transformers) renders the model's chat template to text and encodes that
text with the model's own tokenizer, special tokens allowed. ``render_prompt`` does the same with
each format written out in Python (no template engine per sample): ``render_text`` builds the text
exactly as the profile's chat template does (tests compare it with the real template files), and
``tokenizer.encode`` turns it into ids. Marker texts come from the bound profile, never literals.

Formats (``ProfileSpec.chat_format``):

* ``kimi-k2.5``: ``../shared/tokenizers/kimi-k2.5/chat_template.jinja``: tool declarations first
  (compact JSON of the key-sorted tools: the template's path when no TypeScript declaration
  ``tools_ts_str`` is given), then each turn ``<|im_user|>user<|im_middle|>...<|im_end|>``; assistant
  turns before the last plain assistant turn get ``<think></think>``, later ones keep their
  reasoning; tool results ``<|im_system|>{name or "tool"}<|im_middle|>## Return of {id}\\n{content}``;
  the generation prompt ends ``<|im_assistant|>assistant<|im_middle|><think>``.
* ``kimi-k2``: ``kimi-k2/chat_template.jinja`` (July 2025): JSON tool declarations, a default system
  turn, assistant tool calls not rendered.
* ``chatml``: ``<|im_start|>{role}\\n{content}<|im_end|>\\n``, SmolLM2's default system turn; tools ignored
  (as SmolLM2's template does).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import TokfidelityError
from .profiles import Profile
from .tokenizer import Tokenizer

__all__ = ["RenderError", "render_text", "render_prompt", "FORMATS"]


class RenderError(TokfidelityError, ValueError):
    """A conversation this format cannot render; ``field`` names the message and field."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


def _deep_sort(value: Any) -> Any:
    """Kimi's tokenizer key-sorts tool dicts (``deep_sort_dict``) before rendering."""
    if isinstance(value, Mapping):
        return {k: _deep_sort(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_deep_sort(v) for v in value]
    return value


def _tojson(value: Any, compact: bool = False) -> str:
    """transformers' ``tojson`` filter: ensure_ascii off, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":") if compact else None)


def _content(message: Mapping, where: str, *, none_ok: bool = True) -> str:
    content = message.get("content")
    if content is None:
        if none_ok:
            return ""
        raise RenderError(f"{where}.content", "missing; this format needs a string or a list of text parts")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind in ("image", "image_url", "video", "video_url") or not isinstance(part, Mapping) or "text" not in part:
                raise RenderError(f"{where}.content[{i}]", f"only text parts can be rendered, got {kind or type(part).__name__!r}")
            parts.append(str(part["text"]))
        return "".join(parts)
    raise RenderError(f"{where}.content", f"expected a string or a list of parts, got {type(content).__name__}")


def _kimi_tool_calls(message: Mapping, t: Mapping[str, str], where: str) -> str:
    out = [t["tool_calls_begin"]]
    for i, call in enumerate(message["tool_calls"]):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise RenderError(f"{where}.tool_calls[{i}].function", "expected an object with 'name' and 'arguments'")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = _tojson(arguments)
        out += [t["tool_call_begin"], str(call.get("id")), t["tool_call_argument_begin"], arguments, t["tool_call_end"]]
    out.append(t["tool_calls_end"])
    return "".join(out)


def _kimi_k25(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, add_generation_prompt: bool) -> str:
    t = profile.texts
    system, user, assistant = t["prompt.system"], t["prompt.user"], t["prompt.assistant"]
    middle, end = t["prompt.middle"], t["prompt.end"]
    think_open, think_close = t["prompt.think_begin"], t["prompt.think_end"]
    out: list[str] = []
    if tools:
        out += [system, "tool_declare", middle, _tojson(_deep_sort(list(tools)), compact=True), end]
    default = profile.spec.chat_default_system
    if default is not None and (not messages or messages[0].get("role") != "system"):
        out += [system, "system", middle, default, end]
    # Assistant turns up to the last one without tool calls are history: their reasoning is dropped.
    last_plain = -1
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant" and not messages[i].get("tool_calls"):
            last_plain = i
            break
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role")
        name = message.get("name") or role
        header = user if role == "user" else assistant if role == "assistant" else system
        out += [header, str(name), middle]
        if role == "assistant":
            if i <= last_plain or not profile.spec.thinking:
                reasoning = ""
            else:
                reasoning = message.get("reasoning")
                if reasoning is None:
                    reasoning = message.get("reasoning_content") or ""
            out += [think_open, reasoning, think_close, _content(message, where)]
            if message.get("tool_calls"):
                out.append(_kimi_tool_calls(message, t, where))
        elif role == "tool":
            out += ["## Return of ", str(message.get("tool_call_id")), "\n", _content(message, where)]
        else:
            out.append(_content(message, where))
        out.append(end)
    if add_generation_prompt:
        out += [assistant, "assistant", middle, think_open if profile.spec.thinking else think_open + think_close]
    return "".join(out)


def _kimi_k2(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, add_generation_prompt: bool) -> str:
    t = profile.texts
    system, middle, end = t["prompt.system"], t["prompt.middle"], t["prompt.end"]
    headers = {"system": system + "system", "user": t["prompt.user"] + "user",
               "assistant": t["prompt.assistant"] + "assistant", "tool": system + "tool"}
    out: list[str] = []
    if tools:
        out += [system, "tool_declare", middle, _tojson(_deep_sort(list(tools))), end]
    default = profile.spec.chat_default_system
    if default is not None and messages and messages[0].get("role") != "system":
        out += [system, "system", middle, default, end]
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in headers:
            raise RenderError(f"messages[{i}].role", f"this format knows {', '.join(headers)}, got {role!r}")
        out += [headers[role], middle, _content(message, f"messages[{i}]", none_ok=False), end]
    if add_generation_prompt:
        out += [t["prompt.assistant"], "assistant", middle]
    return "".join(out)


def _chatml(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, add_generation_prompt: bool) -> str:
    start, end = profile.texts["prompt.start"], profile.texts["prompt.end"]
    out: list[str] = []
    default = profile.spec.chat_default_system
    if default is not None and messages and messages[0].get("role") != "system":
        out += [start, "system\n", default, end, "\n"]
    for i, message in enumerate(messages):
        role = message.get("role")
        if not isinstance(role, str):
            raise RenderError(f"messages[{i}].role", f"expected a string, got {role!r}")
        out += [start, role, "\n", _content(message, f"messages[{i}]", none_ok=False), end, "\n"]
    if add_generation_prompt:
        out += [start, "assistant\n"]
    return "".join(out)


FORMATS: dict[str, Callable[[Sequence[Mapping], Sequence | None, Profile, bool], str]] = {
    "kimi-k2.5": _kimi_k25,
    "kimi-k2": _kimi_k2,
    "chatml": _chatml,
}


def render_text(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, add_generation_prompt: bool = True) -> str:
    """The prompt text the profile's chat template renders (marker text included)."""
    fmt = profile.spec.chat_format or profile.name
    try:
        render = FORMATS[fmt]
    except KeyError:
        raise RenderError("profile", f"no prompt format {fmt!r} for profile {profile.name}; known: {', '.join(FORMATS)}") from None
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RenderError(f"messages[{i}]", "expected an object with a string 'role'")
    return render(messages, tools, profile, add_generation_prompt)


def render_prompt(
    messages: Sequence[Mapping],
    tools: Sequence | None,
    profile: Profile,
    tokenizer: Tokenizer,
    add_generation_prompt: bool = True,
) -> list[int]:
    """The prompt ids an engine feeds the model: the rendered text encoded as the model's tokenizer
    does (marker text becomes its special id, exactly as in the engine)."""
    return tokenizer.encode(render_text(messages, tools, profile, add_generation_prompt))
