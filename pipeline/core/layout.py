"""Where each part of an output sits: split golden output ids at the profile's markers.

``split_output`` is the inverse of reconstruction's layout: it finds the reasoning, the
content, each tool call's id and arguments, and the stop token, as index spans
(``output_spans.py``). API views decode these spans; diagnosis asks which region a divergence
falls in.
"""

from __future__ import annotations

from collections.abc import Sequence

from .output_spans import BETWEEN, CONTENT, MARKER, REASONING, STOP, TOOL_ARGUMENTS, TOOL_CALL_ID, TRAILING
from .output_spans import OutputLayout, Span, ToolCallSpans
from .profiles import Profile

__all__ = ["split_output"]


def _find(ids: Sequence[int], tokens: tuple, start: int, end: int) -> int:
    """Index of the first of ``tokens`` in ids[start:end], else ``end`` (searched in C)."""
    found = end
    for token in tokens:
        if token is None:
            continue
        try:
            found = ids.index(token, start, found)
        except ValueError:
            pass
    return found


def split_output(ids: Sequence[int], profile: Profile) -> OutputLayout:
    """Split output ids into regions. Never raises: odd sequences give odd but complete spans."""
    if profile.spec.own_layout is not None:
        return profile.spec.own_layout.split(ids, profile)
    layout = OutputLayout()
    spans = layout.spans
    n = len(ids)
    stops = profile.stop_ids
    end = n
    if n and ids[-1] in stops:
        end = n - 1
        layout.stop_index = end
    else:  # a stop token earlier than the end: everything after it is trailing
        end = _find(ids, stops, 0, n)
        if end < n:
            layout.stop_index = end

    m, spec = profile.ids, profile.spec
    fmt = spec.tool_calls
    call_begin = m.get("tool_call_begin") if fmt is not None else None
    tools_start = m.get("tool_calls_begin", call_begin) if fmt is not None else None
    pos = 0
    if spec.thinking:
        think_begin = m.get("think_begin")
        opened = think_begin is None and (not spec.think_optional or m["think_end"] in ids[:end])  # Kimi: the prompt opened it; Qwen3: the output does, when thinking
        if think_begin is not None and end > 0 and ids[0] == think_begin:
            spans.append(Span(MARKER, 0, 1))
            pos, opened = 1, True
        if opened:
            think_end = m["think_end"]
            stop_at = _find(ids, (think_end, tools_start), pos, end)
            layout.reasoning = Span(REASONING, pos, stop_at)
            spans.append(layout.reasoning)
            pos = stop_at
            if pos < end and ids[pos] == think_end:
                layout.think_closed = True
                spans.append(Span(MARKER, pos, pos + 1))
                pos += 1

    content_end = _find(ids, (tools_start,), pos, end) if tools_start is not None else end
    layout.content = Span(CONTENT, pos, content_end)
    spans.append(layout.content)
    if content_end < end:
        _split_tool_calls(ids, content_end, end, profile, layout)

    if layout.stop_index is not None:
        spans.append(Span(STOP, layout.stop_index, layout.stop_index + 1))
        if layout.stop_index + 1 < n:
            spans.append(Span(TRAILING, layout.stop_index + 1, n))
    return layout


def _split_tool_calls(ids: Sequence[int], pos: int, end: int, profile: Profile, layout: OutputLayout) -> None:
    """The tool-call part, ids[pos:end]: each call's head (Kimi's id, DeepSeek's type) and its
    arguments (for Qwen3 the whole JSON body), the markers, and text between calls."""
    m = profile.ids
    spans = layout.spans
    head_role = profile.spec.tool_calls.head_end
    call_begin, call_end = m["tool_call_begin"], m["tool_call_end"]
    head_end = m[head_role] if head_role else None
    section_end = m.get("tool_calls_end")
    structural = tuple(t for t in (call_begin, call_end, head_end, section_end, m.get("tool_calls_begin")) if t is not None)
    if ids[pos] != call_begin:  # the section marker
        spans.append(Span(MARKER, pos, pos + 1))
        pos += 1
    while pos < end:
        if ids[pos] != call_begin:
            if ids[pos] in structural:
                spans.append(Span(MARKER, pos, pos + 1))
                pos += 1
            else:
                j = pos
                while j < end and ids[j] not in structural:
                    j += 1
                spans.append(Span(BETWEEN, pos, j))
                pos = j
            continue
        spans.append(Span(MARKER, pos, pos + 1))
        j = pos + 1
        if head_end is not None:
            while j < end and ids[j] not in (head_end, call_end, section_end, call_begin):
                j += 1
        id_span = Span(TOOL_CALL_ID, pos + 1, j)
        spans.append(id_span)
        arg_span = Span(TOOL_ARGUMENTS, j, j)
        if head_end is None or (j < end and ids[j] == head_end):
            if head_end is not None:
                spans.append(Span(MARKER, j, j + 1))
                j += 1
            k = j
            while k < end and ids[k] not in (call_end, section_end, call_begin):
                k += 1
            arg_span = Span(TOOL_ARGUMENTS, j, k)
            spans.append(arg_span)
            j = k
        complete = j < end and ids[j] == call_end
        if complete:
            spans.append(Span(MARKER, j, j + 1))
            j += 1
        layout.tool_calls.append(ToolCallSpans(id_span, arg_span, complete))
        pos = j
