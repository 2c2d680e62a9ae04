"""The parts of an output as index spans: the region kinds, ``Span``, ``ToolCallSpans`` and ``OutputLayout``.

A leaf of the verdict core: ``layout.split_output`` makes these from a profile's markers, a family with
its own layout (``families/gpt_oss_layout.py``) makes them its own way, and diagnosis asks an
``OutputLayout`` which region a divergence falls in: by bisection over the spans' starts, so that a
sample with thousands of hunks and tool calls is not asked once per span per hunk.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

__all__ = ["REASONING", "CONTENT", "TOOL_CALL_ID", "TOOL_ARGUMENTS", "MARKER", "STOP", "BETWEEN", "TRAILING",
           "Span", "ToolCallSpans", "OutputLayout"]

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
