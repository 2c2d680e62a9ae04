"""vLLM 0.32.0's declarative parser engine (``vllm/parser/engine/``), restated for its non-streaming
path: a lexer that cuts the text at the config's terminal literals (leftmost, longest first) and at
the literal text of every special token of the tokenizer class that is not one of the config's
terminals (``_build_drop_info``: that text is deleted), and the config's state machine.

``reasoning_pass`` is ``ParserEngineReasoningAdapter.extract_reasoning``: the engine run with
``skip_tool_parsing`` (a tool opener that ends reasoning moves its own text to the content; other
tool terminals stay text), reasoning ``.rstrip()``ped where the config says so. ``ToolPass`` is
``extract_tool_calls_from_content``: the same engine from the ``CONTENT`` state, tool states taking
the call's head and arguments, text in other tool states dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["EngineConfig", "reasoning_pass", "tool_pass"]

REASONING, CONTENT, PREAMBLE, NAME, ARGS, BETWEEN = "REASONING", "CONTENT", "TOOL_PREAMBLE", "TOOL_NAME", "TOOL_ARGS", "TOOL_BETWEEN"
TOOL_STATES = frozenset({PREAMBLE, NAME, ARGS, BETWEEN})
DROP = None  # the terminal of a deleted special-token text


class EngineConfig:
    """One ``ParserEngineConfig``: terminals (name -> literal), transitions ((state, terminal) ->
    (next state, events)), whether reasoning is right-stripped, and the texts it deletes."""

    def __init__(self, terminals: Mapping[str, str], transitions: Mapping[tuple[str, str], tuple[str, tuple[str, ...]]],
                 *, strip_reasoning: bool, drop_texts: Iterable[str] = ()):
        self.transitions = dict(transitions)
        self.strip_reasoning = strip_reasoning
        literals = set(terminals.values())
        self.by_literal: dict[str, str | None] = {lit: name for name, lit in terminals.items()}
        self.by_literal.update({t: DROP for t in drop_texts if t not in literals})
        ordered = sorted(self.by_literal, key=len, reverse=True)
        self.lexer = re.compile("|".join(re.escape(lit) for lit in ordered)) if ordered else None
        self.tool_terminals = frozenset(
            term for (state, term), (nxt, _) in self.transitions.items() if nxt in TOOL_STATES or state in TOOL_STATES
        )

    def lex(self, text: str):
        """(terminal name, DROP, or "" for content; the text) in order."""
        pos = 0
        if self.lexer is not None:
            for m in self.lexer.finditer(text):
                if m.start() > pos:
                    yield "", text[pos : m.start()]
                yield self.by_literal[m.group()], m.group()
                pos = m.end()
        if pos < len(text):
            yield "", text[pos:]


def reasoning_pass(text: str, config: EngineConfig, thinking: bool) -> tuple[str | None, str | None]:
    """``extract_reasoning``: (reasoning or None, content or None)."""
    state = REASONING if thinking else CONTENT
    reasoning: list[str] = []
    content: list[str] = []
    transitions, tool_terminals = config.transitions, config.tool_terminals
    for term, value in config.lex(text):
        if term is DROP:
            continue
        if term:
            step = transitions.get((state, term))
            if step is not None and term in tool_terminals:  # skip_tool_parsing
                if "REASONING_END" in step[1]:
                    state = CONTENT
                    content.append(value)
                    continue
                step = None
            if step is not None:
                state = step[0]
                continue
        (reasoning if state == REASONING else content).append(value)
    joined = "".join(reasoning)
    if config.strip_reasoning:
        joined = joined.rstrip()
    return joined or None, "".join(content) or None


def tool_pass(text: str, config: EngineConfig) -> tuple[list[str], list[list[str]]]:
    """``extract_tool_calls_from_content``'s events: (content pieces, [[head, arguments], ...] per call)."""
    state = CONTENT
    content: list[str] = []
    slots: list[list[str]] = []
    transitions = config.transitions
    for term, value in config.lex(text):
        if term is DROP:
            continue
        if term:
            step = transitions.get((state, term))
            if step is not None:
                state = step[0]
                if "TOOL_CALL_START" in step[1]:
                    slots.append(["", ""])
                continue
        if state == CONTENT:
            content.append(value)
        elif state == NAME:
            slots[-1][0] += value
        elif state == ARGS:
            slots[-1][1] += value
    return content, slots
