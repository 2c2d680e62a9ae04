"""The capture-engine protocol: one prompt in, the engine's exact ids out.

Every engine (local transformers, SGLang over HTTP) turns a ``PromptSpec`` and sampling
settings into a ``Capture``: the prompt ids it fed the model and the output ids the model
emitted, stop token included, as an engine returns them. ``describe()`` says what the engine
is (model file and its sha256, library versions...) for the dataset manifest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["PromptSpec", "Capture", "CaptureEngine", "PromptError", "read_prompts", "parse_prompt"]


@dataclass
class PromptSpec:
    id: str
    messages: list[dict]
    tools: list[dict] | None = None
    max_new_tokens: int | None = None


@dataclass
class Capture:
    prompt_ids: list[int]
    output_ids: list[int]  # stop token included when the model stopped by itself
    finish_reason: str | dict  # "stop" | "length", or SGLang's {"type": ..., ...}
    meta: dict = field(default_factory=dict)  # per-sample engine facts (seed, timings, ids...)


@runtime_checkable
class CaptureEngine(Protocol):
    name: str

    def capture(self, prompt: PromptSpec, sampling: dict) -> Capture: ...

    def describe(self) -> dict: ...


class PromptError(ValueError):
    """A prompts-file line is unusable; names the file, line and field."""

    def __init__(self, path: Path | str, line: int, field: str | None, message: str):
        where = f"{path}:{line}" + (f": field {field!r}" if field else "")
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.field = Path(path), line, field


def parse_prompt(obj: Any, path: Path | str = "<prompts>", line: int = 0) -> PromptSpec:
    """One prompts-file object -> PromptSpec, or PromptError naming the field."""
    if not isinstance(obj, dict):
        raise PromptError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    pid = obj.get("id")
    if isinstance(pid, int) and not isinstance(pid, bool):
        pid = str(pid)
    if not isinstance(pid, str) or not pid:
        raise PromptError(path, line, "id", "missing or not a non-empty string")
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        raise PromptError(path, line, "messages", "expected a non-empty list of {role, content} objects")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise PromptError(path, line, f"messages[{i}]", "expected an object with a string 'role'")
        if "content" in m and m["content"] is not None and not isinstance(m["content"], (str, list)):
            raise PromptError(path, line, f"messages[{i}].content", "expected a string or a list of parts")
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise PromptError(path, line, "tools", f"expected a list, got {type(tools).__name__}")
    max_new = obj.get("max_new_tokens")
    if max_new is not None and (type(max_new) is not int or max_new < 1):
        raise PromptError(path, line, "max_new_tokens", f"expected a positive integer, got {max_new!r}")
    return PromptSpec(id=pid, messages=messages, tools=tools, max_new_tokens=max_new)


def read_prompts(path: Path | str) -> Iterator[PromptSpec | PromptError]:
    """Every prompt of a JSONL prompts file in order; a bad line yields a PromptError and reading goes on."""
    path = Path(path)
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                yield PromptError(path, line_no, None, f"not valid JSON: {e.msg} (column {e.colno})")
                continue
            try:
                prompt = parse_prompt(obj, path, line_no)
            except PromptError as e:
                yield e
                continue
            if prompt.id in seen:
                yield PromptError(path, line_no, "id", f"duplicate id {prompt.id!r} (first on line {seen[prompt.id]})")
                continue
            seen[prompt.id] = line_no
            yield prompt
