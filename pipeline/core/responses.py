"""One OpenAI-compatible response, read into the few fields reconstruction needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import TokfidelityError

__all__ = ["ToolCall", "ApiTurn", "ResponseError", "parse_response", "normalize_finish_reason"]

FINISH_REASONS = ("stop", "length", "tool_calls")
_TEXT_FIELDS = ("content", "reasoning", "reasoning_content", "reasoning_details", "tool_calls")  # a message has one at least


class ResponseError(TokfidelityError, ValueError):
    """A response lacks a field or has one of the wrong type. ``field`` names it (dotted path)."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ApiTurn:
    reasoning: str | None
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str  # one of FINISH_REASONS


def normalize_finish_reason(value: Any, field: str = "finish_reason") -> str:
    """'stop' | 'length' | 'tool_calls', from the OpenAI string or SGLang's {"type": ...} form."""
    if isinstance(value, Mapping):
        value = value.get("type")
    if value in FINISH_REASONS:
        return value
    if value in ("eos", "end_turn", "stop_sequence"):
        return "stop"
    if value == "max_tokens":
        return "length"
    raise ResponseError(field, f"expected one of {', '.join(FINISH_REASONS)} (or SGLang's {{\"type\": ...}}), got {value!r}")


def _text(obj: Mapping, key: str, prefix: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ResponseError(prefix + key, f"expected a string or null, got {type(value).__name__}")


def _reasoning(message: Mapping, prefix: str) -> str | None:
    empty = None
    for key in ("reasoning", "reasoning_content"):
        text = _text(message, key, prefix)
        if text:
            return text
        if text is not None:
            empty = text
    details = message.get("reasoning_details")
    if details:
        if not isinstance(details, list):
            raise ResponseError(prefix + "reasoning_details", "expected a list")
        parts = []
        for i, d in enumerate(details):
            if isinstance(d, Mapping) and d.get("type") == "reasoning.text":
                parts.append(_text(d, "text", f"{prefix}reasoning_details[{i}].") or "")
        return "".join(parts)
    return empty


def _tool_calls(message: Mapping, prefix: str) -> tuple[ToolCall, ...]:
    raw = message.get("tool_calls")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ResponseError(prefix + "tool_calls", f"expected a list or null, got {type(raw).__name__}")
    calls = []
    for i, call in enumerate(raw):
        where = f"{prefix}tool_calls[{i}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise ResponseError(where + ".function", "expected an object with 'name' and 'arguments'")
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str):
            raise ResponseError(where + ".function.name", f"expected a string, got {type(name).__name__}")
        if isinstance(arguments, Mapping):  # some clients hand back parsed arguments
            raise ResponseError(where + ".function.arguments", "expected the arguments as a JSON string, got an object")
        if not isinstance(arguments, str):
            raise ResponseError(where + ".function.arguments", f"expected a string, got {type(arguments).__name__}")
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise ResponseError(where + ".id", f"expected a string, got {type(call_id).__name__}")
        calls.append(ToolCall(name=name, arguments=arguments, id=call_id))
    return tuple(calls)


def parse_response(obj: Any) -> ApiTurn:
    """Read a flat message (``{"reasoning", "content", "tool_calls", "finish_reason"}``) or a full
    chat-completion body (``{"choices": [{"message": ..., "finish_reason": ...}]}``)."""
    if isinstance(obj, ApiTurn):
        return obj
    if not isinstance(obj, Mapping):
        raise ResponseError("(response)", f"expected a JSON object, got {type(obj).__name__}")
    prefix = ""
    message: Mapping = obj
    finish = obj.get("finish_reason")
    if "choices" in obj:
        choices = obj["choices"]
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise ResponseError("choices", "expected a non-empty list of objects")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise ResponseError("choices[0].message", "expected an object")
        prefix = "choices[0].message."
        finish = choice.get("finish_reason")
        finish_field = "choices[0].finish_reason"
    else:
        finish_field = "finish_reason"
    if finish is None:
        raise ResponseError(finish_field, "missing")
    if not any(key in message for key in _TEXT_FIELDS):
        raise ResponseError(
            prefix + "content",
            "missing, and no reasoning or tool_calls either: expected a chat-completion body, or a message "
            '{"reasoning", "content", "tool_calls", "finish_reason"}' + (" (got a choice: pass the whole body)" if "message" in message else ""),
        )
    return ApiTurn(
        reasoning=_reasoning(message, prefix),
        content=_text(message, "content", prefix),
        tool_calls=_tool_calls(message, prefix),
        finish_reason=normalize_finish_reason(finish, finish_field),
    )
