"""What classifying a hunk needs to know about the whole golden output and its reconstruction.

``DivergenceContext`` is built once per diagnosis: the special and marker ids, the stop tokens, whether
the golden output was cut at the length limit, both sequences as bytes (``SequenceBytes``), and the
golden output's layout (reasoning, content, tool calls: ``layout.split_output``). Its questions
(regions of a token range, text a tool-call parser drops, bytes inside tool-call arguments, marker
text the model wrote, whether only the message framing changed, ...) are what the rules of
``hunk_rules.py`` ask; the costly ones are computed on first use and kept for the diagnosis's other
hunks, and regions and tool calls are found by bisection, never by a scan per hunk.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from .layout import BETWEEN, CONTENT, MARKER, REASONING, split_output
from .profiles import Profile
from .sequence_bytes import SequenceBytes
from .tokenizer import Tokenizer

__all__ = ["DivergenceContext", "strip_ws"]


def strip_ws(text: str) -> str:
    """``text`` without any whitespace."""
    return "".join(text.split())


class DivergenceContext:
    """What classifying a hunk needs besides the hunk itself: built once per diagnosis (see the module)."""

    def __init__(self, golden: Sequence[int], recon: Sequence[int], tokenizer: Tokenizer, profile: Profile | None,
                 finish_reason: str | None, golden_bytes: bytes | None = None, response_finish_reason: str | None = None):
        self.golden = golden
        self.recon = recon
        self.gbytes = SequenceBytes(golden, tokenizer, golden_bytes)
        self.rbytes = SequenceBytes(recon, tokenizer)
        self.specials = tokenizer.special_ids | (profile.marker_ids if profile is not None else frozenset())
        self.tokenizer = tokenizer
        self.profile = profile
        if profile is not None:
            # The stop tokens the model really has (from their texts), and what the profile says.
            self.real_stops = frozenset(
                i for i in (tokenizer.special_tokens.get(text) for text in profile.spec.stop_texts) if i is not None
            )
            self.stop_ids = self.real_stops | frozenset(profile.stop_ids)
        else:
            self.stop_ids = tokenizer.special_ids
            self.real_stops = frozenset()
        self.layout = split_output(golden, profile) if profile is not None else None
        self._cut_calls: list[int] | None = None  # dropped_by_parser's, once
        self._whole_calls: list[tuple[int, int]] = []  # (head start, arguments end) of every call, with _cut_calls
        self._cores: tuple[list[int], list[int], bool] | None = None  # inside_arguments', once
        ends_with_stop = bool(golden) and golden[-1] in self.stop_ids
        if finish_reason is not None:
            self.cut_at_length = finish_reason == "length"
        else:
            self.cut_at_length = not ends_with_stop
        # A cut output whose response says it was not cut: the cut is hidden from the reconstruction.
        self.finish_rewritten = self.cut_at_length and response_finish_reason not in (None, "length")
        self.think_end = profile.ids.get("think_end") if profile is not None else None
        self.call_markers = frozenset(profile.ids[r] for r in profile.spec.call_marker_roles) if profile else frozenset()
        # Where the golden text ends: before a final stop/special token.
        self.golden_text_end = len(golden) - 1 if golden and golden[-1] in self.specials else len(golden)

    def special_bytes(self, token_id: int) -> bytes:
        """The text of a special or marker id as bytes; b"\\0" (found in no text) for anything else."""
        if token_id in self.specials and self.tokenizer.is_valid_id(token_id):
            return self.tokenizer.token_bytes(token_id)
        return b"\0"

    def regions(self, start: int, end: int) -> set[str]:
        """The golden layout's regions (``layout.REASONING``, ``TOOL_ARGUMENTS``, ...) that golden[start:end] touches."""
        layout = self.layout
        if layout is None:
            return set()
        if start == end:  # an insertion: the regions on either side, and an empty one right there
            idx = [i for i in (start - 1, start) if 0 <= i < len(self.golden)]
            return {layout.region_at(i) for i in idx} | layout.empty_at(start)
        return layout.regions_in(start, end)

    def stop_text_kept(self, g_end: int, gb: bytes, rb: bytes) -> bool:
        """Whether the hunk ends right before the golden's final stop token and the reconstruction has that
        token's text after the golden's bytes: the engine wrote the stop it stopped on into the content."""
        golden = self.golden
        if self.cut_at_length or g_end != len(golden) - 1 or golden[-1] not in self.stop_ids:
            return False
        return rb == gb + self.special_bytes(golden[-1])

    @functools.cached_property
    def pieces_moved(self) -> bool:
        """Whether the reconstruction's reasoning and content, cut at marker texts (real or written) and
        whitespace aside, are each made of whole pieces of the golden's text cut the same way: what a parser
        that cuts messages at marker text returns is the model's text moved or dropped, never changed. Once
        per diagnosis, for a hunk no other rule explains. Without a profile there are no messages to cut: False."""
        pattern = _special_text_pattern(self.tokenizer)
        if pattern is None or self.profile is None:
            return False

        def pieces(data: bytes) -> set[bytes]:
            return {b"".join(piece.split()) for piece in pattern.split(data)} - {b""}

        golden = pieces(self.gbytes.data)
        return all(
            _made_of(piece, golden)
            for span in self.recon_layout.spans if span.kind in (REASONING, CONTENT)
            for piece in pieces(self.rbytes.span(span.start, span.end))
        )

    def spells_special(self, data: bytes) -> bool:
        pattern = _special_text_pattern(self.tokenizer)
        return pattern is not None and pattern.search(data) is not None

    def framing_only(self, g_start: int, g_end: int, r_start: int, r_end: int) -> bool:
        """Whether both sides of the hunk lie in message framing (marker spans) of their own layout."""
        return self.regions(g_start, g_end) <= {MARKER} and (
            r_start == r_end or self.recon_layout.regions_in(r_start, r_end) <= {MARKER}
        )

    @functools.cached_property
    def recon_layout(self):
        return split_output(self.recon, self.profile)

    @functools.cached_property
    def framings(self) -> tuple[tuple, tuple]:
        """``_framing`` of the golden and of the reconstruction: once per diagnosis, and only for a hunk no
        other rule explains."""
        return _framing(self.layout, self.gbytes), _framing(self.recon_layout, self.rbytes)

    @functools.cached_property
    def framing_differs(self) -> bool:
        """Whether the golden's messages are framed otherwise than the reconstruction's (once per diagnosis)."""
        return self.layout is not None and self.framings[0][0] != self.framings[1][0]

    @functools.cached_property
    def open_header(self) -> int | None:
        """Where the header of the message a length cut left unfinished starts (no ``message`` marker after
        the last ``start``; the first message has no ``start``), for a profile with those roles; else None."""
        ids = self.profile.ids if self.profile is not None else {}
        start, message = ids.get("start"), ids.get("message")
        if not self.cut_at_length or start is None or message is None or not self.golden:
            return None
        golden = self.golden
        at = len(golden) - 1 - golden[::-1].index(start) if start in golden else 0
        return None if message in golden[at:] else at

    @functools.cached_property
    def structure_lost(self) -> bool:
        """Whether the golden's messages differ from the reconstruction's in their framing (markers, channel
        words, empty or several messages of a kind) while the text of each kind, whitespace aside, is the
        reconstruction's: all reasoning bodies in order against its reasoning, all content bodies (and a
        header the cut left open, which vLLM returns as content text) against its content, less the text of
        a stop the engine kept (``stop_text_kept``). Computed once, only for a hunk no other rule explains."""
        if not self.framing_differs:
            return False
        (_, g_reasoning, g_content), (_, r_reasoning, r_content) = self.framings
        if g_reasoning != r_reasoning:
            return False
        golden = self.golden
        if not self.cut_at_length and golden and golden[-1] in self.stop_ids:
            r_content = r_content.removesuffix(self.tokenizer.token_text(golden[-1]))
        header = self.open_header
        cut = "" if header is None else strip_ws(self.gbytes.span(header, len(golden)).decode("utf-8", "replace"))
        return r_content in (g_content, g_content + cut)

    @functools.cached_property
    def rebuilt_calls(self) -> bool:
        """Whether the reconstruction holds tool calls (the response returned some)."""
        return self.profile is not None and bool(self.recon_layout.tool_calls)

    def recon_regions(self, start: int, end: int) -> set[str]:
        """The reconstruction's own layout regions that recon[start:end] touches (empty for an insertion)."""
        return self.recon_layout.regions_in(start, end) if self.profile is not None and start < end else set()

    def text_of(self, ids) -> bytes:
        """The ordinary text of ``ids``: their bytes, markers and special ids left out."""
        return b"".join(self.tokenizer.token_bytes(t) for t in ids if t not in self.specials)

    @functools.cached_property
    def recon_text(self) -> str:
        """The reconstruction's ordinary text outside its reasoning, whitespace aside (once per diagnosis)."""
        reasoning = self.recon_layout.reasoning if self.profile is not None else None
        ids = self.recon[reasoning.end:] if reasoning is not None else self.recon
        return strip_ws(self.text_of(ids).decode("utf-8", "replace"))

    def golden_text_after(self, index: int) -> str:
        """The golden's ordinary text from token ``index`` on, whitespace aside."""
        return strip_ws(self.text_of(self.golden[index:]).decode("utf-8", "replace"))

    @functools.cached_property
    def call_text_starts(self) -> list[int]:
        """Where the golden output writes the text that opens tool calls written as text (the profile's
        ``OwnLayout.call_text``), as token indices: a parser cuts the output there, whether or not a call follows."""
        own = self.profile.spec.own_layout if self.profile is not None else None
        opener = own.call_text.encode("utf-8") if own is not None else b""
        if not opener:
            return []
        data = self.gbytes.data
        found, at = [], data.find(opener)
        starts = [self.gbytes.offsets[i] for i in range(len(self.golden))] if at >= 0 else []
        while at >= 0:
            found.append(bisect_right(starts, at) - 1)
            at = data.find(opener, at + 1)
        return found

    @functools.cached_property
    def content_moved(self) -> bool:
        """Whether the response's content is the golden's content before its first call plus text the model
        wrote later, among or after its calls (a parser that returns the text it does not read as a call in the
        content, which the layout writes before the calls): the text is kept, its place is lost."""
        if self.layout is None or not self.layout.tool_calls or not self.rebuilt_calls:
            return False
        golden, recon = self.layout.content, self.recon_layout.content
        if golden is None or recon is None:
            return False
        before = strip_ws(self.text_of(self.golden[golden.start:golden.end]).decode("utf-8", "replace"))
        sent = strip_ws(self.text_of(self.recon[recon.start:recon.end]).decode("utf-8", "replace"))
        later = sent.removeprefix(before)
        return sent.startswith(before) and bool(later) and later in self.golden_text_after(golden.end)

    def think_not_closed(self, only_r) -> bool:
        """Whether the reconstruction's only extra special is the think-end marker of a golden output
        that never wrote one (reasoning cut, or left for the tool calls straight away)."""
        end = self.think_end
        return end is not None and set(only_r) == {end} and end not in self.golden

    @functools.cached_property
    def literal_marker_starts(self) -> list[int]:
        """Where the golden output spells a special token's text in ordinary tokens (token indices):
        a server's text parser takes it for the marker, and what follows it is parsed as such."""
        pattern = _special_text_pattern(self.tokenizer)
        if pattern is None:
            return []
        pieces, firsts, at = [], [], 0
        for t in self.golden:
            data = b"\0" if t in self.specials else self.tokenizer.token_bytes(t)  # a real marker spells nothing
            pieces.append(data)
            firsts.append(at)
            at += len(data)
        return [bisect_left(firsts, m.start() + 1) - 1 for m in pattern.finditer(b"".join(pieces))]

    def special_text_deleted(self, gb: bytes, rb: bytes) -> bool:
        """Whether the golden text is the reconstruction's plus the literal text of special tokens
        (whitespace aside): a server deleted marker text the model wrote as ordinary text."""
        pattern = _special_text_pattern(self.tokenizer)
        if pattern is None or not pattern.search(gb):
            return False
        left = pattern.sub(b"", gb)
        return left == rb or strip_ws(left.decode("utf-8", "replace")) == strip_ws(rb.decode("utf-8", "replace"))

    def dropped_by_parser(self, start: int, end: int, regions: set[str]) -> bool:
        """Whether golden[start:end] holds text between or after tool calls, the start of a call that
        never closed (cut at the length limit), or a whole call: what tool-call parsers leave out of a
        response (a whole call: one its regex cannot read, as vLLM's deepseek_v3 a multi-line one)."""
        if BETWEEN in regions:
            return True
        if self.layout is None:
            return False
        if self._cut_calls is None:  # where each call that never closed starts, in order (once per diagnosis)
            self._cut_calls = sorted(call.id.start for call in self.layout.tool_calls if not call.complete)
            self._whole_calls = sorted((call.id.start, call.arguments.end) for call in self.layout.tool_calls)
        after = bisect_right(self._cut_calls, start)  # the first cut call starting after ``start``
        if after < len(self._cut_calls) and self._cut_calls[after] <= end:
            return True
        i = bisect_left(self._whole_calls, (start,))  # a whole call inside golden[start:end]
        while i < len(self._whole_calls) and self._whole_calls[i][0] <= end:
            if self._whole_calls[i][1] <= end:
                return True
            i += 1
        return False

    def inside_arguments(self, start: int, end: int, gb: bytes, rb: bytes) -> bool:
        """Whether the bytes that differ in golden[start:end] (gb, against the reconstruction's rb; an
        insertion point when nothing of the golden side differs) lie inside some tool call's arguments,
        between their first and last non-whitespace byte."""
        if self.layout is None or not self.layout.tool_calls:
            return False
        n = min(len(gb), len(rb))
        p = 0
        while p < n and gb[p] == rb[p]:
            p += 1
        q = 0
        while q < n - p and gb[len(gb) - 1 - q] == rb[len(rb) - 1 - q]:
            q += 1
        off = self.gbytes.offsets
        lo, hi = off[start] + p, off[end] - q
        if self._cores is None:
            self._cores = self._argument_cores()
        starts, ends, ordered = self._cores
        if not ordered:  # out of order or overlapping (no layout here makes them): each call in turn
            return any((lo < c1 and hi > c0) if lo < hi else c0 < lo < c1 for c0, c1 in zip(starts, ends))
        after = bisect_right(ends, lo)  # the first core ending after lo: it starts first of all such
        return after < len(ends) and starts[after] < (hi if lo < hi else lo)

    def _argument_cores(self) -> tuple[list[int], list[int], bool]:
        """Each tool call's arguments as golden byte offsets, from the first to past the last
        non-whitespace byte (calls with none left out), as (starts, ends, whether they are in
        order without overlap). Built once per diagnosis."""
        off, data = self.gbytes.offsets, self.gbytes.data
        starts, ends = [], []
        for call in self.layout.tool_calls:
            span = call.arguments
            a0, a1 = off[span.start], off[span.end]
            body = data[a0:a1]
            core0 = a0 + len(body) - len(body.lstrip())
            core1 = a1 - (len(body) - len(body.rstrip()))
            if core0 < core1:
                starts.append(core0)
                ends.append(core1)
        return starts, ends, all(e <= s for e, s in zip(ends, starts[1:]))


_SPECIAL_PATTERNS: dict[int, tuple[object, object]] = {}


def _special_text_pattern(tokenizer: Tokenizer):
    """A bytes regex matching the text of any special token of the tokenizer (made once per tokenizer)."""
    cached = _SPECIAL_PATTERNS.get(id(tokenizer))
    if cached is None or cached[0] is not tokenizer:
        texts = sorted((t.encode("utf-8") for t in tokenizer.special_tokens if t), key=len, reverse=True)
        cached = _SPECIAL_PATTERNS[id(tokenizer)] = (tokenizer, re.compile(b"|".join(map(re.escape, texts))) if texts else None)
    return cached[1]


def _made_of(data: bytes, parts: set[bytes]) -> bool:
    """Whether ``data`` is a concatenation of ``parts`` (each any number of times)."""
    reached, todo = {0}, [0]
    while todo:
        at = todo.pop()
        if at == len(data):
            return True
        for part in parts:
            if data.startswith(part, at) and at + len(part) not in reached:
                reached.add(at + len(part))
                todo.append(at + len(part))
    return False


def _framing(layout, data: SequenceBytes) -> tuple[list, str, str]:
    """A layout's framing (each marker span's bytes, each reasoning or content body's kind, in order) and
    the text of its reasoning bodies and of its content bodies, each joined without whitespace (partial
    UTF-8 as U+FFFD, as an engine sends it)."""
    frame, reasoning, content = [], [], []
    for span in layout.spans:
        if span.kind == MARKER:
            frame.append(data.span(span.start, span.end))
        elif span.kind in (REASONING, CONTENT):
            frame.append(span.kind)
            (reasoning if span.kind == REASONING else content).append(data.span(span.start, span.end))
    def text(parts):
        return strip_ws(b"".join(parts).decode("utf-8", "replace"))

    return frame, text(reasoning), text(content)

