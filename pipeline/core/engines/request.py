"""The request a view answers: what of the chat-completions request the engines' parsers read.

Both engines' tool parsers read the request, not only the output text: which tools it declares and
their parameter schemas (vLLM's ``kimi_k2`` path re-serialises arguments by the declared types;
SGLang's Kimi detector names a bare-counter call from them; SGLang's JSON detectors drop calls to
undeclared tools), its ``tool_choice`` (``none`` turns tool parsing off, ``required`` and a named tool
change the message and its ``finish_reason``), and the chat template kwargs (whether the output starts
inside reasoning; vLLM 0.33's Qwen3 parser also reads the prompt ids, to start in content when the prompt
already closed the reasoning). ``Request`` carries them, built once per sample from the golden sample's
fields; ``ASSUMED`` stands for a caller that knows no request: tools declared, every name among them,
no parameter schemas, ``tool_choice`` auto.

A leaf module: the parsers and ``pipeline.core.views`` import it, it imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Request", "ASSUMED", "request_of"]

AUTO, NONE, REQUIRED, NAMED = "auto", "none", "required", "named"


@dataclass(frozen=True, eq=False)
class Request:
    """``tools``: the request's tool list as sent (None: no tools declared); ``tool_choice``: as sent
    (None: the engine's default, ``auto`` with tools, ``none`` without); ``chat_template_kwargs``;
    ``any_tool``: every tool name counts as declared (``ASSUMED``)."""

    tools: Sequence[Mapping[str, Any]] | None = None
    tool_choice: Any = None
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    any_tool: bool = False
    prompt_ids: Sequence[int] | None = None  # the rendered prompt, where the sample records it

    @property
    def declares_tools(self) -> bool:
        return self.any_tool or bool(self.tools)

    @property
    def choice(self) -> str:
        """``auto``, ``none``, ``required`` or ``named`` (a tool named in ``tool_choice``)."""
        choice = self.tool_choice
        if isinstance(choice, Mapping):
            return NAMED
        if choice is None:
            return AUTO if self.declares_tools else NONE
        return choice if choice in (NONE, REQUIRED) else AUTO

    @property
    def named(self) -> str | None:
        """The tool ``tool_choice`` names (``{"type": "function", "function": {"name": ...}}``), or None."""
        choice = self.tool_choice
        if isinstance(choice, Mapping):
            function = choice.get("function")
            name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
            return name if isinstance(name, str) else None
        return None

    def functions(self) -> list[tuple[str, Any]]:
        """(name, parameters) of each function tool, in order (tools of other types left out)."""
        out = []
        for tool in self.tools or ():
            if not isinstance(tool, Mapping):
                continue
            function = tool.get("function")
            if tool.get("type", "function") == "function" and isinstance(function, Mapping) and isinstance(function.get("name"), str):
                out.append((function["name"], function.get("parameters")))
        return out

    def declares(self, name: str) -> bool:
        return self.any_tool or any(n == name for n, _ in self.functions())

    def properties(self, name: str) -> Mapping[str, Any]:
        """The ``properties`` of the first function tool called ``name`` ({} when none or untyped)."""
        for n, parameters in self.functions():
            if n == name:
                props = (parameters or {}).get("properties", {}) if isinstance(parameters, Mapping) else {}
                return props if isinstance(props, Mapping) else {}
        return {}

    def template_flag(self, *names: str) -> bool | None:
        """The first of these chat template kwargs the request sets, as a truth value (None: none set)."""
        kwargs = self.chat_template_kwargs or {}
        values = [kwargs.get(n) for n in names]
        if all(v is None for v in values):
            return None
        return any(bool(v) for v in values)


ASSUMED = Request(any_tool=True)


def request_of(tools: Sequence[Mapping[str, Any]] | None, tool_choice: Any = None,
               chat_template_kwargs: Mapping[str, Any] | None = None, prompt_ids: Sequence[int] | None = None) -> Request:
    """The request of a golden sample: its ``tools``, ``tool_choice``, ``chat_template_kwargs`` and ``prompt_ids``."""
    return Request(tuple(tools) if tools else None, tool_choice, dict(chat_template_kwargs or {}), prompt_ids=prompt_ids)
