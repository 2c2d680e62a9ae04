"""DeepSeek-V3.2 prompts: the model's own Python encoding (``encoding/encoding_dsv32.py`` in the model
repository; it ships no jinja template), restated here so that no code from a model folder runs.

Both engines carry a copy of that encoder: SGLang's ``entrypoints/openai/encoding_dsv32.py`` and vLLM's
``tokenizers/deepseek_v32_encoding.py``; ``tests/test_dsv32_prompts.py`` proves this restatement equal to
each, called as each engine calls it:

* SGLang (``serving_chat``): thinking is the request's ``thinking`` template variable; an empty system
  message is put first unless the first message is a system message, and the request's tools go into
  that first message; past reasoning is read from ``reasoning_content``;
* vLLM (``DeepseekV32Tokenizer.apply_chat_template``): thinking is ``thinking`` or ``enable_thinking``;
  a system message holding the tools is put first whenever the request has tools (a request's own
  system message then follows it); past reasoning is read from ``reasoning``.

The layout (``encode_messages``): ``<｜begin▁of▁sentence｜>``; a system message's content, then
``\\n\\n`` and the tools block (``TOOLS_TEMPLATE``, each function as one JSON line); a user message as
``<｜User｜>{content}<｜Assistant｜>``, then ``<think>`` when it is the last user message and thinking is on,
else ``</think>``; an assistant message as ``{reasoning</think>, only after the last user message in
thinking mode}{content}{\\n\\n<｜DSML｜function_calls>...}<｜end▁of▁sentence｜>``, each call's arguments as
DSML parameters (``string="true"`` and the value as it is for a string, else ``"false"`` and its JSON);
tool results inside ``\\n\\n<function_results>`` ... ``\\n</function_results>`` then ``\\n\\n<think>`` or
``\\n\\n</think>`` as for a user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any



def RenderError(field: str, message: str):  # noqa: N802 - render.RenderError, imported late: families import this module
    from .render import RenderError as error

    return error(field, message)

__all__ = ["dsv32_prompt_text", "dsv32_prompt_ids", "dsml_arguments", "dsml_calls", "DSML", "TOOLS_TEMPLATE"]

DSML = "｜DSML｜"
BOS, EOS, THINK_BEGIN, THINK_END = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<think>", "</think>"
TOOLS_TEMPLATE = f"""## Tools
You have access to a set of tools you can use to answer the user's question.
You can invoke functions by writing a "<{DSML}function_calls>" block like the following as part of your reply to the user:
<{DSML}function_calls>
<{DSML}invoke name="$FUNCTION_NAME">
<{DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{DSML}parameter>
...
</{DSML}invoke>
<{DSML}invoke name="$FUNCTION_NAME2">
...
</{DSML}invoke>
</{DSML}function_calls>
String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects should use JSON format. The "string" attribute should be set to "true" for string type parameters and "false" for other types (numbers, booleans, arrays, objects).
If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking block. Here is an example:
<{DSML}function_calls>
...
</{DSML}function_calls>
<function_results>
...
</function_results>
{THINK_BEGIN}...thinking about results{THINK_END}
Here are the functions available in JSONSchema format:
<functions>
{{tool_schemas}}
</functions>
"""
RESPONSE_FORMAT = "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n{schema}"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, UnicodeEncodeError):  # the encoder's fallback (a lone surrogate)
        return json.dumps(value, ensure_ascii=True)


def dsml_arguments(arguments: Any) -> str:
    """A call's arguments (a JSON object, or its text) as DSML parameter lines, as the model writes them."""
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    if not isinstance(arguments, Mapping):
        raise RenderError("tool_calls.function.arguments", "must be a JSON object")
    return "\n".join(
        f'<{DSML}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
        f"{v if isinstance(v, str) else _json(v)}</{DSML}parameter>"
        for k, v in arguments.items())


def dsml_calls(calls: Sequence[tuple[str, Any]]) -> str:
    """``<｜DSML｜function_calls>`` holding each (name, arguments) call as an invoke block (no leading blank line)."""
    invokes = "\n".join(f'<{DSML}invoke name="{name}">\n{dsml_arguments(args)}\n</{DSML}invoke>' for name, args in calls)
    return f"<{DSML}function_calls>\n{invokes}\n</{DSML}function_calls>"


def _tools_block(tools: Sequence[Mapping]) -> str:
    return TOOLS_TEMPLATE.format(tool_schemas="\n".join(_json(t["function"]) for t in tools))


def _last_user(messages: Sequence[Mapping]) -> int:
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") in ("user", "developer")), -1)


def _system(msg: Mapping, tools) -> str:
    out = msg.get("content") or ""
    if tools:
        out += "\n\n" + _tools_block(tools)
    if msg.get("response_format"):
        out += "\n\n" + RESPONSE_FORMAT.format(schema=_json(msg["response_format"]))
    return out


def _tool_result(i: int, messages: Sequence[Mapping], thinking: bool, last_user: int) -> str:
    prev = i - 1
    while prev >= 0 and messages[prev].get("role") == "tool":
        prev -= 1
    if not (i == 0 or (prev >= 0 and messages[prev].get("role") == "assistant")):
        raise RenderError(f"messages[{i}]", "a tool result must follow an assistant message with tool calls")
    order, calls = i - prev, messages[prev].get("tool_calls") if prev >= 0 else None
    if not (calls and len(calls) >= order):
        raise RenderError(f"messages[{i}]", "a tool result with no tool call it answers")
    out = ("\n\n<function_results>" if order == 1 else "") + f"\n<result>{messages[i].get('content')}</result>"
    if order == len(calls):
        out += "\n</function_results>\n\n" + (THINK_BEGIN if i >= last_user and thinking else THINK_END)
    return out


def _assistant(i: int, msg: Mapping, thinking: bool, last_user: int, reasoning_key: str) -> str:
    calls = msg.get("tool_calls")
    tail = ""
    if calls:
        tail = "\n\n" + dsml_calls([(c["function"]["name"], c["function"]["arguments"]) for c in calls])
    head = ""
    if thinking and i > last_user:
        if not (msg.get(reasoning_key) or calls):
            raise RenderError(f"messages[{i}]", "in thinking mode an assistant message after the last user message "
                              "needs reasoning or tool calls")
        head = (msg.get(reasoning_key) or "") + THINK_END
    return head + (msg.get("content") or "") + tail + EOS


def _message(i: int, messages: Sequence[Mapping], thinking: bool, last_user: int, reasoning_key: str) -> str:
    msg = messages[i]
    role, content = msg.get("role"), msg.get("content")
    gen = THINK_BEGIN if i == last_user and thinking else THINK_END
    if role == "system":
        return _system(msg, msg.get("tools"))
    if role == "developer":
        if not content:
            raise RenderError(f"messages[{i}].content", "a developer message needs content")
        return f"<｜User｜>{_system({**msg, 'content': ''}, msg.get('tools'))}\n\n# The user's message is: {content}<｜Assistant｜>" + gen
    if role == "user":
        return f"<｜User｜>{content}<｜Assistant｜>" + gen
    if role == "tool":
        return _tool_result(i, messages, thinking, last_user)
    if role == "assistant":
        return _assistant(i, msg, thinking, last_user, reasoning_key)
    raise RenderError(f"messages[{i}].role", f"unknown role {role!r}")


def _as_engine(messages: Sequence[Mapping], tools: Sequence[Mapping] | None, engine: str) -> tuple[list[dict], bool]:
    """The message list the engine hands its encoder, and whether past reasoning is dropped."""
    out = [{**m, "content": "" if m.get("content") is None else m.get("content")} if engine == "sglang" else dict(m)
           for m in messages]
    if engine == "sglang":
        if not out or out[0].get("role") != "system":
            out.insert(0, {"role": "system", "content": ""})
        if tools:
            out[0]["tools"] = list(tools)
        return out, True
    if tools:
        out.insert(0, {"role": "system", "tools": list(tools)})
    return out, bool(out) and out[-1].get("role") == "user"


def dsv32_prompt_text(messages: Sequence[Mapping], tools: Sequence[Mapping] | None, chat_template_kwargs: Mapping | None,
                      engine: str = "sglang") -> str:
    """The prompt text DeepSeek-V3.2's encoder writes for this request, as ``engine`` ("sglang" or "vllm") calls it."""
    kwargs = chat_template_kwargs or {}
    thinking = kwargs.get("thinking") is True if engine == "sglang" else bool(kwargs.get("thinking") or kwargs.get("enable_thinking"))
    full, drop = _as_engine(messages, tools, engine)
    last_user = _last_user(full)
    if thinking and drop and any(m.get("role") not in ("user", "system", "tool", "assistant") for m in full[:last_user]):
        # drop_thinking_messages removes such a message, and encode_messages then indexes past the end
        raise RenderError("messages", "DeepSeek-V3.2's encoder fails on a developer message before the last user "
                          "message in thinking mode")
    key = "reasoning_content" if engine == "sglang" else "reasoning"
    return BOS + "".join(_message(i, full, thinking, last_user, key) for i in range(len(full)))


def dsv32_prompt_ids(messages: Sequence[Mapping], tools: Sequence[Mapping] | None, chat_template_kwargs: Mapping | None,
                     tokenizer, engine: str = "sglang") -> list[int]:
    """The prompt ids: the encoder's text encoded with its marker texts as their ids and no token added
    (vLLM encodes it with ``add_special_tokens=False``; the text already opens with the bos token)."""
    if not isinstance(messages, Sequence) or not all(isinstance(m, Mapping) for m in messages):
        raise RenderError("messages", "expected a list of message objects")
    return tokenizer.encode(dsv32_prompt_text(messages, tools, chat_template_kwargs, engine))
