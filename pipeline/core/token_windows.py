"""The tokens around a hunk, as a report shows them: each id, its text alone and in context.

A window is ``WINDOW`` tokens either side of a hunk and at most ``WINDOW_HUNK`` tokens of the hunk
itself. Each token carries its text alone (``token_text``), what it adds to the decoded text after its
prefix, and the context check of the original debug script, ``decode(prefix) + decode([id]) ==
decode(prefix + [id])``, which fails where a token completes or splits a UTF-8 character.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .sequence_bytes import SequenceBytes
from .tokenizer import Tokenizer

__all__ = ["WINDOW", "WINDOW_HUNK", "WindowToken", "hunk_window", "token_windows"]

WINDOW = 5  # tokens either side of a hunk
WINDOW_HUNK = 12  # tokens of a long hunk shown in its window


@dataclass(frozen=True, slots=True)
class WindowToken:
    """One token of a window: its id, its text alone and in context, and the context check."""

    index: int
    id: int
    text: str  # token_text(id): the token alone
    context_text: str  # what the token adds to the decoded text after its prefix
    context_ok: bool  # decode(prefix) + decode([id]) == decode(prefix + [id])
    in_hunk: bool


def hunk_window(seq: SequenceBytes, hunk_lo: int, hunk_hi: int, token_text: Callable[[int], str]) -> list[WindowToken]:
    """The window around ``seq.ids[hunk_lo:hunk_hi]``, each token with its text alone, its text in
    context and the context check."""
    data, off, ids = seq.data, seq.offsets, seq.ids
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
    the first). The bytes are gathered once for all spans."""
    data = SequenceBytes(ids, tokenizer)
    return [hunk_window(data, lo, hi, tokenizer.token_text) for lo, hi in spans]
