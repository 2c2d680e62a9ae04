"""Prompts files: the one input format of ``tokfidelity capture`` and ``tokfidelity generate``.

JSONL, one object a line::

    {"id": "p1", "messages": [{"role": "user", "content": "..."}], "tools": [...],
     "max_tokens": 512, "params": {"temperature": 0.7}}

``tools``, ``max_tokens`` (``max_new_tokens`` is read as the same) and ``params`` (further request
fields; ``temperature``, ``top_p`` and ``seed`` may also stand at the top level) are optional. The
same file captures golden data from an engine and generates bulk data through an API.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import TokfidelityError
from ..core.files import open_input
from ..core.jsonl import read_records

__all__ = ["Prompt", "PromptError", "parse_prompt", "read_prompts"]

TOP_LEVEL_PARAMS = ("temperature", "top_p", "seed")


@dataclass(frozen=True)
class Prompt:
    id: str
    messages: list[dict]
    tools: list[dict] | None = None
    max_tokens: int | None = None  # new tokens at most; None: the command's default
    params: Mapping[str, Any] = field(default_factory=dict)  # further request fields (temperature, ...)


class PromptError(TokfidelityError, ValueError):
    """A prompts-file line is unusable; names the file, line and field."""

    def __init__(self, path: os.PathLike | str, line: int, field: str | None, message: str):
        super().__init__(message, path=path, line=line, field=field)


def parse_prompt(obj: Any, path: os.PathLike | str = "<prompts>", line: int = 0) -> Prompt:
    """One prompts-file object -> Prompt, or PromptError naming the field."""
    if not isinstance(obj, dict):
        raise PromptError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    pid = obj.get("id")
    if isinstance(pid, int) and not isinstance(pid, bool):
        pid = str(pid)
    if not isinstance(pid, str) or not pid:
        raise PromptError(path, line, "id", "missing or not a non-empty string")
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        raise PromptError(path, line, "messages", 'expected a non-empty list of {"role", "content"} objects')
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise PromptError(path, line, f"messages[{i}]", "expected an object with a string 'role'")
        if m.get("content") is not None and not isinstance(m["content"], (str, list)):
            raise PromptError(path, line, f"messages[{i}].content", "expected a string or a list of parts")
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise PromptError(path, line, "tools", f"expected a list, got {type(tools).__name__}")
    key = "max_tokens" if "max_tokens" in obj else "max_new_tokens"
    max_tokens = obj.get(key)
    if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
        raise PromptError(path, line, key, f"expected a positive integer, got {max_tokens!r}")
    params = obj.get("params", {})
    if not isinstance(params, dict):
        raise PromptError(path, line, "params", f"expected an object of request fields, got {type(params).__name__}")
    params = {**params, **{k: obj[k] for k in TOP_LEVEL_PARAMS if k in obj}}
    return Prompt(id=pid, messages=messages, tools=tools, max_tokens=max_tokens, params=params)


def read_prompts(path: os.PathLike | str) -> Iterator[Prompt | PromptError]:
    """Every prompt of a prompts file in order; a bad line yields a PromptError and reading goes on.
    A missing file raises PromptError."""
    path = Path(path)
    try:
        open_input(path).close()  # a FIFO or a device is refused here, never waited on
    except FileNotFoundError:
        pass
    except OSError as e:
        raise PromptError(path, 0, None, f'cannot be read ({e.strerror}); a prompts file is JSONL, one {{"id", "messages"}} object a line') from None
    if not path.is_file():
        raise PromptError(path, 0, None, 'no such file; a prompts file is JSONL, one {"id", "messages"} object a line')
    return read_records(path, parse_prompt, PromptError)
