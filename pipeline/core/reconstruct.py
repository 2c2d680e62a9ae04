"""Text back to ids: rebuild a model's output token ids from one API response.

Text fields are encoded as ordinary text (literal marker text in content stays ordinary
tokens); the structure between them is inserted as the profile's marker ids. This is the one
place that decides the layout, and it runs once per sample: keep it free of per-call setup.
"""

from __future__ import annotations

from typing import Any

from .profiles import Profile
from .responses import ApiTurn, parse_response
from .tokenizer import Tokenizer

__all__ = ["reconstruct_output_ids", "ReconstructionError"]


class ReconstructionError(ValueError):
    """The response cannot be laid out in this profile's format (e.g. reasoning for a non-thinking model)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field {field!r}: {message}")
        self.field = field


def reconstruct_output_ids(response: Any, profile: Profile, tokenizer: Tokenizer) -> list[int]:
    """The output ids a model emitted for ``response`` (a dict or ApiTurn), stop token included
    unless the response was cut at the length limit."""
    turn: ApiTurn = response if type(response) is ApiTurn else parse_response(response)
    encode = tokenizer.encode_ordinary
    ids = profile.ids
    out: list[int] = []

    if profile.spec.thinking:
        if turn.reasoning:
            out += encode(turn.reasoning)
        # Cut while still reasoning: the parser saw no </think>, so there is no content either.
        if turn.finish_reason != "length" or turn.content or turn.tool_calls:
            out.append(ids["think_end"])
    elif turn.reasoning:
        raise ReconstructionError(
            "reasoning", f"profile {profile.name} has no reasoning section; use a thinking profile (e.g. kimi-k2.5)"
        )

    if turn.content:
        out += encode(turn.content)

    if turn.tool_calls:
        if not profile.spec.has_tools:
            raise ReconstructionError("tool_calls", f"profile {profile.name} has no tool-call format")
        out.append(ids["tool_calls_begin"])
        for index, call in enumerate(turn.tool_calls):
            out.append(ids["tool_call_begin"])
            out += encode(profile.tool_call_id(call.id, call.name, index))
            out.append(ids["tool_call_argument_begin"])
            out += encode(call.arguments)
            out.append(ids["tool_call_end"])
        out.append(ids["tool_calls_end"])

    if turn.finish_reason != "length":
        out.append(ids["stop"])
    return out
