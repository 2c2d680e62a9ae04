"""API views: what a server's chat-completions response looks like for given golden output ids.

A golden sample holds the exact ids an engine produced. ``api_view`` turns them into the flat
response (``{"reasoning", "content", "tool_calls", "finish_reason"}``) a given server would have
returned for them, so reconstruction can be tested against golden ids without a live API.

The views parse the decoded *text*, as servers do, not the ids: marker text that the model wrote
as ordinary tokens looks exactly like the marker to a server's parser, and a faithful view must
be fooled the same way.

Views:

* ``sglang``: SGLang 0.5.23 with ``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2``
  (forced reasoning, as K2.5's template opens ``<think>`` in the prompt). The stop token is
  trimmed from the text; reasoning ends at the first ``</think>``, or with none at the tool-call
  section marker, or with neither (cut) runs to the end; whitespace around ``</think>`` is kept;
  tool calls come from the detector's regex (whitespace around the id and arguments dropped,
  arguments otherwise verbatim, calls that do not match dropped, text between calls dropped);
  content is the text before the tool-call section; call ids are rebuilt ``functions.NAME:INDEX``
  with INDEX the call's position in this response.
* ``sglang-legacy``: SGLang before PR #24251: as ``sglang`` but ``.strip()`` on the reasoning
  and on the text after it.
* ``sglang`` for a family whose spec has ``parse_text`` (Qwen3, DeepSeek-V3): that function,
  SGLang's parsers for the family restated (``pipeline.core.families.<family>``); tool-call ids are
  invented by the server (``call_`` and 24 hex digits), as SGLang does for every parser but Kimi's.
* ``vllm-spaces``: text decoded with vLLM's ``spaces_between_special_tokens=True`` (a space
  between each special token and its neighbours, and before the first output text when the
  prompt ends in a special token), then parsed as ``sglang`` parses it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from .errors import TokfidelityError
from .names import VIEW_NAMES
from .profiles import Profile
from .responses import ApiTurn, ToolCall, normalize_finish_reason, parse_response
from .tokenizer import Tokenizer

__all__ = ["VIEWS", "api_view", "view_turn_and_bytes", "ViewError"]

VIEWS = VIEW_NAMES  # every view name (pipeline.core.names); each profile lists those it has

# SGLang's kimi_k2 detector: a call id must look like [functions.]NAME:INDEX for a name to be known
# (a bare counter needs the request's tool list to guess the name; views have none and drop it).
_TOOL_CALL_ID = re.compile(r"^(?:functions\.)?(?P<name>[\w.\-]+):(?P<index>\d+)$")


class ViewError(TokfidelityError, ValueError):
    """An unknown view name."""


class _TextParser:
    """One profile's marker texts and the tool-call regex built from them (made once, cached)."""

    __slots__ = ("think_start", "think_end", "tools_begin", "call_regex", "leading_space")

    def __init__(self, texts: tuple[tuple[str, str], ...], thinking: bool):
        t = dict(texts)
        self.think_start = t.get("prompt.think_begin", "<think>") if thinking else None
        self.think_end = t.get("think_end") if thinking else None
        self.tools_begin = t.get("tool_calls_begin")
        self.call_regex = None
        if self.tools_begin is not None:
            call, arg, end = (re.escape(t[r]) for r in ("tool_call_begin", "tool_call_argument_begin", "tool_call_end"))
            self.call_regex = re.compile(
                rf"{call}\s*(?P<tool_call_id>[^\s<|]+)\s*{arg}\s*(?P<function_arguments>\{{.*?\}})\s*{end}", re.DOTALL
            )
        # Chat templates whose generation prompt ends in a special token (Kimi's <|im_middle|> or
        # <think>): vLLM's incremental detokenizer then puts a space before the first output text.
        self.leading_space = "prompt.middle" in t or "prompt.think_begin" in t


@functools.lru_cache(maxsize=64)
def _parser(texts: tuple[tuple[str, str], ...], thinking: bool) -> _TextParser:
    return _TextParser(texts, thinking)


def _parser_for(profile: Profile) -> _TextParser:
    return _parser(profile.texts_key, profile.spec.thinking)  # the key is computed once per profile


def _decode_with_spaces(ids: Sequence[int], tokenizer: Tokenizer, leading_space: bool) -> str:
    """vLLM's ``spaces_between_special_tokens=True``: runs of ordinary tokens and each special
    token are separate pieces, joined with single spaces."""
    special = tokenizer.special_ids
    pieces: list[str] = []
    run_start = 0
    for i, token in enumerate(ids):
        if token in special:
            if run_start < i:
                pieces.append(tokenizer.decode(ids[run_start:i]))
            pieces.append(tokenizer.token_text(token))
            run_start = i + 1
    if run_start < len(ids):
        pieces.append(tokenizer.decode(ids[run_start:]))
    text = " ".join(pieces)
    return " " + text if leading_space and text else text


def _split_reasoning(text: str, parser: _TextParser) -> tuple[str, str]:
    """SGLang's kimi_k2 reasoning parser, non-streaming, forced reasoning: (reasoning, rest)."""
    start = parser.think_start
    while start and text.startswith(start):
        text = text[len(start) :]
    end = parser.think_end
    i = text.find(end)
    if i >= 0:
        return text[:i], text[i + len(end) :]
    if parser.tools_begin:
        j = text.find(parser.tools_begin)
        if j >= 0:  # the tool-call section also ends reasoning; its marker stays in the rest
            return text[:j], text[j:]
    return text, ""  # cut while reasoning


def _split_tool_calls(text: str, parser: _TextParser) -> tuple[str, list[tuple[str, str, str]]]:
    """SGLang's kimi_k2 tool-call detector plus serving_chat's id rebuild: (content, calls), each
    call (name, arguments, id)."""
    section = text.find(parser.tools_begin) if parser.tools_begin else -1
    if section < 0:
        return text, []
    calls = []
    for call_id, arguments in parser.call_regex.findall(text):
        m = _TOOL_CALL_ID.match(call_id)
        if m is None:
            continue
        name = m.group("name")
        calls.append((name, arguments, f"functions.{name}:{len(calls)}"))
    return text[:section], calls


def _family_view(text: str, cut: bool, profile: Profile) -> dict:
    reasoning, content, calls = profile.spec.parse_text(text, profile.texts)
    tool_calls = [
        {"id": f"call_{index:024x}", "type": "function", "function": {"name": name, "arguments": arguments}}
        for index, (name, arguments) in enumerate(calls)
    ]
    return {
        "reasoning": reasoning or None,
        "content": content,
        "tool_calls": tool_calls or None,
        "finish_reason": "length" if cut else ("tool_calls" if tool_calls else "stop"),
    }


def api_view(
    output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str = "sglang"
) -> dict:
    """The flat response a server (``view``, one of ``VIEWS``) returns for these output ids.

    ``finish_reason`` is the engine's ("stop", "length", or SGLang's ``{"type": ...}``). The result
    has ``reasoning`` (None when empty), ``content`` (a string, "" when empty), ``tool_calls``
    (None when there are none) and ``finish_reason``: "length" when cut, else "tool_calls" when
    calls were parsed, else "stop"."""
    parsed = _parsed(output_ids, finish_reason, profile, tokenizer, view)[0]
    if type(parsed) is dict:  # a family's own parser answered the response itself
        return parsed
    reasoning, content, calls, finish = parsed
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for name, arguments, call_id in calls
    ]
    return {"reasoning": reasoning, "content": content, "tool_calls": tool_calls or None, "finish_reason": finish}


def view_turn_and_bytes(
    output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str = "sglang"
) -> tuple[ApiTurn, bytes | None]:
    """``parse_response(api_view(...))``, the turn reconstruction reads, without building the response
    between (the judge's per-sample path); and ``tokenizer.decode_bytes(output_ids)`` when the view
    decoded all the ids at once (None otherwise): a diagnosis of the sample takes them instead of
    decoding again."""
    parsed, data = _parsed(output_ids, finish_reason, profile, tokenizer, view)
    if type(parsed) is dict:  # a family's parser: its response is read as any response is
        return parse_response(parsed), data
    reasoning, content, calls, finish = parsed
    calls = tuple([ToolCall(name, arguments, call_id) for name, arguments, call_id in calls])
    return ApiTurn(reasoning, content, calls, finish), data


def _parsed(output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str):
    """(the view of these ids as (reasoning or None, content, [(name, arguments, id)], finish_reason),
    or, from a family's own parser, the response dict itself; the bytes of all the ids, or None)."""
    if view not in profile.spec.views:
        if view not in VIEWS:
            raise ViewError(f"unknown api view {view!r}; known views: {', '.join(VIEWS)}")
        raise ViewError(f"profile {profile.name} has no api view {view!r}; its views: {', '.join(profile.spec.views)}")
    cut = normalize_finish_reason(finish_reason) == "length"
    ids = output_ids
    # the matched stop is trimmed from the text
    trim = bool(ids) and ids[-1] in profile.stop_ids and ids[-1] not in profile.kept_stop_ids
    if profile.spec.parse_text is not None:
        text, data = _decode(ids, trim, tokenizer)
        return _family_view(text, cut, profile), data
    parser = _parser_for(profile)
    if view == "vllm-spaces":
        text, data = _decode_with_spaces(ids[:-1] if trim else ids, tokenizer, parser.leading_space), None
    else:
        text, data = _decode(ids, trim, tokenizer)

    reasoning = None
    if parser.think_end is not None:
        reasoning, text = _split_reasoning(text, parser)
        if view == "sglang-legacy":
            reasoning, text = reasoning.strip(), text.strip()
    content, calls = _split_tool_calls(text, parser) if parser.call_regex is not None else (text, [])
    return (reasoning or None, content, calls, "length" if cut else ("tool_calls" if calls else "stop")), data


def _decode(ids: Sequence[int], trim: bool, tokenizer: Tokenizer) -> tuple[str, bytes | None]:
    """(``tokenizer.decode(ids[:-1] if trim else ids)``, ``tokenizer.decode_bytes(ids)`` or None).

    Without copying the ids: decoding is the concatenation of each token's bytes, so the last
    token's bytes are cut off the whole's (a tokenizer with a decode of its own gets the ids)."""
    if type(tokenizer).decode is not Tokenizer.decode:
        return tokenizer.decode(ids[:-1] if trim else ids), None
    data = tokenizer.decode_bytes(ids)
    text = data[: len(data) - len(tokenizer.decode_bytes(ids[-1:]))] if trim else data
    return text.decode("utf-8", errors="replace"), data
