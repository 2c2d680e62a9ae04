"""A token sequence as bytes: each token's byte offset, and the UTF-8 questions diagnosis asks.

Diagnosis decides its UTF-8 classes from the bytes of the tokens, never from U+FFFD in decoded
text: U+FFFD (bytes EF BF BD) can be real model output. ``SequenceBytes`` holds the joined bytes of
a sequence and answers, for a range of tokens, their bytes, the invalid UTF-8 in them, and whether
the sequence ends inside a character. It is built once per sequence per diagnosis.
"""

from __future__ import annotations

import codecs
from bisect import bisect_left, insort
from collections.abc import Sequence
from itertools import accumulate

from .tokenizer import Tokenizer

__all__ = ["ByteOffsets", "SequenceBytes"]

_OFFSET_BLOCK = 32  # tokens whose offsets ByteOffsets computes together


class ByteOffsets:
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


class SequenceBytes:
    """A sequence's bytes with each token's byte offset, built once per sequence per diagnosis."""

    __slots__ = ("ids", "data", "offsets")

    def __init__(self, ids: Sequence[int], tokenizer: Tokenizer, data: bytes | None = None):
        self.ids = ids
        self.data = tokenizer.decode_bytes(ids) if data is None else data  # each token's bytes, joined
        self.offsets = ByteOffsets(ids, len(self.data), tokenizer)

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
