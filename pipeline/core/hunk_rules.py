"""Which class a hunk gets: rules, tried in the one order ``RULES`` states; the first that answers wins.

Each rule looks at one hunk (``HunkFacts``: its ids and bytes on both sides, computed on first use) and
at what the diagnosis knows about the whole pair (``DivergenceContext``), and returns a class name or
None to pass the hunk on. A hunk no rule answers is ``other``. The order matters where rules overlap,
and goes from what ids alone decide to what needs the text and the output's layout:

1. the end of the output: markers closed after a cut, a lone stop token;
2. special ids: one replaced, specials that differ between the sides, equal bytes;
3. UTF-8 the text cannot carry;
4. text a server deleted, kept or dropped;
5. where in the output the hunk lies: a tool-call id, whitespace, tool-call arguments;
6. the model's messages framed or moved otherwise by a parser;
7. calls the golden layout does not see but the response (the reconstruction's own layout) has.

A new class is one record in ``divergence_classes.py`` and one rule here (``@rule`` names the
classes it may return; ``tests/test_divergence_classes.py`` checks every class has a rule), placed
before the rules it must win over.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable

from .divergence_classes import (
    CUT_IN_MARKUP,
    DROPPED_TEXT,
    FINISH_REWRITTEN,
    INVALID_UTF8,
    MARKER_TEXT,
    MESSAGE_STRUCTURE,
    NON_CANONICAL_SPLIT,
    OTHER,
    SPECIAL_TEXT_DELETED,
    SPECIAL_TOKEN_ID,
    STOP_TEXT_KEPT,
    STOP_TOKEN,
    THINK_NOT_CLOSED,
    TOOL_ARGS_JSON,
    TOOL_CALL_ID,
    TRUNCATED_UTF8,
    WHITESPACE,
)
from .divergence_context import DivergenceContext, strip_ws
from .layout import REASONING, TOOL_ARGUMENTS
from .layout import TOOL_CALL_ID as TOOL_CALL_ID_REGION  # a region of the output, not the class

__all__ = ["HunkFacts", "Rule", "RULES", "classify_hunk"]


class HunkFacts:
    """One hunk, golden[g_start:g_end] against rebuilt[r_start:r_end], with what the rules read of it."""

    def __init__(self, ctx: DivergenceContext, g_start: int, g_end: int, r_start: int, r_end: int):
        self.ctx = ctx
        self.g_start, self.g_end, self.r_start, self.r_end = g_start, g_end, r_start, r_end
        self.golden = ctx.golden[g_start:g_end]
        self.rebuilt = ctx.recon[r_start:r_end]

    @property
    def at_end(self) -> bool:
        """Whether the hunk reaches the end of both sequences."""
        return self.g_end == len(self.ctx.golden) and self.r_end == len(self.ctx.recon)

    @functools.cached_property
    def g_special(self) -> Counter:
        return Counter(t for t in self.golden if t in self.ctx.specials)

    @functools.cached_property
    def r_special(self) -> Counter:
        return Counter(t for t in self.rebuilt if t in self.ctx.specials)

    @functools.cached_property
    def gb(self) -> bytes:
        """The golden side's bytes."""
        return self.ctx.gbytes.span(self.g_start, self.g_end)

    @functools.cached_property
    def rb(self) -> bytes:
        """The rebuilt side's bytes."""
        return self.ctx.rbytes.span(self.r_start, self.r_end)

    @functools.cached_property
    def regions(self) -> set[str]:
        """The golden layout's regions the hunk touches."""
        return self.ctx.regions(self.g_start, self.g_end)


Rule = Callable[[HunkFacts], "str | None"]


def rule(*classes: str) -> Callable[[Rule], Rule]:
    """Mark a rule with the classes it may return."""

    def mark(fn: Rule) -> Rule:
        fn.classes = classes  # type: ignore[attr-defined]
        return fn

    return mark


# -- 1. the end of the output ----------------------------------------------------------------------
@rule(FINISH_REWRITTEN, CUT_IN_MARKUP)
def closing_markup_after_a_cut(h: HunkFacts) -> str | None:
    """Only special ids added after the end of a cut output: closing markers (and a stop) the model never
    wrote. The response hid the cut (``finish-rewritten``), or the reconstruction guessed how to close it."""
    ctx = h.ctx
    added = h.rebuilt
    if ctx.cut_at_length and h.g_start == h.g_end == len(ctx.golden) and added and all(t in ctx.specials for t in added) and (
        ctx.finish_rewritten or any(t not in ctx.stop_ids for t in added)
    ):
        return FINISH_REWRITTEN if ctx.finish_rewritten else CUT_IN_MARKUP
    return None


@rule(STOP_TOKEN)
def lone_stop_at_the_end(h: HunkFacts) -> str | None:
    """One stop token missing or extra at the very end (another lone id there is left to the rules below)."""
    if h.at_end and len(h.golden) + len(h.rebuilt) == 1 and (h.golden or h.rebuilt)[0] in h.ctx.stop_ids:
        return STOP_TOKEN
    return None


# -- 2. special ids --------------------------------------------------------------------------------
@rule(STOP_TOKEN, SPECIAL_TOKEN_ID)
def one_special_replaced(h: HunkFacts) -> str | None:
    """One id against one, a special among them: another of the model's stop tokens than the one the engine
    stopped on, at the very end; anywhere else a wrong marker id."""
    if len(h.golden) == 1 and len(h.rebuilt) == 1 and (h.g_special or h.r_special):
        real_stops = h.ctx.real_stops
        if h.at_end and h.golden[0] in real_stops and h.rebuilt[0] in real_stops:
            return STOP_TOKEN
        return SPECIAL_TOKEN_ID
    return None


@rule(MARKER_TEXT, THINK_NOT_CLOSED, TOOL_CALL_ID, SPECIAL_TOKEN_ID)
def specials_differ(h: HunkFacts) -> str | None:
    """The sides hold different special ids. In turn: each spelled as text on the other side (a parser made
    marker text into the marker, or back); only a </think> the golden never wrote added; a marker rebuilt
    where the model wrote its text (a parser took it for the marker); whole calls realigned, a rebuilt id
    shifted where the calls match; as many ids on each side (a marker replaced). Else the next rules."""
    if h.g_special == h.r_special:
        return None
    ctx = h.ctx
    only_g = h.g_special - h.r_special
    only_r = h.r_special - h.g_special
    if all(ctx.special_bytes(t) in h.rb for t in only_g) and all(ctx.special_bytes(t) in h.gb for t in only_r):
        return MARKER_TEXT
    if ctx.think_not_closed(only_r):
        return THINK_NOT_CLOSED
    if only_r and ctx.literal_marker_starts:
        return MARKER_TEXT
    if h.g_start == h.g_end and ctx.layout is not None and ctx.layout.tool_calls and set(only_r) & ctx.call_markers:
        return TOOL_CALL_ID
    if len(h.golden) == len(h.rebuilt):
        return SPECIAL_TOKEN_ID
    return None


@rule(MARKER_TEXT, NON_CANONICAL_SPLIT)
def same_bytes(h: HunkFacts) -> str | None:
    """Equal bytes: a harmless re-split, unless a marker or special id is involved (then marker text)."""
    if h.gb == h.rb:
        return MARKER_TEXT if h.g_special or h.r_special else NON_CANONICAL_SPLIT
    return None


@rule(SPECIAL_TOKEN_ID)
def lone_markers_missing_or_extra(h: HunkFacts) -> str | None:
    """One side empty, the other nothing but special ids: markers lost, or extra."""
    specials = h.ctx.specials
    if not h.golden and set(h.rebuilt) <= specials or not h.rebuilt and set(h.golden) <= specials:
        return SPECIAL_TOKEN_ID
    return None


# -- 3. UTF-8 the text cannot carry ----------------------------------------------------------------
@rule(TRUNCATED_UTF8, INVALID_UTF8)
def invalid_utf8_in_golden(h: HunkFacts) -> str | None:
    """Invalid UTF-8 in the golden side's bytes: cut inside a character at the length limit when it lies
    in the unfinished character that ends a cut output, else partial bytes the model wrote."""
    ctx = h.ctx
    invalid = ctx.gbytes.invalid_byte_ranges(h.g_start, h.g_end)
    if not invalid:
        return None
    text_end = ctx.golden_text_end
    if ctx.cut_at_length and h.g_end >= text_end and ctx.gbytes.incomplete_tail(text_end):
        tail_start = ctx.gbytes.offsets[text_end] - ctx.gbytes.incomplete_tail(text_end)
        if any(end > tail_start for _, end in invalid):
            return TRUNCATED_UTF8
    return INVALID_UTF8


@rule(INVALID_UTF8)
def invalid_utf8_in_rebuilt(h: HunkFacts) -> str | None:
    """Invalid UTF-8 in the rebuilt side's bytes."""
    return INVALID_UTF8 if h.ctx.rbytes.invalid_byte_ranges(h.r_start, h.r_end) else None


# -- 4. text a server deleted, kept or dropped -----------------------------------------------------
@rule(SPECIAL_TEXT_DELETED)
def special_text_deleted(h: HunkFacts) -> str | None:
    """The golden text is the rebuilt one plus the literal text of special tokens: a server deleted it."""
    return SPECIAL_TEXT_DELETED if h.ctx.special_text_deleted(h.gb, h.rb) else None


@rule(STOP_TEXT_KEPT)
def stop_text_kept(h: HunkFacts) -> str | None:
    """The rebuilt text ends with the text of the stop token the engine stopped on."""
    return STOP_TEXT_KEPT if h.ctx.stop_text_kept(h.g_end, h.gb, h.rb) else None


@rule(DROPPED_TEXT)
def text_dropped_by_parser(h: HunkFacts) -> str | None:
    """Golden text with no rebuilt text against it, where a tool-call parser drops text (between or after
    calls, a call cut off or one it cannot read) or after marker text the model wrote."""
    ctx = h.ctx
    rebuilt_text = b"".join(ctx.tokenizer.token_bytes(t) for t in h.rebuilt if t not in ctx.specials)
    if h.gb.strip() and not rebuilt_text.strip() and (
        ctx.dropped_by_parser(h.g_start, h.g_end, h.regions) or any(i < h.g_end for i in ctx.literal_marker_starts)
    ):
        return DROPPED_TEXT
    return None


# -- 5. where in the output the hunk lies ----------------------------------------------------------
@rule(TOOL_CALL_ID)
def in_tool_call_id(h: HunkFacts) -> str | None:
    """The hunk touches a tool-call id."""
    return TOOL_CALL_ID if TOOL_CALL_ID_REGION in h.regions else None


@rule(TOOL_ARGS_JSON, WHITESPACE)
def whitespace_only(h: HunkFacts) -> str | None:
    """The texts differ only in whitespace. Inside the JSON of tool-call arguments that is json.dumps
    spacing: the provider re-serialised the arguments. Around them (padding a parser drops) it is plain
    whitespace."""
    if strip_ws(h.gb.decode("utf-8", "replace")) != strip_ws(h.rb.decode("utf-8", "replace")):
        return None
    return TOOL_ARGS_JSON if h.ctx.inside_arguments(h.g_start, h.g_end, h.gb, h.rb) else WHITESPACE


@rule(TOOL_ARGS_JSON)
def in_tool_arguments(h: HunkFacts) -> str | None:
    """The hunk touches tool-call arguments (escapes, number format: re-serialised JSON)."""
    return TOOL_ARGS_JSON if TOOL_ARGUMENTS in h.regions else None


# -- 6. the model's messages framed or moved otherwise ---------------------------------------------
@rule(MARKER_TEXT)
def after_marker_text_the_model_wrote(h: HunkFacts) -> str | None:
    """Text moved across a split a parser made at marker text the model wrote (at or before the hunk)."""
    return MARKER_TEXT if any(i <= h.g_end for i in h.ctx.literal_marker_starts) else None


@rule(CUT_IN_MARKUP, MESSAGE_STRUCTURE)
def messages_reframed(h: HunkFacts) -> str | None:
    """The response does not keep the model's messages as it wrote them, while the text of each kind
    survives (``structure_lost``) or the hunk changes message framing only: inside the header a length cut
    left open, cut-in-markup; elsewhere message-structure."""
    ctx = h.ctx
    if ctx.structure_lost or (ctx.framing_differs and ctx.framing_only(h.g_start, h.g_end, h.r_start, h.r_end)):
        header = ctx.open_header
        return CUT_IN_MARKUP if header is not None and (h.g_end > header or h.g_start >= header) else MESSAGE_STRUCTURE
    return None


@rule(MARKER_TEXT)
def markup_moved_as_text(h: HunkFacts) -> str | None:
    """The rebuilt text is whole pieces of the golden's, moved by a parser that cut the messages at marker
    text the model wrote; or rebuilt text that spells markup (a call the parser does not read, returned in
    the content) made of such pieces, or spells a marker the golden side has as an id."""
    ctx = h.ctx
    if ctx.literal_marker_starts and ctx.framing_differs and ctx.pieces_moved:
        return MARKER_TEXT
    if h.rb.strip() and (ctx.spells_special(h.rb) and ctx.pieces_moved or any(
        ctx.special_bytes(t) in h.rb for t in set(h.golden) & ctx.specials
    )):
        return MARKER_TEXT
    return None


@rule(DROPPED_TEXT)
def open_message_dropped_at_cut(h: HunkFacts) -> str | None:
    """The end of a cut output missing from the response: the message the cut left open, which the parser drops."""
    if h.ctx.cut_at_length and h.g_end == len(h.ctx.golden) and h.gb.strip() and not h.rb.strip():
        return DROPPED_TEXT
    return None


# -- 7. what the response's own layout shows --------------------------------------------------------
# Where the golden layout sees no call (the model wrote its call in a form the layout does not split at, as
# a Llama JSON call after content without <|python_tag|>, a DSML block without the blank line before it)
# the parser may still have read one: the reconstruction's layout, from the response, says where its calls are.
@rule(DROPPED_TEXT)
def text_dropped_around_calls(h: HunkFacts) -> str | None:
    """Golden text missing from the response, the rebuilt side being that text less a part at one end
    (whitespace aside): where the response returned calls and the lost text lies outside the golden's call
    arguments and nowhere in the reconstruction outside its reasoning (a parser that returns only the calls, as
    vLLM's llama3_json, drops the content before and after them); after a length cut, where the rebuilt output
    ends here with no text (the parser dropped the cut output's unfinished end); or where the golden wrote the
    text that opens calls written as text (``call_text_starts``) before the hunk's end (the parser cut there and
    dropped the call it could not read, or the text after that opening)."""
    ctx = h.ctx
    g_text, r_text = ctx.text_of(h.golden), ctx.text_of(h.rebuilt)
    golden, kept = strip_ws(g_text.decode("utf-8", "replace")), strip_ws(r_text.decode("utf-8", "replace"))
    if not golden or not (golden.startswith(kept) or golden.endswith(kept)):
        return None
    lost = golden.removeprefix(kept) if golden.startswith(kept) else golden.removesuffix(kept)
    if lost and (ctx.cut_at_length and h.r_end == len(ctx.recon) and not kept
                 or any(i < h.g_end for i in ctx.call_text_starts)):
        return DROPPED_TEXT
    if ctx.rebuilt_calls and lost and TOOL_ARGUMENTS not in h.regions and lost not in ctx.recon_text:
        return DROPPED_TEXT
    return None


@rule(MESSAGE_STRUCTURE)
def text_moved_into_the_content(h: HunkFacts) -> str | None:
    """Text the model wrote among or after its calls, sent in the response's content, which comes before
    the calls (``content_moved``): the hunk adds it, or the call it was written next to, at its new place."""
    ctx = h.ctx
    if not ctx.text_of(h.golden).strip() and h.rebuilt and ctx.content_moved:
        return MESSAGE_STRUCTURE
    return None


@rule(MARKER_TEXT)
def text_moved_from_after_marker_text(h: HunkFacts) -> str | None:
    """Rebuilt text the model wrote after marker text it spelled in ordinary tokens (``<think>``), at or after
    the hunk's end: a parser split the output there and moved the text after it ahead (into the reasoning),
    what came before is lost."""
    ctx = h.ctx
    moved = strip_ws(ctx.text_of(h.rebuilt).decode("utf-8", "replace"))
    if moved and any(at >= h.g_end and moved in ctx.golden_text_after(at) for at in ctx.literal_marker_starts):
        return MARKER_TEXT
    return None


@rule(TOOL_ARGS_JSON)
def rebuilt_inside_call_arguments(h: HunkFacts) -> str | None:
    """The rebuilt side lies inside the arguments of a call the reconstruction wrote, and no marker or special
    id is involved: the parser read a call where the model wrote this text and returned its arguments
    re-serialised (another key, number format, DSML parameters for direct JSON), which the layout writes back."""
    ctx = h.ctx
    if not h.rebuilt or h.g_special or h.r_special or REASONING in h.regions:
        return None
    return TOOL_ARGS_JSON if ctx.recon_regions(h.r_start, h.r_end) == {TOOL_ARGUMENTS} else None


RULES: tuple[Rule, ...] = (
    closing_markup_after_a_cut,
    lone_stop_at_the_end,
    one_special_replaced,
    specials_differ,
    same_bytes,
    lone_markers_missing_or_extra,
    invalid_utf8_in_golden,
    invalid_utf8_in_rebuilt,
    special_text_deleted,
    stop_text_kept,
    text_dropped_by_parser,
    in_tool_call_id,
    whitespace_only,
    in_tool_arguments,
    after_marker_text_the_model_wrote,
    messages_reframed,
    markup_moved_as_text,
    open_message_dropped_at_cut,
    text_dropped_around_calls,
    text_moved_into_the_content,
    text_moved_from_after_marker_text,
    rebuilt_inside_call_arguments,
)


def classify_hunk(ctx: DivergenceContext, g_start: int, g_end: int, r_start: int, r_end: int) -> str:
    """The class of golden[g_start:g_end] against rebuilt[r_start:r_end]: the first rule's answer, else ``other``."""
    hunk = HunkFacts(ctx, g_start, g_end, r_start, r_end)
    for check in RULES:
        cls = check(hunk)
        if cls is not None:
            return cls
    return OTHER
