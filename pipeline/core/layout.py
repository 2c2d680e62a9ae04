"""Where each part of an output sits: split golden output ids at the profile's markers.

``split_output`` is the inverse of reconstruction's layout: it finds the reasoning, the
content, each tool call's id and arguments, and the stop token, as index spans. API views
decode these spans; diagnosis asks which region a divergence falls in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .profiles import Profile

__all__ = ["Span", "ToolCallSpans", "OutputLayout", "split_output"]

# Region kinds, as ``OutputLayout.region_at`` names them.
REASONING, CONTENT, TOOL_CALL_ID, TOOL_ARGUMENTS, MARKER, STOP, BETWEEN, TRAILING = (
    "reasoning",
    "content",
    "tool_call_id",
    "tool_arguments",
    "marker",
    "stop",
    "between",  # text between tool-call markers, which parsers drop
    "trailing",  # anything after the stop token
)


@dataclass(frozen=True, slots=True)
class Span:
    kind: str
    start: int
    end: int  # exclusive

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class ToolCallSpans:
    id: Span
    arguments: Span
    complete: bool  # closed by <|tool_call_end|>


@dataclass(slots=True)
class OutputLayout:
    spans: list[Span] = field(default_factory=list)  # every index of the output, in order
    reasoning: Span | None = None
    content: Span | None = None
    tool_calls: list[ToolCallSpans] = field(default_factory=list)
    think_closed: bool = False
    stop_index: int | None = None

    def region_at(self, index: int) -> str:
        for span in self.spans:
            if span.start <= index < span.end:
                return span.kind
        return TRAILING


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
    m = profile.ids
    layout = OutputLayout()
    spans = layout.spans
    n = len(ids)
    stop = m["stop"]
    end = n
    if n and ids[-1] == stop:
        end = n - 1
        layout.stop_index = end
    else:  # a stop token earlier than the end: everything after it is trailing
        end = _find(ids, (stop,), 0, n)
        if end < n:
            layout.stop_index = end

    pos = 0
    tool_begin = m.get("tool_calls_begin")
    if profile.spec.thinking:
        think_end = m["think_end"]
        stop_at = _find(ids, (think_end, tool_begin), 0, end)
        layout.reasoning = Span(REASONING, 0, stop_at)
        spans.append(layout.reasoning)
        pos = stop_at
        if pos < end and ids[pos] == think_end:
            layout.think_closed = True
            spans.append(Span(MARKER, pos, pos + 1))
            pos += 1

    content_end = _find(ids, (tool_begin,), pos, end) if tool_begin is not None else end
    layout.content = Span(CONTENT, pos, content_end)
    spans.append(layout.content)
    pos = content_end

    if pos < end:  # the tool-call section
        spans.append(Span(MARKER, pos, pos + 1))
        pos += 1
        call_begin, arg_begin, call_end, section_end = (
            m["tool_call_begin"],
            m["tool_call_argument_begin"],
            m["tool_call_end"],
            m["tool_calls_end"],
        )
        while pos < end:
            token = ids[pos]
            if token == call_begin:
                spans.append(Span(MARKER, pos, pos + 1))
                id_start = pos + 1
                j = id_start
                while j < end and ids[j] not in (arg_begin, call_end, section_end, call_begin):
                    j += 1
                id_span = Span(TOOL_CALL_ID, id_start, j)
                spans.append(id_span)
                arg_span = Span(TOOL_ARGUMENTS, j, j)
                complete = False
                if j < end and ids[j] == arg_begin:
                    spans.append(Span(MARKER, j, j + 1))
                    k = j + 1
                    while k < end and ids[k] not in (call_end, section_end, call_begin):
                        k += 1
                    arg_span = Span(TOOL_ARGUMENTS, j + 1, k)
                    spans.append(arg_span)
                    j = k
                if j < end and ids[j] == call_end:
                    spans.append(Span(MARKER, j, j + 1))
                    complete = True
                    j += 1
                layout.tool_calls.append(ToolCallSpans(id_span, arg_span, complete))
                pos = j
            elif token in (section_end, call_end, arg_begin):
                spans.append(Span(MARKER, pos, pos + 1))
                pos += 1
            else:
                j = pos
                while j < end and ids[j] not in (call_begin, section_end, call_end, arg_begin):
                    j += 1
                spans.append(Span(BETWEEN, pos, j))
                pos = j

    if layout.stop_index is not None:
        spans.append(Span(STOP, layout.stop_index, layout.stop_index + 1))
        if layout.stop_index + 1 < n:
            spans.append(Span(TRAILING, layout.stop_index + 1, n))
    return layout
