"""SGLang 0.5.23 serving gpt-oss, restated: ``--reasoning-parser gpt-oss --tool-call-parser gpt-oss``.

SGLang decodes gpt-oss output with its special tokens (``serving_chat``: ``skip_special_tokens =
False`` for gpt-oss) and trims the matched stop token, except ``<|call|>`` (200012), which its
detokenizer keeps when the tool-call parser is ``gpt-oss``. Both parsers then run sglang's
``HarmonyParser`` (``sglang/srt/parser/harmony_parser.py``) on the text, non-streaming:

* the reasoning parser (``GptOssDetector``): the text is cut at the seven structural markers into
  blocks. ``<|channel|>analysis<|message|>…<|end|>`` is reasoning; ``commentary`` ending ``<|end|>`` is
  content; a block (analysis or commentary) ending ``<|call|>`` is a tool call, passed on as its raw
  text; ``final`` runs to ``<|return|>`` (or the end of the text), plus any text after it. An analysis
  block with no end (a cut) is reasoning to the end of the text; a commentary block with no end is
  lost, as are stray markers, text after a ``<|call|>`` that says ``commentary``, and a trailing
  prefix of a marker (``<|``).
* the tool-call parser (``GptOssDetector``), only when the text holds
  ``<|start|>assistant<|channel|>commentary``: the same parse again; each tool-call block must match
  ``to=NAME\\s*<|constrain|>json<|message|>ARGS`` (so a recipient written in the role header,
  ``<|start|>assistant to=…<|channel|>``, is never a call); the name is the last dot-separated part
  of NAME (``functions.get`` -> ``get``); ARGS are ``json.loads``ed (a call that is not JSON is dropped)
  and re-serialised ``json.dumps(..., ensure_ascii=False)``; content is the other blocks' text
  joined with single spaces and ``.strip()``ped; the API invents each call's id (``call_`` + 24 hex).

This module restates the parser's one-shot path (registered as the `gpt-oss` reasoning and tool-call parsers); ``tests/test_sglang_gpt_oss_differential.py`` runs
sglang's own parser on the same ids. Not restated: the text-only fallback (``TextStrategy``), used
when the text holds neither ``<|channel|>`` nor ``<|start|>`` but names a channel in words; here such
text is content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from .registry import register

__all__ = ["GptOssReasoning", "GptOssTools", "harmony_events"]

_KINDS = {"start": "START", "channel": "CHANNEL", "message": "MESSAGE", "constrain": "CONSTRAIN",
          "end": "END", "call": "CALL", "stop": "RETURN"}
_CALL_ARGS = re.compile(r"to=([a-zA-Z_][a-zA-Z0-9_.-]*)\s*<\|constrain\|>json<\|message\|>(.*?)(?:<\|call\|>|$)", re.DOTALL)
_TEXT_STRATEGY = re.compile(r"(?:^|\s)(?:assistant)?\s*(analysis|commentary|assistantfinal)", re.IGNORECASE)


def _tokens(text: str, literals: tuple[tuple[str, str], ...]) -> list[tuple[str, int, int]]:
    """sglang's ``iter_tokens``: (kind, start, end), kind TEXT or a marker kind."""
    out: list[tuple[str, int, int]] = []
    pos, unknown = 0, False
    n = len(text)
    while pos < n:
        at = text.find("<|", pos)
        if at == -1:
            break
        if at > pos:
            out.append(("TEXT", pos, at))
        for literal, kind in literals:
            if text.startswith(literal, at):
                out.append((kind, at, at + len(literal)))
                pos = at + len(literal)
                break
        else:
            tail = text[at:]
            if any(literal.startswith(tail) for literal, _ in literals):
                out.append(("TEXT", at, n))
                pos = n
                break
            unknown = True
            out.append(("TEXT", at, at + 2))
            close = text.find("|>", at + 2)
            if close == -1:
                pos = at + 2
                continue
            following = text.find("<|", close + 2)
            if following == -1:
                out.append(("TEXT", at + 2, n))
                pos = n
                break
            out.append(("TEXT", at + 2, following))
            pos = following
    if pos < n:
        out.append(("TEXT", pos, n))
    elif pos == n and unknown and any(text.endswith(literal) for literal, _ in literals):
        out.append(("TEXT", pos, pos))
    return out


def _channel_type(header: str) -> str | None:
    header = header.strip().lower()
    for channel in ("analysis", "commentary", "final"):
        if header.startswith(channel):
            return channel
    return None


def _prefix_hold(text: str, guards: tuple[str, ...]) -> tuple[str, str]:
    hold = 0
    for guard in guards:
        for k in range(min(len(guard) - 1, len(text)), 0, -1):
            if guard.startswith(text[-k:]):
                hold = max(hold, k)
                break
    return (text, "") if hold == 0 else (text[:-hold], text[-hold:])


class _Canonical:
    """sglang's ``CanonicalStrategy.parse``: events (kind, content, raw) and the held-back text."""

    def __init__(self, literals: tuple[tuple[str, str], ...]):
        self.literals = literals
        self.guards = tuple(literal for literal, _ in literals)

    def parse(self, text: str):
        toks = _tokens(text, self.literals)
        events: list[tuple[str, str, str | None]] = []
        pos = 0
        while pos < len(toks):
            kind, start, end = toks[pos]
            if kind == "TEXT" and pos == len(toks) - 1:
                emit, hold = _prefix_hold(text[start:end], self.guards)
                if emit:
                    events.append(("normal", emit, None))
                return events, hold
            if kind in ("START", "CHANNEL"):
                block = self._block(text, toks, pos)
                if block is None:
                    partial = self._partial_analysis(text, toks, pos)
                    if partial is not None:
                        events.append(partial[0])
                        return events, partial[1]
                    return events, text[start:]
                event, pos = block
                if event is not None:
                    events.append(event)
                continue
            content = text[start:end]
            if not self._filler(text, toks, pos) and content.strip() not in self.guards:
                events.append(("normal", content, None))
            pos += 1
        return events, ""

    @staticmethod
    def _header(text, toks, start_pos):
        """(channel index, message index) of the block starting at start_pos, either may be None."""
        pos = start_pos + 1 if toks[start_pos][0] == "START" else start_pos
        channel = message = None
        for i in range(pos, len(toks)):
            if toks[i][0] == "CHANNEL" and channel is None:
                channel = i
            elif toks[i][0] == "MESSAGE":
                message = i
                break
        return channel, message

    def _partial_analysis(self, text, toks, start_pos):
        channel, message = self._header(text, toks, start_pos)
        if channel is None or message is None:
            return None
        header_start = toks[channel + 1][1] if channel + 1 < len(toks) else toks[channel][2]
        if _channel_type(text[header_start : toks[message][1]]) != "analysis":
            return None
        content_start = toks[message][2]
        return ("reasoning", text[content_start:], None), text[toks[start_pos][1] : content_start]

    def _block(self, text, toks, start_pos):
        channel, message = self._header(text, toks, start_pos)
        if message is None:
            return None
        if channel is None:  # a tool response: no channel
            for i in range(message + 1, len(toks)):
                if toks[i][0] in ("END", "CALL", "RETURN"):
                    return ("normal", text[toks[message][2] : toks[i][1]], None), i + 1
            return None
        pos = channel + 1
        header_start = toks[pos][1] if pos < len(toks) else toks[pos - 1][2]
        channel_type = _channel_type(text[header_start : toks[message][1]])
        if channel_type is None:
            return None
        ends = ("RETURN",) if channel_type == "final" else ("END", "CALL")
        content_start = toks[message][2]
        end = message + 1
        while end < len(toks) and toks[end][0] not in ends:
            end += 1
        if end >= len(toks):
            return (("normal", text[content_start:], None), end) if channel_type == "final" else None
        end_kind, end_start, end_end = toks[end]
        content = text[content_start:end_start]
        if channel_type == "final":
            if end + 1 < len(toks) and toks[end + 1][0] == "TEXT":
                return ("normal", content + text[toks[end + 1][1] : toks[end + 1][2]], None), end + 2
            return ("normal", content, None), end + 1
        if end_kind == "CALL":
            return ("tool_call", content.strip(), text[toks[start_pos][1] : end_end]), end + 1
        return ("reasoning" if channel_type == "analysis" else "normal", content, None), end + 1

    @staticmethod
    def _filler(text, toks, pos) -> bool:
        if pos == 0 or toks[pos - 1][0] != "CALL":
            return False
        kind, start, end = toks[pos]
        return kind == "MESSAGE" or (kind == "TEXT" and text[start:end].strip().lower() == "commentary")


def harmony_events(text: str, texts: Mapping[str, str]) -> list[tuple[str, str, str | None]]:
    """sglang's ``HarmonyParser``: ``parse(text)`` then ``parse("")``, with its commentary filter."""
    literals = tuple((texts[role], kind) for role, kind in _KINDS.items())
    if texts["channel"] not in text and texts["start"] not in text:
        if _TEXT_STRATEGY.search(text):  # sglang's TextStrategy: not restated (see the module doc)
            return [("normal", text, None)]
        return []
    strategy = _Canonical(literals)
    call = texts["call"]
    state = {"filter": False, "partial": ""}
    out: list[tuple[str, str, str | None]] = []
    buffer = text
    for _ in range(2):  # the parse, then the flush
        events, remaining = strategy.parse(buffer)
        ends_with_call = buffer.rstrip().endswith(call)
        buffer = remaining
        out += _filtered(events, state, ends_with_call)
    return out


def _filtered(events, state, ends_with_call):
    kept = []
    for event in events:
        if event[0] == "normal":
            if state["filter"] or state["partial"]:
                candidate = state["partial"] + event[1].strip().lower()
                if candidate == "commentary":
                    state["partial"], state["filter"] = "", False
                    continue
                if "commentary".startswith(candidate):
                    state["partial"] = candidate
                    continue
                state["partial"], state["filter"] = "", False
            else:
                state["partial"] = ""
        if event[0] == "tool_call":
            state["filter"], state["partial"] = True, ""
        elif ends_with_call:
            state["filter"] = True
        kept.append(event)
    return kept


@register("sglang", "reasoning", "gpt-oss")
class GptOssReasoning:
    """``--reasoning-parser gpt-oss``: (reasoning or None, the other blocks' text, a call block's raw text)."""

    __slots__ = ("texts",)

    def __init__(self, profile, view=None, tokenizer=None):
        self.texts = dict(profile.texts)

    def __call__(self, text: str, request=None) -> tuple[str | None, str]:
        events = harmony_events(text, self.texts)
        reasoning = "".join(content for kind, content, _ in events if kind == "reasoning")
        normal = "".join(raw or content for kind, content, raw in events if kind in ("normal", "tool_call"))
        return reasoning or None, normal


@register("sglang", "tool", "gpt-oss")
class GptOssTools:
    """``--tool-call-parser gpt-oss``: (content, calls) from the reasoning parser's normal text; a call to a
    tool the request does not declare is dropped."""

    __slots__ = ("texts", "bot")

    def __init__(self, profile, view=None, tokenizer=None):
        self.texts = dict(profile.texts)
        self.bot = self.texts["start"] + "assistant" + self.texts["channel"] + "commentary"

    def __call__(self, normal: str, request=None) -> tuple[str, list[tuple[str, str, None]]]:
        if self.bot not in normal:
            return normal, []
        calls: list[tuple[str, str, None]] = []
        parts: list[str] = []
        for kind, content, raw in harmony_events(normal, self.texts):
            if kind == "normal":
                parts.append(content)
            elif kind == "tool_call":
                m = _CALL_ARGS.search(raw or content)
                if m is None:
                    continue
                try:
                    arguments = json.loads(m.group(2)) if m.group(2).strip() else {}
                except json.JSONDecodeError:
                    continue
                name = m.group(1).split(".")[-1]
                if request is None or request.declares(name):
                    calls.append((name, json.dumps(arguments, ensure_ascii=False), None))
        return " ".join(parts).strip(), calls
