"""Llama 3.1 / 3.3 output ids: laid out from an API turn, and split into regions.

Llama's JSON tool call has no marker around it (the whole output is the object), so the generic
template layout does not fit: this module is the family's ``OwnLayout``.

* An answer: the content, then ``<|eot_id|>``.
* Calls without content: ``{"name": "NAME", "parameters": ARGS}`` (the template's form, arguments as
  given), several joined ``; ``, then ``<|eot_id|>``.
* Calls after content: ``{content}<|python_tag|>`` then the calls as above (the form the engines'
  parsers split at ``<|python_tag|>``).
* A builtin tool call (the template's ``builtin_tools``, ``brave_search`` / ``wolfram_alpha``): the
  engines return it as content (``brave_search.call(query="x")``, the tag dropped or skipped); a
  content of that shape is written back ``<|python_tag|>{content}<|eom_id|>``; so is one that keeps the
  tag as text (SGLang without tools in the request: no parser runs, special tokens stay in the text).

A length cut leaves the stop token off. The split: content up to ``<|python_tag|>``, after it one call
whose arguments run to the stop token; without the tag, an output whose first token starts with ``{`` is
one call (arguments to the stop token), any other is content.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..output_spans import CONTENT, MARKER, STOP, TOOL_ARGUMENTS, TOOL_CALL_ID, TRAILING, OutputLayout, Span, ToolCallSpans

__all__ = ["bind", "reconstruct", "split", "BUILTIN_TOOLS"]

BUILTIN_TOOLS = ("brave_search", "wolfram_alpha")  # the template's builtin tools written as NAME.call(...)
_BUILTIN_CALL = re.compile(r"(?:%s)\.call\(.*\)\Z" % "|".join(BUILTIN_TOOLS), re.DOTALL)


_BRACES: dict = {}  # profile key -> the ids whose bytes start with "{" (an output opening a JSON call)


def bind(profile, tokenizer) -> None:
    """Check the markers the layout writes; note which ids open a JSON call (their bytes start with ``{``)."""
    for role in ("tool_call_begin", "stop", "stop.2"):
        if role not in profile.ids:
            raise ValueError(f"the llama3 layout needs the {role} marker")
    specials = set(tokenizer.special_tokens.values())
    _BRACES[profile.texts_key] = frozenset(
        i for i in range(tokenizer.n_vocab) if i not in specials and tokenizer.token_bytes(i)[:1] == b"{")


def reconstruct(turn, profile, tokenizer) -> list[int]:
    """Output ids for one API turn (``responses.ApiTurn``), laid out as Llama writes them."""
    ids, encode = profile.ids, tokenizer.encode_ordinary
    cut = turn.finish_reason == "length"
    content = turn.content or ""
    if turn.reasoning:
        from ..reconstruct import ReconstructionError

        raise ReconstructionError("reasoning", f"profile {profile.name} has no reasoning section")
    out: list[int] = []
    stop = ids["stop"]
    if turn.tool_calls:
        body = "; ".join(f'{{"name": "{call.name}", "parameters": {call.arguments}}}' for call in turn.tool_calls)
        if content:
            out = encode(content) + [ids["tool_call_begin"]]
        out += encode(body)
    elif _BUILTIN_CALL.match(content.removeprefix(profile.texts["tool_call_begin"])):
        out = [ids["tool_call_begin"]] + encode(content.removeprefix(profile.texts["tool_call_begin"]))
        stop = ids["stop.2"]  # <|eom_id|>: the model waits for the tool's output
    else:
        out = encode(content)
    if not cut:
        out.append(stop)
    return out


def split(ids: Sequence[int], profile) -> OutputLayout:
    """Regions of Llama output ids (never raises)."""
    layout = OutputLayout()
    spans = layout.spans
    n, stops = len(ids), profile.stop_ids
    end = n
    for i, token in enumerate(ids):
        if token in stops:
            end = layout.stop_index = i
            break
    tag = profile.ids["tool_call_begin"]
    try:
        at = ids.index(tag, 0, end)
    except ValueError:
        at = end
        if end and ids[0] in _BRACES.get(profile.texts_key, ()):  # a bare JSON call: no content
            at = -1
    layout.content = Span(CONTENT, 0, max(at, 0))
    spans.append(layout.content)
    if at < end:
        if at >= 0:
            spans.append(Span(MARKER, at, at + 1))
        head, arguments = Span(TOOL_CALL_ID, at + 1, at + 1), Span(TOOL_ARGUMENTS, at + 1, end)
        spans += [head, arguments]
        layout.tool_calls.append(ToolCallSpans(head, arguments, layout.stop_index is not None))
    if layout.stop_index is not None:
        spans.append(Span(STOP, end, end + 1))
        if end + 1 < n:
            spans.append(Span(TRAILING, end + 1, n))
    return layout
