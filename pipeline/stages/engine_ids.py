"""Token ids a serving engine returned with its answer, read one engine-neutral way.

Engines put them in different places:

* vLLM chat completions with ``"return_token_ids": true``: ``prompt_token_ids`` at the response root,
  ``token_ids`` on each choice (the stop token included when the model stopped on it).
* SGLang 0.5.23 chat completions with ``"return_token_ids": true`` (``ChatCompletionResponseChoice``
  in its ``entrypoints/openai/protocol.py``): ``prompt_token_ids`` and ``response_token_ids`` on each
  choice; with ``return_input_ids_in_sglext`` / ``return_output_ids_in_sglext``: ``sglext.input_ids``
  and ``sglext.output_ids[choice]`` instead.
* SGLang native ``/generate``: ``output_ids`` at the root (``meta_info`` holds the finish reason);
  the prompt ids are the ``input_ids`` the caller sent.

A ``null`` list is an absent list, never an empty one (vLLM has answered ``"token_ids": null``).
A present list that is not a list of integers is an error naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import TokfidelityError

__all__ = ["ReturnedIds", "EngineIdsError", "returned_ids"]


class EngineIdsError(TokfidelityError, ValueError):
    """A returned-ids field is present but not a list of integer token ids. ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


@dataclass(frozen=True, slots=True)
class ReturnedIds:
    prompt_ids: list[int] | None  # None: the server returned no prompt ids
    output_ids: list[int] | None  # None: the server returned no output ids
    prompt_field: str | None = None  # where they were found (dotted path), for records and errors
    output_field: str | None = None

    @property
    def present(self) -> bool:
        return self.output_ids is not None


def _id_list(value: Any, field: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(type(x) is int for x in value):
        raise EngineIdsError(field, f"expected a list of integer token ids, got {type(value).__name__}")
    return value


def _first(candidates: list[tuple[str, Any]]) -> tuple[list[int] | None, str | None]:
    """The first candidate that is present (not missing, not null), checked."""
    for field, value in candidates:
        ids = _id_list(value, field)
        if ids is not None:
            return ids, field
    return None, None


def returned_ids(body: Mapping[str, Any], choice: int = 0) -> ReturnedIds:
    """The prompt and output ids of choice ``choice`` in an engine's answer, wherever the engine put them."""
    if not isinstance(body, Mapping):
        return ReturnedIds(None, None)
    choices = body.get("choices")
    picked = choices[choice] if isinstance(choices, list) and len(choices) > choice and isinstance(choices[choice], Mapping) else {}
    sglext = body.get("sglext") if isinstance(body.get("sglext"), Mapping) else {}
    ext_out = sglext.get("output_ids")
    ext_out = ext_out[choice] if isinstance(ext_out, list) and ext_out and isinstance(ext_out[0], list) and len(ext_out) > choice else None
    c = f"choices[{choice}]."
    output_ids, output_field = _first([
        (c + "token_ids", picked.get("token_ids")),  # vLLM
        (c + "response_token_ids", picked.get("response_token_ids")),  # SGLang chat
        (f"sglext.output_ids[{choice}]", ext_out),  # SGLang chat, ids in sglext
        ("output_ids", body.get("output_ids")),  # SGLang /generate
    ])
    prompt_ids, prompt_field = _first([
        ("prompt_token_ids", body.get("prompt_token_ids")),  # vLLM
        (c + "prompt_token_ids", picked.get("prompt_token_ids")),  # SGLang chat
        ("sglext.input_ids", sglext.get("input_ids")),  # SGLang chat, ids in sglext
    ])
    return ReturnedIds(prompt_ids, output_ids, prompt_field, output_field)
