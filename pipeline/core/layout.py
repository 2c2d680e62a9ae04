"""Where each part of an output sits: split golden output ids at the profile's markers.

``split_output`` is the inverse of reconstruction's layout: it finds the reasoning, the
content, each tool call's id and arguments, and the stop token, as index spans. API views
decode these spans; diagnosis asks which region a divergence falls in: by bisection over the
spans' starts, so that a sample with thousands of hunks and tool calls is not asked once per
span per hunk.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: the gpt-oss family's layout imports this module while families load
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
    # (how many spans it was made from, starts, ends, kinds of the non-empty spans, empty spans' kinds
    # by index), or None while unbuilt; starts is None when those spans are out of order or overlap
    _bounds: tuple | None = field(default=None, repr=False, compare=False)

    def _sorted(self) -> tuple:
        bounds = self._bounds
        if bounds is None or bounds[0] != len(self.spans):
            full = [s for s in self.spans if s.start < s.end]
            empty: dict[int, set[str]] = {}
            for s in self.spans:
                if s.start == s.end:
                    empty.setdefault(s.start, set()).add(s.kind)
            starts = [s.start for s in full]
            ordered = all(a.end <= b.start for a, b in zip(full, full[1:]))
            bounds = self._bounds = (len(self.spans), starts if ordered else None, [s.end for s in full], [s.kind for s in full], empty)
        return bounds

    def region_at(self, index: int) -> str:
        """The kind of the first span holding ``index`` (TRAILING when none does)."""
        _, starts, ends, kinds, _ = self._sorted()
        if starts is None:  # spans out of order (no layout here makes them): the first that holds it
            return next((s.kind for s in self.spans if s.start <= index < s.end), TRAILING)
        i = bisect_right(starts, index) - 1
        return kinds[i] if i >= 0 and index < ends[i] else TRAILING

    def regions_in(self, start: int, end: int) -> set[str]:
        """``{region_at(i) for i in range(start, end)}``, without asking index by index."""
        _, starts, ends, kinds, _ = self._sorted()
        if starts is None:
            return {self.region_at(i) for i in range(start, end)}
        found: set[str] = set()
        n = len(starts)
        i = bisect_right(starts, start) - 1
        if i < 0 or ends[i] <= start:  # start is in no span: the next one starts after it
            i += 1
        pos = start
        while pos < end:
            if i < n and starts[i] <= pos:  # pos is in span i
                found.add(kinds[i])
                pos = ends[i]
                i += 1
            else:  # a gap before the next span (or after the last)
                found.add(TRAILING)
                pos = starts[i] if i < n else end
        return found

    def empty_at(self, index: int) -> set[str]:
        """The kinds of the empty spans at ``index`` (an empty reasoning, a call with no arguments)."""
        return set(self._sorted()[4].get(index, ()))


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
