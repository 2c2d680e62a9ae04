"""gpt-oss prompts through its official renderer, openai-harmony.

A request's OpenAI-style conversation becomes a harmony ``Conversation`` as gpt-oss's chat template
lays it out, and ``render_conversation_for_completion(conversation, Role.ASSISTANT)`` gives the prompt
ids (ending ``<|start|>assistant``):

* a system message: harmony's system content (``reasoning_effort``, default ``medium``; the
  ``conversation_start_date`` and ``model_identity`` template variables where given);
* the request's ``system`` (or ``developer``) message: the developer message's instructions, with the
  request's function tools declared in it (``tools``: ``{"type": "function", "function": {...}}``);
* ``user`` messages as they are; an ``assistant`` turn as its ``reasoning`` (analysis channel), its
  content (final channel) and each tool call (commentary channel, to ``functions.NAME``, JSON);
  a ``tool`` message as the named function's answer to the assistant.

Template variables come from the sample's ``chat_template_kwargs`` over the profile's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .harmony import harmony_encoding
from .render import RenderError
from .tokenizer import Tokenizer

__all__ = ["harmony_prompt_ids", "harmony_preamble_ids", "harmony_conversation"]

_EFFORTS = ("low", "medium", "high")


def _text(message: Mapping, i: int) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise RenderError(f"messages[{i}].content", "expected a string or a list of text parts")


def _system(h, kwargs: Mapping[str, Any]):
    effort = kwargs.get("reasoning_effort", "medium")
    if effort not in _EFFORTS:
        raise RenderError("chat_template_kwargs.reasoning_effort", f"expected one of {', '.join(_EFFORTS)}, got {effort!r}")
    system = h.SystemContent.new().with_reasoning_effort(h.ReasoningEffort[effort.upper()])
    if kwargs.get("model_identity") is not None:
        system = system.with_model_identity(str(kwargs["model_identity"]))
    if kwargs.get("conversation_start_date") is not None:
        system = system.with_conversation_start_date(str(kwargs["conversation_start_date"]))
    return h.Message.from_role_and_content(h.Role.SYSTEM, system)


def _developer(h, instructions: str | None, tools: Sequence | None):
    if not instructions and not tools:
        return None
    dev = h.DeveloperContent.new()
    if instructions:
        dev = dev.with_instructions(instructions)
    if tools:
        described = []
        for k, tool in enumerate(tools):
            f = tool.get("function") if isinstance(tool, Mapping) else None
            if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
                raise RenderError(f"tools[{k}]", 'expected {"type": "function", "function": {"name", ...}}')
            described.append(h.ToolDescription.new(f["name"], f.get("description", ""), parameters=f.get("parameters")))
        dev = dev.with_function_tools(described)
    return h.Message.from_role_and_content(h.Role.DEVELOPER, dev)


def _assistant(h, message: Mapping, i: int) -> list:
    out = []
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    if reasoning:
        out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, reasoning).with_channel("analysis"))
    text = _text(message, i)
    if text:
        out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, text).with_channel("final"))
    for k, call in enumerate(message.get("tool_calls") or ()):
        f = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
            raise RenderError(f"messages[{i}].tool_calls[{k}]", "expected a function call with a name")
        args = f.get("arguments", "{}")
        args = args if isinstance(args, str) else json.dumps(args)
        out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, args).with_channel("commentary")
                   .with_recipient(f"functions.{f['name']}").with_content_type("<|constrain|>json"))
    return out


def harmony_conversation(messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any]):
    """The harmony Conversation gpt-oss's template lays out for this request."""
    import openai_harmony as h

    instructions = [_text(m, i) for i, m in enumerate(messages) if m.get("role") in ("system", "developer")]
    out = [_system(h, kwargs)]
    developer = _developer(h, "\n\n".join(instructions) or None, tools)
    if developer is not None:
        out.append(developer)
    names: dict[str, str] = {}  # tool-call id -> function name, for the tool messages that answer them
    for i, message in enumerate(messages):
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        if role == "user":
            out.append(h.Message.from_role_and_content(h.Role.USER, _text(message, i)))
        elif role == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    names[str(call.get("id"))] = str(call["function"].get("name"))
            out += _assistant(h, message, i)
        elif role == "tool":
            name = message.get("name") or names.get(str(message.get("tool_call_id")), "tool")
            author = h.Author.new(h.Role.TOOL, f"functions.{name}")
            out.append(h.Message.from_author_and_content(author, _text(message, i)).with_channel("commentary").with_recipient("assistant"))
        else:
            raise RenderError(f"messages[{i}].role", f"gpt-oss has no role {role!r} (system, developer, user, assistant, tool)")
    return h.Conversation.from_messages(out)


def harmony_preamble_ids(messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None,
                         tokenizer: Tokenizer, defaults: Mapping[str, Any] = ()) -> list[int]:
    """The ids of the system and developer messages harmony writes before the conversation's turns."""
    system_only = [m for m in messages if m.get("role") in ("system", "developer")]
    variables = {**dict(defaults), **dict(kwargs or {})}
    return list(harmony_encoding(tokenizer).render_conversation(harmony_conversation(system_only, tools, variables)))


def harmony_prompt_ids(messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None,
                       tokenizer: Tokenizer, add_generation_prompt: bool = True, defaults: Mapping[str, Any] = ()) -> list[int]:
    """The prompt ids openai-harmony renders for this request (``render_conversation_for_completion``;
    without the generation prompt, ``render_conversation``)."""
    import openai_harmony as h

    variables = {**dict(defaults), **dict(kwargs or {})}
    conversation = harmony_conversation(messages, tools, variables)
    encoding = harmony_encoding(tokenizer)
    try:
        if add_generation_prompt:
            return list(encoding.render_conversation_for_completion(conversation, h.Role.ASSISTANT))
        return list(encoding.render_conversation(conversation))
    except h.HarmonyError as e:
        raise RenderError("messages", f"openai-harmony cannot render this conversation: {e}") from None
