"""Why two id sequences differ: every divergent hunk, a class for each, and a report for people.

``diagnose(golden_ids, reconstructed_ids, tokenizer)`` aligns the two sequences (common prefix and
suffix stripped, the middle aligned by unique-token anchors, small gaps by difflib), so each
*hunk* is one aligned block where they differ. Each hunk gets one class from ``CLASSES``; the
first hunk gets a window of five tokens either side, for both sequences, with each token's text
alone and in context and the context check of the original debug script
(``decode(prefix) + decode([id])`` versus ``decode(prefix + [id])``).

UTF-8 classes are decided from the bytes of the tokens, never from U+FFFD in decoded text: U+FFFD
(bytes EF BF BD) can be real model output.

This runs only for divergent samples; per-run work (nothing but the tokenizer's tables) is reused.
Equal sequences give a Diagnosis with no hunks.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import re
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from .layout import BETWEEN, CONTENT, MARKER, REASONING, TOOL_ARGUMENTS, TOOL_CALL_ID, split_output
from .profiles import Profile
from .tokenizer import Tokenizer

__all__ = [
    "CLASSES",
    "TEXT_PRESERVING_CLASSES",
    "ADVICE",
    "SEVERITY",
    "by_severity",
    "Hunk",
    "WindowToken",
    "Diagnosis",
    "diagnose",
    "divergent_blocks",
    "token_windows",
]

SPECIAL_TOKEN_ID = "special-token-id"
STOP_TOKEN = "stop-token"
NON_CANONICAL_SPLIT = "non-canonical-split"
MARKER_TEXT = "marker-text"
WHITESPACE = "whitespace"
TOOL_ARGS_JSON = "tool-args-json"
TOOL_CALL_ID_CLASS = "tool-call-id"
DROPPED_TEXT = "dropped-text"
SPECIAL_TEXT_DELETED = "special-text-deleted"
STOP_TEXT_KEPT = "stop-text-kept"
THINK_NOT_CLOSED = "think-not-closed"
MESSAGE_STRUCTURE = "message-structure"
CUT_IN_MARKUP = "cut-in-markup"
FINISH_REWRITTEN = "finish-rewritten"
TRUNCATED_UTF8 = "truncated-utf8"
INVALID_UTF8 = "invalid-utf8"
OTHER = "other"

# The user-facing class names, in the order reports list them.
CLASSES = (
    SPECIAL_TOKEN_ID,
    STOP_TOKEN,
    NON_CANONICAL_SPLIT,
    MARKER_TEXT,
    WHITESPACE,
    TOOL_ARGS_JSON,
    TOOL_CALL_ID_CLASS,
    DROPPED_TEXT,
    SPECIAL_TEXT_DELETED,
    STOP_TEXT_KEPT,
    THINK_NOT_CLOSED,
    MESSAGE_STRUCTURE,
    CUT_IN_MARKUP,
    FINISH_REWRITTEN,
    TRUNCATED_UTF8,
    INVALID_UTF8,
    OTHER,
)
# Classes where the decoded bytes are the same on both sides: only the split differs.
TEXT_PRESERVING_CLASSES = frozenset({NON_CANONICAL_SPLIT})
# Most severe first: a sample's headline class (and the advice it leads with) is its most severe hunk's.
SEVERITY = (
    SPECIAL_TOKEN_ID, MARKER_TEXT, STOP_TOKEN, FINISH_REWRITTEN, CUT_IN_MARKUP, THINK_NOT_CLOSED, MESSAGE_STRUCTURE,
    DROPPED_TEXT, SPECIAL_TEXT_DELETED, STOP_TEXT_KEPT, OTHER, TOOL_ARGS_JSON, TOOL_CALL_ID_CLASS, WHITESPACE, TRUNCATED_UTF8, INVALID_UTF8,
    NON_CANONICAL_SPLIT,
)


def by_severity(classes) -> list[str]:
    """``classes``, each once, most severe first."""
    return sorted(dict.fromkeys(classes), key=SEVERITY.index)

# One line per class: what it means and what to do.
ADVICE = {
    SPECIAL_TOKEN_ID: "a marker or special token was replaced by another single id, or is missing or extra: the "
    "profile or pipeline uses the wrong id for a marker, or a marker was lost; run `tokfidelity audit --profile P --tokenizer T` and bind marker ids from their "
    "text (bind_profile), never by hand",
    STOP_TOKEN: "a stop token is missing or extra at the end: check the finish_reason handling (no stop token on "
    "`length`, one on `stop`/`tool_calls`) and that the engine's matched stop id is the profile's stop id",
    NON_CANONICAL_SPLIT: "same bytes, different split: the model emitted a non-canonical tokenization that text "
    "cannot carry; harmless for the text, but the ids differ: accept it by policy (manifest `accept`) or capture "
    "ids from the engine (return_token_ids)",
    MARKER_TEXT: "a special id on one side, ordinary tokens spelling its text on the other: a parser turned marker "
    "text into the marker (or back); encode content as ordinary text and insert markers as ids, and check the API "
    "view (e.g. spaces between special tokens, skip_special_tokens); or the model wrote marker text as ordinary "
    "text and a server's text parser took it for markup, cutting and moving the messages there (SGLang's gpt-oss "
    "parser), or returned the markup of a call it does not read as content text: take ids from the engine",
    WHITESPACE: "the texts differ only in whitespace outside tool-call arguments: the API stripped or added "
    "whitespace (around </think>, around the content or the calls); pick the API view that matches the provider's "
    "engine version (sglang vs sglang-legacy), or take ids from the engine",
    TOOL_ARGS_JSON: "tool-call arguments differ (json.dumps spacing, escapes, number format): the provider "
    "re-serialised the JSON (json.loads then json.dumps, as sglang's qwen25/deepseekv3 parsers always do and kimi_k2 "
    "does with tool_choice required/named or when streaming; vLLM 0.32.0's parser engine (kimi_k2) does when the "
    "request's tool schema declares the function's properties and a value's type is coerced to it: 5.0 -> 5 for a "
    "number, null -> \"null\" for a string, the whole object re-dumped); the model's exact arguments text is lost: "
    "take ids from the engine (return_token_ids)",
    TOOL_CALL_ID_CLASS: "a tool-call id differs: the API rebuilt the id (e.g. functions.NAME:INDEX with a per-turn "
    "index instead of the conversation-wide counter); reconstruct the id the way the model wrote it",
    DROPPED_TEXT: "text outside the tool-call blocks (between or after calls), a call cut off at the length "
    "limit, or a whole call its parser cannot read is missing from the response: the server's tool-call parser "
    "drops it (sglang's qwen25, deepseekv3 and kimi_k2 detectors keep only the content before the first call and "
    "the complete calls; vLLM's deepseek_v3 regex does not cross lines, so a call with multi-line arguments is "
    "lost; SGLang's gpt-oss parser drops a commentary message a length cut left open); the text is lost: take ids "
    "from the engine",
    SPECIAL_TEXT_DELETED: "the model wrote the text of a special token (<|im_end|>, </think>, [EOS], ...) as "
    "ordinary text and the server deleted it: vLLM's parser engine deletes the literal text of every special token "
    "of the tokenizer class that is not one of its markers, and a </think> after the reasoning; the text is lost: "
    "take ids from the engine (return_token_ids)",
    STOP_TEXT_KEPT: "the text of the stop token the engine stopped on is at the end of the content: vLLM's "
    "harmony path returns a message that gpt-oss's <|endoftext|> left open with that token's text, and SGLang keeps "
    "<|call|> in the text of a call its gpt-oss parser does not read; the reconstruction cannot tell it from text "
    "the model wrote and ends the answer with the usual stop: take ids from the engine (return_token_ids)",
    MESSAGE_STRUCTURE: "the model's messages are in the response only as one reasoning and one content field: an "
    "empty message is dropped (an empty analysis message becomes reasoning null), several messages of a kind are "
    "joined (vLLM with newlines), a commentary preamble without calls becomes the final answer, and a later "
    "message's text moves to its field; the text is kept, whitespace aside, but not how many messages held it, "
    "on which channel, in which order: take ids from the engine (return_token_ids)",
    THINK_NOT_CLOSED: "the model never wrote </think> (it went from its reasoning straight to the tool calls, or "
    "the text after a missing </think> became content) and the response cannot say so: the reconstruction writes the "
    "</think> a reasoning field implies; take ids from the engine",
    CUT_IN_MARKUP: "the output was cut at the length limit inside tool-call markup and the response cannot say "
    "which closing markers the model had written: the reconstruction closes the section the model left open; or "
    "inside a message header (gpt-oss: <|start|>assistant<|channel|>... before <|message|>), which vLLM returns as "
    "content text, its markers spelled out, and SGLang drops; drop the cut sample's last call or message, or take "
    "ids from the engine",
    FINISH_REWRITTEN: "the engine stopped at the length limit but the response's finish_reason is not `length` "
    "(vLLM sends `tool_calls` whenever it parsed a call, also from a cut output): the cut is hidden, so the "
    "reconstruction closes what the model never closed; take ids from the engine, or treat responses whose "
    "completion_tokens reach max_tokens as cut",
    TRUNCATED_UTF8: "the output was cut at the length limit inside a UTF-8 character; the API text ends in U+FFFD "
    "and cannot give back the bytes: drop the partial character's tokens or capture ids from the engine",
    INVALID_UTF8: "the model emitted partial UTF-8 bytes inside the text; they decode to U+FFFD and the bytes are "
    "lost: the text cannot give back these ids; capture ids from the engine or accept by policy",
    OTHER: "the text itself changed for no known reason: compare the two windows above, check the tokenizer "
    "(fingerprint) and the API view, and file the case",
}

WINDOW = 5  # tokens either side of the first hunk
WINDOW_HUNK = 12  # tokens of a long first hunk shown in its window
_SMALL_RANGE = 40_000  # len(a) * len(b) up to which difflib aligns a gap directly
_RESYNC_LIMIT = 96  # tokens skipped (both sides together) when looking for where the sequences agree again
_RESYNC_RUN = 4  # tokens that must agree for a resync to count
_FEW_UNIQUE = 32  # tokens unique to both sides up to which each is found by a search (in C)
_MERGE_GAP = 4  # neighbouring hunks this close are merged when only together they keep the bytes
_HUNK_LIST_LIMIT = 20  # render() lists at most this many hunks
_HUNK_IDS_SHOWN = 8  # ids per side shown for one hunk in render()


@dataclass(frozen=True, slots=True)
class Hunk:
    """One aligned block where the sequences differ: golden[golden_start:golden_end] became
    reconstructed[recon_start:recon_end]."""

    golden_start: int
    golden_end: int
    recon_start: int
    recon_end: int
    cls: str
    text_preserving: bool


@dataclass(frozen=True, slots=True)
class WindowToken:
    """One token of a window: its id, its text alone and in context, and the context check."""

    index: int
    id: int
    text: str  # token_text(id): the token alone
    context_text: str  # what the token adds to the decoded text after its prefix
    context_ok: bool  # decode(prefix) + decode([id]) == decode(prefix + [id])
    in_hunk: bool


@dataclass
class Diagnosis:
    golden_len: int
    recon_len: int
    hunks: list[Hunk]
    texts_identical: bool  # the decoded bytes of the whole sequences are equal
    golden_window: list[WindowToken] = field(default_factory=list)
    recon_window: list[WindowToken] = field(default_factory=list)
    tokenizer_name: str = ""
    golden_ids: Sequence[int] = field(default=(), repr=False, compare=False)
    recon_ids: Sequence[int] = field(default=(), repr=False, compare=False)
    token_text: Callable[[int], str] = field(default=str, repr=False, compare=False)

    @property
    def first_index(self) -> int | None:
        """The first index where the sequences differ (the same in both), None when equal."""
        return self.hunks[0].golden_start if self.hunks else None

    @property
    def classes(self) -> list[str]:
        """Distinct hunk classes, in order of first appearance."""
        return list(dict.fromkeys(h.cls for h in self.hunks))

    @property
    def headline(self) -> str | None:
        """The most severe hunk's class: what the sample is reported as."""
        return by_severity(h.cls for h in self.hunks)[0] if self.hunks else None

    @property
    def harmless(self) -> bool:
        """Every hunk keeps the text (only splits differ)."""
        return all(h.text_preserving for h in self.hunks)

    def class_counts(self) -> dict[str, int]:
        counts = Counter(h.cls for h in self.hunks)
        return {c: counts[c] for c in CLASSES if counts[c]}

    def signature(self) -> dict:
        """Compact, stable, JSON-able summary for reviewed snapshots."""
        if not self.hunks:
            return {"hunks": 0}
        return {
            "classes": [h.cls for h in self.hunks],
            "first_index": self.first_index,
            "texts_identical": self.texts_identical,
            "golden_window": [t.id for t in self.golden_window],
            "recon_window": [t.id for t in self.recon_window],
            # each window token's text, so a reviewer reads the snapshot without a tokenizer
            "golden_text": [t.text for t in self.golden_window],
            "recon_text": [t.text for t in self.recon_window],
        }

    def render(self) -> str:
        """The report for people."""
        if not self.hunks:
            return f"no divergence: both sequences are the same {self.golden_len} ids"
        counts = ", ".join(f"{c} x{n}" for c, n in self.class_counts().items())
        lines = [
            f"divergence: {self.headline}; {len(self.hunks)} hunk(s) [{counts}]; first at index {self.first_index} "
            f"(golden {self.golden_len} ids, reconstructed {self.recon_len} ids)",
            "decoded texts: "
            + (
                "identical (only the split differs)"
                if self.texts_identical and self.harmless
                else "identical bytes, but ids of different kinds (special vs ordinary)"
                if self.texts_identical
                else "DIFFER (the text itself changed)"
            ),
            "hunks:",
        ]
        golden, recon = self.golden_ids, self.recon_ids
        for n, h in enumerate(self.hunks[:_HUNK_LIST_LIMIT], 1):
            lines.append(
                f"  #{n} {h.cls}: golden[{h.golden_start}:{h.golden_end}] {self._ids_brief(golden[h.golden_start:h.golden_end])}"
                f" -> reconstructed[{h.recon_start}:{h.recon_end}] {self._ids_brief(recon[h.recon_start:h.recon_end])}"
            )
        if len(self.hunks) > _HUNK_LIST_LIMIT:
            lines.append(f"  ... and {len(self.hunks) - _HUNK_LIST_LIMIT} more hunk(s)")
        for title, window in (("golden", self.golden_window), ("reconstructed", self.recon_window)):
            if not window:
                continue
            lines.append(f"first hunk, {title} ids {window[0].index}..{window[-1].index} (> marks the hunk):")
            lines.append(f"  {'':1} {'index':>6} {'id':>7}  {'alone':<24} {'in context':<24} context check")
            for prev, t in zip([None, *window], window):
                if prev is not None and t.index != prev.index + 1:
                    lines.append(f"  > {'...':>6} ({t.index - prev.index - 1} more tokens of the hunk)")
                check = "ok" if t.context_ok else "DIFFERS: decode(prefix)+decode([id]) != decode(prefix+[id])"
                lines.append(
                    f"  {'>' if t.in_hunk else ' '} {t.index:>6} {t.id:>7}  {_show(t.text):<24} {_show(t.context_text):<24} {check}"
                )
        lines.append("what to do (most severe first):")
        for c in by_severity(self.classes):
            lines.append(f"  {c}: {ADVICE[c]}")
        return "\n".join(lines)

    def _ids_brief(self, ids: Sequence[int]) -> str:
        shown = " ".join(f"{i} {_show(self.token_text(i))}" for i in ids[:_HUNK_IDS_SHOWN])
        more = f" ... +{len(ids) - _HUNK_IDS_SHOWN} more" if len(ids) > _HUNK_IDS_SHOWN else ""
        return f"[{shown}{more}]"


def _show(text: str) -> str:
    """A token's text, quoted and escaped so whitespace and control bytes are visible."""
    r = repr(text)
    return r if len(r) <= 24 else r[:21] + "..."


# ------------------------------------------------------------------------------------------
# Alignment
# ------------------------------------------------------------------------------------------
def _lis_pairs(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest chain of (i, j) pairs increasing in j (pairs come sorted by i): patience sorting."""
    tails: list[int] = []  # j of the last pair of the best chain of each length
    tail_idx: list[int] = []
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[pos] = j
            tail_idx[pos] = k
        prev[k] = tail_idx[pos - 1] if pos else -1
    chain = []
    k = tail_idx[-1] if tail_idx else -1
    while k >= 0:
        chain.append(pairs[k])
        k = prev[k]
    chain.reverse()
    return chain


def _resync_blocks(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int, int, int]]:
    """Greedy alignment for long gaps without unique tokens (e.g. repetitive text): at each
    difference, take the nearest point where the next few tokens agree again."""
    run = _RESYNC_RUN

    def agree(i: int, j: int) -> bool:
        n = min(run, ahi - i, bhi - j)
        if n < run and ahi - i != bhi - j:
            return False
        return a[i : i + n] == b[j : j + n]

    blocks = []
    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:  # the run of equal tokens, compared in C
            same = _common_prefix(a, b, i, j, min(ahi - i, bhi - j))
            i += same
            j += same
            continue
        found = None
        for d in range(1, _RESYNC_LIMIT + 1):
            for x in range(d + 1):
                ii, jj = i + x, j + d - x
                # (two different first tokens never agree: the slices are not compared)
                if ii <= ahi and jj <= bhi and (ii == ahi or jj == bhi or a[ii] == b[jj]) and agree(ii, jj):
                    found = ii, jj
                    break
            if found:
                break
        if found is None:  # no agreement nearby: the rest of the gap is one hunk
            break
        blocks.append((i, found[0], j, found[1]))
        i, j = found
    if i < ahi or j < bhi:
        blocks.append((i, ahi, j, bhi))
    return blocks


def _common_prefix(a: Sequence[int], b: Sequence[int], alo: int, blo: int, n: int) -> int:
    """Length of the common prefix of a[alo:alo+n] and b[blo:blo+n]: galloping slice compares
    (done in C) instead of a Python loop over every equal token."""
    same, step = 0, 16
    while same < n:
        k = min(step, n - same)
        if a[alo + same : alo + same + k] == b[blo + same : blo + same + k]:
            same += k
            step *= 2
        elif k > 4:
            step = k // 2
        else:
            while same < n and a[alo + same] == b[blo + same]:
                same += 1
            break
    return same


def _common_suffix(a: Sequence[int], b: Sequence[int], ahi: int, bhi: int, n: int) -> int:
    """Length of the common suffix of a[ahi-n:ahi] and b[bhi-n:bhi], as _common_prefix."""
    same, step = 0, 16
    while same < n:
        k = min(step, n - same)
        if a[ahi - same - k : ahi - same] == b[bhi - same - k : bhi - same]:
            same += k
            step *= 2
        elif k > 4:
            step = k // 2
        else:
            while same < n and a[ahi - same - 1] == b[bhi - same - 1]:
                same += 1
            break
    return same


def _unique_pairs(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int]]:
    """(i, j) for each token found exactly once in a[alo:ahi] and once in b[blo:bhi], at a[i] and
    b[j], in order of i. Few such tokens (repetitive text) are found by searches done in C."""
    b_count = Counter(b[blo:bhi])
    common = {t for t, n in Counter(a[alo:ahi]).items() if n == 1 and b_count.get(t) == 1}
    if len(common) <= _FEW_UNIQUE:
        return sorted((a.index(t, alo, ahi), b.index(t, blo, bhi)) for t in common)
    b_pos = {t: j for j, t in enumerate(b[blo:bhi], blo) if t in common}
    return [(i, b_pos[t]) for i, t in enumerate(a[alo:ahi], alo) if t in common]


def divergent_blocks(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Aligned blocks where ``a`` and ``b`` differ, as (a_start, a_end, b_start, b_end), in order.

    Common prefix and suffix are stripped; the middle is split at tokens that occur exactly once
    on both sides (patience diff), small gaps are aligned by difflib, and long gaps without such
    tokens by a greedy nearest-resync. Near-linear for the usual case of a few local differences
    in a long sequence.
    """
    blocks: list[tuple[int, int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        same = _common_prefix(a, b, alo, blo, min(ahi - alo, bhi - blo))
        alo, blo = alo + same, blo + same
        same = _common_suffix(a, b, ahi, bhi, min(ahi - alo, bhi - blo))
        ahi, bhi = ahi - same, bhi - same
        if alo == ahi or blo == bhi:
            if alo < ahi or blo < bhi:
                blocks.append((alo, ahi, blo, bhi))
            continue
        size = (ahi - alo) * (bhi - blo)
        if size > _SMALL_RANGE:
            anchors = _lis_pairs(_unique_pairs(a, b, alo, ahi, blo, bhi))
            if anchors:
                pi, pj = alo, blo
                for i, j in anchors:
                    stack.append((pi, i, pj, j))
                    pi, pj = i + 1, j + 1
                stack.append((pi, ahi, pj, bhi))
                continue
            blocks += _resync_blocks(a, b, alo, ahi, blo, bhi)
            continue
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                blocks.append((alo + i1, alo + i2, blo + j1, blo + j2))
    blocks.sort()
    merged: list[tuple[int, int, int, int]] = []
    for blk in blocks:  # touching blocks (no equal token between them) are one hunk
        if merged and merged[-1][1] == blk[0] and merged[-1][3] == blk[2]:
            last = merged.pop()
            blk = (last[0], blk[1], last[2], blk[3])
        merged.append(blk)
    return merged


# ------------------------------------------------------------------------------------------
# Bytes
# ------------------------------------------------------------------------------------------
_OFFSET_BLOCK = 32  # tokens whose offsets _Offsets computes together


class _Offsets:
    """Where each token of a sequence starts in its bytes: ``offsets[i]`` is the length of the bytes of
    tokens [0, i) (``offsets[len(ids)]`` the whole), answered as the list of every offset would be.

    Offsets are computed a block of tokens at a time, from the nearest offset known (the ends at
    first): a diagnosis reads a few dozen, around its hunks, and building the whole list (one new
    int per token) cost about half of a diagnosis of a 3,500-token sample."""

    __slots__ = ("_ids", "_token_bytes", "_blocks", "_known", "_order")

    def __init__(self, ids: Sequence[int], total: int, tokenizer: Tokenizer):
        self._ids = ids
        self._token_bytes = tokenizer.token_bytes_list
        self._blocks: dict[int, list[int]] = {}  # block number -> offsets of its tokens and of the next one
        self._known = {0: 0, len(ids): total}  # token index -> offset, where known
        self._order = sorted(self._known)  # the known indexes, in order: the nearest found by bisection

    def __getitem__(self, i: int) -> int:
        n = len(self._ids)
        if i < 0:
            i += n + 1
        if not 0 <= i <= n:
            raise IndexError("list index out of range")
        block = self._blocks.get(i // _OFFSET_BLOCK)
        if block is None:
            block = self._fill(i // _OFFSET_BLOCK)
        return block[i % _OFFSET_BLOCK]

    def _fill(self, number: int) -> list[int]:
        start = number * _OFFSET_BLOCK
        known, ids, token_bytes = self._known, self._ids, self._token_bytes
        offset = known.get(start)
        if offset is None:
            order = self._order
            after = bisect_left(order, start)  # 0 < after < len(order): index 0 and len(ids) are known
            near = order[after - 1] if start - order[after - 1] <= order[after] - start else order[after]
            if near < start:
                offset = known[near] + sum(map(len, token_bytes(ids[near:start])))
            else:
                offset = known[near] - sum(map(len, token_bytes(ids[start:near])))
        block = list(accumulate(map(len, token_bytes(ids[start : start + _OFFSET_BLOCK])), initial=offset))
        self._blocks[number] = block
        for index, value in ((start, offset), (start + len(block) - 1, block[-1])):
            if index not in known:
                known[index] = value
                insort(self._order, index)
        return block


class _Bytes:
    """A sequence's bytes with each token's byte offset, built once per diagnosis."""

    __slots__ = ("ids", "data", "offsets")

    def __init__(self, ids: Sequence[int], tokenizer: Tokenizer, data: bytes | None = None):
        self.ids = ids
        self.data = tokenizer.decode_bytes(ids) if data is None else data  # each token's bytes, joined
        self.offsets = _Offsets(ids, len(self.data), tokenizer)

    def span(self, start: int, end: int) -> bytes:
        return self.data[self.offsets[start] : self.offsets[end]]

    def invalid_byte_ranges(self, start: int, end: int) -> list[tuple[int, int]]:
        """Absolute byte ranges of invalid UTF-8 that overlap tokens start..end (or touch the
        insertion point when start == end), from the bytes, never from decoded U+FFFD."""
        data, off = self.data, self.offsets
        n = len(data)
        lo, hi = off[start], off[end]
        ctx_lo, ctx_hi = (lo, hi) if lo < hi else (max(0, lo - 1), min(n, hi + 1))
        # Widen to character boundaries (a UTF-8 character has at most 3 continuation bytes) so a
        # valid character cut by the hunk's edge is not mistaken for invalid bytes.
        for _ in range(3):
            if 0 < ctx_lo < n and 0x80 <= data[ctx_lo] <= 0xBF:
                ctx_lo -= 1
        for _ in range(3):
            if ctx_hi < n and 0x80 <= data[ctx_hi] <= 0xBF:
                ctx_hi += 1
        text = data[ctx_lo:ctx_hi].decode("utf-8", "surrogateescape")
        ranges: list[tuple[int, int]] = []
        pos = ctx_lo
        for ch in text:
            if "\udc80" <= ch <= "\udcff":
                if ranges and ranges[-1][1] == pos:
                    ranges[-1] = (ranges[-1][0], pos + 1)
                else:
                    ranges.append((pos, pos + 1))
                pos += 1
            else:
                pos += len(ch.encode("utf-8"))
        window_lo, window_hi = (lo - 1, hi + 1) if lo == hi else (lo, hi)
        return [(s, e) for s, e in ranges if s < window_hi and e > window_lo]

    def incomplete_tail(self, end: int) -> int:
        """How many bytes at the end of tokens [0, end) start a UTF-8 character that never finishes."""
        data = self.data[max(0, self.offsets[end] - 4) : self.offsets[end]]
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        decoder.decode(data, final=False)
        return len(decoder.getstate()[0])

    def window(self, hunk_lo: int, hunk_hi: int, token_text) -> list[WindowToken]:
        """WINDOW tokens either side of a hunk (and at most WINDOW_HUNK tokens of the hunk itself),
        each with its text alone, its text in context and the context check."""
        data, off, ids = self.data, self.offsets, self.ids
        n = len(ids)
        indices = [
            *range(max(0, hunk_lo - WINDOW), min(hunk_hi, hunk_lo + WINDOW_HUNK)),
            *range(hunk_hi, min(n, hunk_hi + WINDOW)),
        ]
        if not indices:
            return []
        # Decode from a character boundary a little before the window: the same text as decoding
        # the whole prefix, without paying for it on long sequences.
        start = off[max(0, indices[0] - 4)]
        for _ in range(4):
            if 0 < start < len(data) and 0x80 <= data[start] <= 0xBF:
                start -= 1
        out = []
        for i in indices:
            before = data[start : off[i]].decode("utf-8", "replace")
            after = data[start : off[i + 1]].decode("utf-8", "replace")
            alone = token_text(ids[i])
            k = len(before)
            while k and not after.startswith(before[:k]):
                k -= 1
            out.append(
                WindowToken(
                    index=i,
                    id=ids[i],
                    text=alone,
                    context_text=after[k:],
                    context_ok=before + alone == after,
                    in_hunk=hunk_lo <= i < hunk_hi,
                )
            )
        return out


def token_windows(ids: Sequence[int], tokenizer: Tokenizer, spans: Sequence[tuple[int, int]]) -> list[list[WindowToken]]:
    """The window a diagnosis shows around ids[lo:hi], for each (lo, hi) span (any hunk, not only
    the first): WINDOW tokens either side and at most WINDOW_HUNK of the hunk, each token with its
    text alone, in context, and the context check. The bytes are gathered once for all spans."""
    data = _Bytes(ids, tokenizer)
    return [data.window(lo, hi, tokenizer.token_text) for lo, hi in spans]


def _strip_ws(text: str) -> str:
    return "".join(text.split())


# ------------------------------------------------------------------------------------------
# Classification
# ------------------------------------------------------------------------------------------
class _Context:
    """What classification needs besides the hunk: built once per diagnosis."""

    def __init__(self, golden, recon, tokenizer, profile, finish_reason, golden_bytes=None):
        self.golden = golden
        self.recon = recon
        self.gbytes = _Bytes(golden, tokenizer, golden_bytes)
        self.rbytes = _Bytes(recon, tokenizer)
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
        self.think_end = profile.ids.get("think_end") if profile is not None else None
        self.call_markers = frozenset(
            profile.ids[r] for r in ("tool_call_begin", "tool_call_end", "tool_call_argument_begin") if profile and r in profile.ids
        )
        # Where the golden text ends: before a final stop/special token.
        self.golden_text_end = len(golden) - 1 if golden and golden[-1] in self.specials else len(golden)

    def special_bytes(self, token_id: int) -> bytes:
        """The text of a special or marker id as bytes; b"\\0" (found in no text) for anything else."""
        if token_id in self.specials and self.tokenizer.is_valid_id(token_id):
            return self.tokenizer.token_bytes(token_id)
        return b"\0"

    def regions(self, start: int, end: int) -> set[str]:
        layout = self.layout
        if layout is None:
            return set()
        if start == end:  # an insertion: the regions on either side, and an empty one right there
            idx = [i for i in (start - 1, start) if 0 <= i < len(self.golden)]
            return {layout.region_at(i) for i in idx} | layout.empty_at(start)
        return layout.regions_in(start, end)

    def classify(self, gs: int, ge: int, rs: int, re: int) -> str:
        G = self.golden[gs:ge]
        R = self.recon[rs:re]
        specials = self.specials
        g_special = Counter(t for t in G if t in specials)
        r_special = Counter(t for t in R if t in specials)
        if len(G) == 1 and len(R) == 1 and (g_special or r_special):
            if ge == len(self.golden) and re == len(self.recon) and G[0] in self.real_stops and R[0] in self.real_stops:
                return STOP_TOKEN  # the engine stopped on another of the model's stop tokens than the one rebuilt
            return SPECIAL_TOKEN_ID
        gb = self.gbytes.span(gs, ge)
        rb = self.rbytes.span(rs, re)
        if g_special != r_special:
            only_g = g_special - r_special
            only_r = r_special - g_special
            spelled = all(self.special_bytes(t) in rb for t in only_g) and all(
                self.special_bytes(t) in gb for t in only_r
            )
            if spelled:
                return MARKER_TEXT
            if self.think_not_closed(only_r):
                return THINK_NOT_CLOSED
            if only_r and self.literal_marker_starts:
                return MARKER_TEXT  # a parser took marker text the model wrote for the marker itself
            if gs == ge and self.layout is not None and self.layout.tool_calls and set(only_r) & self.call_markers:
                return TOOL_CALL_ID_CLASS  # whole calls realigned: a rebuilt id shifted where the calls match
            if len(G) == len(R):
                return SPECIAL_TOKEN_ID
        if gb == rb:  # a hunk that involves a marker or special id is never a harmless re-split
            return MARKER_TEXT if g_special or r_special else NON_CANONICAL_SPLIT
        if not G and set(R) <= specials or not R and set(G) <= specials:
            return SPECIAL_TOKEN_ID  # a marker missing on one side, or extra
        g_invalid = self.gbytes.invalid_byte_ranges(gs, ge)
        if g_invalid:
            text_end = self.golden_text_end
            if self.cut_at_length and ge >= text_end and self.gbytes.incomplete_tail(text_end):
                tail_start = self.gbytes.offsets[text_end] - self.gbytes.incomplete_tail(text_end)
                if any(e > tail_start for _, e in g_invalid):
                    return TRUNCATED_UTF8
            return INVALID_UTF8
        if self.rbytes.invalid_byte_ranges(rs, re):
            return INVALID_UTF8
        if self.special_text_deleted(gb, rb):
            return SPECIAL_TEXT_DELETED
        if self.stop_text_kept(ge, gb, rb):
            return STOP_TEXT_KEPT
        regions = self.regions(gs, ge)
        r_text_bytes = b"".join(self.tokenizer.token_bytes(t) for t in R if t not in specials)
        if gb.strip() and not r_text_bytes.strip() and (
            self.dropped_by_parser(gs, ge, regions) or any(i < ge for i in self.literal_marker_starts)
        ):
            return DROPPED_TEXT
        if TOOL_CALL_ID in regions:
            return TOOL_CALL_ID_CLASS
        g_text = gb.decode("utf-8", "replace")
        r_text = rb.decode("utf-8", "replace")
        if _strip_ws(g_text) == _strip_ws(r_text):
            # Inside the JSON of tool-call arguments, whitespace is json.dumps spacing: the provider
            # re-serialised the arguments. Around them (padding a parser drops) it is plain whitespace.
            return TOOL_ARGS_JSON if self.inside_arguments(gs, ge, gb, rb) else WHITESPACE
        if TOOL_ARGUMENTS in regions:
            return TOOL_ARGS_JSON
        if any(i <= ge for i in self.literal_marker_starts):
            return MARKER_TEXT  # text moved across a split a parser made at marker text the model wrote
        return self.restructured(gs, ge, rs, re, gb, rb)

    def stop_text_kept(self, ge: int, gb: bytes, rb: bytes) -> bool:
        """Whether the hunk ends right before the golden's final stop token and the reconstruction has that
        token's text after the golden's bytes: the engine wrote the stop it stopped on into the content."""
        golden = self.golden
        if self.cut_at_length or ge != len(golden) - 1 or golden[-1] not in self.stop_ids:
            return False
        return rb == gb + self.special_bytes(golden[-1])

    def restructured(self, gs: int, ge: int, rs: int, re: int, gb: bytes, rb: bytes) -> str:
        """A hunk no other rule explains, in an output whose messages the response does not keep as the
        model wrote them: cut-in-markup or message-structure when the text of each kind survives
        (``structure_lost``) or the hunk changes message framing only; marker-text when the golden spells
        marker text (or the hunk spells markup) and the rebuilt text is whole pieces of the golden's a parser
        moved (``pieces_moved``), or the hunk spells a marker the golden has as an id; dropped-text for the
        end of a cut output missing from the response; else other."""
        if self.structure_lost or (self.framing_differs and self.framing_only(gs, ge, rs, re)):
            header = self.open_header
            return CUT_IN_MARKUP if header is not None and (ge > header or gs >= header) else MESSAGE_STRUCTURE
        moved = rb.strip()
        if self.literal_marker_starts and self.framing_differs and self.pieces_moved:
            return MARKER_TEXT  # a text parser read marker text the model wrote as markup: messages cut there
        if moved and (self.spells_special(rb) and self.pieces_moved or any(
            self.special_bytes(t) in rb for t in set(self.golden[gs:ge]) & self.specials
        )):
            return MARKER_TEXT  # markup returned as text (a call the parser does not read, in the content)
        if self.cut_at_length and ge == len(self.golden) and gb.strip() and not moved:
            return DROPPED_TEXT  # the message the cut left open, which the parser drops
        return OTHER

    @functools.cached_property
    def pieces_moved(self) -> bool:
        """Whether the reconstruction's reasoning and content, cut at marker texts (real or written) and
        whitespace aside, are each made of whole pieces of the golden's text cut the same way: what a parser
        that cuts messages at marker text returns is the model's text moved or dropped, never changed. Once
        per diagnosis, for a hunk no other rule explains."""
        pattern = _special_text_pattern(self.tokenizer)
        if pattern is None:
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

    def framing_only(self, gs: int, ge: int, rs: int, re: int) -> bool:
        """Whether both sides of the hunk lie in message framing (marker spans) of their own layout."""
        return self.regions(gs, ge) <= {MARKER} and (rs == re or self.recon_layout.regions_in(rs, re) <= {MARKER})

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
        cut = "" if header is None else _strip_ws(self.gbytes.span(header, len(golden)).decode("utf-8", "replace"))
        return r_content in (g_content, g_content + cut)

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
        return left == rb or _strip_ws(left.decode("utf-8", "replace")) == _strip_ws(rb.decode("utf-8", "replace"))

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


def _framing(layout, data: _Bytes) -> tuple[list, str, str]:
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
        return _strip_ws(b"".join(parts).decode("utf-8", "replace"))

    return frame, text(reasoning), text(content)


def _split_stop(block, ctx: _Context):
    """At the very end, peel a stop token present on one side only into its own hunk (unless the
    other side ends with another special id there, a replaced id, or spells the stop token's text,
    marker text: neither is a missing stop token)."""
    golden, recon, stop_ids, specials = ctx.golden, ctx.recon, ctx.stop_ids, ctx.specials
    gs, ge, rs, re = block
    if ge != len(golden) or re != len(recon) or (ge - gs == 1 and re - rs == 1):
        return [block]
    g_stop = ge > gs and golden[ge - 1] in stop_ids
    r_stop = re > rs and recon[re - 1] in stop_ids
    if g_stop == r_stop:
        return [block]
    other_last = (recon[re - 1] if re > rs else None) if g_stop else (golden[ge - 1] if ge > gs else None)
    if other_last in specials:
        return [block]
    stop_text = ctx.special_bytes(golden[ge - 1] if g_stop else recon[re - 1])
    other_bytes = ctx.rbytes.span(rs, re) if g_stop else ctx.gbytes.span(gs, ge)
    if other_bytes.endswith(stop_text):
        return [block]
    if g_stop:
        rest, stop = (gs, ge - 1, rs, re), (ge - 1, ge, re, re)
    else:
        rest, stop = (gs, ge, rs, re - 1), (ge, ge, re - 1, re)
    if rest[0] == rest[1] and rest[2] == rest[3]:
        return [stop]
    return [rest, stop]


def _peel_specials(block, golden, recon, specials):
    """Split replaced special ids at either edge of a hunk into their own 1-to-1 hunks, so a
    replaced marker next to a text change gives two hunks with two classes."""
    gs, ge, rs, re = block
    head, tail = [], []
    while ge - gs + re - rs > 2 and ge > gs and re > rs and golden[gs] in specials and recon[rs] in specials:
        head.append((gs, gs + 1, rs, rs + 1))
        gs, rs = gs + 1, rs + 1
    while ge - gs + re - rs > 2 and ge > gs and re > rs and golden[ge - 1] in specials and recon[re - 1] in specials:
        tail.append((ge - 1, ge, re - 1, re))
        ge, re = ge - 1, re - 1
    return [*head, (gs, ge, rs, re), *reversed(tail)]


def _merge_byte_neighbours(blocks, gbytes: _Bytes, rbytes: _Bytes):
    """Merge a hunk with the next one when they are close and only together keep the bytes."""
    out: list[tuple[int, int, int, int]] = []
    for blk in blocks:
        if out:
            prev = out[-1]
            gap = blk[0] - prev[1]
            if (
                gap <= _MERGE_GAP
                and gbytes.span(prev[0], prev[1]) != rbytes.span(prev[2], prev[3])
                and gbytes.span(blk[0], blk[1]) != rbytes.span(blk[2], blk[3])
                and gbytes.span(prev[0], blk[1]) == rbytes.span(prev[2], blk[3])
            ):
                out[-1] = (prev[0], blk[1], prev[2], blk[3])
                continue
        out.append(blk)
    return out


def diagnose(
    golden_ids: Sequence[int],
    reconstructed_ids: Sequence[int],
    tokenizer: Tokenizer,
    *,
    profile: Profile | None = None,
    finish_reason: str | None = None,
    golden_bytes: bytes | None = None,
    response_finish_reason: str | None = None,
) -> Diagnosis:
    """Every divergent hunk between golden and reconstructed ids, classified, with a report.

    ``profile`` gives regions (tool-call ids and arguments) and the stop id; ``finish_reason``
    ("stop" | "length" | "tool_calls") says whether the golden output was cut at the length limit
    (when None: cut if it does not end with a stop token). ``golden_bytes``: ``tokenizer.decode_bytes(golden_ids)``
    when the caller has it already (the judge's view decoded them). ``response_finish_reason``: the
    response's own, when known: a cut output whose response says otherwise gets ``finish-rewritten``
    for what the reconstruction added at the end."""
    golden = list(golden_ids)
    recon = list(reconstructed_ids)
    token_text = tokenizer.token_text
    if golden == recon:
        return Diagnosis(len(golden), len(recon), [], True, tokenizer_name=tokenizer.name,
                         golden_ids=golden, recon_ids=recon, token_text=token_text)

    ctx = _Context(golden, recon, tokenizer, profile, finish_reason, golden_bytes)
    blocks = divergent_blocks(golden, recon)
    blocks = _merge_byte_neighbours(blocks, ctx.gbytes, ctx.rbytes)
    blocks = [piece for blk in blocks for piece in _peel_specials(blk, golden, recon, ctx.specials)]
    if blocks:
        blocks = blocks[:-1] + _split_stop(blocks[-1], ctx)
    hunks = []
    rewritten = ctx.cut_at_length and response_finish_reason not in (None, "length")
    for gs, ge, rs, re in blocks:
        added = recon[rs:re]
        if ctx.cut_at_length and gs == ge == len(golden) and added and all(t in ctx.specials for t in added) and (
            rewritten or any(t not in ctx.stop_ids for t in added)
        ):
            # closing markers (and a stop) the model never wrote: the cut is hidden, or they are guessed
            cls = FINISH_REWRITTEN if rewritten else CUT_IN_MARKUP
        elif ge == len(golden) and re == len(recon) and ge - gs + re - rs == 1:
            is_stop = (golden[gs:ge] or recon[rs:re])[0] in ctx.stop_ids
            cls = STOP_TOKEN if is_stop else ctx.classify(gs, ge, rs, re)
        else:
            cls = ctx.classify(gs, ge, rs, re)
        hunks.append(Hunk(gs, ge, rs, re, cls, cls in TEXT_PRESERVING_CLASSES))

    first = hunks[0]
    golden_window = ctx.gbytes.window(first.golden_start, first.golden_end, token_text)
    recon_window = ctx.rbytes.window(first.recon_start, first.recon_end, token_text)
    return Diagnosis(
        golden_len=len(golden),
        recon_len=len(recon),
        hunks=hunks,
        texts_identical=ctx.gbytes.data == ctx.rbytes.data,
        golden_window=golden_window,
        recon_window=recon_window,
        tokenizer_name=tokenizer.name,
        golden_ids=golden,
        recon_ids=recon,
        token_text=token_text,
    )
